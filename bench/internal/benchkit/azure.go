package benchkit

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"golang.org/x/sync/errgroup"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
)

// The Azure estate's names: the metadata estate's cluster (infra) and its
// owned tag; a NodeTagSync's label prefix on Azure; the subscription of
// the node layout (resource group rg-nodes); the webhook's shared secret.
const (
	AzureInfra, AzureClassifier   = "bench1", "kubernetes.io_cluster.bench1"
	AzureLabelPrefix, NodeSubID   = "azure.tags/", armsimtest.SubscriptionID
	webhookSecret, nodeGroup      = "bench-events-secret", "rg-nodes"
	eventSubscription, hostTagEnv = "tagsync", "env"
)

// Azure is the Azure estate of the events and sizing benchmarks in one
// armsim: the node sync's layout (Uniform scale sets and standalone VMs in
// rg-nodes of NodeSubID, a Node for each instance and VM) and the metadata
// estate (armsimtest.ClusterEstate: resources of the 10 cluster types in
// each of Subs subscriptions, each carrying the classifier and env=prod),
// with the harness's watch of the Nodes and, while events are on, an
// Event Grid subscription per subscription delivering to the webhook.
type Azure struct {
	// ScaleSets of PerSet instances and VMs standalone VMs; Subs
	// subscriptions of PerType resources of each cluster type.
	ScaleSets, PerSet, VMs int
	Subs, PerType          int
	// HostTags are the tags of the i-th scale set or VM (named name; nil:
	// env=prod only). Every host carries env=prod.
	HostTags func(i int, name string) map[string]string
	// Node builds the Node of the i-th instance or VM of pool (nil: its
	// name and providerID only).
	Node func(name, providerID, pool string, i int) *corev1.Node

	Arm    *armsim.Server
	Sim    *armsimtest.Env
	Estate armsimtest.ClusterEstate
	// Owned are the metadata estate's resource IDs; SubIDs every
	// subscription, the nodes' first.
	Owned  []string
	SubIDs []string
	// NodesOf names the Nodes of each scale set and VM (by ARM ID); Hosts
	// are those IDs, scale sets first.
	NodesOf map[string][]string
	Hosts   []string
	Nodes   *Watch
	// Webhook is the delivery URL while events are on.
	Webhook string
}

// Start starts armsim (opts; TLS and the test login are added) in dir and
// seeds both estates.
func (a *Azure) Start(dir string, opts armsim.Options) error {
	var err error
	if a.Arm, err = StartARM(dir, opts); err != nil {
		return err
	}
	if a.Sim, err = armsimtest.NewEnv(a.Arm, NodeSubID); err != nil {
		return err
	}
	return a.seed()
}

// seed creates the node layout (scale sets of PerSet instances and
// standalone VMs in rg-nodes, each with env=prod and HostTags) and the
// metadata estate (PerType resources of each cluster type per
// subscription, each carrying the classifier and env=prod).
func (a *Azure) seed() error {
	if err := a.Arm.CreateSubscription(NodeSubID, nil); err != nil {
		return err
	}
	if _, err := a.Arm.CreateResourceGroup(NodeSubID, armsim.ResourceGroup{Name: nodeGroup, Location: "westeurope"}); err != nil {
		return err
	}
	a.NodesOf = map[string][]string{}
	tags := func(i int, name string) map[string]string {
		t := map[string]string{}
		if a.HostTags != nil {
			t = a.HostTags(i, name)
		}
		t[hostTagEnv] = "prod"
		return t
	}
	for i := range a.ScaleSets {
		name := fmt.Sprintf("pool%02d", i)
		id, err := a.Arm.CreateScaleSet(NodeSubID, nodeGroup, armsim.ScaleSet{Name: name, Location: "westeurope", Mode: armsim.Uniform, SKU: "Standard_D4s_v5", Tags: tags(i, name)})
		if err != nil {
			return err
		}
		if _, err := a.Arm.AddInstances(id, a.PerSet); err != nil {
			return err
		}
		a.Hosts = append(a.Hosts, id)
	}
	for i := range a.VMs {
		name := fmt.Sprintf("vm%03d", i)
		id, err := a.Arm.CreateVM(NodeSubID, nodeGroup, armsim.VirtualMachine{Name: name, Location: "westeurope", Size: "Standard_D4s_v5", Tags: tags(a.ScaleSets+i, name)})
		if err != nil {
			return err
		}
		a.Hosts = append(a.Hosts, id)
	}
	var subs []string
	for i := range a.Subs {
		subs = append(subs, fmt.Sprintf("10000000-0000-4000-8000-%012d", i+1))
	}
	a.Estate = armsimtest.ClusterEstate{Infra: AzureInfra, PerType: a.PerType, Subscriptions: subs,
		Tags: map[string]string{AzureClassifier: "owned", "env": "prod"}}
	if err := a.Estate.Seed(a.Arm); err != nil {
		return err
	}
	a.Owned = a.Estate.ResourceIDs()
	a.SubIDs = append([]string{NodeSubID}, subs...)
	Logf("armsim at %s: %d scale sets, %d VMs; %d classified resources in %d subscriptions", a.Arm.URL(),
		a.ScaleSets, a.VMs, len(a.Owned), a.Subs)
	return nil
}

// NodeCount is the number of Nodes of the layout.
func (a *Azure) NodeCount() int { return a.ScaleSets*a.PerSet + a.VMs }

// Classified is the number of classified resources, their groups included.
func (a *Azure) Classified() int { return len(a.Owned) + len(a.Estate.GroupIDs()) }

// CreateNodes creates one Node per scale-set instance and VM (providerID
// the instance's or VM's ID) with workers parallel clients, starts the
// harness's watch of the Nodes (labels under AzureLabelPrefix) with cfg
// and waits until it has them all.
func (a *Azure) CreateNodes(ctx context.Context, cfg *rest.Config, c client.Client, workers int, timeout time.Duration) error {
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if a.Nodes, err = StartWatch(ctx, mc, Nodes, "", func(l string) bool { return strings.HasPrefix(l, AzureLabelPrefix) }); err != nil {
		return err
	}
	type node struct{ name, providerID, host, pool string }
	var nodes []node
	for i, host := range a.Hosts {
		if i >= a.ScaleSets {
			nodes = append(nodes, node{fmt.Sprintf("vm-%03d", i-a.ScaleSets), host, host, "standalone"})
			continue
		}
		for k := range a.PerSet {
			pool := fmt.Sprintf("pool%02d", i)
			nodes = append(nodes, node{fmt.Sprintf("%s-%06d", pool, k), fmt.Sprintf("%s/virtualMachines/%d", host, k), host, pool})
		}
	}
	for _, n := range nodes {
		a.NodesOf[n.host] = append(a.NodesOf[n.host], n.name)
	}
	start := time.Now()
	err = Parallel(ctx, len(nodes), workers, func(ctx context.Context, i int) error {
		n := nodes[i]
		obj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name}, Spec: corev1.NodeSpec{ProviderID: "azure://" + n.providerID}}
		if a.Node != nil {
			obj = a.Node(n.name, "azure://"+n.providerID, n.pool, i)
		}
		return c.Create(ctx, obj)
	})
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return a.Nodes.Len() == len(nodes), nil
	})
	if err != nil {
		return fmt.Errorf("the harness's watch of the Nodes saw %d of %d: %w", a.Nodes.Len(), len(nodes), err)
	}
	Logf("created %d Nodes in %s", len(nodes), time.Since(start).Round(time.Millisecond))
	return nil
}

// WebhookFlags writes the webhook's shared secret into dir and returns the
// `tagsync run` flags that turn events on (the webhook on a free loopback
// port, hourly safety-net passes, the hub's queue size) and the address.
func WebhookFlags(dir string, queueSize int) (args []string, addr string, err error) {
	secretFile, err := WriteSecret(dir, "webhook-secret", webhookSecret)
	if err != nil {
		return nil, "", err
	}
	if addr, err = FreeAddr(); err != nil {
		return nil, "", err
	}
	return []string{"--events-webhook-bind-address", addr, "--events-webhook-secret-file", secretFile,
		"--events-resync-interval", "1h", "--events-queue-size", fmt.Sprint(queueSize)}, addr, nil
}

// Subscribe creates, in every subscription, armsim's event subscription
// delivering every event to the webhook at addr; skipOwn leaves out
// tagsync's own writes (ARM events name the caller, data.claims.appid).
func (a *Azure) Subscribe(ctx context.Context, addr string, skipOwn bool) error {
	a.Webhook = "http://" + addr + "/eventgrid?key=" + webhookSecret
	props := armsimtest.WebHook(a.Webhook)
	if skipOwn {
		props.Filter = &armsim.EventSubscriptionFilter{AdvancedFilters: []armsim.AdvancedFilter{
			{OperatorType: "StringNotIn", Key: "data.claims.appid", Values: []string{armsimtest.ClientID}}}}
	}
	for _, sub := range a.SubIDs {
		if _, err := a.On(sub).PutEventSubscription(ctx, eventSubscription, props); err != nil {
			return fmt.Errorf("event subscription on %s: %w", sub, err)
		}
	}
	return nil
}

// Unsubscribe deletes the event subscriptions (when there are any).
func (a *Azure) Unsubscribe() {
	if a.Webhook == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, sub := range a.SubIDs {
		if err := a.Sim.ARM(ctx, http.MethodDelete, armsimtest.EventSubscriptionPath(sub, eventSubscription), nil, nil); err != nil {
			Logf("deleting the event subscription on %s: %v", sub, err)
		}
	}
	a.Webhook = ""
}

// On is the harness's ARM client for one subscription.
func (a *Azure) On(sub string) *armsimtest.Env {
	e := *a.Sim
	e.SubscriptionID = sub
	return &e
}

// Close stops the watch and armsim.
func (a *Azure) Close() {
	if a.Nodes != nil {
		a.Nodes.Stop()
	}
	if a.Arm != nil {
		_ = a.Arm.Close()
	}
}

// Labelled waits until every Node of host carries label=value and returns
// when the last one did (as the watch saw it).
func (a *Azure) Labelled(ctx context.Context, host, label, value string, timeout time.Duration) (time.Time, error) {
	var last time.Time
	for _, n := range a.NodesOf[host] {
		at, err := a.Nodes.Await(ctx, "/"+n, func(s ObjState) bool { return s.Labels[label] == value }, timeout)
		if err != nil {
			return last, err
		}
		if at.After(last) {
			last = at
		}
	}
	return last, nil
}

// Reverted waits until armsim's tags of id say env=prod again and returns
// when it saw them (polled every 100 ms); running reports the controller's
// exit.
func (a *Azure) Reverted(ctx context.Context, id string, running func() error, timeout time.Duration) (time.Time, error) {
	var at time.Time
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if err := running(); err != nil {
			return false, err
		}
		t, err := a.Arm.Tags(id)
		at = time.Now()
		return err == nil && t["env"] == "prod", nil
	})
	if err != nil {
		return at, fmt.Errorf("revert of %s: %w", id, err)
	}
	return at, nil
}

// NodeEdit is a portal edit of the k-th host of the rotation (scale sets
// and VMs in turn): a new tag name=v. It returns the host and the label
// to wait for.
func (a *Azure) NodeEdit(k int, name string) (host, label string, err error) {
	host = a.Hosts[(k/2)%a.ScaleSets]
	if k%2 == 1 && a.VMs > 0 {
		host = a.Hosts[a.ScaleSets+(k/2)%a.VMs]
	}
	return host, AzureLabelPrefix + name, a.Arm.SetTags(host, map[string]string{name: "v"})
}

// EditLatency is the latency of cloud edits in one mode: seconds from
// each edit to the last Node labelled (node sync) or to the revert
// (metadata). ARM is the controller's requests from the first edit until
// 3 s after the last was in sync; ReadsPerEdit divides its reads by the
// edits of both kinds.
type EditLatency struct {
	Node         Spread   `json:"nodeSync"`
	Metadata     Spread   `json:"metadata"`
	ARM          ARMTally `json:"arm"`
	ReadsPerEdit float64  `json:"readsPerEdit"`
}

// Spread is a set of latencies and their percentiles.
type Spread struct {
	Seconds []float64 `json:"seconds"`
	P50     float64   `json:"p50"`
	P99     float64   `json:"p99"`
}

// summarise fills the percentiles and the reads per edit.
func (r *EditLatency) summarise() {
	for _, s := range []*Spread{&r.Node, &r.Metadata} {
		s.P50, s.P99 = Percentile(s.Seconds, 50), Percentile(s.Seconds, 99)
	}
	if n := len(r.Node.Seconds) + len(r.Metadata.Seconds); n > 0 {
		r.ReadsPerEdit = Round3(float64(r.ARM.Reads) / float64(n))
	}
}

// String is the percentiles and the count.
func (s Spread) String() string {
	return fmt.Sprintf("p50 %.2f s, p99 %.2f s (%d edits)", s.P50, s.P99, len(s.Seconds))
}

// Latency makes edits portal edits of node-sync hosts and edits outside
// edits of an owned tag (env=dev on a classified resource), one of each
// every spacing, and measures each from the edit (armsim publishes its
// event before SetTags returns) to the labels on every Node of the host,
// or to the revert of env=prod; mode names the tags and picks the
// resources. running reports the controller's exit; timeout bounds each
// wait.
func (a *Azure) Latency(ctx context.Context, mode string, edits int, spacing time.Duration, running func() error, timeout time.Duration) (*EditLatency, error) {
	a.Arm.ResetCalls()
	r := &EditLatency{}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	for k := range edits {
		g.Go(func() error {
			if !Pause(gctx, time.Duration(k)*spacing) {
				return gctx.Err()
			}
			host, label, err := a.NodeEdit(k, fmt.Sprintf("%s-%d", mode, k))
			start := time.Now()
			if err != nil {
				return err
			}
			at, err := a.Labelled(gctx, host, label, "v", timeout)
			mu.Lock()
			r.Node.Seconds = append(r.Node.Seconds, Secs(at.Sub(start)))
			mu.Unlock()
			return err
		})
		g.Go(func() error {
			if !Pause(gctx, time.Duration(k)*spacing+spacing/2) {
				return gctx.Err()
			}
			id := a.Owned[(k*7919+len(mode)*31)%len(a.Owned)]
			start := time.Now()
			if err := a.Arm.SetTags(id, map[string]string{"env": "dev"}); err != nil {
				return err
			}
			at, err := a.Reverted(gctx, id, running, timeout)
			mu.Lock()
			r.Metadata.Seconds = append(r.Metadata.Seconds, Secs(at.Sub(start)))
			mu.Unlock()
			return err
		})
	}
	err := g.Wait()
	Pause(ctx, 3*time.Second) // passes that follow the last edit
	r.ARM = TallyARM(a.Arm.Calls())
	r.summarise()
	Logf("%s: node sync %s; metadata %s; ARM %s", mode, r.Node, r.Metadata, OpsLine(r.ARM.ByOp))
	return r, err
}

// Pause waits d (measurement windows, not synchronisation) and reports
// whether ctx is still live.
func Pause(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// Percentile is the nearest-rank p-th percentile of xs (0 when empty).
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	i := int(float64(len(s))*p/100+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}
