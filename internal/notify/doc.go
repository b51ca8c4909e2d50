// Package notify is how tagsync's controllers tell people about what they
// did and what went wrong: Kubernetes events, reported once per problem,
// whose notes always fit the API server's limit, through a recorder that
// learns which events the API server refused.
//
// Three rules hold for every controller that uses it:
//
//   - A note never exceeds MaxNoteBytes (the API server refuses longer
//     notes and the event is lost). Fit clips a note on a character boundary;
//     Summary renders a long list as counts plus the first names, e.g.
//     "set 40 tags: a=1, b=2, c=3 and 37 more".
//   - A problem is reported once while it lasts (Notifier.Once): a conflict
//     seen on every resync is one event when it appears, not one per pass.
//     When a pass ends (Notifier.EndPass) the problems it did not see are
//     forgotten, so a recurrence is told again. A pass that could not look
//     at everything (EndPass(false)) forgets only the problems it reported
//     anew under another key for the same object and reason, so the memory
//     stays bounded by objects and reasons.
//   - A problem counts as reported only if its event was accepted: when the
//     API server refuses the event, Recorder tells the notifiers, which
//     forget the problem so the next pass reports it again.
package notify
