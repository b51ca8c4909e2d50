package cli

import (
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// tables returns the status output's sections: one table per kind, then
// the conditions that are not healthy, the conflicts and the failures.
func (r *statusReport) tables(now time.Time) []*table {
	all := r.Namespace == ""
	return []*table{
		r.nodeTagSyncTable(now),
		r.cloudMetadataTable(now, all),
		r.providerTable(all),
		r.profileTable(now, all),
		r.workloadTable(now),
		r.problemTable(),
		r.conflictTable(),
		r.failureTable(),
	}
}

func (r *statusReport) nodeTagSyncTable(now time.Time) *table {
	t := &table{columns: []string{"NODETAGSYNC", "READY", "DEGRADED", "SYNCED", "UNMANAGED", "CONFLICTS", "ERRORS", "LAST SYNC", "AGE"}}
	for _, o := range r.NodeTagSyncs {
		s := o.Status
		t.add(o.Name, condition(s.Conditions, v1alpha1.ConditionReady), condition(s.Conditions, v1alpha1.ConditionDegraded),
			num(s.SyncedNodes), num(s.UnmanagedNodes), num(s.ConflictCount), num(s.ErrorCount),
			since(now, s.LastFullSyncTime), since(now, &o.CreationTimestamp))
	}
	return t
}

func (r *statusReport) cloudMetadataTable(now time.Time, all bool) *table {
	t := &table{columns: columnsFor(all, "CLOUDMETADATA", "READY", "MATCHED", "IN SYNC", "FAILED", "AZURE", "AWS", "LAST SYNC", "AGE")}
	for _, o := range r.CloudMetadata {
		s, refs := o.Status, o.Spec.CloudProvider
		t.add(withNamespace(all, o.Namespace, o.Name, condition(s.Conditions, v1alpha1.ConditionReady),
			num(s.Matched), num(s.InSync), num(s.Failed), refName(refs.AzureRef), refName(refs.AWSRef),
			since(now, s.LastSyncTime), since(now, &o.CreationTimestamp))...)
	}
	return t
}

// refName is a reference's name, or "-".
func refName(ref *v1alpha1.LocalObjectRef) string {
	if ref == nil {
		return "-"
	}
	return ref.Name
}

func (r *statusReport) providerTable(all bool) *table {
	t := &table{columns: columnsFor(all, "METADATA", "OPCODE", "APPROVED", "APPLIED", "POLICY", "REQUEST",
		"MATCHED", "IN SYNC", "FAILED", "TAGS", "IGNORED")}
	row := func(kind string, m metav1.ObjectMeta, op v1alpha1.Opcode, tags map[string]string, ignored []string, s v1alpha1.ProviderMetadataStatus) {
		c := s.Conditions
		t.add(withNamespace(all, m.Namespace, strings.ToLower(kind)+"/"+m.Name, string(op),
			condition(c, v1alpha1.ConditionApproved), condition(c, v1alpha1.ConditionApplied),
			condition(c, v1alpha1.ConditionPolicy), condition(c, v1alpha1.ConditionRequest),
			num(s.Matched), num(s.InSync), num(s.Failed), joinOr(sortedKeys(tags)), joinOr(ignored))...)
	}
	for _, o := range r.Azure {
		row("AzureMetadata", o.ObjectMeta, o.Spec.Opcode, o.Spec.ResourceTags, o.Spec.IgnoreTags, o.Status)
	}
	for _, o := range r.AWS {
		row("AWSMetadata", o.ObjectMeta, o.Spec.Opcode, o.Spec.ResourceTags, o.Spec.IgnoreTags, o.Status)
	}
	return t
}

func (r *statusReport) profileTable(now time.Time, all bool) *table {
	t := &table{columns: columnsFor(all, "LABELSYNCPROFILE", "READY", "MATCHED", "IN SYNC", "WAITING", "PROBLEMS", "LAST SYNC", "AGE")}
	for _, o := range r.Profiles {
		s := o.Status
		t.add(withNamespace(all, o.Namespace, o.Name, condition(s.Conditions, v1alpha1.ConditionReady),
			num(s.HostsMatched), num(s.NodesInSync), num(s.HostsWaiting), num(int32(len(s.Problems))+s.MoreProblems),
			since(now, s.LastSyncTime), since(now, &o.CreationTimestamp))...)
	}
	return t
}

func (r *statusReport) workloadTable(now time.Time) *table {
	t := &table{columns: []string{"WORKLOADTAGPOLICY", "PROVIDER", "READY", "RESOURCES", "IN SYNC", "PENDING", "SHARED", "FAILED", "LAST SYNC", "AGE"}}
	for _, o := range r.Workloads {
		s := o.Status
		t.add(o.Name, orDefaultProvider(string(o.Spec.Provider)), condition(s.Conditions, v1alpha1.ConditionReady), num(s.Resources),
			num(s.InSync), num(s.Pending), num(s.Shared), num(s.Failed), since(now, s.LastSyncTime), since(now, &o.CreationTimestamp))
	}
	return t
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
