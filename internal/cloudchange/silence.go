package cloudchange

import (
	"fmt"
	"slices"
	"strings"
	"time"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tagsync/tagsync/internal/cloud"
)

// A source that is up only says its listener listens (the webhook serves,
// the queue answers). A deleted event subscription or EventBridge rule, a
// broken Ingress or an expired certificate in front of the webhook leave
// it up and deliver nothing: every cloud edit would then wait for the
// safety-net full pass. The hub notices such a silence from what tagsync
// knows must arrive:
//
//   - Echoes. Every write of an object's pass comes back as an event (its
//     echo, cloud.OwnWrites). A write whose echo has not come SilentAfter
//     after it, with no other event of its cloud since, means the cloud's
//     events stopped arriving.
//   - Announcements. A full pass reads every resource; a resource whose
//     tags differ from the previous full pass's with no change of it routed
//     in between (nor within SilentAfter after the pass read it, for an
//     event still on its way) was changed without an event.
//
// Either marks the cloud silent: Health says so (Health.Silent), the
// controllers poll at their configured intervals as while a source is down,
// and the hub counts it (tagsync_events_silences_total, the
// tagsync_events_silent gauge). Any change of the cloud that arrives after
// that ends the silence (the pipeline delivers again). Only resource types
// the cloud's events have named are judged (for an echo: once any event
// arrived): a type the event subscription's filter leaves out never has
// events, which is no silence.

// DefaultSilentAfter is how long an echo of tagsync's own write (or an
// event announcing a change a full pass found) may take before the cloud's
// events count as silent.
const DefaultSilentAfter = 10 * time.Minute

// silence is why a cloud counts as silent, since when.
type silence struct {
	reason, detail string
	since          time.Time
}

// Silence reasons, as tagsync_events_silences_total's reason label says them.
const (
	silentEchoOverdue = "echo_overdue"
	silentUnannounced = "unannounced_change"
)

// heard notes a change of c's cloud received at now: the cloud's events
// arrive, so a silence of it ends, and an awaited echo is answered. The
// caller holds h.mu.
func (h *Hub) heard(c Change, now time.Time) {
	h.opts.OwnWrites.Echoed(c.Operation)
	if h.lastChange == nil {
		h.lastChange, h.types = map[string]time.Time{}, map[string]map[string]bool{}
	}
	h.lastChange[c.Cloud] = now
	if h.types[c.Cloud] == nil {
		h.types[c.Cloud] = map[string]bool{}
	}
	if typ := resourceType(c.Resource); typ != "" && len(h.types[c.Cloud]) < maxTypes {
		h.types[c.Cloud][typ] = true
	}
	if was, ok := h.silent[c.Cloud]; ok {
		delete(h.silent, c.Cloud)
		silentGauge.WithLabelValues(c.Cloud).Set(0)
		silenceLog.Info("events arrive again", "cloud", c.Cloud, "silentSince", was.since, "resource", c.Resource)
	}
	for _, s := range h.subs {
		s.sights.announced(cloud.CanonicalID(c.Resource), now)
	}
}

// silenceLog reports silences and their end.
var silenceLog = ctrllog.Log.WithName("events")

// maxTypes bounds the resource types the hub remembers per cloud.
const maxTypes = 1000

// judgeSilence looks for overdue echoes and confirmed unannounced changes
// (CheckHealth calls it) and marks their clouds silent.
func (h *Hub) judgeSilence(now time.Time) {
	if h.opts.SilentAfter < 0 {
		return
	}
	overdue := h.opts.OwnWrites.Overdue(now.Add(-h.opts.SilentAfter))
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, w := range overdue {
		if h.lastChange[w.Cloud].After(w.At) || !h.judged(w.Cloud, w.Resource, false) {
			continue // its cloud delivered since: this echo was filtered out or lost
		}
		h.silence(w.Cloud, silentEchoOverdue, now, fmt.Sprintf("no event for %s since tagsync's write of %s at %s, whose echo was due within %s",
			w.Cloud, w.Resource, w.At.UTC().Format(time.RFC3339), h.opts.SilentAfter))
	}
	for _, s := range h.subs {
		for _, c := range s.sights.confirmed(now, h.opts.SilentAfter) {
			if !h.judged(c.cloud, c.id, true) {
				continue
			}
			unannouncedTotal.WithLabelValues(c.cloud).Inc()
			h.silence(c.cloud, silentUnannounced, now, fmt.Sprintf("a full pass found %s changed at %s without an event (none within %s)",
				c.id, c.at.UTC().Format(time.RFC3339), h.opts.SilentAfter))
		}
	}
}

// judged reports whether a missing event of resource in cloudName counts:
// the cloud's events named its type before, or (unless strict) none
// arrived yet, which an own write's echo may judge: a pipeline silent from
// the start. A change a full pass found is judged strictly: some types
// never have events (an Auto Scaling group's tags are not in AWS's tag
// events), and a quiet estate may have had none yet. The caller holds h.mu.
func (h *Hub) judged(cloudName, resource string, strict bool) bool {
	types := h.types[cloudName]
	return (!strict && len(types) == 0) || types[resourceType(resource)]
}

// silence marks cloudName silent for reason, unless it is already. The
// caller holds h.mu.
func (h *Hub) silence(cloudName, reason string, now time.Time, detail string) {
	if _, ok := h.silent[cloudName]; ok {
		return
	}
	if h.silent == nil {
		h.silent = map[string]silence{}
	}
	h.silent[cloudName] = silence{reason: reason, detail: detail, since: now}
	silenceLog.Info("events silent: polling at the configured intervals until they arrive again", "cloud", cloudName, "reason", reason, "detail", detail)
	silencesTotal.WithLabelValues(cloudName, reason).Inc()
	silentGauge.WithLabelValues(cloudName).Set(1)
}

// silentReason says which clouds are silent and why, "" when none.
func (h *Hub) silentReason() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	clouds := make([]string, 0, len(h.silent))
	for c := range h.silent {
		clouds = append(clouds, c)
	}
	slices.Sort(clouds)
	parts := make([]string, len(clouds))
	for i, c := range clouds {
		parts[i] = fmt.Sprintf("%s events silent since %s: %s", c, h.silent[c].since.UTC().Format(time.RFC3339), h.silent[c].detail)
	}
	return strings.Join(parts, "; ")
}

// resourceType is the type a resource's ID or ARN names, lowercased: an
// ARM ID's {namespace}/{type}[/{child type}] after its last "providers" (a
// resource group's or subscription's own), an ARN's service and resource
// type; "" when it names none.
func resourceType(resource string) string {
	r := strings.ToLower(resource)
	if strings.HasPrefix(r, "arn:") {
		parts := strings.SplitN(r, ":", 6)
		if len(parts) < 6 {
			return ""
		}
		typ, _, _ := strings.Cut(parts[5], "/")
		typ, _, _ = strings.Cut(typ, ":")
		return parts[2] + ":" + typ
	}
	segs := strings.Split(strings.Trim(r, "/"), "/")
	i := len(segs) - 1
	for i >= 0 && segs[i] != "providers" {
		i--
	}
	if i < 0 || i+1 >= len(segs) {
		if len(segs) >= 4 {
			return "resourcegroups"
		}
		return "subscriptions"
	}
	types := []string{segs[i+1]}
	for j := i + 2; j < len(segs); j += 2 {
		types = append(types, segs[j])
	}
	return strings.Join(types, "/")
}
