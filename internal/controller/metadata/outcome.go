package metadata

import (
	"fmt"
	"strings"
	"time"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/notify"
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
	// readErr is the error of a discovery that could not run;
	// unsearched the scopes it could not search, with why.
	readErr    error
	unsearched []string
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
	o.readErr = err
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
	o.unsearched = names
	msg := fmt.Sprintf("%d scope(s) could not be searched; resources there were not synced: %s", len(failed), notify.Summary(names, 3))
	if permanent == len(failed) {
		o.permanent = true
		o.request = &condition{v1alpha1.ReasonPermanentError, msg + personNote}
		return
	}
	o.request = &condition{ReasonScopeUnreadable, msg}
}

// failed is the number of matched resources not in sync, those a
// suspended pass would have written left out.
func (o *outcome) failed() int { return o.matched - o.inSync - o.pending }
