package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/bench/internal/benchkit"
	"github.com/tagsync/tagsync/internal/testenv"
)

// syncName is the NodeTagSync every scenario creates.
const syncName = "bench"

// labelPrefix is the default label prefix of a NodeTagSync (on Azure), and
// awsLabelPrefix that of one on AWS.
const (
	labelPrefix    = "azure.tags/"
	awsLabelPrefix = "aws.tags/"
)

// bench is the shared control plane and the harness's own clients. The
// harness talks to the API server with its own, generous client budget; the
// controller gets `tagsync run`'s defaults (QPS 100, burst 200).
type bench struct {
	o       options
	res     *Results
	env     *testenv.Env
	dir     string
	cfg     *rest.Config // the harness's
	kube    kubernetes.Interface
	meta    metadata.Interface
	c       client.WithWatch
	nodes   *tracker
	log     logr.Logger
	request int
}

// Start starts the control plane, the harness's clients and its watch of
// the Nodes, and warms the API server up.
func (b *bench) Start(ctx context.Context) (string, error) {
	if b.o.Has("resync") && !b.o.Has("cold") {
		return "", errors.New("the resync scenario measures the cluster the cold scenario built: add cold to -scenarios")
	}
	level := zapcore.Level(-b.o.verbosity)
	if b.o.verbosity == 0 {
		level = zapcore.ErrorLevel
	}
	b.log = zap.New(zap.WriteTo(os.Stderr), zap.Level(level), func(o *zap.Options) { o.TimeEncoder = zapcore.RFC3339NanoTimeEncoder })
	ctrl.SetLogger(b.log)
	klog.SetLogger(b.log)
	// Time spent waiting for client-go's client-side rate limiter (opt-in).
	crmetrics.RegisterRESTClientMetrics(crmetrics.MetricRateLimiterLatency)

	var err error
	if b.env, b.dir, err = benchkit.StartControlPlane("tagsync-bench-"); err != nil {
		return "", err
	}
	b.cfg = rest.CopyConfig(b.env.Config)
	b.cfg.QPS, b.cfg.Burst = 2000, 4000
	b.cfg.UserAgent = "tagsync-bench"
	if b.kube, err = kubernetes.NewForConfig(b.cfg); err != nil {
		return "", err
	}
	if b.c, err = client.NewWithWatch(b.cfg, client.Options{Scheme: b.env.Scheme}); err != nil {
		return "", err
	}
	if b.meta, err = metadata.NewForConfig(b.cfg); err != nil {
		return "", err
	}
	if b.nodes, err = b.startTracker(ctx); err != nil {
		return "", err
	}
	return b.env.RootDir, b.warmUp(ctx)
}

// warmUp writes and watches a NodeTagSync once before any controller runs:
// on a freshly started API server the first watch of a custom resource
// waits for its watch cache, which would add ~2 s to the first scenario
// that no running cluster has.
func (b *bench) warmUp(ctx context.Context) error {
	start := time.Now()
	nts := &v1alpha1.NodeTagSync{ObjectMeta: metav1.ObjectMeta{Name: "warm-up"}}
	if err := b.c.Create(ctx, nts); err != nil {
		return err
	}
	w, err := b.meta.Resource(v1alpha1.GroupVersion.WithResource("nodetagsyncs")).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	defer w.Stop()
	if err := b.c.Delete(ctx, nts); err != nil {
		return err
	}
	timeout := time.After(time.Minute)
	for {
		select {
		case e := <-w.ResultChan():
			if e.Type == "DELETED" {
				benchkit.Logf("API server warmed up in %s", time.Since(start).Round(time.Millisecond))
				return nil
			}
		case <-timeout:
			return errors.New("warming up: no watch event for a NodeTagSync within a minute")
		}
	}
}

// Close stops the control plane and removes the temporary files.
func (b *bench) Close() {
	if b.nodes != nil {
		b.nodes.Stop()
	}
	if b.env != nil {
		benchkit.StopControlPlane(b.env, b.dir)
	}
}

// scenarioDir is a fresh directory for one scenario's files.
func (b *bench) scenarioDir(name string) (string, error) {
	d := filepath.Join(b.dir, name)
	return d, os.MkdirAll(d, 0o755)
}

// reset deletes every NodeTagSync and Node and waits until the Nodes are gone.
func (b *bench) reset(ctx context.Context) error {
	if err := b.c.DeleteAllOf(ctx, &v1alpha1.NodeTagSync{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err := b.c.DeleteAllOf(ctx, &corev1.Node{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, b.o.Timeout, true, func(context.Context) (bool, error) {
		return b.nodes.Len() == 0, nil
	})
}

// createNodes creates the Nodes of a layout with 32 parallel clients.
func (b *bench) createNodes(ctx context.Context, nodes []nodeSpec) error {
	start := time.Now()
	images := benchkit.NodeImages(b.o.nodeImages)
	err := benchkit.Parallel(ctx, len(nodes), 32, func(ctx context.Context, i int) error {
		n := benchkit.AKSNode(nodes[i].name, nodes[i].providerID, nodes[i].pool, i, images, b.o.nodeStatus)
		maps.Copy(n.Labels, nodes[i].labels)
		if _, err := b.kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating node %s: %w", n.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, b.o.Timeout, true, func(context.Context) (bool, error) {
		return b.nodes.Len() == len(nodes), nil
	}); err != nil {
		return fmt.Errorf("the harness saw %d of %d nodes: %w", b.nodes.Len(), len(nodes), err)
	}
	benchkit.Logf("created %d nodes in %s", len(nodes), time.Since(start).Round(time.Millisecond))
	return nil
}

// nodeSize is the JSON size of one Node as created (for the report).
func (b *bench) nodeSize(spec nodeSpec) int {
	raw, err := json.Marshal(benchkit.AKSNode(spec.name, spec.providerID, spec.pool, 0, benchkit.NodeImages(b.o.nodeImages), b.o.nodeStatus))
	if err != nil {
		return 0
	}
	return len(raw)
}

// listVersions lists every Node's resourceVersion from the API server
// (independently of the harness's watch).
func (b *bench) listVersions(ctx context.Context) (map[string]string, error) {
	list, err := b.meta.Resource(benchkit.Nodes).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(list.Items))
	for _, n := range list.Items {
		out[n.Name] = n.ResourceVersion
	}
	return out, nil
}

// changedVersions counts the Nodes whose resourceVersion differs.
func changedVersions(before, after map[string]string) int {
	n := 0
	for k, v := range after {
		if before[k] != v {
			n++
		}
	}
	return n
}

// createSync creates the NodeTagSync with the default spec (two-way,
// azure.tags prefix, 5 m resync) changed by mutate (nil: none) and returns
// when the API server has it.
func (b *bench) createSync(ctx context.Context, mutate func(*v1alpha1.NodeTagSyncSpec)) error {
	nts := &v1alpha1.NodeTagSync{ObjectMeta: metav1.ObjectMeta{Name: syncName}}
	if mutate != nil {
		mutate(&nts.Spec)
	}
	return b.c.Create(ctx, nts)
}

// requestSync bumps the sync-request annotation: a pass with fresh cloud reads.
func (b *bench) requestSync(ctx context.Context) error {
	b.request++
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.SyncRequestAnnotation, strconv.Itoa(b.request))
	nts := &v1alpha1.NodeTagSync{ObjectMeta: metav1.ObjectMeta{Name: syncName}}
	return b.c.Patch(ctx, nts, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// getSync reads the NodeTagSync.
func (b *bench) getSync(ctx context.Context) (*v1alpha1.NodeTagSync, error) {
	var nts v1alpha1.NodeTagSync
	err := b.c.Get(ctx, client.ObjectKey{Name: syncName}, &nts)
	return &nts, err
}

// lastFullSync is the status's lastFullSyncTime (zero when unset).
func (b *bench) lastFullSync(ctx context.Context) (time.Time, error) {
	nts, err := b.getSync(ctx)
	if err != nil {
		return time.Time{}, err
	}
	if nts.Status.LastFullSyncTime == nil {
		return time.Time{}, nil
	}
	return nts.Status.LastFullSyncTime.Time, nil
}

// waitFullSyncAfter waits until lastFullSyncTime differs from prev (a fresh
// pass finished without errors) and returns when that was observed and the
// status then. It watches the NodeTagSync: a follow-up pass that reads a
// stale copy from its cache may write the older time back a moment later.
func (b *bench) waitFullSyncAfter(ctx context.Context, prev time.Time) (time.Time, *v1alpha1.NodeTagSync, error) {
	ctx, cancel := context.WithTimeout(ctx, b.o.Timeout)
	defer cancel()
	nts, err := b.getSync(ctx)
	if err != nil {
		return time.Time{}, nts, err
	}
	w, err := b.c.Watch(ctx, &v1alpha1.NodeTagSyncList{}, &client.ListOptions{Raw: &metav1.ListOptions{
		FieldSelector: "metadata.name=" + syncName, ResourceVersion: nts.ResourceVersion}})
	if err != nil {
		return time.Time{}, nts, err
	}
	defer w.Stop()
	for {
		if t := nts.Status.LastFullSyncTime; t != nil && !t.Time.Equal(prev) {
			return time.Now(), nts, nil
		}
		select {
		case e, ok := <-w.ResultChan():
			if n, isSync := e.Object.(*v1alpha1.NodeTagSync); isSync {
				nts = n
			} else if !ok {
				return time.Time{}, nts, errors.New("the watch of the NodeTagSync ended")
			}
		case <-ctx.Done():
			return time.Time{}, nts, fmt.Errorf("no fresh pass finished (lastFullSyncTime still %s; status %+v): %w", prev.Format(time.RFC3339), nts.Status, ctx.Err())
		}
	}
}

// nextSecond sleeps until the wall clock is in a later second than t:
// lastFullSyncTime has a resolution of one second, so a pass that starts in
// the same second as the previous one would be invisible.
func nextSecond(t time.Time) {
	for !time.Now().Truncate(time.Second).After(t.Truncate(time.Second)) {
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 5*time.Millisecond)))
	}
}

// waitQuiet waits until no Node was written, no pass finished and none was
// running for quiet (a pass on a slow cloud can run for longer than quiet).
func (b *bench) waitQuiet(ctx context.Context, quiet time.Duration, ctl controller) error {
	last, _ := readPasses(ctl)
	lastChange := time.Now()
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, b.o.Timeout, true, func(context.Context) (bool, error) {
		p, err := readPasses(ctl)
		if err != nil {
			return false, nil
		}
		if p.count != last.count || p.running > 0 {
			last, lastChange = p, time.Now()
		}
		if w := b.nodes.lastWrite(); w.After(lastChange) {
			lastChange = w
		}
		return time.Since(lastChange) >= quiet, nil
	})
}

// nodeShape describes the Nodes the options create.
func (o options) nodeShape() string {
	if !o.nodeStatus {
		return "AKS-like labels, annotations and spec; no status"
	}
	return fmt.Sprintf("AKS-like labels, annotations, spec and kubelet status with %d images", max(o.nodeImages, 0))
}
