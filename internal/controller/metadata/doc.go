// Package metadata is the metadata controller: it keeps the tags an
// AzureMetadata or AWSMetadata asks for on every cloud resource that carries
// one of a CloudMetadata's classifier tags (docs/metadata.md), and reverts
// outside edits of the tags an object holds there.
//
// A pass over a CloudMetadata reads its references and discovers the
// classified resources in bulk, plans each resource with the pure planner
// (tags.Lifecycle, through Request: `tagsync plan` shows the same plans),
// holds back what the safety controls keep (spec.suspend, deletionPolicy
// Retain, the mass-deletion guard with its approval annotation), writes the
// rest with the resources that need the same change grouped into shared
// cloud requests and every mutation audited, and reports the pass in
// metrics, events and one status patch per object that changed. Nothing is
// written when nothing changed, and nothing at all by an object whose
// references or tags are invalid. A cloud change of a resource a pass
// matched runs a targeted pass over the changed resources alone, planned
// and written as a full pass would.
package metadata
