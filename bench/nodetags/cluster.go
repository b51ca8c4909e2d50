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
	"k8s.io/apimachinery/pkg/api/resource"
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
	images := nodeImages(b.o.nodeImages)
	err := benchkit.Parallel(ctx, len(nodes), 32, func(ctx context.Context, i int) error {
		n := realisticNode(nodes[i], i, images, b.o.nodeStatus)
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
	raw, err := json.Marshal(realisticNode(spec, 0, nodeImages(b.o.nodeImages), b.o.nodeStatus))
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

// realisticNode builds a Node as a kubelet on an AKS node registers it:
// the usual labels and annotations, capacity, conditions, addresses, node
// info and the cached images (the bulk of a real Node object's size).
func realisticNode(s nodeSpec, i int, images []corev1.ContainerImage, withStatus bool) *corev1.Node {
	zone := strconv.Itoa(i%3 + 1)
	labels := map[string]string{
		"agentpool":                                               s.pool,
		"beta.kubernetes.io/arch":                                 "amd64",
		"beta.kubernetes.io/instance-type":                        "Standard_D4s_v5",
		"beta.kubernetes.io/os":                                   "linux",
		"failure-domain.beta.kubernetes.io/region":                "westeurope",
		"failure-domain.beta.kubernetes.io/zone":                  "westeurope-" + zone,
		"kubernetes.azure.com/agentpool":                          s.pool,
		"kubernetes.azure.com/cluster":                            "MC_bench_bench_westeurope",
		"kubernetes.azure.com/consolidated-additional-properties": "a1b2c3d4-0000-4000-8000-000000000000",
		"kubernetes.azure.com/kubelet-identity-client-id":         "22222222-0000-4000-8000-000000000002",
		"kubernetes.azure.com/mode":                               "user",
		"kubernetes.azure.com/node-image-version":                 "AKSUbuntu-2204gen2containerd-202607.01.0",
		"kubernetes.azure.com/nodepool-type":                      "VirtualMachineScaleSets",
		"kubernetes.azure.com/os-sku":                             "Ubuntu",
		"kubernetes.azure.com/role":                               "agent",
		"kubernetes.azure.com/storageprofile":                     "managed",
		"kubernetes.azure.com/storagetier":                        "Premium_LRS",
		"kubernetes.io/arch":                                      "amd64",
		"kubernetes.io/hostname":                                  s.name,
		"kubernetes.io/os":                                        "linux",
		"kubernetes.io/role":                                      "agent",
		"node-role.kubernetes.io/agent":                           "",
		"node.kubernetes.io/instance-type":                        "Standard_D4s_v5",
		"storageprofile":                                          "managed",
		"storagetier":                                             "Premium_LRS",
		"topology.disk.csi.azure.com/zone":                        "westeurope-" + zone,
		"topology.kubernetes.io/region":                           "westeurope",
		"topology.kubernetes.io/zone":                             "westeurope-" + zone,
	}
	maps.Copy(labels, s.labels)
	ip := fmt.Sprintf("10.%d.%d.%d", 224+i/65536%16, i/256%256, i%256)
	q := resource.MustParse
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	cond := func(t corev1.NodeConditionType, status corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: status, LastHeartbeatTime: now, LastTransitionTime: now, Reason: reason, Message: msg}
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   s.name,
			Labels: labels,
			Annotations: map[string]string{
				"csi.volume.kubernetes.io/nodeid":                        fmt.Sprintf(`{"disk.csi.azure.com":%q,"file.csi.azure.com":%q}`, s.name, s.name),
				"node.alpha.kubernetes.io/ttl":                           "0",
				"volumes.kubernetes.io/controller-managed-attach-detach": "true",
			},
		},
		Spec: corev1.NodeSpec{
			ProviderID: s.providerID,
			PodCIDR:    fmt.Sprintf("10.244.%d.0/24", i%256),
			PodCIDRs:   []string{fmt.Sprintf("10.244.%d.0/24", i%256)},
		},
		Status: corev1.NodeStatus{
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU: q("4"), corev1.ResourceMemory: q("16393356Ki"), corev1.ResourceEphemeralStorage: q("129886128Ki"),
				corev1.ResourcePods: q("110"), "hugepages-1Gi": q("0"), "hugepages-2Mi": q("0"),
			},
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU: q("3860m"), corev1.ResourceMemory: q("12880524Ki"), corev1.ResourceEphemeralStorage: q("119703055367"),
				corev1.ResourcePods: q("110"), "hugepages-1Gi": q("0"), "hugepages-2Mi": q("0"),
			},
			Conditions: []corev1.NodeCondition{
				cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
				cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
				cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
				cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
				cond("KernelDeadlock", corev1.ConditionFalse, "KernelHasNoDeadlock", "kernel has no deadlock"),
				cond("FilesystemCorruptionProblem", corev1.ConditionFalse, "FilesystemIsOK", "Filesystem is healthy"),
				cond("ContainerRuntimeProblem", corev1.ConditionFalse, "ContainerRuntimeIsUp", "container runtime service is up"),
				cond("FrequentKubeletRestart", corev1.ConditionFalse, "NoFrequentKubeletRestart", "kubelet is functioning properly"),
			},
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: s.name}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo: corev1.NodeSystemInfo{
				MachineID:               fmt.Sprintf("%032x", i+1),
				SystemUUID:              fmt.Sprintf("%08x-0000-4000-8000-%012x", i+1, i+1),
				BootID:                  fmt.Sprintf("%08x-1111-4000-8000-%012x", i+1, i+1),
				KernelVersion:           "5.15.0-1089-azure",
				OSImage:                 "Ubuntu 22.04.5 LTS",
				ContainerRuntimeVersion: "containerd://1.7.27-1",
				KubeletVersion:          "v1.37.0",
				OperatingSystem:         "linux",
				Architecture:            "amd64",
			},
			Images: images,
		},
	}
	if !withStatus {
		n.Status = corev1.NodeStatus{}
	}
	return n
}

// nodeShape describes the Nodes the options create.
func (o options) nodeShape() string {
	if !o.nodeStatus {
		return "AKS-like labels, annotations and spec; no status"
	}
	return fmt.Sprintf("AKS-like labels, annotations, spec and kubelet status with %d images", max(o.nodeImages, 0))
}

// nodeImages lists n container images as a kubelet reports them.
func nodeImages(n int) []corev1.ContainerImage {
	if n <= 0 {
		return nil
	}
	repos := []string{
		"mcr.microsoft.com/oss/kubernetes/kube-proxy", "mcr.microsoft.com/oss/kubernetes-csi/azuredisk-csi",
		"mcr.microsoft.com/oss/kubernetes-csi/azurefile-csi", "mcr.microsoft.com/oss/calico/node",
		"mcr.microsoft.com/oss/cilium/cilium", "mcr.microsoft.com/containernetworking/azure-cns",
		"mcr.microsoft.com/oss/kubernetes/coredns", "mcr.microsoft.com/azuremonitor/containerinsights/ciprod",
		"mcr.microsoft.com/oss/kubernetes-csi/livenessprobe", "mcr.microsoft.com/oss/kubernetes-csi/csi-node-driver-registrar",
		"docker.io/library/nginx", "ghcr.io/example/payments-api", "ghcr.io/example/frontend", "quay.io/prometheus/node-exporter",
	}
	out := make([]corev1.ContainerImage, n)
	for i := range out {
		repo := repos[i%len(repos)]
		tag := fmt.Sprintf("v1.%d.%d", i/len(repos)+28, i%7)
		out[i] = corev1.ContainerImage{
			Names:     []string{fmt.Sprintf("%s@sha256:%064x", repo, uint64(i+1)*0x9e3779b97f4a7c15), repo + ":" + tag},
			SizeBytes: int64(20_000_000 + i*3_000_000),
		}
	}
	return out
}
