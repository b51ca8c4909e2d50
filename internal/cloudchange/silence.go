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
// Either marks the stream the resource's events come by silent: an Azure
// subscription (each has its own Event Grid system topic and event
// subscription), an AWS account's region (its own EventBridge rule). One
// deleted subscription among several that deliver is noticed, and a quiet
// one is not excused by a busy one. Health says so (Health.Silent), the
// controllers poll at their configured intervals as while a source is down,
// and the hub counts it (tagsync_events_silences_total; the
// tagsync_events_silent gauge counts the silent streams of each cloud). Any
// change of that stream that arrives after that ends its silence (the
// pipeline delivers again). Only resource types
// the cloud's events have named are judged (for an echo: once any event
// arrived): a type the event subscription's filter leaves out never has
// events, which is no silence.

// DefaultSilentAfter is how long an echo of tagsync's own write (or an
// event announcing a change a full pass found) may take before the cloud's
// events count as silent.
const DefaultSilentAfter = 10 * time.Minute

// silence is why a stream counts as silent, since when.
type silence struct {
	stream         stream
	reason, detail string
	since          time.Time
}

// stream is where a resource's events come from: its cloud and the scope
// of one event pipeline there ("subscription <id>", "account <id> in
// <region>"; "" when the resource names none).
type stream struct{ cloud, scope string }

// streamOf is the stream of a resource's events.
func streamOf(cloudName, resource string) stream {
	r := strings.ToLower(resource)
	if parts, ok := arnFields(r); ok {
		if parts[4] != "" {
			if parts[3] == "" {
				return stream{cloudName, "account " + parts[4]}
			}
			return stream{cloudName, "account " + parts[4] + " in " + parts[3]}
		}
		return stream{cloud: cloudName}
	}
	segs := strings.Split(strings.Trim(r, "/"), "/")
	if len(segs) >= 2 && segs[0] == "subscriptions" {
		return stream{cloudName, "subscription " + segs[1]}
	}
	return stream{cloud: cloudName}
}

// String names the stream in messages.
func (s stream) String() string {
	if s.scope == "" {
		return s.cloud
	}
	return s.cloud + " (" + s.scope + ")"
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
		h.lastChange, h.types = map[stream]time.Time{}, map[string]map[string]bool{}
	}
	from := streamOf(c.Cloud, c.Resource)
	h.lastChange[from] = now
	if h.types[c.Cloud] == nil {
		h.types[c.Cloud] = map[string]bool{}
	}
	if typ := resourceType(c.Resource); typ != "" && len(h.types[c.Cloud]) < maxTypes {
		h.types[c.Cloud][typ] = true
	}
	if was, ok := h.silent[from]; ok {
		delete(h.silent, from)
		silentGauge.WithLabelValues(c.Cloud).Dec()
		silenceLog.Info("events arrive again", "cloud", c.Cloud, "stream", from.String(), "silentSince", was.since, "resource", c.Resource)
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
		from := streamOf(w.Cloud, w.Resource)
		if h.lastChange[from].After(w.At) || !h.judged(w.Cloud, w.Resource, false) {
			continue // its stream delivered since: this echo was filtered out or lost
		}
		h.silence(from, silentEchoOverdue, now, fmt.Sprintf("no event from %s since tagsync's write of %s at %s, whose echo was due within %s",
			from, w.Resource, w.At.UTC().Format(time.RFC3339), h.opts.SilentAfter))
	}
	for _, s := range h.subs {
		for _, c := range s.sights.confirmed(now, h.opts.SilentAfter) {
			if !h.judged(c.cloud, c.id, true) {
				continue
			}
			unannouncedTotal.WithLabelValues(c.cloud).Inc()
			h.silence(streamOf(c.cloud, c.id), silentUnannounced, now, fmt.Sprintf("a full pass found %s changed at %s without an event (none within %s)",
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

// silence marks a stream silent for reason, unless it is already. The
// caller holds h.mu.
func (h *Hub) silence(from stream, reason string, now time.Time, detail string) {
	if _, ok := h.silent[from]; ok {
		return
	}
	if h.silent == nil {
		h.silent = map[stream]silence{}
	}
	h.silent[from] = silence{stream: from, reason: reason, detail: detail, since: now}
	silenceLog.Info("events silent: polling at the configured intervals until they arrive again", "cloud", from.cloud, "stream", from.String(),
		"reason", reason, "detail", detail)
	silencesTotal.WithLabelValues(from.cloud, reason).Inc()
	silentGauge.WithLabelValues(from.cloud).Inc()
}

// silentReason says which streams are silent and why, "" when none.
func (h *Hub) silentReason() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	parts := make([]string, 0, len(h.silent))
	for _, s := range h.silent {
		scope := ""
		if s.stream.scope != "" {
			scope = " (" + s.stream.scope + ")"
		}
		parts = append(parts, fmt.Sprintf("%s events silent%s since %s: %s", s.stream.cloud, scope, s.since.UTC().Format(time.RFC3339), s.detail))
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}

// resourceType is the type a resource's ID or ARN names, lowercased: an
// ARM ID's {namespace}/{type}[/{child type}] after its last "providers" (a
// resource group's or subscription's own), an ARN's service and resource
// type; "" when it names none.
func resourceType(resource string) string {
	r := strings.ToLower(resource)
	if parts, ok := arnFields(r); ok {
		typ, _, _ := strings.Cut(parts[5], "/")
		typ, _, _ = strings.Cut(typ, ":")
		return parts[2] + ":" + typ
	}
	if strings.HasPrefix(r, "arn:") {
		return "" // not a whole ARN
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

// arnFields splits an ARN into its 6 fields (arn, partition, service,
// region, account, resource); false when r is no ARN.
func arnFields(r string) ([]string, bool) {
	if !strings.HasPrefix(r, "arn:") {
		return nil, false
	}
	parts := strings.SplitN(r, ":", 6)
	return parts, len(parts) == 6
}
