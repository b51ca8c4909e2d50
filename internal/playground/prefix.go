package playground

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// newPrefix is the label prefix the last act moves the labels to.
const newPrefix = "corp.tags"

// prefixMoved changes the NodeTagSync's labelPrefix on the live object, as
// `helm upgrade --set nodeTagSync.spec.labelPrefix=…` does: the labels move
// to the new prefix and no tag is deleted (a merge base made under the old
// prefix is no base for the new one).
func (pg *playground) prefixMoved() Step {
	var before map[string]map[string]string
	old := pg.codec
	synced := 0
	return Step{
		Name: "labelPrefix changed live → labels move",
		Action: func(ctx context.Context) error {
			before = map[string]map[string]string{}
			synced = 0
			for _, r := range pg.layout.resources() {
				t, err := pg.sim.Tags(r.ID)
				if err != nil {
					return err
				}
				before[r.ID] = t
				synced += len(t)
			}
			body, err := json.Marshal(map[string]any{"spec": map[string]any{"labelPrefix": newPrefix}})
			if err != nil {
				return err
			}
			if err := pg.patchNodeTagSync(ctx, body); err != nil {
				return fmt.Errorf("changing the labelPrefix of NodeTagSync %s: %w", syncName, err)
			}
			pg.codec.Prefix = newPrefix
			return nil
		},
		Check: func(ctx context.Context) (string, error) {
			moved := 0
			for _, r := range pg.layout.resources() {
				if t, _ := pg.sim.Tags(r.ID); !maps.Equal(t, before[r.ID]) {
					return "", permanent(fmt.Errorf("the tags of %s changed from %s to %s when the label prefix changed",
						r.Name, show(before[r.ID]), show(t)))
				}
				if err := pg.inSync(ctx, r); err != nil {
					return "", err
				}
				if err := pg.noLabelsUnder(ctx, old.Prefix, r); err != nil {
					return "", err
				}
				want, _ := pg.codec.ToLabels(before[r.ID])
				moved += len(want) * len(pg.layout.nodesOf(r))
			}
			nts, err := pg.nodeTagSync(ctx)
			if err != nil {
				return "", err
			}
			ready := meta.FindStatusCondition(nts.Status.Conditions, v1alpha1.ConditionReady)
			if nts.Status.ObservedGeneration != nts.Generation || ready == nil || ready.Status != "True" {
				return "", fmt.Errorf("NodeTagSync %s has not reported a pass of the new prefix as Ready yet", syncName)
			}
			return fmt.Sprintf("labelPrefix %s → %s: %d labels moved on %d nodes, 0 of %d tags deleted",
				old.Prefix, newPrefix, moved, len(pg.layout.managed()), synced), nil
		},
	}
}

// noLabelsUnder checks that r's Nodes carry no label under prefix.
func (pg *playground) noLabelsUnder(ctx context.Context, prefix string, r *resource) error {
	codec := pg.codec
	codec.Prefix = prefix
	have, err := pg.labelsOf(ctx, codec)
	if err != nil {
		return err
	}
	for _, n := range pg.layout.nodesOf(r) {
		if len(have[n.Name]) > 0 {
			return fmt.Errorf("node %s still has labels under %s: %s", n.Name, prefix, show(have[n.Name]))
		}
	}
	return nil
}
