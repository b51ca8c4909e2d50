package nodetags

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/tags"
)

func TestUnitOnlyTheExactWriteIsItsEcho(t *testing.T) {
	pending := corev1.Taint{Key: v1alpha1.NodeTagsPendingTaintKey, Effect: corev1.TaintEffectNoSchedule}
	old := &cachedNode{ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "41",
		Labels: map[string]string{"pool": "a", "azure.tags/env": "prod"}}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{pending}}}
	write := nodeUpdate{NodeUpdate: kit.NodeUpdate{Labels: tags.LabelChanges{Set: map[string]string{"azure.tags/env": "staging"}, Delete: []string{"pool"}},
		Record: `{"env":"staging"}`, Taints: []corev1.Taint{}}}
	echo := func(edit func(*cachedNode)) *cachedNode {
		n := &cachedNode{ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "42",
			Labels: map[string]string{"azure.tags/env": "staging"}, Annotations: map[string]string{v1alpha1.LastSyncedTagsAnnotation: `{"env":"staging"}`}}}
		if edit != nil {
			edit(n)
		}
		return n
	}
	cases := []struct {
		name    string
		from    string
		updated *cachedNode
		want    bool
	}{
		{"the write alone", "41", echo(nil), true},
		{"written on another version", "40", echo(nil), false},
		{"another label changed too", "41", echo(func(n *cachedNode) { n.Labels["team"] = "x" }), false},
		{"a label the write set, changed again", "41", echo(func(n *cachedNode) { n.Labels["azure.tags/env"] = "dev" }), false},
		{"another base", "41", echo(func(n *cachedNode) { n.Annotations[v1alpha1.LastSyncedTagsAnnotation] = "{}" }), false},
		{"a taint added", "41", echo(func(n *cachedNode) { n.Spec.Taints = []corev1.Taint{pending} }), false},
		{"the providerID changed", "41", echo(func(n *cachedNode) { n.Spec.ProviderID = "azure:///x" }), false},
	}
	for _, tc := range cases {
		var w kit.InFlight[string]
		w.Expect("n", tc.from, write.patch())
		if got := isEcho(&w, old, tc.updated); got != tc.want {
			t.Errorf("%s: echo %v, want %v", tc.name, got, tc.want)
		}
		if got := isEcho(&w, old, tc.updated); got {
			t.Errorf("%s: recognised twice; an echo is consumed", tc.name)
		}
	}
}
