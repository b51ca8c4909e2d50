package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/metal3"
	"github.com/tagsync/tagsync/bench/internal/benchkit"
	"github.com/tagsync/tagsync/internal/testenv"
)

// workload is one workload cluster: its control plane, a clientset and the
// harness's watch of its Nodes.
type workload struct {
	name  string
	env   *testenv.Env
	kube  kubernetes.Interface
	nodes *benchkit.Watch
}

// bench is the estate and the harness's clients and watches.
type bench struct {
	o         options
	res       *Results
	dir       string
	mgmt      *testenv.Env
	c         client.Client
	workloads []*workload
	// mgmtWatches count the writes to the management cluster's objects.
	mgmtWatches []*benchkit.Watch
	// want are the in-scope labels each host carries (and its Node must),
	// by workload cluster index and host index.
	want [][]map[string]string

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
	if err := b.startPlanes(); err != nil {
		return "", err
	}
	if err := b.seed(ctx); err != nil {
		return "", err
	}
	return b.mgmt.RootDir, b.startWatches(ctx)
}

// startPlanes starts the management control plane (with the Cluster API
// and Metal3 CRDs) and the workload ones, o.startAtOnce at a time.
func (b *bench) startPlanes() error {
	crds, err := managementCRDs()
	if err != nil {
		return err
	}
	start := time.Now()
	benchkit.Logf("starting 1 management + %d workload control planes (kube-apiserver + etcd each, %d at once)", b.o.clusters, b.o.startAtOnce)
	b.workloads = make([]*workload, b.o.clusters)
	envs := make([]*testenv.Env, b.o.clusters+1)
	errs := make([]error, len(envs))
	sem := make(chan struct{}, max(1, b.o.startAtOnce))
	var wg sync.WaitGroup
	for i := range envs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			opts := testenv.Options{}
			if i == 0 {
				opts.ExtraCRDDirs = crds
			}
			envs[i], errs[i] = testenv.NewWith(opts)
		})
	}
	wg.Wait()
	b.mgmt = envs[0]
	for i := range b.workloads {
		if envs[i+1] != nil {
			b.workloads[i] = &workload{name: clusterName(i), env: envs[i+1]}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	benchkit.Logf("control planes up in %s", time.Since(start).Round(time.Millisecond))
	return b.clients()
}

// managementCRDs are Cluster API's Cluster and Machine CRDs (from the
// module go.mod requires) and the minimal Metal3 CRDs of test/crds.
func managementCRDs() ([]string, error) {
	dir, err := testenv.ModuleDir("sigs.k8s.io/cluster-api")
	if err != nil {
		return nil, err
	}
	bases := filepath.Join(dir, "core", "config", "crd", "bases")
	return []string{
		filepath.Join(bases, "cluster.x-k8s.io_clusters.yaml"),
		filepath.Join(bases, "cluster.x-k8s.io_machines.yaml"),
		filepath.Join("test", "crds", "metal3"),
	}, nil
}

// clients makes the harness's clients: generous client-side limits, so the
// harness never waits for its own rate limiter.
func (b *bench) clients() error {
	s := b.mgmt.Scheme
	if err := clusterv1.AddToScheme(s); err != nil {
		return err
	}
	if err := metal3.AddToScheme(s); err != nil {
		return err
	}
	c, err := client.New(fast(b.mgmt.Config), client.Options{Scheme: s})
	if err != nil {
		return err
	}
	b.c = c
	for _, w := range b.workloads {
		if w.kube, err = kubernetes.NewForConfig(fast(w.env.Config)); err != nil {
			return err
		}
	}
	return nil
}

// fast is cfg with client-side limits the harness never reaches.
func fast(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = 1000, 2000
	return c
}

// startWatches starts the harness's watch of every workload cluster's
// Nodes and of the management objects in the benchmark's namespace.
func (b *bench) startWatches(ctx context.Context) error {
	for _, w := range b.workloads {
		mc, err := metadata.NewForConfig(fast(w.env.Config))
		if err != nil {
			return err
		}
		if w.nodes, err = benchkit.StartWatch(ctx, mc, benchkit.Nodes, "", inScope); err != nil {
			return err
		}
	}
	mc, err := metadata.NewForConfig(fast(b.mgmt.Config))
	if err != nil {
		return err
	}
	for _, gvr := range managementResources {
		w, err := benchkit.StartWatch(ctx, mc, gvr, namespace, inScope)
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
	var wg sync.WaitGroup
	for _, w := range b.workloads {
		if w == nil {
			continue
		}
		if w.nodes != nil {
			w.nodes.Stop()
		}
		wg.Go(func() { stopEnv(w.env) })
	}
	if b.mgmt != nil {
		wg.Go(func() { stopEnv(b.mgmt) })
	}
	wg.Wait()
	_ = os.RemoveAll(b.dir)
}

func stopEnv(e *testenv.Env) {
	if err := e.Stop(); err != nil {
		benchkit.Logf("stopping the control plane at %s: %v", e.Config.Host, err)
	}
}

// startController runs `tagsync run --controllers=labelsync` against the
// management cluster with default client budgets; the workload clusters
// are reached through their kubeconfig Secrets only.
func (b *bench) startController(ctx context.Context) error {
	bin, err := benchkit.BuildTagsync(ctx, b.o.Tagsync, b.mgmt.RootDir, b.dir)
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
	b.ctrl, err = benchkit.StartRun(ctx, b.mgmt, benchkit.Command{Bin: bin, Args: args, Dir: b.dir,
		Timeout: b.o.Timeout, PeakEvery: 200 * time.Millisecond})
	return err
}

// nodeKey is a Node's key in its watch (cluster-scoped: "/name").
func nodeKey(host int) string { return "/" + nodeName(host) }

// nodeObjectBytes is the size of one Node as created (for the report).
func (b *bench) nodeObjectBytes() int {
	raw, err := json.Marshal(bareMetalNode(0, 0, b.o.nodeImages))
	if err != nil {
		return 0
	}
	return len(raw)
}
