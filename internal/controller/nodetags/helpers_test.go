package nodetags_test

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

type metav1LabelSelector = metav1.LabelSelector

func nodeObject(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func setLabel(h *harness, node, key, value string) {
	h.t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value)
	if err := h.c.Patch(h.ctx, nodeObject(node), client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		h.t.Fatal(err)
	}
}

// removeLabel removes the labels keys from the node in one write.
func removeLabel(h *harness, node string, keys ...string) {
	h.t.Helper()
	nulls := make(map[string]any, len(keys))
	for _, k := range keys {
		nulls[k] = nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": nulls}})
	if err := h.c.Patch(h.ctx, nodeObject(node), client.RawPatch("application/merge-patch+json", patch)); err != nil {
		h.t.Fatal(err)
	}
}

func setTaints(h *harness, node, taintsJSON string) {
	h.t.Helper()
	patch := fmt.Sprintf(`{"spec":{"taints":%s}}`, taintsJSON)
	if err := h.c.Patch(h.ctx, nodeObject(node), client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		h.t.Fatal(err)
	}
}

func clientKey(name string) client.ObjectKey { return client.ObjectKey{Name: name} }

// nodeVersions are the resourceVersions of the Nodes named.
func (h *harness) nodeVersions(names ...string) []string {
	h.t.Helper()
	out := make([]string, len(names))
	for i, n := range names {
		var node corev1.Node
		if err := h.c.Get(h.ctx, clientKey(n), &node); err != nil {
			h.t.Fatal(err)
		}
		out[i] = node.ResourceVersion
	}
	return out
}
