// Package nodetags is the NodeTagSync controller: it keeps the tags of the
// nodes' cloud resources (Azure VMs and scale sets, AWS EC2 instances and
// Auto Scaling groups) and node labels in agreement with a per-node
// three-way merge (docs/architecture.md). One reconcile is a pass over every node a
// NodeTagSync selects: one bulk cloud read, one write per resource that
// changed, one patch per Node that changed, nothing when nothing changed.
package nodetags
