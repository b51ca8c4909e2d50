package playground

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"
)

// scenario is the scripted story the demo plays, in order. Each step
// changes one thing where a user or the platform would (the portal, kubectl,
// a node-pool reconcile) and checks where the change must arrive.
func scenario(pg *playground) []Step {
	var workloads workloadIDs
	return []Step{
		pg.initialSync(),
		pg.portalEdit(),
		pg.labelToScaleSet(),
		pg.scaleOut(),
		pg.poolRewrite(),
		pg.nodesDisagree(),
		pg.conflictResolved(),
		pg.wipeRepaired(),
		pg.spacedTagToLabel(),
		pg.labelToSpacedTag(),
		pg.metadataApply(),
		pg.metadataRevert(),
		pg.metadataDelete(),
		pg.metadataApproved(),
		pg.workloadTags(&workloads),
		pg.workloadRetag(&workloads),
		pg.eventEdit(),
		pg.prefixMoved(),
		pg.hostLabelToNode(),
		pg.nodeEditReverted(),
	}
}

// costCenter is a tag name with a space, which label keys cannot hold.
const costCenter = "Cost Center"

func strp(s string) *string { return &s }

// short names a Node of a scale set by what tells it apart in its pool
// ("…vmss000001").
func short(n *node) string {
	if i := strings.LastIndex(n.Name, "-"); i >= 0 {
		return "…" + n.Name[i+1:]
	}
	return n.Name
}

// initialSync starts the controller: every Azure node gets its resource's
// tags as labels, the on-prem node nothing, and no tag changes.
func (pg *playground) initialSync() Step {
	l := pg.layout
	return Step{
		Name: "initial sync",
		Action: func(context.Context) error {
			pg.ctl.start(pg.runCtx, pg.cancelRun)
			return nil
		},
		Check: func(ctx context.Context) (string, error) {
			for _, r := range l.resources() {
				if err := pg.inSync(ctx, r); err != nil {
					return "", err
				}
				if t, _ := pg.sim.Tags(r.ID); !maps.Equal(t, r.Tags) {
					return "", permanent(fmt.Errorf("the tags of %s changed from %s to %s: a first sync must not write tags nobody asked for",
						r.Name, show(r.Tags), show(t)))
				}
			}
			onprem := l.OnPrem
			have, err := pg.managedLabels(ctx)
			if err != nil {
				return "", err
			}
			if len(have[onprem.Name]) > 0 {
				return "", permanent(fmt.Errorf("on-prem node %s got labels %s", onprem.Name, show(have[onprem.Name])))
			}
			nts, err := pg.nodeTagSync(ctx)
			if err != nil {
				return "", err
			}
			managed := len(l.managed())
			if st := nts.Status; int(st.SyncedNodes) != managed || st.UnmanagedNodes != 1 {
				return "", fmt.Errorf("NodeTagSync status reports %d synced and %d unmanaged nodes, want %d and 1",
					st.SyncedNodes, st.UnmanagedNodes, managed)
			}
			return fmt.Sprintf("%d nodes labelled from the tags of %d resources in 2 resource groups; on-prem node %s left alone",
				managed, len(l.resources()), onprem.Name), nil
		},
	}
}

// portalEdit changes a scale set's tag out of band, as the Azure portal
// does, and asks for a sync: the scale set's Nodes get the new value.
func (pg *playground) portalEdit() Step {
	r := pg.layout.Pool1
	key := pg.labelKey("env")
	return Step{
		Name: "portal edit → labels",
		Action: func(ctx context.Context) error {
			if err := pg.sim.SetTags(r.ID, map[string]string{"env": "staging"}); err != nil {
				return err
			}
			return pg.requestSync(ctx)
		},
		Check: func(ctx context.Context) (string, error) {
			for _, n := range pg.layout.nodesOf(r) {
				if err := pg.labelIs(ctx, n, key, "staging"); err != nil {
					return "", err
				}
			}
			if err := pg.inSync(ctx, r); err != nil {
				return "", err
			}
			return fmt.Sprintf("portal sets env=staging on %s → %s=staging on its %d nodes",
				r.Name, key, len(pg.layout.nodesOf(r))), nil
		},
	}
}

// labelToScaleSet labels one Node of a Uniform scale set: the tag lands on
// the scale set and fans out to its other Nodes.
func (pg *playground) labelToScaleSet() Step {
	r := pg.layout.Pool1
	n := pg.layout.nodesOf(r)[0]
	return pg.labelStep("label → scale set", r, n, "owner", "team-a", func(ctx context.Context) (string, error) {
		if err := pg.inSync(ctx, r); err != nil {
			return "", err
		}
		return fmt.Sprintf("%s=team-a on node %s → tag owner=team-a on %s → its other %d nodes",
			pg.labelKey("owner"), short(n), r.Name, len(pg.layout.nodesOf(r))-1), nil
	})
}

// labelStep sets the label of tag on n to value; its check waits for r's
// tag to follow and then runs rest.
func (pg *playground) labelStep(name string, r *resource, n *node, tag, value string, rest func(context.Context) (string, error)) Step {
	key := pg.labelKey(tag)
	return Step{
		Name: name,
		Action: func(ctx context.Context) error {
			return pg.setLabel(ctx, n, key, strp(value))
		},
		Check: func(ctx context.Context) (string, error) {
			if err := pg.tagIs(r, tag, value); err != nil {
				return "", err
			}
			return rest(ctx)
		},
	}
}

// nodesDisagree gives two Nodes of one scale set different values for a
// tag within one sync pass: a conflict, reported, with nothing written.
func (pg *playground) nodesDisagree() Step {
	r := pg.layout.Pool2
	nodes := pg.layout.nodesOf(r)
	a, b := nodes[0], nodes[1]
	key := pg.labelKey("env")
	var since time.Time
	return Step{
		Name: "nodes disagree → conflict",
		Action: func(ctx context.Context) error {
			since = time.Now()
			return pg.duringOnePass(ctx, func() error {
				if err := pg.setLabel(ctx, a, key, strp("qa")); err != nil {
					return err
				}
				return pg.setLabel(ctx, b, key, strp("perf"))
			})
		},
		Check: func(ctx context.Context) (string, error) {
			if err := pg.tagIs(r, "env", "dev"); err != nil {
				return "", permanent(fmt.Errorf("a disagreement must not be written: %w", err))
			}
			for _, want := range []struct {
				n *node
				v string
			}{{a, "qa"}, {b, "perf"}} {
				if err := pg.labelIs(ctx, want.n, key, want.v); err != nil {
					return "", permanent(fmt.Errorf("a label in conflict must be left alone: %w", err))
				}
			}
			if _, err := pg.eventSince(ctx, "TagConflict", since, a.Name, b.Name); err != nil {
				return "", err
			}
			if err := pg.conflictListed(ctx, r, "env"); err != nil {
				return "", err
			}
			return fmt.Sprintf("in one pass %s labelled env=qa, %s env=perf → TagConflict events + status entry; %s keeps env=dev",
				short(a), short(b), r.Name), nil
		},
	}
}

// duringOnePass runs change while the controller is inside a sync pass: it
// holds the controller's next cloud read, asks for a sync, makes the change
// once the pass is waiting on the cloud, and lets the read go. The pass
// started before the change; the next one sees all of it at once.
func (pg *playground) duringOnePass(ctx context.Context, change func() error) error {
	held, release := pg.provider.hold()
	defer release()
	if err := pg.requestSync(ctx); err != nil {
		return err
	}
	timer := time.NewTimer(pg.opts.StepTimeout)
	defer timer.Stop()
	select {
	case <-held:
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-timer.C:
		return errors.New("the controller did not start a sync pass after the sync request")
	}
	return change()
}

// conflictListed checks that the NodeTagSync's status lists a conflict on
// tag of r.
func (pg *playground) conflictListed(ctx context.Context, r *resource, tag string) error {
	nts, err := pg.nodeTagSync(ctx)
	if err != nil {
		return err
	}
	for _, c := range nts.Status.Conflicts {
		if strings.EqualFold(c.Resource, r.ID) && strings.EqualFold(c.Tag, tag) {
			return nil
		}
	}
	return fmt.Errorf("NodeTagSync status lists no conflict on tag %s of %s (%d conflicts listed)", tag, r.Name, len(nts.Status.Conflicts))
}

// conflictResolved makes the second Node agree: the value is written and
// the pool's third Node follows.
func (pg *playground) conflictResolved() Step {
	r := pg.layout.Pool2
	b := pg.layout.nodesOf(r)[1]
	return pg.labelStep("conflict resolved", r, b, "env", "qa", func(ctx context.Context) (string, error) {
		if err := pg.inSync(ctx, r); err != nil {
			return "", err
		}
		nts, err := pg.nodeTagSync(ctx)
		if err != nil {
			return "", err
		}
		if n := nts.Status.ConflictCount; n != 0 {
			return "", fmt.Errorf("NodeTagSync status still reports %d conflicts", n)
		}
		return fmt.Sprintf("%s agrees (env=qa) → tag env=qa on %s, its third node follows, no conflict left", short(b), r.Name), nil
	})
}

// wipeRepaired rewrites a scale set's tags wholesale, as an AKS node-pool
// reconcile can: detected, reported, and repaired from the labels, with no
// label deleted on the way.
func (pg *playground) wipeRepaired() Step {
	r := pg.layout.Pool1
	return pg.rewrite("node-pool reconcile wipe", r, func(map[string]string) map[string]string { return map[string]string{} },
		"TagsWiped", func(before map[string]string) string {
			return fmt.Sprintf("tags of %s rewritten to {} → TagsWiped event, %d tags restored from the labels, no label lost",
				r.Name, len(before))
		})
}

// poolRewrite rewrites a scale set's tags to the pool's declared set, as
// `az aks nodepool update --tags`, an upgrade's node-pool reconcile or a
// Terraform apply do: the pool's own tags stay, the tag tagsync copied up
// from a label (owner) vanishes. tagsync puts it back (TagsRestored) and
// no Node loses a label.
func (pg *playground) poolRewrite() Step {
	r := pg.layout.Pool1
	declared := func(before map[string]string) map[string]string {
		out := maps.Clone(before)
		delete(out, "owner")
		return out
	}
	return pg.rewrite("node-pool tags rewritten → copies put back", r, declared, "TagsRestored", func(before map[string]string) string {
		return fmt.Sprintf("the pool's tags of %s rewritten to its declared set (owner, copied up from a label, gone) → "+
			"TagsRestored event, owner=%s put back, 0 of %d labels lost", r.Name, before["owner"], len(before)*len(pg.layout.nodesOf(r)))
	})
}

// rewrite is a step in which the platform replaces r's tags with
// declared(its tags): the check waits for every tag to be back, no label
// of r's Nodes lost on the way, and an event of reason; say describes it
// from the tags before.
func (pg *playground) rewrite(name string, r *resource, declared func(map[string]string) map[string]string, reason string,
	say func(before map[string]string) string) Step {
	var before map[string]string
	var since time.Time
	var lost error
	return Step{
		Name: name,
		Action: func(ctx context.Context) error {
			var err error
			if before, err = pg.sim.Tags(r.ID); err != nil {
				return err
			}
			since = time.Now()
			if err := pg.sim.ReplaceTags(r.ID, declared(before)); err != nil {
				return err
			}
			return pg.requestSync(ctx)
		},
		Check: func(ctx context.Context) (string, error) {
			if lost == nil {
				lost = pg.labelsKept(ctx, r, before)
			}
			if lost != nil {
				return "", permanent(lost)
			}
			if t, _ := pg.sim.Tags(r.ID); !maps.Equal(t, before) {
				return "", fmt.Errorf("%s has tags %s, want them restored to %s", r.Name, show(t), show(before))
			}
			if _, err := pg.eventSince(ctx, reason, since, syncName); err != nil {
				return "", err
			}
			return say(before), nil
		},
	}
}

// labelsKept reports a label of r's Nodes that vanished (nil if none).
func (pg *playground) labelsKept(ctx context.Context, r *resource, tags map[string]string) error {
	want, _ := pg.codec.ToLabels(tags)
	have, err := pg.managedLabels(ctx)
	if err != nil {
		return nil // cannot tell now; the next poll will
	}
	for _, n := range pg.layout.nodesOf(r) {
		for k, v := range want {
			if have[n.Name][k] != v {
				return fmt.Errorf("label %s=%s vanished from node %s after the rewrite (labels now %s)", k, v, n.Name, show(have[n.Name]))
			}
		}
	}
	return nil
}

// spacedTagToLabel adds a tag whose name has a space: it arrives as an
// escaped label key.
func (pg *playground) spacedTagToLabel() Step {
	r := pg.layout.AvSet
	n := pg.layout.nodesOf(r)[0]
	key := pg.labelKey(costCenter)
	return Step{
		Name: "tag with a space → label",
		Action: func(ctx context.Context) error {
			if err := pg.sim.SetTags(r.ID, map[string]string{costCenter: "4711"}); err != nil {
				return err
			}
			return pg.requestSync(ctx)
		},
		Check: func(ctx context.Context) (string, error) {
			if err := pg.labelIs(ctx, n, key, "4711"); err != nil {
				return "", err
			}
			return fmt.Sprintf("portal sets %q=4711 on %s → label %s=4711 on its node", costCenter, r.Name, key), nil
		},
	}
}

// labelToSpacedTag changes that label: the tag keeps its name, space
// included, and no second tag appears.
func (pg *playground) labelToSpacedTag() Step {
	r := pg.layout.AvSet
	n := pg.layout.nodesOf(r)[0]
	return pg.labelStep("label → tag with a space", r, n, costCenter, "4712", func(context.Context) (string, error) {
		want := maps.Clone(r.Tags)
		want[costCenter] = "4712"
		if t, _ := pg.sim.Tags(r.ID); !maps.Equal(t, want) {
			return "", permanent(fmt.Errorf("%s has tags %s, want exactly %s", r.Name, show(t), show(want)))
		}
		return fmt.Sprintf("%s=4712 on its node → tag %q=4712 on %s, no other tag added", pg.labelKey(costCenter), costCenter, r.Name), nil
	})
}

// labelKey is the label key a tag name maps to.
func (pg *playground) labelKey(tag string) string {
	k, err := pg.codec.LabelKey(tag)
	if err != nil { // the scenario's tag names are all representable
		panic(fmt.Sprintf("tag %q has no label key: %v", tag, err))
	}
	return k
}
