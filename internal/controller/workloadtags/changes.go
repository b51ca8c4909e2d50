package workloadtags

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/controller/kit"
)

// Cloud changes (the events Hub) turn into passes of the policies whose
// last pass read the changed resource (kit.ChangeIndex); that pass reads
// the changed resources fresh, past the search index's delay, so an
// outside edit of a policy's key is reverted within seconds. A change of a
// resource no policy read is left alone: a workload's new resource is
// found through Kubernetes (its PersistentVolume), not through the cloud.

// changeEvents is what the Reconciler needs to take cloud changes.
type changeEvents struct {
	subscriber kit.Subscriber
	index      kit.ChangeIndex[string] // by policy name

	mu   sync.Mutex
	read map[string]map[string]bool // policy → canonical IDs its last pass read
}

// UseEvents makes the controller take hub's changes.
func (e *changeEvents) UseEvents(hub *cloudchange.Hub) { e.subscriber.UseEvents(hub) }

// Route makes a change pending for the policies that read its resource
// (not the one whose own write made it) and enqueues them. A policy knows
// an EC2 resource by the bare ID its Kubernetes object names, a change by
// its ARN: both keys are routed (cloud.ChangeKeys).
func (r *Reconciler) Route(c cloudchange.Change) []string {
	var objs []string
	for _, key := range cloud.ChangeKeys(c.Resource) {
		found, _ := r.index.Route(key, c)
		for _, o := range found {
			if !slices.Contains(objs, o) {
				objs = append(objs, o)
			}
		}
	}
	reqs := make([]reconcile.Request, len(objs))
	for i, name := range objs {
		reqs[i] = reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}
	}
	r.subscriber.Enqueue(reqs...)
	return objs
}

// Overflow passes every policy: changes were dropped.
func (r *Reconciler) Overflow() {
	var reqs []reconcile.Request
	r.states.Each(func(name string, _ *state) {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	})
	r.subscriber.Enqueue(reqs...)
}

// indexRead records the resources a policy's pass read, so that their
// changes reach it.
func (e *changeEvents) indexRead(policy string, found []cloud.Classified) {
	ids := make(map[string]bool, len(found))
	for _, c := range found {
		ids[cloud.CanonicalID(c.ID)] = true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.read == nil {
		e.read = map[string]map[string]bool{}
	}
	prev := e.read[policy]
	for id := range prev {
		if !ids[id] {
			e.index.Remove(policy, id)
		}
	}
	for id := range ids {
		if !prev[id] {
			e.index.Add(policy, id)
		}
	}
	e.read[policy] = ids
}

// forgetRead drops a deleted policy from the index.
func (e *changeEvents) forgetRead(policy string) {
	e.indexRead(policy, nil)
	e.mu.Lock()
	delete(e.read, policy)
	e.mu.Unlock()
	e.index.Forget(policy)
}
