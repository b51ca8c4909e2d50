// Package workloadtags is the workload tags controller: a
// WorkloadTagPolicy makes the cloud resources a cluster's workloads cause
// carry tags drawn from Kubernetes — today the disk behind each bound
// PersistentVolume (an Azure managed disk, an EBS volume), tagged from its
// claim and the claim's namespace — and keeps them there.
//
// A pass reads as its stages: config.go (the policy checked and turned
// into templates), read.go (the selected workloads from the cache, the
// other policies, and the resources' tags in one bulk read; volumes.go
// maps a PersistentVolume to its resource), plan.go (pure: what each
// resource lacks, keys another policy contests left alone), write.go
// (coalesced, audited writes), report.go (status, events, metrics).
//
// The controller never deletes a tag: a key removed from a policy, or
// whose template no longer renders for a workload, is released and stays
// as it is. docs/workload-tags.md is the user's guide.
package workloadtags
