package metadata

import (
	"fmt"
	"strings"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/notify"
	"github.com/tagsync/tagsync/internal/tags"
)

// Condition reasons, also event reasons where the same thing is reported.
const (
	// ReasonApplied: every matched resource carries the request.
	ReasonApplied = "Applied"
	// ReasonPartiallyApplied: some matched resources do not.
	ReasonPartiallyApplied = "PartiallyApplied"
	// ReasonNotApplied: nothing was applied (see Approved and Request).
	ReasonNotApplied = "NotApplied"
	// ReasonNoResources: no resource carries a classifier.
	ReasonNoResources = "NoResources"
	// ReasonValid: the request passes the cloud's tag rules.
	ReasonValid = "Valid"
	// ReasonInvalidTags: the request breaks the cloud's tag rules.
	ReasonInvalidTags = "InvalidTags"
	// ReasonCompleted: the last pass carried the request out.
	ReasonCompleted = "Completed"
	// ReasonWithinLimits: every resource had room.
	ReasonWithinLimits = "WithinLimits"
	// ReasonLimitReached: the limit policy left tags or resources out.
	ReasonLimitReached = "LimitReached"
	// ReasonNoProviderRef: the CloudMetadata references no provider object.
	ReasonNoProviderRef = "NoProviderRef"
	// ReasonRefNotFound: a referenced object does not exist.
	ReasonRefNotFound = "RefNotFound"
	// ReasonRefInUse: a referenced object is applied by an older CloudMetadata.
	ReasonRefInUse = "RefInUse"
	// ReasonCloudMetadataNotReady: the driving CloudMetadata has a broken reference.
	ReasonCloudMetadataNotReady = "CloudMetadataNotReady"
	// ReasonProviderNotConfigured: tagsync runs without the cloud's provider.
	ReasonProviderNotConfigured = "ProviderNotConfigured"
	// ReasonDiscoveryFailed: the classified resources could not be listed.
	ReasonDiscoveryFailed = "DiscoveryFailed"
	// ReasonScopeUnreadable: some subscriptions or regions could not be searched.
	ReasonScopeUnreadable = "ScopeUnreadable"
	// ReasonThrottled: the cloud asked tagsync to wait.
	ReasonThrottled = "Throttled"
	// ReasonAuditSinkFailing: the audit log cannot take records.
	ReasonAuditSinkFailing = "AuditSinkFailing"
	// ReasonAuditSinkWorking: the audit log takes records again.
	ReasonAuditSinkWorking = "AuditSinkWorking"
)

// Per-resource failure reasons (status.failures[].reason).
const (
	// ReasonTagTaken: opcode add found another value this object did not write.
	ReasonTagTaken = "TagTaken"
	// ReasonOverLimit: the resource's tag limit left tags out.
	ReasonOverLimit = "OverLimit"
	// ReasonInvalidForResource: the resource's own rules refuse a tag
	// (e.g. a storage account's 128-character names).
	ReasonInvalidForResource = "InvalidForResource"
	// ReasonWriteFailed: the cloud refused or failed the write.
	ReasonWriteFailed = "WriteFailed"
	// ReasonNotRecorded: the write was not sent, because the tags the
	// object holds could not be recorded in its status first.
	ReasonNotRecorded = "NotRecorded"
	// ReasonConflict: another object wants another value for the tag on
	// the resource, so neither writes it (see the Conflict condition).
	ReasonConflict = "Conflict"
)

// Event reasons of a pass's writes.
const (
	// ReasonTagsWritten: tags were written to resources.
	ReasonTagsWritten = "TagsWritten"
	// ReasonTagsNotApplied: some resources do not carry the request.
	ReasonTagsNotApplied = "TagsNotApplied"
	// ReasonDeletionsApproved: held deletions were written once approved.
	ReasonDeletionsApproved = "DeletionsApproved"
)

// shownInNotes is how many items an event note lists before "and N more".
const shownInNotes = 5

// emitEvents emits the pass's events: on the CloudMetadata its reference
// problems, on each target its invalid request, what it wrote and what
// failed. Problems are told once, until they go away; writes every time.
func (p *pass) emitEvents(problems []refProblem, outcomes []*outcome) {
	n := p.st.notes
	for _, pr := range problems {
		n.Once(p.cm, "ref/"+pr.message, pr.reason, pr.message)
	}
	complete := len(problems) == 0
	for _, o := range outcomes {
		obj := o.t.obj
		switch {
		case o.invalid != nil:
			n.Once(obj, "invalid/"+o.invalid.Error(), ReasonInvalidTags, "nothing is applied: "+joinErrs(o.invalid))
		case o.request != nil:
			n.Once(obj, "request/"+o.request.reason, o.request.reason, o.request.message)
			complete = false
		}
		o.reportConflicts(n)
		if o.auditErr != nil {
			n.Once(obj, "audit", ReasonAuditSinkFailing, "audit records cannot be written, cloud mutations wait for them: "+o.auditErr.Error())
		}
		if o.writes > 0 {
			n.Normal(obj, ReasonTagsWritten, fmt.Sprintf("%s: wrote %d resource(s)%s: %s", o.t.opcode, o.writes, failedSuffix(o.writeErrors), describeRequest(o.t)))
		}
		if len(o.failures) > 0 {
			note := describeFailures(o)
			n.Once(obj, "failures/"+note, ReasonTagsNotApplied, note)
		}
	}
	p.reportHeld(n)
	n.EndPass(complete)
}

// reportHeld emits, once while they last, a Warning on the CloudMetadata
// for a mass deletion waiting for approval and for deletions Retain kept.
func (p *pass) reportHeld(n *notify.Notifier) {
	if h := p.hold; h != nil && !h.approved {
		n.Once(p.cm, "massdeletion/"+h.record.Token, v1alpha1.ReasonMassDeletion, p.holdMessage(h))
	}
	if len(p.kept) > 0 {
		n.Once(p.cm, "retained/"+strings.Join(p.kept, ";"), v1alpha1.ReasonRetained, p.retainMessage(p.retainedCount()))
	}
}

// failedSuffix says how many writes failed, if any.
func failedSuffix(failed int) string {
	if failed == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d failed)", failed)
}

// describeRequest lists the request's tags briefly.
func describeRequest(t *target) string {
	set := tags.Set(t.resourceTags)
	kv := make([]string, 0, len(set))
	for _, n := range set.Names() {
		kv = append(kv, n+"="+set[n])
	}
	return notify.Summary(kv, shownInNotes)
}

// describeFailures summarises the failed resources of a pass by reason.
func describeFailures(o *outcome) string {
	byReason := map[string]int{}
	var first []string
	for _, f := range o.failures {
		byReason[f.Reason]++
		first = append(first, fmt.Sprintf("%s (%s)", f.Resource, f.Reason))
	}
	var counts []string
	for _, r := range []string{ReasonTagTaken, ReasonConflict, ReasonFighting, v1alpha1.ReasonMassDeletion, ReasonOverLimit, ReasonInvalidForResource, ReasonWriteFailed, ReasonNotRecorded, ReasonThrottled} {
		if byReason[r] > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", byReason[r], r))
		}
	}
	return fmt.Sprintf("%d of %d matched resource(s) do not carry the whole request (%s): %s",
		len(o.failures), o.matched, strings.Join(counts, ", "), notify.Summary(first, 3))
}
