package infratags

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// InfrastructureGVK is OpenShift's cluster-wide Infrastructure kind.
var InfrastructureGVK = schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "Infrastructure"}

// InfrastructureCRD is the name of its CustomResourceDefinition.
const InfrastructureCRD = "infrastructures.config.openshift.io"

// InfrastructureName is the name of the one Infrastructure of a cluster.
const InfrastructureName = "cluster"

// Source says where a cloud's desired tags were read.
type Source string

const (
	// SourceSpec: spec.platformSpec.<cloud>.resourceTags, the proposal's
	// schema, editable on Day 2.
	SourceSpec Source = "spec"
	// SourceStatus: status.platformStatus.<cloud>.resourceTags, OpenShift
	// as shipped, set by the installer and immutable.
	SourceStatus Source = "status"
)

// infrastructure is what the adapter reads from an Infrastructure, whatever
// its schema.
type infrastructure struct {
	// infraID is status.infrastructureName.
	infraID string
	// azure and aws are the clouds' desired tags; nil when the
	// Infrastructure says nothing of that cloud.
	azure, aws *desired
	// resourceGroup is status.platformStatus.azure.resourceGroupName.
	resourceGroup string
	// region is status.platformStatus.aws.region.
	region string
}

// desired is one cloud's tag list and where it came from.
type desired struct {
	tags   map[string]string
	source Source
	// duplicates are keys listed more than once.
	duplicates []string
}

// readInfrastructure reads an Infrastructure of either schema.
func readInfrastructure(u *unstructured.Unstructured) (infrastructure, error) {
	var in infrastructure
	in.infraID, _, _ = unstructured.NestedString(u.Object, "status", "infrastructureName")
	in.resourceGroup, _, _ = unstructured.NestedString(u.Object, "status", "platformStatus", "azure", "resourceGroupName")
	in.region, _, _ = unstructured.NestedString(u.Object, "status", "platformStatus", "aws", "region")
	var err error
	if in.azure, err = desiredTags(u, "azure"); err != nil {
		return in, err
	}
	if in.aws, err = desiredTags(u, "aws"); err != nil {
		return in, err
	}
	if (in.azure != nil || in.aws != nil) && in.infraID == "" {
		return in, fmt.Errorf("status.infrastructureName is empty: the cluster's owned tag cannot be named")
	}
	return in, nil
}

// desiredTags reads a cloud's tag list: from the spec when it has one (the
// proposal's schema), else from the status (OpenShift as shipped), where
// only {key, value} items are tags (the proposal's status lists failures
// there as {name, error}).
func desiredTags(u *unstructured.Unstructured, cloud string) (*desired, error) {
	if items, ok, _ := unstructured.NestedSlice(u.Object, "spec", "platformSpec", cloud, "resourceTags"); ok && len(items) > 0 {
		return tagList(items, SourceSpec, "spec.platformSpec."+cloud+".resourceTags")
	}
	items, ok, _ := unstructured.NestedSlice(u.Object, "status", "platformStatus", cloud, "resourceTags")
	if !ok || len(items) == 0 || !hasKey(items[0]) {
		if _, present, _ := unstructured.NestedMap(u.Object, "status", "platformStatus", cloud); present {
			return &desired{tags: map[string]string{}, source: SourceStatus}, nil
		}
		return nil, nil
	}
	return tagList(items, SourceStatus, "status.platformStatus."+cloud+".resourceTags")
}

// hasKey reports whether a list item is a {key, value} tag.
func hasKey(item any) bool {
	m, ok := item.(map[string]any)
	if !ok {
		return false
	}
	_, ok = m["key"]
	return ok
}

// tagList turns [{key, value}] into a map, recording keys listed twice.
func tagList(items []any, src Source, path string) (*desired, error) {
	d := &desired{tags: map[string]string{}, source: src}
	for i, item := range items {
		m, ok := item.(map[string]any)
		k, kok := m["key"].(string)
		v, vok := m["value"].(string)
		if !ok || !kok || !vok {
			return nil, fmt.Errorf("%s[%d] is not a {key, value} pair of strings", path, i)
		}
		if _, dup := d.tags[k]; dup {
			d.duplicates = append(d.duplicates, k)
		}
		d.tags[k] = v
	}
	sort.Strings(d.duplicates)
	return d, nil
}

// ownedTag renders a cluster owned-tag template ("{infraID}" replaced).
func ownedTag(template, infraID string) string {
	return strings.ReplaceAll(template, "{infraID}", infraID)
}
