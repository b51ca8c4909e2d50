package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/tags"
)

// cleanupFlags are the settings of `tagsync cleanup`.
type cleanupFlags struct {
	kube     *kubeFlags
	output   string
	apply    bool
	labels   bool
	selector string
	// labelPrefix is --label-prefix; prefixSet says it was given ("" is a
	// prefix: labels without one).
	labelPrefix string
	prefixSet   bool
}

// beforeCleanupPatch, when set, runs before each Node patch cleanup sends
// (tests make a concurrent edit there).
var beforeCleanupPatch func(node string)

// NewCleanupCommand returns `tagsync cleanup`, which removes from Nodes
// what tagsync wrote there for itself (annotations, pending taints) and,
// when asked, the labels the node sync synced, without touching any cloud.
func NewCleanupCommand() *cobra.Command {
	f := &cleanupFlags{}
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Remove tagsync's annotations and pending taints (and, with --labels, its synced labels) from Nodes",
		Long: `cleanup removes from the Nodes what tagsync keeps there for itself, for leaving
tagsync cleanly (after helm uninstall, or before):

  - the annotation tagsync.io/last-synced-tags (the node sync's merge base);
  - the taints nodetags.tagsync.io/pending and labelsync.tagsync.io/pending
    (any effect): a Node registered with them while tagsync is gone would
    stay unschedulable;
  - with --labels, the labels the node sync synced: a label is removed only
    when the Node's merge base names it (its tag, encoded under the base's
    label prefix) and its value is still the base's. A label a person changed
    since, and every other label, stays. A base made under NodeToCloud
    removes none (that direction never writes labels).

It never touches a cloud tag, and no label is removed without --labels.
Without --apply it only reads and prints what it would change, per Node;
--apply writes it: one JSON merge patch per Node, guarded by the Node's
resourceVersion (a Node changed meanwhile is read again and re-planned).
--selector (-l) limits the Nodes.

A merge base in the older format (a bare JSON object of tags) records no
label prefix: for it --labels takes --label-prefix, else the prefix of the
oldest NodeTagSync that selects the Node, and says which; with neither, that
Node keeps its labels.

Exit codes:
  0  done (or shown, without --apply)
  1  the cluster could not be read, or a Node could not be patched
  2  wrong flags or arguments`,
		Example: `  tagsync cleanup                                 # what it would remove
  tagsync cleanup --apply                         # remove annotations and pending taints
  tagsync cleanup --labels --label-prefix azure.tags -l agentpool=nodepool1 --apply`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.prefixSet = cmd.Flags().Changed("label-prefix")
			return runCleanup(cmd, f)
		},
	}
	f.kube = addKubeFlags(cmd)
	fl := cmd.Flags()
	fl.BoolVar(&f.apply, "apply", false, "write the changes (without it cleanup only shows them)")
	fl.BoolVar(&f.labels, "labels", false, "also remove the labels the node sync synced that still carry the synced value")
	fl.StringVar(&f.labelPrefix, "label-prefix", "", "with --labels: the label prefix of bases that record none (the older format)")
	fl.StringVarP(&f.selector, "selector", "l", "", "only the Nodes this label selector selects (e.g. agentpool=nodepool1)")
	addOutputFlag(cmd, &f.output, "json and yaml: the changes as data")
	return cmd
}

// runCleanup plans every selected Node, writes the plan with --apply and
// prints it.
func runCleanup(cmd *cobra.Command, f *cleanupFlags) error {
	sel, err := labels.Parse(f.selector)
	if err != nil {
		return usageError(fmt.Errorf("--selector %q: %w", f.selector, err))
	}
	if f.prefixSet {
		if !f.labels {
			return usageError(fmt.Errorf("--label-prefix applies to --labels only"))
		}
		if err := (tags.Codec{Prefix: f.labelPrefix}).Validate(); err != nil {
			return usageError(fmt.Errorf("--label-prefix: %w", err))
		}
	}
	c, err := f.kube.client()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	what := "reading the Nodes"
	if f.apply {
		what = "cleaning up the Nodes"
	}
	p := startProgress(cmd.ErrOrStderr(), what)
	r, err := cleanup(ctx, c, sel, f)
	p.stop()
	if err != nil {
		return err
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(cmd.ErrOrStderr(), "tagsync: %s\n", w)
	}
	out := cmd.OutOrStdout()
	if f.output != outputTable {
		err = printData(out, f.output, r)
	} else {
		err = r.print(out, useColour(out), f.labels)
	}
	if err != nil {
		return err
	}
	if r.Summary.Failed > 0 {
		return fmt.Errorf("%d node(s) could not be patched", r.Summary.Failed)
	}
	return nil
}

// cleanup lists the selected Nodes, plans each and, with --apply, patches
// the ones with changes.
func cleanup(ctx context.Context, c client.Client, sel labels.Selector, f *cleanupFlags) (*cleanupReport, error) {
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing the Nodes: %w", err)
	}
	slices.SortFunc(nodes.Items, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	r := &cleanupReport{Applied: f.apply, Nodes: []nodeCleanup{}}
	pl := &cleanupPlanner{labels: f.labels, prefix: f.labelPrefix, prefixSet: f.prefixSet}
	if f.labels && !f.prefixSet {
		syncs, warning := listSyncs(ctx, c)
		pl.syncs = syncs
		if warning != "" {
			r.Warnings = append(r.Warnings, warning)
		}
	}
	for i := range nodes.Items {
		n := pl.plan(&nodes.Items[i])
		if f.apply && n.changes() {
			n = applyCleanup(ctx, c, pl, n)
		}
		if n.changes() || len(n.Notes) > 0 || len(n.KeptLabels) > 0 || n.Error != "" {
			r.add(n)
		}
	}
	return r, nil
}

// applyCleanup patches the Node as planned, guarded by the resourceVersion
// it was read at; on a Conflict it reads the Node again and re-plans it.
// It returns what was written (or the error).
func applyCleanup(ctx context.Context, c client.Client, pl *cleanupPlanner, n nodeCleanup) nodeCleanup {
	first := true
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			var node corev1.Node
			if err := c.Get(ctx, client.ObjectKey{Name: n.Name}, &node); err != nil {
				return err
			}
			n = pl.plan(&node)
			if !n.changes() {
				return nil
			}
		}
		first = false
		if beforeCleanupPatch != nil {
			beforeCleanupPatch(n.Name)
		}
		return kit.PatchNode(ctx, c, n.Name, n.resourceVersion, n.patch())
	})
	switch {
	case apierrors.IsNotFound(err):
		n = nodeCleanup{Name: n.Name, Notes: []string{"deleted meanwhile: nothing to clean up"}}
	case err != nil:
		n.Error = err.Error()
	}
	return n
}

// listSyncs returns the NodeTagSyncs, oldest first (ties by name), as the
// node sync orders its claims. A cluster without the CRD (deleted with
// tagsync) has none; one it may not list is reported as a warning.
func listSyncs(ctx context.Context, c client.Client) ([]v1alpha1.NodeTagSync, string) {
	var list v1alpha1.NodeTagSyncList
	err := c.List(ctx, &list)
	switch {
	case meta.IsNoMatchError(err), apierrors.IsNotFound(err):
		return nil, ""
	case err != nil:
		return nil, fmt.Sprintf("could not list the NodeTagSyncs (%v): bases that record no label prefix keep their labels unless --label-prefix names it", err)
	}
	items := list.Items
	slices.SortFunc(items, func(a, b v1alpha1.NodeTagSync) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return items, ""
}

// selects reports whether nts's nodeSelector selects node (no selector:
// every Node; an invalid one: none).
func selects(nts *v1alpha1.NodeTagSync, node *corev1.Node) bool {
	if nts.Spec.NodeSelector == nil {
		return true
	}
	sel, err := metav1.LabelSelectorAsSelector(nts.Spec.NodeSelector)
	return err == nil && sel.Matches(labels.Set(node.Labels))
}
