package main

import (
	"context"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/tagsync/tagsync/api/metal3"
	"github.com/tagsync/tagsync/bench/internal/benchkit"
)

// bench is the estate and the harness's clients and watches.
type bench struct {
	o   options
	res *Results
	dir string
	// Metal is the estate (benchkit.Metal): the control planes, the
	// harness's clients, the hosts and the watches of their Nodes.
	*benchkit.Metal
	// mgmtWatches count the writes to the management cluster's objects.
	mgmtWatches []*benchkit.Watch

	ctrl      *benchkit.Process
	pprofAddr string
}

// managementResources are the management objects whose writes C counts.
var managementResources = []schema.GroupVersionResource{
	metal3.HostGVK.GroupVersion().WithResource("baremetalhosts"),
	metal3.Metal3MachineGVK.GroupVersion().WithResource("metal3machines"),
	metal3.Metal3ClusterGVK.GroupVersion().WithResource("metal3clusters"),
	clusterv1.GroupVersion.WithResource("machines"),
	clusterv1.GroupVersion.WithResource("clusters"),
	{Group: "tagsync.io", Version: "v1alpha1", Resource: "labelsyncprofiles"},
	{Version: "v1", Resource: "secrets"},
	{Group: "events.k8s.io", Version: "v1", Resource: "events"},
}

// Start starts the control planes, seeds the estate and starts the
// harness's watches.
func (b *bench) Start(ctx context.Context) (string, error) {
	var err error
	if b.dir, err = os.MkdirTemp("", "tagsync-lsbench-"); err != nil {
		return "", err
	}
	b.Metal, err = benchkit.StartMetal(benchkit.MetalOptions{Clusters: b.o.clusters, HostsPer: b.o.hostsPer,
		NodeImages: b.o.nodeImages, StartAtOnce: b.o.startAtOnce})
	if err != nil {
		return "", err
	}
	if err := b.Seed(ctx); err != nil {
		return "", err
	}
	return b.Mgmt.RootDir, b.startWatches(ctx)
}

// startWatches starts the harness's watch of every workload cluster's
// Nodes and of the management objects in the benchmark's namespace.
func (b *bench) startWatches(ctx context.Context) error {
	if err := b.WatchNodes(ctx); err != nil {
		return err
	}
	mc, err := metadata.NewForConfig(benchkit.Fast(b.Mgmt.Config))
	if err != nil {
		return err
	}
	for _, gvr := range managementResources {
		w, err := benchkit.StartWatch(ctx, mc, gvr, benchkit.MetalNamespace, benchkit.InScope)
		if err != nil {
			return err
		}
		b.mgmtWatches = append(b.mgmtWatches, w)
	}
	return nil
}

// Close stops the controller, the watches and the control planes.
func (b *bench) Close() {
	if b.ctrl != nil {
		if err := b.ctrl.Stop(); err != nil {
			benchkit.Logf("stopping tagsync: %v", err)
		}
	}
	for _, w := range b.mgmtWatches {
		w.Stop()
	}
	if b.Metal != nil {
		b.Metal.Close()
	}
	_ = os.RemoveAll(b.dir)
}

// startController runs `tagsync run --controllers=labelsync` against the
// management cluster with default client budgets; the workload clusters
// are reached through their kubeconfig Secrets only.
func (b *bench) startController(ctx context.Context) error {
	bin, err := benchkit.BuildTagsync(ctx, b.o.Tagsync, b.Mgmt.RootDir, b.dir)
	if err != nil {
		return err
	}
	args := []string{"--controllers=labelsync",
		"--azure-auth-mode=default", // as the Helm chart runs labelsync alone: no cloud is used
	}
	if b.o.memoryLimit != "" {
		args = append(args, "--memory-limit", b.o.memoryLimit)
	}
	if b.o.heapProfile != "" {
		if b.pprofAddr, err = benchkit.FreeAddr(); err != nil {
			return err
		}
		args = append(args, "--pprof-bind-address", b.pprofAddr)
	}
	b.ctrl, err = benchkit.StartRun(ctx, b.Mgmt, benchkit.Command{Bin: bin, Args: args, Dir: b.dir,
		Timeout: b.o.Timeout, PeakEvery: 200 * time.Millisecond})
	return err
}
