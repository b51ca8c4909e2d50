// Package kit is what every tagsync controller shares, so that the four
// controllers (nodetags, metadata, labelsync, infratags) read alike and a
// fifth writes only its own logic. It holds no controller's rules: those
// live in the controller packages and, when pure, in internal/tags.
//
// What the kit gives a controller:
//
//   - Base: the client, event recorder and clock a reconciler embeds, with
//     their defaults (NewBase, UseManager).
//   - States: what the controller remembers per object (keyed by name, a new
//     state when the object is recreated under its name, forgotten on
//     delete), each with its event Notifier, and the fan-out of events the
//     API server refused to every notifier (so the problem is told again).
//   - Options: one workqueue rate limiter for every controller
//     (failures back off exponentially from 100 ms to 5 min per object).
//   - Backoff and NeedsPerson: errors a retry cannot cure (forbidden, not
//     found, invalid) wait for a spec change or an interval that doubles up
//     to a long ceiling, instead of being retried every few seconds.
//   - StampSyncTime, PatchStatus and ConditionStatus: a status is patched
//     only when it changed, from a base no older than the controller's own
//     last write of it and guarded by that base's resourceVersion, and
//     lastSyncTime is refreshed once per interval.
//   - PatchNode, InFlight and the pending taint helpers: one Node write (the
//     changed labels and annotations as a merge patch, the pending taint
//     released in the same write, guarded by resourceVersion where a list
//     is replaced; InFlight.Patch sends it), the one record of a
//     controller's own writes (in flight until the cache shows them, and
//     their watch events recognised as echoes), and
//     the NoSchedule taint a Node can be registered with until its labels
//     are in place.
//   - Metrics: counters, gauges and histograms named
//     tagsync_<controller>_<name>, registered with controller-runtime's
//     registry.
//
// What a controller writes itself: its Reconciler and watches (setup.go),
// one pass (pass.go), the planner `tagsync plan` shares (plan.go), its
// status and conditions (status.go), events (events.go) and metrics
// (metrics.go) with the kit's helpers. docs/architecture.md shows the
// layout.
package kit
