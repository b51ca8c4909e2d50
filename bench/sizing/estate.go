package main

import (
	"context"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/bench/internal/benchkit"
	"github.com/tagsync/tagsync/internal/armsim"
)

// namespace holds the tag requests (the AzureMetadata and CloudMetadata);
// objName names them and the NodeTagSync.
const namespace, objName = "bench", "bench"

// bench is the estate: the management and workload control planes with
// the label sync's objects (benchkit.Metal), armsim with the node layout
// and the classified resources and the AKS-like Nodes in the management
// cluster (benchkit.Azure), and the controller process.
type bench struct {
	o   options
	res *Results
	dir string
	*benchkit.Metal
	az   *benchkit.Azure
	ctrl *benchkit.Process
}

// Start starts the control planes and armsim, seeds both estates and
// creates the Nodes.
func (b *bench) Start(ctx context.Context) (string, error) {
	var err error
	if b.dir, err = os.MkdirTemp("", "tagsync-sizing-"); err != nil {
		return "", err
	}
	b.Metal, err = benchkit.StartMetal(benchkit.MetalOptions{Clusters: b.o.clusters, HostsPer: b.o.hostsPer,
		NodeImages: 20, StartAtOnce: b.o.startAtOnce})
	if err != nil {
		return "", err
	}
	if err := b.Seed(ctx); err != nil {
		return "", err
	}
	if err := b.WatchNodes(ctx); err != nil {
		return "", err
	}
	if err := b.C.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return "", err
	}
	images := benchkit.NodeImages(b.o.nodeImages)
	b.az = &benchkit.Azure{ScaleSets: b.o.scaleSets, PerSet: b.o.perSet, Subs: b.o.subs, PerType: b.o.perType,
		HostTags: benchkit.PoolTags,
		Node: func(name, providerID, pool string, i int) *corev1.Node {
			return benchkit.AKSNode(name, providerID, pool, i, images, true)
		}}
	if err := b.az.Start(b.dir, armsim.Options{}); err != nil {
		return "", err
	}
	if err := b.seedVolumes(ctx); err != nil {
		return "", err
	}
	return b.Mgmt.RootDir, b.az.CreateNodes(ctx, benchkit.Fast(b.Mgmt.Config), b.C, b.o.createWorkers, b.o.Timeout)
}

// Close stops the controller, armsim and the control planes.
func (b *bench) Close() {
	if b.az != nil {
		b.az.Unsubscribe()
	}
	if b.ctrl != nil {
		if err := b.ctrl.Stop(); err != nil {
			benchkit.Logf("stopping tagsync: %v", err)
		}
	}
	if b.az != nil {
		b.az.Close()
	}
	if b.Metal != nil {
		b.Metal.Close()
	}
	_ = os.RemoveAll(b.dir)
}

// startController runs `tagsync run` with every controller (no
// --controllers flag: the default, all) against the management cluster
// and armsim, with events on: the webhook on a free port, hourly
// safety-net passes, and armsim's event subscriptions delivering every
// event to it. The workload clusters are reached through their kubeconfig
// Secrets only.
func (b *bench) startController(ctx context.Context) error {
	bin, err := benchkit.BuildTagsync(ctx, b.o.Tagsync, b.Mgmt.RootDir, b.dir)
	if err != nil {
		return err
	}
	args, err := benchkit.AzureFlags(b.az.Arm, b.dir)
	if err != nil {
		return err
	}
	hook, addr, err := benchkit.WebhookFlags(b.dir, b.o.queueSize)
	if err != nil {
		return err
	}
	args = append(args, hook...)
	if b.o.memoryLimit != "" {
		args = append(args, "--memory-limit", b.o.memoryLimit)
	}
	b.ctrl, err = benchkit.StartRun(ctx, b.Mgmt, benchkit.Command{Bin: bin, Args: args, Dir: b.dir,
		Timeout: b.o.Timeout, PeakEvery: 200 * time.Millisecond})
	if err != nil {
		return err
	}
	return b.az.Subscribe(ctx, addr, false)
}
