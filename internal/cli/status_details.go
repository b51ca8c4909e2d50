package cli

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// problemTable lists every condition that is not healthy, with its reason
// and message. An AzureMetadata's or AWSMetadata's Ready is left out: it
// repeats the reason and message of the condition that makes it False.
func (r *statusReport) problemTable() *table {
	t := &table{columns: []string{"OBJECT", "CONDITION", "REASON", "MESSAGE"}}
	add := func(obj string, conds []metav1.Condition, skip ...string) {
		for _, c := range conds {
			if c.Status != healthyStatus(c.Type) && !slices.Contains(skip, c.Type) {
				t.add(obj, c.Type+"="+string(c.Status), c.Reason, c.Message)
			}
		}
	}
	for _, o := range r.NodeTagSyncs {
		add(objectName("NodeTagSync", "", o.Name), o.Status.Conditions)
	}
	for _, o := range r.CloudMetadata {
		add(objectName("CloudMetadata", o.Namespace, o.Name), o.Status.Conditions)
	}
	for _, o := range r.Azure {
		add(objectName("AzureMetadata", o.Namespace, o.Name), o.Status.Conditions, v1alpha1.ConditionReady)
	}
	for _, o := range r.AWS {
		add(objectName("AWSMetadata", o.Namespace, o.Name), o.Status.Conditions, v1alpha1.ConditionReady)
	}
	for _, o := range r.Profiles {
		add(objectName("LabelSyncProfile", o.Namespace, o.Name), o.Status.Conditions)
	}
	for _, o := range r.Workloads {
		add(objectName("WorkloadTagPolicy", "", o.Name), o.Status.Conditions)
	}
	return t
}

// conflictTable lists the NodeTagSyncs' current conflicts: the tag, the
// cloud's value and each node's.
func (r *statusReport) conflictTable() *table {
	t := &table{columns: []string{"OBJECT", "RESOURCE", "TAG", "CLOUD", "NODES"}}
	for _, o := range r.NodeTagSyncs {
		for _, c := range o.Status.Conflicts {
			cloud := "(deleted)"
			if c.CloudValue != nil {
				cloud = *c.CloudValue
			}
			t.add(objectName("NodeTagSync", "", o.Name), c.Resource, c.Tag, cloud, nodeValues(c))
		}
	}
	return t
}

// nodeValues renders a conflict's nodes with their label values.
func nodeValues(c v1alpha1.TagConflict) string {
	parts := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		v := "(deleted)"
		if i < len(c.NodeValues) {
			v = c.NodeValues[i]
		}
		parts[i] = n + "=" + v
	}
	return strings.Join(parts, ", ")
}

// failureTable lists the resources the metadata requests failed on and the
// hosts the label sync profiles could not sync, with how many more there are.
func (r *statusReport) failureTable() *table {
	t := &table{columns: []string{"OBJECT", "RESOURCE", "TAGS", "REASON", "MESSAGE"}}
	add := func(obj string, s v1alpha1.ProviderMetadataStatus) {
		for _, f := range s.Failures {
			t.add(obj, f.Resource, joinOr(f.Tags), f.Reason, f.Message)
		}
		if s.MoreFailures > 0 {
			t.add(obj, fmt.Sprintf("(%d more)", s.MoreFailures), "-", "-", "-")
		}
	}
	for _, o := range r.Azure {
		add(objectName("AzureMetadata", o.Namespace, o.Name), o.Status)
	}
	for _, o := range r.AWS {
		add(objectName("AWSMetadata", o.Namespace, o.Name), o.Status)
	}
	for _, o := range r.Profiles {
		obj := objectName("LabelSyncProfile", o.Namespace, o.Name)
		for _, p := range o.Status.Problems {
			t.add(obj, "host "+p.Host, "-", p.Reason, p.Message)
		}
		if o.Status.MoreProblems > 0 {
			t.add(obj, fmt.Sprintf("(%d more)", o.Status.MoreProblems), "-", "-", "-")
		}
	}
	return t
}
