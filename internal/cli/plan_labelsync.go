package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/metal3"
	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/controller/labelsync"
	"github.com/tagsync/tagsync/internal/scheme"
	"github.com/tagsync/tagsync/internal/tags"
)

// planScheme is the scheme of plan's management cluster client: the
// operator verbs' types, Cluster API's and the BareMetalHost.
var planScheme = sync.OnceValue(func() *runtime.Scheme {
	s := scheme.New()
	builder := runtime.NewSchemeBuilder(clusterv1.AddToScheme, metal3.AddToScheme)
	utilruntime.Must(builder.AddToScheme(s))
	return s
})

// labelSyncAccess is what planning LabelSyncProfiles needs beyond the
// management cluster's client.
type labelSyncAccess struct {
	// missing names the Metal3 and Cluster API kinds the cluster does not
	// serve ("" when all are): then no profile is planned.
	missing string
	// clientFor reaches a workload cluster.
	clientFor labelsync.ClientFor
}

// profilePlan is one LabelSyncProfile's next pass.
type profilePlan struct {
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Prefixes  []string `json:"prefixes"`
	Matched   int      `json:"matchedHosts"`
	// Nodes are the Nodes that would be patched.
	Nodes   []labelNodeDiff `json:"nodes,omitempty"`
	InSync  int             `json:"inSyncNodes"`
	Paused  []string        `json:"pausedHosts,omitempty"`
	Waiting []hostWait      `json:"waitingHosts,omitempty"`
	// Suspended: the profile is suspended; Nodes is what it would write,
	// and none of it is written.
	Suspended bool `json:"suspended,omitempty"`
	// HeldReason says why the Nodes' held removals are held ("" when none
	// is).
	HeldReason string `json:"heldReason,omitempty"`
	// Retained counts the labels deletionPolicy Retain keeps.
	Retained int `json:"retainedLabels,omitempty"`
}

// labelNodeDiff is the change of one host's Node in a workload cluster.
type labelNodeDiff struct {
	Cluster string   `json:"cluster"`
	Name    string   `json:"name"`
	Host    string   `json:"host"`
	Labels  []change `json:"labels,omitempty"`
	// ReleaseTaint is set when the pending taint is removed.
	ReleaseTaint bool `json:"releasePendingTaint,omitempty"`
	// Held are the label removals the pass would hold for approval.
	Held []string `json:"heldForApproval,omitempty"`
}

// hostWait is a host whose Node would not be synced, and why.
type hostWait struct {
	Host    string `json:"host"`
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
}

// collectProfiles plans every (or the named) LabelSyncProfile of the
// selected namespaces. A cluster without the Metal3 and Cluster API CRDs
// (or without the LabelSyncProfile CRD) has none to plan.
func (r *planReport) collectProfiles(ctx context.Context, c client.Reader, ls labelSyncAccess, sel planSelection) error {
	if ls.missing != "" {
		return nil
	}
	var list v1alpha1.LabelSyncProfileList
	var opts []client.ListOption
	if !sel.allNamespaces {
		opts = append(opts, client.InNamespace(sel.namespace))
	}
	if err := c.List(ctx, &list, opts...); err != nil {
		if meta.IsNoMatchError(err) {
			return nil
		}
		return fmt.Errorf("listing LabelSyncProfiles: %w", err)
	}
	for i := range list.Items {
		p := &list.Items[i]
		if sel.name != "" && p.Name != sel.name {
			continue
		}
		pred, err := labelsync.PlanProfile(ctx, c, ls.clientFor, p)
		if err != nil {
			return fmt.Errorf("LabelSyncProfile %s/%s: %w", p.Namespace, p.Name, err)
		}
		r.LabelSyncProfiles = append(r.LabelSyncProfiles, profileDiff(p, pred))
	}
	return nil
}

// profileDiff renders a profile's prediction.
func profileDiff(p *v1alpha1.LabelSyncProfile, pred *labelsync.ProfilePlan) profilePlan {
	out := profilePlan{Namespace: p.Namespace, Name: p.Name, Prefixes: p.Spec.Prefixes, Matched: pred.Matched,
		InSync: pred.InSync, Paused: pred.Paused, Suspended: pred.Suspended, Retained: pred.Retained, HeldReason: pred.HeldReason}
	if out.Prefixes == nil {
		out.Prefixes = []string{}
	}
	for _, n := range pred.Nodes {
		lc := patchChanges(tags.CaseSensitive, tags.Set(n.Before), tags.Patch{Set: tags.Set(n.Labels.Set), Delete: n.Labels.Delete})
		out.Nodes = append(out.Nodes, labelNodeDiff{Cluster: n.Cluster.String(), Name: n.Node, Host: n.Host, Labels: lc,
			ReleaseTaint: n.ReleaseTaint, Held: n.Held})
	}
	for _, w := range pred.Waiting {
		out.Waiting = append(out.Waiting, hostWait(w))
	}
	return out
}

// workloadClients reaches workload clusters as the controller does: a
// Cluster whose infrastructure is a Metal3Cluster and is provisioned,
// through its <cluster>-kubeconfig Secret (key value), read live. The
// clients are live too (no cache, no watch) and time out after
// labelsync.PlanClusterTimeout.
func workloadClients(mgmt client.Reader) labelsync.ClientFor {
	return func(ctx context.Context, cluster types.NamespacedName) (client.Reader, error) {
		if err := connectable(ctx, mgmt, cluster); err != nil {
			return nil, err
		}
		var s corev1.Secret
		name := types.NamespacedName{Namespace: cluster.Namespace, Name: cluster.Name + "-kubeconfig"}
		if err := mgmt.Get(ctx, name, &s); err != nil {
			return nil, fmt.Errorf("reading its kubeconfig Secret %s: %w", name, err)
		}
		cfg, err := clientcmd.RESTConfigFromKubeConfig(s.Data["value"])
		if err != nil {
			return nil, fmt.Errorf("its kubeconfig Secret %s (key value): %w", name, err)
		}
		cfg.Timeout = labelsync.PlanClusterTimeout
		cfg.UserAgent = "tagsync-plan"
		// Nodes are all plan reads there: a fixed mapping spares a
		// discovery round trip (and its wrapped errors).
		m := meta.NewDefaultRESTMapper(nil)
		m.Add(corev1.SchemeGroupVersion.WithKind("Node"), meta.RESTScopeRoot)
		return client.New(cfg, client.Options{Scheme: kubeScheme(), Mapper: m})
	}
}

// errNotConnectable is a Cluster the controller would not connect to.
var errNotConnectable = errors.New("the controller does not connect to it")

// connectable checks that the controller would connect to the Cluster:
// it exists, its infrastructure is a Metal3Cluster, and is provisioned.
func connectable(ctx context.Context, mgmt client.Reader, cluster types.NamespacedName) error {
	var c clusterv1.Cluster
	if err := mgmt.Get(ctx, cluster, &c); err != nil {
		return fmt.Errorf("reading the Cluster: %w", err)
	}
	ref := c.Spec.InfrastructureRef
	switch {
	case ref.Kind != metal3.Metal3ClusterGVK.Kind || ref.APIGroup != metal3.Metal3ClusterGVK.Group:
		return fmt.Errorf("%w: its infrastructure is not a Metal3Cluster", errNotConnectable)
	case !ptr.Deref(c.Status.Initialization.InfrastructureProvisioned, false):
		return fmt.Errorf("%w yet: its infrastructure is not provisioned", errNotConnectable)
	}
	return nil
}

// writes counts the Nodes the profile's pass would patch: none while it
// is suspended.
func (p profilePlan) writes() int {
	if p.Suspended {
		return 0
	}
	n := 0
	for _, d := range p.Nodes {
		if len(d.Labels) > 0 || d.ReleaseTaint {
			n++
		}
	}
	return n
}

// profile prints one LabelSyncProfile's plan.
func (p *planPrinter) profile(s profilePlan) {
	p.line(0, "", "LabelSyncProfile %s/%s (prefixes %s; %d host(s))", s.Namespace, s.Name, strings.Join(s.Prefixes, ", "), s.Matched)
	if s.Suspended {
		p.line(1, "", "suspended: nothing below is written until spec.suspend is unset")
	}
	for _, n := range s.Nodes {
		p.line(1, cyan, "node %s of %s (host %s)", n.Name, n.Cluster, n.Host)
		for _, c := range n.Labels {
			p.change(2, c)
		}
		if n.ReleaseTaint {
			p.line(2, red, "- taint %s:NoSchedule", v1alpha1.LabelSyncPendingTaintKey)
		}
		for _, k := range n.Held {
			p.line(2, yellow, "! %s removal held for approval", k)
		}
	}
	p.line(1, "", "%d node(s) in sync", s.InSync)
	if s.HeldReason != "" {
		p.line(1, yellow, "held for approval: %s (approve the set with the token of the profile's DeletionsHeld condition: %s)",
			s.HeldReason, v1alpha1.ApproveDeletionsAnnotation)
	}
	if s.Retained > 0 {
		p.line(1, "", "%d label(s) kept that the sync would remove (deletionPolicy Retain)", s.Retained)
	}
	if len(s.Paused) > 0 {
		slices.Sort(s.Paused)
		p.line(1, "", "%d host(s) paused: %v", len(s.Paused), s.Paused)
	}
	for _, w := range s.Waiting {
		if w.Message != "" {
			p.line(1, "", "host %s waits: %s (%s)", w.Host, w.Reason, w.Message)
			continue
		}
		p.line(1, "", "host %s waits: %s", w.Host, w.Reason)
	}
}
