package playground

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/tags"
)

// managedLabels returns, per Node name, the labels under the sync's prefix.
func (pg *playground) managedLabels(ctx context.Context) (map[string]map[string]string, error) {
	return pg.labelsOf(ctx, pg.codec)
}

// labelsOf returns, per Node name, the labels codec manages.
func (pg *playground) labelsOf(ctx context.Context, codec tags.Codec) (map[string]map[string]string, error) {
	var list corev1.NodeList
	if err := pg.cp.client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing Nodes: %w", err)
	}
	out := map[string]map[string]string{}
	for _, n := range list.Items {
		m := map[string]string{}
		for k, v := range n.Labels {
			if codec.IsManaged(k) {
				m[k] = v
			}
		}
		out[n.Name] = m
	}
	return out, nil
}

// wantLabels returns the labels r's current tags map to.
func (pg *playground) wantLabels(r *resource) (map[string]string, error) {
	t, err := pg.sim.Tags(r.ID)
	if err != nil {
		return nil, err
	}
	labels, _ := pg.codec.ToLabels(t)
	return labels, nil
}

// inSync checks that every Node of r carries exactly the labels r's tags
// map to, and a stored base (the controller's record of the agreement).
func (pg *playground) inSync(ctx context.Context, r *resource) error {
	want, err := pg.wantLabels(r)
	if err != nil {
		return err
	}
	have, err := pg.managedLabels(ctx)
	if err != nil {
		return err
	}
	for _, n := range pg.layout.nodesOf(r) {
		if !maps.Equal(have[n.Name], want) {
			return fmt.Errorf("node %s has labels %s, want %s (the tags of %s)", n.Name, show(have[n.Name]), show(want), r.Name)
		}
	}
	return pg.hasBase(ctx, pg.layout.nodesOf(r))
}

// hasBase checks that the Nodes carry the controller's base annotation.
func (pg *playground) hasBase(ctx context.Context, nodes []*node) error {
	for _, n := range nodes {
		var obj corev1.Node
		if err := pg.cp.client.Get(ctx, types.NamespacedName{Name: n.Name}, &obj); err != nil {
			return err
		}
		if _, ok := obj.Annotations[v1alpha1.LastSyncedTagsAnnotation]; !ok {
			return fmt.Errorf("node %s has no %s annotation yet", n.Name, v1alpha1.LastSyncedTagsAnnotation)
		}
	}
	return nil
}

// tagIs checks one tag of r.
func (pg *playground) tagIs(r *resource, name, value string) error {
	t, err := pg.sim.Tags(r.ID)
	if err != nil {
		return err
	}
	if v, ok := t[name]; !ok || v != value {
		return fmt.Errorf("%s has tags %s, want %s=%s", r.Name, show(t), name, value)
	}
	return nil
}

// labelIs checks one label of a Node.
func (pg *playground) labelIs(ctx context.Context, n *node, key, value string) error {
	have, err := pg.managedLabels(ctx)
	if err != nil {
		return err
	}
	if v, ok := have[n.Name][key]; !ok || v != value {
		return fmt.Errorf("node %s has labels %s, want %s=%s", n.Name, show(have[n.Name]), key, value)
	}
	return nil
}

// setLabel sets (or, with value nil, removes) one label on a Node, as a
// user running kubectl label would.
func (pg *playground) setLabel(ctx context.Context, n *node, key string, value *string) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{key: value}}})
	if err != nil {
		return err
	}
	obj := &corev1.Node{}
	obj.Name = n.Name
	if err := pg.cp.client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("labelling node %s: %w", n.Name, err)
	}
	return nil
}

// requestSync asks the controller for a pass with fresh cloud reads now,
// instead of waiting for the resync interval, by setting the NodeTagSync's
// sync-request annotation to a new value.
func (pg *playground) requestSync(ctx context.Context) error {
	pg.syncRequests++
	value := strconv.Itoa(pg.syncRequests) + "-" + time.Now().UTC().Format(time.RFC3339Nano)
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		v1alpha1.SyncRequestAnnotation: value,
	}}})
	if err != nil {
		return err
	}
	if err := pg.patchNodeTagSync(ctx, body); err != nil {
		return fmt.Errorf("requesting a sync on NodeTagSync %s: %w", syncName, err)
	}
	return nil
}

// patchNodeTagSync applies a JSON merge patch to the NodeTagSync.
func (pg *playground) patchNodeTagSync(ctx context.Context, body []byte) error {
	nts := &v1alpha1.NodeTagSync{}
	nts.Name = syncName
	return pg.cp.client.Patch(ctx, nts, client.RawPatch(types.MergePatchType, body))
}

// nodeTagSync reads the NodeTagSync.
func (pg *playground) nodeTagSync(ctx context.Context) (*v1alpha1.NodeTagSync, error) {
	var nts v1alpha1.NodeTagSync
	if err := pg.cp.client.Get(ctx, types.NamespacedName{Name: syncName}, &nts); err != nil {
		return nil, fmt.Errorf("reading NodeTagSync %s: %w", syncName, err)
	}
	return &nts, nil
}

// syncStatus renders the NodeTagSync's status in one line.
func (pg *playground) syncStatus(ctx context.Context) (string, error) {
	nts, err := pg.nodeTagSync(ctx)
	if err != nil {
		return "", err
	}
	st := nts.Status
	ready := "unknown"
	for _, c := range st.Conditions {
		if c.Type == v1alpha1.ConditionReady {
			ready = string(c.Status)
		}
	}
	return fmt.Sprintf("%d nodes synced, %d unmanaged, %d conflicts, %d errors, Ready=%s",
		st.SyncedNodes, st.UnmanagedNodes, st.ConflictCount, st.ErrorCount, ready), nil
}

// eventSince returns the newest event with reason about the named object
// (any kind) emitted at or after since, or an error saying none is there.
func (pg *playground) eventSince(ctx context.Context, reason string, since time.Time, names ...string) (*eventsv1.Event, error) {
	var list eventsv1.EventList
	if err := pg.cp.client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing events: %w", err)
	}
	var found *eventsv1.Event
	for i := range list.Items {
		e := &list.Items[i]
		at := e.EventTime.Time
		if at.IsZero() {
			at = e.CreationTimestamp.Time
		}
		if e.Reason != reason || at.Before(since.Add(-time.Second)) || !slices.Contains(names, e.Regarding.Name) {
			continue
		}
		if found == nil || at.After(found.EventTime.Time) {
			found = e
		}
	}
	if found == nil {
		return nil, fmt.Errorf("no %s event about %s yet", reason, strings.Join(names, " or "))
	}
	return found, nil
}

// show renders a map as {a=1, b=2}, sorted.
func show(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
