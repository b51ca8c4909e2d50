package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/bench/internal/benchkit"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/testenv"
)

// bench is the control plane, armsim with both estates, the Nodes and the
// harness's watch of them.
type bench struct {
	arm *armsim.Server
	sim *armsimtest.Env
	env *testenv.Env
	c   client.Client
	dir string
	o   options
	res *Results

	estate armsimtest.ClusterEstate
	owned  []string // the estate's resource IDs
	subs   []string // every subscription: the nodes' first
	// nodesOf names the Nodes of each scale set and VM (by ARM ID); hosts
	// are those IDs, scale sets first.
	nodesOf map[string][]string
	hosts   []string
	nodes   *benchkit.Watch

	ctrl    *benchkit.Process
	webhook string // the delivery URL while events are on
}

// The metadata estate's cluster (infra) and its owned tag; the namespace
// and name of the benchmark's objects (one NodeTagSync, one CloudMetadata
// with its AzureMetadata); a NodeTagSync's label prefix on Azure; the
// subscription of the node layout (resource group rg-nodes); the webhook's
// shared secret.
const (
	infra, classifier    = "bench1", "kubernetes.io_cluster.bench1"
	namespace, objName   = "bench", "bench"
	labelPrefix, nodeSub = "azure.tags/", armsimtest.SubscriptionID
	secret               = "bench-events-secret"
)

// Start starts the control plane and armsim, seeds both estates, creates
// the Nodes and watches them.
func (b *bench) Start(ctx context.Context) (string, error) {
	var err error
	if b.env, b.dir, err = benchkit.StartControlPlane("tagsync-evbench-"); err != nil {
		return "", err
	}
	cfg := *b.env.Config // the harness's own client budget
	cfg.QPS, cfg.Burst = 1000, 2000
	if b.c, err = client.New(&cfg, client.Options{Scheme: b.env.Scheme}); err != nil {
		return "", err
	}
	if err := b.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return "", err
	}
	if b.arm, err = benchkit.StartARM(b.dir, armsim.Options{}); err != nil {
		return "", err
	}
	if b.sim, err = armsimtest.NewEnv(b.arm, nodeSub); err != nil {
		return "", err
	}
	if err := b.seed(); err != nil {
		return "", err
	}
	mc, err := metadata.NewForConfig(&cfg)
	if err != nil {
		return "", err
	}
	if b.nodes, err = benchkit.StartWatch(ctx, mc, benchkit.Nodes, "", func(l string) bool { return strings.HasPrefix(l, labelPrefix) }); err != nil {
		return "", err
	}
	return b.env.RootDir, b.createNodes(ctx)
}

// seed creates the node layout (scale sets of perSet instances and
// standalone VMs in rg-nodes, each with one tag) and the metadata estate
// (perType resources of each cluster type per subscription, each carrying
// the classifier and env=prod).
func (b *bench) seed() error {
	if err := b.arm.CreateSubscription(nodeSub, nil); err != nil {
		return err
	}
	if _, err := b.arm.CreateResourceGroup(nodeSub, armsim.ResourceGroup{Name: "rg-nodes", Location: "westeurope"}); err != nil {
		return err
	}
	b.nodesOf = map[string][]string{}
	tags := map[string]string{"env": "prod"}
	for i := range b.o.scaleSets {
		id, err := b.arm.CreateScaleSet(nodeSub, "rg-nodes", armsim.ScaleSet{Name: fmt.Sprintf("pool%02d", i), Location: "westeurope", Mode: armsim.Uniform, SKU: "Standard_D4s_v5", Tags: tags})
		if err != nil {
			return err
		}
		if _, err := b.arm.AddInstances(id, b.o.perSet); err != nil {
			return err
		}
		b.hosts = append(b.hosts, id)
	}
	for i := range b.o.vms {
		id, err := b.arm.CreateVM(nodeSub, "rg-nodes", armsim.VirtualMachine{Name: fmt.Sprintf("vm%03d", i), Location: "westeurope", Size: "Standard_D4s_v5", Tags: tags})
		if err != nil {
			return err
		}
		b.hosts = append(b.hosts, id)
	}
	var subs []string
	for i := range b.o.subs {
		subs = append(subs, fmt.Sprintf("10000000-0000-4000-8000-%012d", i+1))
	}
	b.estate = armsimtest.ClusterEstate{Infra: infra, PerType: b.o.perType, Subscriptions: subs,
		Tags: map[string]string{classifier: "owned", "env": "prod"}}
	if err := b.estate.Seed(b.arm); err != nil {
		return err
	}
	b.owned = b.estate.ResourceIDs()
	b.subs = append([]string{nodeSub}, subs...)
	benchkit.Logf("armsim at %s: %d scale sets, %d VMs; %d classified resources in %d subscriptions", b.arm.URL(),
		b.o.scaleSets, b.o.vms, len(b.owned), b.o.subs)
	return nil
}

// createNodes creates one Node per scale-set instance and VM (providerID
// the instance's or VM's ID) and waits until the watch has them all.
func (b *bench) createNodes(ctx context.Context) error {
	type node struct{ name, providerID, host string }
	var nodes []node
	for i, host := range b.hosts {
		if i >= b.o.scaleSets {
			nodes = append(nodes, node{fmt.Sprintf("vm-%03d", i-b.o.scaleSets), host, host})
			continue
		}
		for k := range b.o.perSet {
			nodes = append(nodes, node{fmt.Sprintf("pool%02d-%06d", i, k), fmt.Sprintf("%s/virtualMachines/%d", host, k), host})
		}
	}
	for _, n := range nodes {
		b.nodesOf[n.host] = append(b.nodesOf[n.host], n.name)
	}
	err := benchkit.Parallel(ctx, len(nodes), 16, func(ctx context.Context, i int) error {
		return b.c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodes[i].name}, Spec: corev1.NodeSpec{ProviderID: "azure://" + nodes[i].providerID}})
	})
	if err != nil {
		return err
	}
	return b.until(ctx, func() bool { return b.nodes.Len() == len(nodes) }, "the harness's watch of the Nodes")
}

// until polls cond every 100 ms until it holds, the controller exits or
// -timeout passes.
func (b *bench) until(ctx context.Context, cond func() bool, what string) error {
	deadline := time.Now().Add(b.o.Timeout)
	for !cond() {
		if b.ctrl != nil {
			if err := b.ctrl.Running(); err != nil {
				return err
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not done after %s", what, b.o.Timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// Close stops the controller, armsim and the control plane.
func (b *bench) Close() {
	b.stopController()
	if b.nodes != nil {
		b.nodes.Stop()
	}
	if b.arm != nil {
		_ = b.arm.Close()
	}
	if b.env != nil {
		benchkit.StopControlPlane(b.env, b.dir)
	}
}

// startController runs `tagsync run --controllers=nodetags,metadata`
// against armsim; with events, the webhook on a free port with the shared
// secret (hourly safety-net passes), and armsim's event subscription
// delivering every event to it.
func (b *bench) startController(ctx context.Context, events bool) error {
	bin, err := benchkit.BuildTagsync(ctx, b.o.Tagsync, b.env.RootDir, b.dir)
	if err != nil {
		return err
	}
	args, err := benchkit.AzureFlags(b.arm, b.dir)
	if err != nil {
		return err
	}
	args = append([]string{"--controllers=nodetags,metadata"}, args...)
	var addr string
	if events {
		secretFile, err := benchkit.WriteSecret(b.dir, "webhook-secret", secret)
		if err != nil {
			return err
		}
		if addr, err = benchkit.FreeAddr(); err != nil {
			return err
		}
		args = append(args, "--events-webhook-bind-address", addr, "--events-webhook-secret-file", secretFile,
			"--events-resync-interval", "1h", "--events-queue-size", fmt.Sprint(b.o.queueSize),
			"--events-silent-after", b.o.silentAfter.String())
	}
	b.ctrl, err = benchkit.StartRun(ctx, b.env, benchkit.Command{Bin: bin, Args: args, Dir: b.dir,
		Timeout: b.o.Timeout, PeakEvery: 200 * time.Millisecond})
	if err != nil || !events {
		return err
	}
	b.webhook = "http://" + addr + "/eventgrid?key=" + secret
	props := armsimtest.WebHook(b.webhook)
	if b.o.skipOwn {
		// ARM events name the caller (data.claims.appid): leave out
		// tagsync's own writes.
		props.Filter = &armsim.EventSubscriptionFilter{AdvancedFilters: []armsim.AdvancedFilter{
			{OperatorType: "StringNotIn", Key: "data.claims.appid", Values: []string{armsimtest.ClientID}}}}
	}
	for _, sub := range b.subs {
		if _, err := b.on(sub).PutEventSubscription(ctx, "tagsync", props); err != nil {
			return fmt.Errorf("event subscription on %s: %w", sub, err)
		}
	}
	return nil
}

// on is the harness's ARM client for one subscription.
func (b *bench) on(sub string) *armsimtest.Env {
	e := *b.sim
	e.SubscriptionID = sub
	return &e
}

// stopController deletes the event subscription and stops the controller.
func (b *bench) stopController() {
	if b.webhook != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		for _, sub := range b.subs {
			if err := b.sim.ARM(ctx, http.MethodDelete, armsimtest.EventSubscriptionPath(sub, "tagsync"), nil, nil); err != nil {
				benchkit.Logf("deleting the event subscription on %s: %v", sub, err)
			}
		}
		cancel()
		b.webhook = ""
	}
	if b.ctrl != nil {
		if err := b.ctrl.Stop(); err != nil {
			benchkit.Logf("stopping tagsync: %v", err)
		}
		b.ctrl = nil
	}
}
