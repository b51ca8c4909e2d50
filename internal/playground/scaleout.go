package playground

import (
	"context"
	"fmt"
	"path"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// scaleOut adds an instance to a Uniform scale set and registers its Node
// the way a kubelet with --register-with-taints does: tainted
// nodetags.tagsync.io/pending:NoSchedule. The pass that gives the Node its
// labels removes the taint in the same write.
func (pg *playground) scaleOut() Step {
	r := pg.layout.Pool1
	var added *node
	return Step{
		Name: "scale-out → labelled, then schedulable",
		Action: func(ctx context.Context) error {
			ids, err := pg.sim.AddInstances(r.ID, 1)
			if err != nil {
				return err
			}
			n, _ := strconv.ParseInt(path.Base(ids[0]), 10, 64)
			name := fmt.Sprintf("%s%06s", r.Name, strconv.FormatInt(n, 36))
			added = &node{Name: name, ProviderID: "azure://" + ids[0], Labels: nodeLabels(name, poolName(r.Name)), Resource: r}
			pg.layout.Nodes = append(pg.layout.Nodes, added)
			return pg.cp.client.Create(ctx, &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: added.Labels},
				Spec: corev1.NodeSpec{ProviderID: added.ProviderID, Taints: []corev1.Taint{
					{Key: v1alpha1.NodeTagsPendingTaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
			})
		},
		Check: func(ctx context.Context) (string, error) {
			var obj corev1.Node
			if err := pg.cp.client.Get(ctx, types.NamespacedName{Name: added.Name}, &obj); err != nil {
				return "", err
			}
			for _, t := range obj.Spec.Taints {
				if t.Key == v1alpha1.NodeTagsPendingTaintKey {
					return "", fmt.Errorf("node %s still carries the pending taint", added.Name)
				}
			}
			if err := pg.inSync(ctx, r); err != nil {
				return "", permanent(fmt.Errorf("the pending taint went before the labels came: %w", err))
			}
			return fmt.Sprintf("new node %s registered tainted %s:NoSchedule → labelled from %s and untainted in one write",
				short(added), v1alpha1.NodeTagsPendingTaintKey, r.Name), nil
		},
	}
}
