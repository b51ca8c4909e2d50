package main

import (
	"fmt"

	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// description is the CSV's long description (Markdown, shown by
// OperatorHub).
const description = `tagsync keeps cloud tags where they are asked for.

On OpenShift on Azure or AWS, its **OpenShift adapter** reads the user tags of the
cluster's Infrastructure (` + "`config.openshift.io/v1` `Infrastructure` `cluster`" + `) and keeps them on
every resource the cluster owns, through the **metadata engine**: a CloudMetadata
selects cloud resources by their tags, and the AzureMetadata and AWSMetadata it
names say which tags to add, update or delete there. You can write your own
CloudMetadata too.

Safety: a CloudMetadata can be suspended (reads and reports, writes nothing),
can be upsert-only (deletionPolicy: Retain), and a pass that would delete many
synced tags at once is held until you approve it with an annotation.

Credentials: the operator uses the Azure SDK's and the AWS SDK's default
credential chains. Give them through the Subscription's spec.config (env or
envFrom a Secret): AZURE_CLIENT_ID, AZURE_TENANT_ID and AZURE_CLIENT_SECRET
(Tag Contributor and Reader on the cluster's resource groups), or the AWS_*
variables. See docs/install-openshift.md.

The bundle runs the metadata controller and the OpenShift adapter, in all
namespaces; the node and label sync are installed with the Helm chart.`

// almExamples are the sample objects OperatorHub offers (JSON).
const almExamples = `[
  {
    "apiVersion": "tagsync.io/v1alpha1",
    "kind": "CloudMetadata",
    "metadata": {"name": "cost-center", "namespace": "tagsync-system"},
    "spec": {
      "classifiers": {"kubernetes.io_cluster.mycluster-x7k2p": "owned"},
      "cloudProvider": {"azureRef": {"name": "cost-center"}},
      "deletionPolicy": "Retain"
    }
  },
  {
    "apiVersion": "tagsync.io/v1alpha1",
    "kind": "AzureMetadata",
    "metadata": {"name": "cost-center", "namespace": "tagsync-system"},
    "spec": {"opcode": "add", "resourceTags": {"cost-center": "platform"}}
  },
  {
    "apiVersion": "tagsync.io/v1alpha1",
    "kind": "AWSMetadata",
    "metadata": {"name": "cost-center", "namespace": "tagsync-system"},
    "spec": {"opcode": "add", "resourceTags": {"cost-center": "platform"}}
  }
]`

// crdDescription is what the CSV says of an owned kind.
type crdDescription struct {
	displayName, description string
	spec                     []v1alpha1.SpecDescriptor
	status                   []v1alpha1.StatusDescriptor
}

const (
	xText   = "urn:alm:descriptor:com.tectonic.ui:text"
	xBool   = "urn:alm:descriptor:com.tectonic.ui:booleanSwitch"
	xSelect = "urn:alm:descriptor:com.tectonic.ui:select:"
	xConds  = "urn:alm:descriptor:io.kubernetes.conditions"
	xNumber = "urn:alm:descriptor:text"
)

// providerStatus are the status descriptors AzureMetadata and AWSMetadata
// share (ProviderMetadataStatus).
var providerStatus = []v1alpha1.StatusDescriptor{
	{Path: "conditions", DisplayName: "Conditions", Description: "Ready, and the safety conditions (Suspended, DeletionsHeld).", XDescriptors: []string{xConds}},
	{Path: "matched", DisplayName: "Matched", Description: "Resources in scope at the last pass.", XDescriptors: []string{xNumber}},
	{Path: "inSync", DisplayName: "In sync", Description: "Resources that carry the requested tags.", XDescriptors: []string{xNumber}},
	{Path: "failed", DisplayName: "Failed", Description: "Resources the request could not be applied to (listed in failures).", XDescriptors: []string{xNumber}},
	{Path: "lastSyncTime", DisplayName: "Last sync", Description: "When the last pass ended.", XDescriptors: []string{xText}},
	{Path: "cloudMetadata", DisplayName: "CloudMetadata", Description: "The CloudMetadata that applies this request.", XDescriptors: []string{xText}},
}

var opcode = v1alpha1.SpecDescriptor{Path: "opcode", DisplayName: "Opcode", Description: "What to do with the tags: add, update or delete.",
	XDescriptors: []string{xSelect + "add", xSelect + "update", xSelect + "delete"}}

// descriptions of the owned kinds.
var descriptions = map[string]crdDescription{
	"CloudMetadata": {
		displayName: "Cloud Metadata",
		description: "Selects cloud resources by their tags (classifiers) and applies the AzureMetadata and AWSMetadata it names to them.",
		spec: []v1alpha1.SpecDescriptor{
			{Path: "classifiers", DisplayName: "Classifiers", Description: "Tags (name: value) that put a resource in scope; any one of them suffices.", XDescriptors: []string{xText}},
			{Path: "cloudProvider.azureRef.name", DisplayName: "AzureMetadata", Description: "The AzureMetadata to apply on Azure.", XDescriptors: []string{xText}},
			{Path: "cloudProvider.awsRef.name", DisplayName: "AWSMetadata", Description: "The AWSMetadata to apply on AWS.", XDescriptors: []string{xText}},
			{Path: "suspend", DisplayName: "Suspend", Description: "Read and report, write nothing.", XDescriptors: []string{xBool}},
			{Path: "deletionPolicy", DisplayName: "Deletion policy", Description: "Delete, or Retain: upsert-only, never delete a cloud tag.",
				XDescriptors: []string{xSelect + "Delete", xSelect + "Retain"}},
			{Path: "controllerConfig.syncEvery", DisplayName: "Sync every", Description: "How often every resource in scope is compared (1m to 24h).", XDescriptors: []string{xText}},
			{Path: "controllerConfig.limit", DisplayName: "Tag limit policy", Description: "On a resource at its tag limit: write the tags that fit, or none.",
				XDescriptors: []string{xSelect + "POLICY_APPLY_PARTIAL", xSelect + "POLICY_APPLY_STRICT"}},
		},
		status: []v1alpha1.StatusDescriptor{
			{Path: "conditions", DisplayName: "Conditions", Description: "Ready, and the safety conditions (Suspended, DeletionsHeld).", XDescriptors: []string{xConds}},
			{Path: "matched", DisplayName: "Matched", Description: "Resources in scope at the last pass.", XDescriptors: []string{xNumber}},
			{Path: "inSync", DisplayName: "In sync", Description: "Resources that carry every requested tag.", XDescriptors: []string{xNumber}},
			{Path: "failed", DisplayName: "Failed", Description: "Resources a request could not be applied to.", XDescriptors: []string{xNumber}},
			{Path: "lastSyncTime", DisplayName: "Last sync", Description: "When the last pass ended.", XDescriptors: []string{xText}},
			{Path: "retainedDeletions", DisplayName: "Retained deletions", Description: "Tags kept because deletionPolicy is Retain.", XDescriptors: []string{xNumber}},
		},
	},
	"AzureMetadata": {
		displayName: "Azure Metadata",
		description: "A tag request for Azure resources: which tags to add, update or delete, which to leave alone, in which subscriptions and resource groups.",
		spec: []v1alpha1.SpecDescriptor{
			opcode,
			{Path: "resourceTags", DisplayName: "Tags", Description: "The tags (name: value) to add, update or delete.", XDescriptors: []string{xText}},
			{Path: "ignoreTags", DisplayName: "Ignored tags", Description: "Tags never written.", XDescriptors: []string{xText}},
			{Path: "subscriptions", DisplayName: "Subscriptions", Description: "Where to look (empty: the credential's).", XDescriptors: []string{xText}},
			{Path: "suspend", DisplayName: "Suspend", Description: "Read and report, write nothing.", XDescriptors: []string{xBool}},
		},
		status: providerStatus,
	},
	"AWSMetadata": {
		displayName: "AWS Metadata",
		description: "A tag request for AWS resources: which tags to add, update or delete, which to leave alone, in which regions.",
		spec: []v1alpha1.SpecDescriptor{
			opcode,
			{Path: "resourceTags", DisplayName: "Tags", Description: "The tags (name: value) to add, update or delete.", XDescriptors: []string{xText}},
			{Path: "ignoreTags", DisplayName: "Ignored tags", Description: "Tags never written.", XDescriptors: []string{xText}},
			{Path: "regions", DisplayName: "Regions", Description: "Where to look.", XDescriptors: []string{xText}},
			{Path: "suspend", DisplayName: "Suspend", Description: "Read and report, write nothing.", XDescriptors: []string{xBool}},
		},
		status: providerStatus,
	},
}

// ownedCRDs describes each owned kind at its storage version.
func ownedCRDs(crds map[string]*apiextensionsv1.CustomResourceDefinition) ([]v1alpha1.CRDDescription, error) {
	var out []v1alpha1.CRDDescription
	for _, kind := range ownedKinds {
		crd := crds[kind]
		d, ok := descriptions[kind]
		if !ok {
			return nil, fmt.Errorf("no description of the owned kind %s", kind)
		}
		version := ""
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				version = v.Name
			}
		}
		out = append(out, v1alpha1.CRDDescription{
			Name: crd.Name, Version: version, Kind: kind,
			DisplayName: d.displayName, Description: d.description,
			SpecDescriptors: d.spec, StatusDescriptors: d.status,
		})
	}
	return out, nil
}
