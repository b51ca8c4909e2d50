package workloadtags

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/tags"
)

// A policy puts a key back where someone changed or removed it. When the
// same key on the same resource needs putting back again and again, another
// writer is taking it away each time (a creator that strips tags it does
// not manage, such as the AWS Load Balancer Controller without
// --external-managed-tags; a cloud provider with systemTags; a policy
// engine): writing it once more would only start another round, so the
// policy stops writing that key there, reports the fight and names the
// writer where a cloud change did.

// maxPutBacks is kit.MaxPutBacks: how many times within kit.RecentWindow a
// policy puts one key back on one resource before it stops.
const maxPutBacks = kit.MaxPutBacks

// fight is a key a policy stopped writing on a resource.
type fight struct {
	resource, source, key string
	// writer names who changed the key last, where a cloud change said
	// ("" when none did).
	writer string
}

// String describes the fight for messages.
func (f fight) String() string {
	s := fmt.Sprintf("%s on %s", f.key, f.source)
	if f.writer != "" {
		s += " (changed by " + f.writer + ")"
	}
	return s
}

// stopFights takes out of the plans' patches the keys the policy has
// already written with the same value maxPutBacks+1 times within the
// window on that resource (its first write and maxPutBacks put-backs), or
// once when the write's answer carried another value (kit.Overridden: a
// policy on the write path), and returns them. A person
// ends them early with the acknowledge-fights annotation (a new value);
// otherwise they end as the writes leave the window, and a writer that
// takes the key away again then starts a new count: at most
// maxPutBacks+1 writes of a key per resource an hour.
func (p *pass) stopFights(plans []resourcePlan) []fight {
	now := p.r.Now()
	if ack := p.obj.Annotations[v1alpha1.AcknowledgeFightsAnnotation]; ack != p.st.acked {
		p.st.acked, p.st.writes = ack, nil
	}
	p.st.writes.Prune(now)
	p.st.writers.Keep(p.st.writes)
	p.st.overridden.Prune(now)
	var out []fight
	for i := range plans {
		rp := &plans[i]
		if rp.state != stateFound || rp.patch.IsEmpty() {
			continue
		}
		nc := rp.rules.NameCase()
		for _, k := range rp.patch.Set.Names() {
			key := writeKey(rp.id, nc, k, rp.patch.Set[k])
			o, overridden := p.st.overridden.Of(key)
			if len(p.st.writes[key]) <= maxPutBacks && !overridden {
				continue
			}
			writer := p.st.writers.Of(rp.id)
			if overridden {
				writer = o.Writer
			}
			rp.patch = tags.Patch{Set: rp.patch.Set.Without(nc, k)}
			rp.fought = append(rp.fought, k)
			out = append(out, fight{resource: rp.id, source: rp.source, key: k, writer: writer})
		}
	}
	slices.SortFunc(out, func(a, b fight) int { return cmp.Or(cmp.Compare(a.resource, b.resource), cmp.Compare(a.key, b.key)) })
	return out
}

// recordWrites notes the keys the pass wrote, per resource.
func (p *pass) recordWrites(plans []resourcePlan, results map[string]error, now time.Time) {
	for _, rp := range plans {
		err, wrote := results[cloud.CanonicalID(rp.id)]
		if !wrote || err != nil {
			continue
		}
		nc := rp.rules.NameCase()
		for _, k := range rp.patch.Set.Names() {
			p.st.writes.Add(writeKey(rp.id, nc, k, rp.patch.Set[k]), now)
		}
	}
}

// maxRecentTimes is how many times of one key's writes on one resource the
// status keeps: a stopped fight's whole count.
const maxRecentTimes = maxPutBacks + 1

// loadWrites takes, once per state, the writes the status keeps: a new
// leader or a restarted controller counts a fight's writes from where the
// last one stopped.
func (p *pass) loadWrites() {
	if !p.st.loaded {
		p.st.loaded = true
		p.st.writes.Load(p.obj.Status.RecentWrites)
	}
}

// recentWrites renders for the status the keys written more than once on
// one resource within the window (nil: none), their last maxRecentTimes
// writes each.
func recentWrites(writes kit.Restores, now time.Time) *v1alpha1.RecentWrites {
	if out := writes.Status(now, 2, maxRecentTimes); len(out) > 0 {
		return &v1alpha1.RecentWrites{Restores: out}
	}
	return nil
}

// writeKey is what the writes are counted by: the resource, the key and
// the value written. Writing the same value again is a put-back; a new
// value (its template renders another, a namespace label changed) starts
// its own count.
func writeKey(id string, nc tags.NameCase, key, value string) kit.RecentTag {
	return kit.RecentTag{Resource: cloud.CanonicalID(id), Tag: nc.Key(key) + "=" + value}
}
