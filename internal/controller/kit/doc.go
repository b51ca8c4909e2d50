// Package kit is what tagsync's controllers (nodetags, metadata, labelsync,
// infratags) share, so that they behave alike where they do the same thing
// and a new controller writes only its own rules. It holds no controller's
// rules: those live in the controller packages and, when pure, in
// internal/tags. It sits in the layer under the controllers and above the
// cloud change transport (internal/cloudchange), the clouds and the API.
//
// A controller gets from it:
//
//   - Its reconciler's base: the client, event recorder and clock (Base,
//     NewBase, UseManager), and one workqueue rate limiter (Options).
//   - What it remembers per object (States): a new state when the object is
//     recreated under its name, forgotten on delete, each with its event
//     Notifier, told again of an event the API server refused.
//   - Waiting instead of retrying what a retry cannot cure (NeedsPerson,
//     Backoff): forbidden, not found and invalid wait for a spec change or
//     an interval that doubles up to a long ceiling.
//   - Status writes that happen only when the status changed, from a base
//     no older than its own last write (PatchStatus, StampSyncTime,
//     ConditionStatus), and the record of a mass deletion it holds back
//     (HeldDeletions).
//   - One Node write and one record of a controller's own Node writes
//     (InFlight: Patch sends the write, guarded by resourceVersion where a
//     list is replaced; a write stays in flight until the cache shows it,
//     and its watch event is recognised as an echo), and the pending taint a
//     Node can be registered with (HasTaint, ReleaseTaint).
//   - Taking cloud changes: the Subscriber a reconciler holds (its hub
//     subscription, the polling interval the sources' health allows, and
//     Serve, which tells the hub when a pass of an object ran), one change
//     index (ChangeIndex: which objects found each resource, routing that
//     leaves out the echo's writer, the changes pending per object and what
//     they carried, Pending and Carried, and those that arrive while
//     indexes warm, Warmup), and the Events condition (EventsCondition).
//   - One writer per key among its objects (Contests): claims on places
//     (Nodes, cloud resources), the names two claimants contest there, and
//     the rivals to wake when a contest begins, changes or ends.
//   - Waking objects from outside its watches without blocking a worker
//     (Wake), and watch predicates (UpdateChanged).
//
// Metrics are defined with internal/metrics; annotation and taint names are
// in api/v1alpha1. docs/architecture.md shows where the kit sits and what
// each controller uses of it.
package kit
