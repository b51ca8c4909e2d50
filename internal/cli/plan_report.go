package cli

import (
	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/nodetags"
	"github.com/tagsync/tagsync/internal/tags"
)

// planReport is what `tagsync plan` found: per NodeTagSync and per
// CloudMetadata the writes the next pass would make. Its JSON is the
// output of -o json.
type planReport struct {
	// NodeTagSyncs are the NodeTagSyncs planned, by name.
	NodeTagSyncs []syncPlan `json:"nodeTagSyncs"`
	// CloudMetadata are the CloudMetadata planned, by namespace and name.
	CloudMetadata []metadataPlan `json:"cloudMetadata"`
	// LabelSyncProfiles are the LabelSyncProfiles planned, by namespace
	// and name (none when the cluster lacks the Metal3 or Cluster API CRDs).
	LabelSyncProfiles []profilePlan `json:"labelSyncProfiles"`
	// WorkloadTagPolicies are the workload tag policies' plans.
	WorkloadTagPolicies []workloadPlan `json:"workloadTagPolicies"`
	// Unknown says what plan cannot know about the running controller.
	Unknown []string `json:"unknown,omitempty"`
}

// syncPlan is one NodeTagSync's next pass.
type syncPlan struct {
	Name string `json:"name"`
	// Problem is why nothing would be written (an invalid spec, an
	// unconfigured cloud); empty otherwise.
	Problem   string         `json:"problem,omitempty"`
	Resources []resourceDiff `json:"resources,omitempty"`
	Nodes     []nodeDiff     `json:"nodes,omitempty"`
	Unsynced  []namedReason  `json:"unsynced,omitempty"`
	Claimed   int            `json:"claimedByOlder,omitempty"`
	Failed    []string       `json:"unreadableScopes,omitempty"`
	InSync    int            `json:"inSyncNodes"`
	// Suspended is set when the NodeTagSync is suspended: nothing would be
	// written.
	Suspended bool `json:"suspended,omitempty"`
	// Held is the mass deletion the pass would hold back for approval.
	Held *v1alpha1.HeldDeletions `json:"deletionsHeld,omitempty"`
}

// metadataPlan is one CloudMetadata's next pass.
type metadataPlan struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Problem is why nothing at all would be written (a broken
	// reference); empty otherwise.
	Problem  string        `json:"problem,omitempty"`
	Requests []requestPlan `json:"requests,omitempty"`
	// Held is the mass deletion the pass would hold back for approval.
	Held *v1alpha1.HeldDeletions `json:"deletionsHeld,omitempty"`
	// Retained are the deletions deletionPolicy Retain would keep, per
	// resource.
	Retained []string `json:"retained,omitempty"`
}

// requestPlan is one AzureMetadata's or AWSMetadata's part of a pass.
type requestPlan struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Cloud  string `json:"cloud"`
	Opcode string `json:"opcode"`
	// Problem is why nothing would be written for this request.
	Problem   string         `json:"problem,omitempty"`
	Matched   int            `json:"matched"`
	InSync    int            `json:"inSync"`
	Resources []resourceDiff `json:"resources,omitempty"`
	Failed    []string       `json:"unreadableScopes,omitempty"`
	// Contests are the other objects that want other values for some of
	// its tags on resources both found: neither writes them there.
	Contests []contestNote `json:"contests,omitempty"`
}

// contestNote is another object contesting a request's tags.
type contestNote struct {
	Other     string   `json:"other"`
	Names     []string `json:"names"`
	Resources int      `json:"resources"`
}

// resourceDiff is the change of one cloud resource's tags.
type resourceDiff struct {
	Cloud string `json:"cloud"`
	ID    string `json:"id"`
	// Changes are the writes the pass would make.
	Changes []change `json:"changes,omitempty"`
	// NotWritten are tags reported instead of written, with the reason.
	NotWritten []namedReason `json:"notWritten,omitempty"`
	// Wiped is set when every synced tag vanished at once.
	Wiped bool     `json:"wiped,omitempty"`
	Nodes []string `json:"nodes,omitempty"`
}

// nodeDiff is the change of one Node.
type nodeDiff struct {
	Name     string   `json:"name"`
	Resource string   `json:"resource"`
	Labels   []change `json:"labels,omitempty"`
	// Base is the new value of the base annotation when it changes.
	Base string `json:"baseAnnotation,omitempty"`
	// ReleaseTaint is set when the pending taint is removed.
	ReleaseTaint bool          `json:"releasePendingTaint,omitempty"`
	Conflicts    []namedReason `json:"conflicts,omitempty"`
}

// change is one tag or label added (+), changed (~) or removed (-).
type change struct {
	Op     string  `json:"op"`
	Name   string  `json:"name"`
	Before *string `json:"before,omitempty"`
	After  *string `json:"after,omitempty"`
}

// namedReason is a tag the pass reports instead of writing, or a selected
// Node it would not sync, and why.
type namedReason struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// The change operations.
const (
	opAdd    = "+"
	opChange = "~"
	opRemove = "-"
)

// Writes counts the cloud resources and Nodes that would be written.
func (r *planReport) Writes() int {
	n := 0
	for _, s := range r.NodeTagSyncs {
		n += changedResources(s.Resources) + countWritten(s.Nodes)
	}
	for _, m := range r.CloudMetadata {
		for _, q := range m.Requests {
			n += changedResources(q.Resources)
		}
	}
	for _, p := range r.LabelSyncProfiles {
		n += p.writes()
	}
	for _, w := range r.WorkloadTagPolicies {
		n += changedResources(w.Resources)
	}
	return n
}

// changedResources counts the resources that would be written.
func changedResources(resources []resourceDiff) int {
	n := 0
	for _, res := range resources {
		if len(res.Changes) > 0 {
			n++
		}
	}
	return n
}

// patchChanges renders a tag patch against the tags before it, in name
// order: sets (+ or ~) then deletes (-).
func patchChanges(nc tags.NameCase, before tags.Set, p tags.Patch) []change {
	var out []change
	for _, n := range p.Set.Names() {
		after := p.Set[n]
		if old, ok := before.Get(nc, n); ok {
			if old != after {
				out = append(out, change{Op: opChange, Name: n, Before: &old, After: &after})
			}
			continue
		}
		out = append(out, change{Op: opAdd, Name: n, After: &after})
	}
	for _, n := range p.Delete {
		old, _ := before.Get(nc, n)
		out = append(out, change{Op: opRemove, Name: n, Before: &old})
	}
	return out
}

// labelChanges renders a Node's label edits.
func labelChanges(w nodetags.NodeWrite) []change {
	before := tags.Set(w.Before)
	return patchChanges(tags.CaseSensitive, before, tags.Patch{Set: tags.Set(w.Labels.Set), Delete: w.Labels.Delete})
}

// skippedNotes renders skipped tags.
func skippedNotes(s []tags.Skipped) []namedReason {
	out := make([]namedReason, 0, len(s))
	for _, sk := range s {
		name := sk.Name
		if name == "" {
			name = sk.Label
		}
		out = append(out, namedReason{Name: name, Reason: sk.Reason})
	}
	return out
}
