package metadata

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/notify"
	"github.com/tagsync/tagsync/internal/tags"
)

// condition is a reason and message for a status condition.
type condition struct {
	reason, message string
}

// outcome is what a pass found and did for one target.
type outcome struct {
	t       *target
	started time.Time
	// approved is false until the request passed the cloud's rules;
	// invalid says why it did not.
	approved bool
	invalid  error
	// request is set when the request could not be carried out (wholly or
	// in part) for a reason outside the spec.
	request *condition
	// retryAfter is how long a throttled cloud asked to wait.
	retryAfter time.Duration
	// transient is set when a write failed in a way a retry may cure;
	// permanent when discovery failed in a way only a person can fix.
	transient, permanent bool
	// counts over the matched resources.
	matched, inSync, policyHits int
	failures                    []v1alpha1.ResourceFailure
	// auditErr is the audit sink's error after the writes, nil when it
	// takes records.
	auditErr error
	// writes and writeErrors count resources written and failed writes.
	writes, writeErrors int
	discoveryCalls      int
	// contests are the other objects that want other values for some of
	// the request's names on matched resources.
	contests []contest
	// held is the target's held-tags record once discovery ran.
	held *heldTags
	// suspended names what suspends the target's writes ("" when
	// nothing does); pending counts the resources a write would change,
	// and wouldSet / wouldDelete the tags it would set and delete.
	suspended             string
	pending               int
	wouldSet, wouldDelete int
	// retained counts the deletions deletionPolicy Retain kept; massHeld
	// those the mass-deletion guard held for approval.
	retained, massHeld int
}

// notReady is the outcome of a target whose CloudMetadata has a broken
// reference: nothing is applied.
func notReady(t *target, cm *v1alpha1.CloudMetadata, problems []refProblem) *outcome {
	msgs := make([]string, len(problems))
	for i, pr := range problems {
		msgs[i] = pr.message
	}
	return &outcome{t: t, request: &condition{ReasonCloudMetadataNotReady,
		fmt.Sprintf("nothing applied: CloudMetadata %q is not ready: %s", cm.Name, strings.Join(msgs, "; "))}}
}

// readFailed records a discovery that could not run.
func (o *outcome) readFailed(err error) {
	if d, ok := cloud.RetryAfter(err); ok {
		o.retryAfter = max(o.retryAfter, d)
		o.request = &condition{ReasonThrottled, fmt.Sprintf("discovery throttled by the cloud; retrying in %s: %v", d.Round(time.Second), err)}
		return
	}
	if kit.NeedsPerson(err) {
		o.permanent = true
		o.request = &condition{v1alpha1.ReasonPermanentError, fmt.Sprintf("could not list the classified resources: %v%s", err, personNote)}
		return
	}
	o.transient = true
	o.request = &condition{ReasonDiscoveryFailed, fmt.Sprintf("could not list the classified resources: %v", err)}
}

// personNote ends the message of an error a person must fix.
const personNote = "; a person must fix this (access, subscription or region): retried after syncEvery, then ever less often up to every 30m, and at once when the spec changes"

// scopesFailed records subscriptions or regions that could not be searched.
func (o *outcome) scopesFailed(failed []cloud.ScopeError) {
	if len(failed) == 0 {
		return
	}
	var names []string
	permanent := 0
	for _, f := range failed {
		names = append(names, fmt.Sprintf("%s: %v", f.Scope, f.Err))
		if d, ok := cloud.RetryAfter(f.Err); ok {
			o.retryAfter = max(o.retryAfter, d)
		} else if kit.NeedsPerson(f.Err) {
			permanent++
		} else {
			o.transient = true
		}
	}
	msg := fmt.Sprintf("%d scope(s) could not be searched; resources there were not synced: %s", len(failed), notify.Summary(names, 3))
	if permanent == len(failed) {
		o.permanent = true
		o.request = &condition{v1alpha1.ReasonPermanentError, msg + personNote}
		return
	}
	o.request = &condition{ReasonScopeUnreadable, msg}
}

// tally counts the resources, records what each holds now and collects
// the failures.
func (o *outcome) tally(plans []Planned, results map[string]error, held *heldTags) {
	for _, pl := range plans {
		o.matched++
		if o.suspended != "" && !pl.Plan.Patch.IsEmpty() {
			// Not written: what it holds is unchanged.
			o.pending++
			o.wouldSet += len(pl.Plan.Patch.Set)
			o.wouldDelete += len(pl.Plan.Patch.Delete)
			continue
		}
		err, written := results[pl.Resource.ID]
		if written && err != nil {
			o.writeFailed(pl, err)
			continue
		}
		if written {
			o.writes++
		}
		held.replace(pl.Resource.ID, pl.Plan.Held)
		if len(pl.Plan.Skipped) == 0 {
			o.inSync++
			continue
		}
		o.skipped(pl)
	}
	sort.Slice(o.failures, func(i, j int) bool { return o.failures[i].Resource < o.failures[j].Resource })
}

// writeFailed records a resource whose write failed.
func (o *outcome) writeFailed(pl Planned, err error) {
	o.writeErrors++
	reason := ReasonWriteFailed
	switch d, throttled := cloud.RetryAfter(err); {
	case throttled:
		reason = ReasonThrottled
		o.retryAfter = max(o.retryAfter, d)
	case errors.Is(err, cloud.ErrTooManyTags):
		reason = ReasonOverLimit
	case errors.Is(err, errNotRecorded):
		reason = ReasonNotRecorded
		o.transient = true
	case !isPermanent(err):
		o.transient = true
	}
	names := append(pl.Plan.Patch.Set.Names(), pl.Plan.Patch.Delete...)
	o.failures = append(o.failures, v1alpha1.ResourceFailure{Resource: pl.Resource.ID, Tags: names, Reason: reason,
		Message: notify.Fit(err.Error())})
}

// skipped records a resource on which some requested tags were not applied.
func (o *outcome) skipped(pl Planned) {
	sk := pl.Plan.Skipped
	reason := skipReason(sk[0].Err)
	for _, s := range sk {
		if errors.Is(s.Err, tags.ErrTooManyTags) {
			o.policyHits++
			break
		}
	}
	msgs := make([]string, len(sk))
	for i, s := range sk {
		msgs[i] = s.Reason
	}
	o.failures = append(o.failures, v1alpha1.ResourceFailure{Resource: pl.Resource.ID, Tags: tags.SkippedNames(sk), Reason: reason,
		Message: notify.Fit(notify.Summary(msgs, 3))})
}

// skipReason names the kind of a skipped tag.
func skipReason(err error) string {
	switch {
	case errors.Is(err, tags.ErrTaken):
		return ReasonTagTaken
	case errors.Is(err, tags.ErrContested):
		return ReasonConflict
	case errors.Is(err, tags.ErrTooManyTags):
		return ReasonOverLimit
	case errors.Is(err, errMassDeletion):
		return v1alpha1.ReasonMassDeletion
	default:
		return ReasonInvalidForResource
	}
}

// failed is the number of matched resources not in sync, those a
// suspended pass would have written left out.
func (o *outcome) failed() int { return o.matched - o.inSync - o.pending }

// isPermanent reports write errors that a retry does not cure.
func isPermanent(err error) bool {
	return errors.Is(err, cloud.ErrTooManyTags) || errors.Is(err, cloud.ErrForbidden) || errors.Is(err, cloud.ErrNotFound)
}
