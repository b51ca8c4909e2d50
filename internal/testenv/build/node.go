package build

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeOption changes a Node being built: a Meta option, a Node option
// (ProviderID, Taints, Unschedulable) or a NodeFunc.
type NodeOption interface{ applyNode(*corev1.Node) }

// NodeFunc is any edit of a Node as an option.
type NodeFunc func(*corev1.Node)

func (f NodeFunc) applyNode(n *corev1.Node) { f(n) }

// Node is a Node named name with opts applied.
func Node(name string, opts ...NodeOption) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, o := range opts {
		o.applyNode(n)
	}
	return n
}

// ProviderID sets a Node's spec.providerID, e.g. "azure:///subscriptions/…"
// or "aws:///us-east-1a/i-…".
func ProviderID(id string) NodeFunc { return func(n *corev1.Node) { n.Spec.ProviderID = id } }

// Taints sets a Node's taints to taints (none: nil, as a literal with
// Taints: nil).
func Taints(taints ...corev1.Taint) NodeFunc { return func(n *corev1.Node) { n.Spec.Taints = taints } }

// Unschedulable cordons a Node.
func Unschedulable() NodeFunc { return func(n *corev1.Node) { n.Spec.Unschedulable = true } }

// NoSchedule is the taint key=value with effect NoSchedule.
func NoSchedule(key, value string) corev1.Taint {
	return corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffectNoSchedule}
}

// NoExecute is the taint key=value with effect NoExecute.
func NoExecute(key, value string) corev1.Taint {
	return corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffectNoExecute}
}
