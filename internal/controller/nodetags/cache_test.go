package nodetags

import (
	"maps"
	"reflect"
	"strconv"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/tags"
)

func TestTrimNodeKeepsWhatTheControllerReadsAndSharesStrings(t *testing.T) {
	mk := func(name string) *corev1.Node {
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "7",
				Labels:        map[string]string{string([]byte("agentpool")): string([]byte("pool1"))},
				Annotations:   map[string]string{v1alpha1.LastSyncedTagsAnnotation: `{"env":"prod"}`, "node.alpha.kubernetes.io/ttl": "0"},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
			Spec: corev1.NodeSpec{ProviderID: "azure:///x", PodCIDR: "10.0.0.0/24",
				Taints: []corev1.Taint{{Key: v1alpha1.NodeTagsPendingTaintKey, Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"img"}}}},
		}
	}
	a, _ := TrimNode(mk("a"))
	b, _ := TrimNode(mk("b"))
	na, nb := a.(*cachedNode), b.(*cachedNode)
	if na.Spec.ProviderID != "azure:///x" || !kit.HasTaint(na.Spec.Taints, v1alpha1.NodeTagsPendingTaintKey) || na.Labels["agentpool"] != "pool1" ||
		na.Annotations[v1alpha1.LastSyncedTagsAnnotation] != `{"env":"prod"}` || na.ResourceVersion != "7" {
		t.Fatalf("trimNode dropped something the controller reads: %+v", na)
	}
	if na.ManagedFields != nil || na.Spec.PodCIDR != "" || len(na.Annotations) != 1 {
		t.Fatalf("trimNode kept what the controller never reads: %+v", na)
	}
	if na.Kind != "Node" || na.APIVersion != "v1" {
		t.Fatalf("the cached node does not name its kind (events about it need it): %+v", na.TypeMeta)
	}
	if unsafe.StringData(na.Labels["agentpool"]) != unsafe.StringData(nb.Labels["agentpool"]) {
		t.Fatal("equal label values of two Nodes are not shared")
	}
}

func TestTrimNodeSharesEqualLabelMapsAndKeepsTheHostnameSelectable(t *testing.T) {
	mk := func(name, host string) *corev1.Node {
		l := map[string]string{"agentpool": "pool1", "topology.kubernetes.io/zone": "westeurope-1"}
		if host != "" {
			l[corev1.LabelHostname] = host
		}
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l,
			Annotations: map[string]string{v1alpha1.LastSyncedTagsAnnotation: `{"env":"prod"}`, "other": "x"}}}
	}
	trim := func(n *corev1.Node) *cachedNode {
		out, err := TrimNode(n)
		if err != nil {
			t.Fatal(err)
		}
		return out.(*cachedNode)
	}
	a, b := trim(mk("a", "a")), trim(mk("b", "b"))
	if reflect.ValueOf(a.Labels).UnsafePointer() != reflect.ValueOf(b.Labels).UnsafePointer() {
		t.Fatal("two Nodes whose labels differ only in their own hostname do not share one label map")
	}
	if reflect.ValueOf(a.Annotations).UnsafePointer() != reflect.ValueOf(b.Annotations).UnsafePointer() {
		t.Fatal("two Nodes with the same base do not share one annotation map")
	}

	odd, none := trim(mk("c", "not-c")), trim(mk("d", ""))
	for _, tc := range []struct {
		selector string
		node     *cachedNode
		want     bool
	}{
		{"kubernetes.io/hostname=a", a, true},
		{"kubernetes.io/hostname=b", a, false},
		{"kubernetes.io/hostname in (a, b)", b, true},
		{"kubernetes.io/hostname", a, true},
		{"!kubernetes.io/hostname", a, false},
		{"kubernetes.io/hostname=not-c", odd, true},
		{"kubernetes.io/hostname=c", odd, false},
		{"kubernetes.io/hostname", none, false},
		{"!kubernetes.io/hostname", none, true},
		{"agentpool=pool1,topology.kubernetes.io/zone=westeurope-1", a, true},
	} {
		sel, err := labels.Parse(tc.selector)
		if err != nil {
			t.Fatal(err)
		}
		if got := sel.Matches(nodeLabels{tc.node}); got != tc.want {
			t.Errorf("%q on node %s (hostname label %q): matches %v, want %v", tc.selector, tc.node.Name,
				tc.node.Labels[corev1.LabelHostname], got, tc.want)
		}
	}

	before := maps.Clone(a.Labels)
	obj, err := TrimNode(a) // client-go may transform an object twice
	if err != nil {
		t.Fatal(err)
	}
	again := obj.(*cachedNode)
	if !maps.Equal(a.Labels, before) || reflect.ValueOf(again.Labels).UnsafePointer() != reflect.ValueOf(b.Labels).UnsafePointer() {
		t.Fatalf("transforming a cached Node again changed or unshared its labels: %v", again.Labels)
	}
	if _, skipped := (tags.Codec{}).FromLabels(a.Labels); len(skipped) != 0 {
		t.Fatalf("an unprefixed codec reads the hostname marker as a tag: %v", skipped)
	}
}

func TestMapTableStaysBounded(t *testing.T) {
	table := newMapTable(8)
	first := table.intern(map[string]string{"k": "0"})
	for i := range 100 {
		table.intern(map[string]string{"k": strconv.Itoa(i)})
		if n := table.size(); n > 16 {
			t.Fatalf("after %d distinct maps the table remembers %d, more than two generations of 8", i+1, n)
		}
	}
	if got := table.intern(map[string]string{"k": "99"}); got["k"] != "99" {
		t.Fatalf("interned map holds %v", got)
	}
	if first["k"] != "0" {
		t.Fatalf("a map handed out earlier changed: %v", first)
	}
}
