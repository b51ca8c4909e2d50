// Command workloadtags benchmarks the workload tags controller
// (WorkloadTagPolicy) against the goals of its issue, on Azure:
//
//	A. cold: every disk of N bound PersistentVolumes and every public IP
//	   of S LoadBalancer Services tagged within 1.1× the time ARM's write
//	   quota allows (bucket 200, refill 10/s per subscription), 0 × 429
//	B. an unchanged resync: 0 writes, at most 1 read per 1,000 resources
//	C. a namespace label change: its disks retagged, p99 ≤ 5 s
//	D. the controller's RSS, against docs/operations.md's sizing table
//
// Everything is real except the cloud: a kube-apiserver and etcd
// (internal/testenv), armsim over HTTPS with ARM's throttling and
// Resource Graph's index delay, and the controller as `tagsync run
// --controllers workloadtags` (a separate process, with the chart's
// --memory-limit, so that its RSS is the controller's; -controller
// in-process runs it in this process instead, without D).
//
// Run it from the repository root:
//
//	go run ./bench/workloadtags -namespaces 200 -volumes 50 -services 500
//
// It prints a table and writes the results as JSON (-out).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/bench/internal/benchkit"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/workloadtags"
	"github.com/tagsync/tagsync/internal/operator"
	"github.com/tagsync/tagsync/internal/testenv"
)

const (
	sub    = armsimtest.SubscriptionID
	rg     = "MC_bench_aks_westeurope"
	policy = "costs"
	key    = "cost-center"
)

// ARM's write quota per subscription (REFERENCE: bucket 200, 10/s).
const (
	armWriteCapacity = 200
	armWriteRefill   = 10
)

type options struct {
	benchkit.Flags
	namespaces, volumes, services, retags int
	retagSpacing                          time.Duration
	// controller is how the controller runs: process or in-process.
	controller string
}

// chartMemoryLimit is the chart's default goMemoryLimit (tagsync run
// --memory-limit).
const chartMemoryLimit = "128Mi"

// sizingMiB is docs/operations.md's sizing goal for one tagsync run.
const sizingMiB = 200

// Results are the benchmark's results.
type Results struct {
	benchkit.Header
	Cold   *Cold   `json:"cold,omitempty"`
	Resync *Resync `json:"resync,omitempty"`
	Retag  *Retag  `json:"retag,omitempty"`
	Memory *Memory `json:"memory,omitempty"`
}

// Memory is goal D: the separate process's memory after the scenarios.
type Memory struct {
	Command string                  `json:"command"`
	Samples []benchkit.MemorySample `json:"samples"`
}

// Cold is scenario A.
type Cold struct {
	Resources    int               `json:"resources"`
	Seconds      float64           `json:"seconds"`
	QuotaSeconds float64           `json:"quotaSeconds"`
	ARM          benchkit.ARMTally `json:"arm"`
}

// Resync is scenario B.
type Resync struct {
	ARM benchkit.ARMTally `json:"arm"`
}

// Retag is scenario C: seconds from each label change to its last disk.
type Retag struct {
	Disks   int       `json:"disksPerNamespace"`
	Seconds []float64 `json:"seconds"`
	P50     float64   `json:"p50"`
	P99     float64   `json:"p99"`
}

type bench struct {
	o    options
	res  Results
	env  *testenv.Env
	dir  string
	arm  *armsim.Server
	c    client.Client
	stop context.CancelFunc
	// proc is the controller process (-controller process).
	proc *benchkit.Process
	// disks are, per namespace, its disks' IDs.
	disks [][]string
}

func main() {
	ctrl.SetLogger(logr.Discard())
	var o options
	o.Register("workloadtags", "cold,resync,retag", "comma-separated scenarios: cold (A), resync (B, needs cold), retag (C, needs cold)", 30*time.Minute)
	flag.IntVar(&o.namespaces, "namespaces", 20, "namespaces, each with -volumes claims")
	flag.IntVar(&o.volumes, "volumes", 50, "bound PersistentVolumes (managed disks) per namespace")
	flag.IntVar(&o.services, "services", 50, "LoadBalancer Services (public IPs), spread over the namespaces")
	flag.IntVar(&o.retags, "retags", 5, "retag: namespace label changes measured, one at a time")
	flag.DurationVar(&o.retagSpacing, "retag-spacing", 10*time.Second, "retag: pause before each label change (teams do not relabel back to back, nor right after a cold run; ARM's write bucket refills 10/s)")
	flag.StringVar(&o.controller, "controller", "process", "process: `tagsync run --controllers workloadtags` (measures RSS); in-process: in this process")
	flag.Parse()
	b := &bench{o: o}
	b.res.Header = benchkit.NewHeader("workloadtags", map[string]any{"namespaces": o.namespaces, "volumesPerNamespace": o.volumes,
		"services": o.services, "retags": o.retags, "retagSpacing": o.retagSpacing.String(), "armWrites": fmt.Sprintf("bucket %d, refill %d/s", armWriteCapacity, armWriteRefill),
		"controller": o.controller})
	benchkit.Main(o.Out, b)
}

func (b *bench) Results() benchkit.Results { return &b.res }

// Start brings up the control plane and armsim, seeds the disks, IPs,
// namespaces, claims, volumes and Services, and starts the controller.
func (b *bench) Start(ctx context.Context) (string, error) {
	var err error
	if b.env, b.dir, err = benchkit.StartControlPlane("tagsync-wtbench-"); err != nil {
		return "", err
	}
	cfg := rest.CopyConfig(b.env.Config)
	cfg.QPS, cfg.Burst = 500, 1000
	if b.c, err = client.New(cfg, client.Options{Scheme: b.env.Scheme}); err != nil {
		return "", err
	}
	if b.arm, err = benchkit.StartARM(b.dir, armsim.Options{Throttle: armsim.ThrottleOptions{
		Writes: armsim.Bucket{Capacity: armWriteCapacity, RefillPerSecond: armWriteRefill}}}); err != nil {
		return "", err
	}
	if err := b.seed(ctx); err != nil {
		return "", err
	}
	return b.env.RootDir, b.startController(ctx)
}

// seed creates the cloud's resources as the CSI driver and the cloud
// provider would, and the Kubernetes objects that name them.
func (b *bench) seed(ctx context.Context) error {
	if err := b.arm.CreateSubscription(sub, nil); err != nil {
		return err
	}
	if _, err := b.arm.CreateResourceGroup(sub, armsim.ResourceGroup{Name: rg}); err != nil {
		return err
	}
	size := corev1.ResourceList{corev1.ResourceStorage: apiresource.MustParse("8Gi")}
	rwo := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	b.disks = make([][]string, b.o.namespaces)
	start := time.Now()
	for n := range b.o.namespaces {
		ns := fmt.Sprintf("team-%03d", n)
		if err := b.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{key: "cc-0"}}}); err != nil {
			return err
		}
		for v := range b.o.volumes {
			id, err := b.arm.CreateResource(sub, rg, armsim.Resource{Type: armsim.TypeDisk, Name: fmt.Sprintf("pvc-%03d-%03d", n, v),
				Tags: map[string]string{"k8s-azure-created-by": "kubernetes-azure-dd"}})
			if err != nil {
				return err
			}
			b.disks[n] = append(b.disks[n], id)
		}
	}
	err := benchkit.Parallel(ctx, b.o.namespaces*b.o.volumes, 16, func(ctx context.Context, i int) error {
		n, v := i/b.o.volumes, i%b.o.volumes
		ns, claim := fmt.Sprintf("team-%03d", n), fmt.Sprintf("data-%03d", v)
		if err := b.c.Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: claim},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: rwo, Resources: corev1.VolumeResourceRequirements{Requests: size}}}); err != nil {
			return err
		}
		return b.c.Create(ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pv-%03d-%03d", n, v)},
			Spec: corev1.PersistentVolumeSpec{Capacity: size, AccessModes: rwo, ClaimRef: &corev1.ObjectReference{Namespace: ns, Name: claim},
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "disk.csi.azure.com", VolumeHandle: b.disks[n][v]}}}})
	})
	if err != nil {
		return err
	}
	err = benchkit.Parallel(ctx, b.o.services, 16, func(ctx context.Context, i int) error {
		ns, name := fmt.Sprintf("team-%03d", i%b.o.namespaces), fmt.Sprintf("svc-%03d", i)
		if _, err := b.arm.CreateResource(sub, rg, armsim.Resource{Type: armsim.TypePublicIP, Name: "kubernetes-" + name,
			Tags: map[string]string{"k8s-azure-service": ns + "/" + name}}); err != nil {
			return err
		}
		return b.c.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 443}}}})
	})
	benchkit.Logf("seeded %d disks, %d public IPs and their objects in %s", b.o.namespaces*b.o.volumes, b.o.services, time.Since(start).Round(time.Millisecond))
	return err
}

// startController runs the workload tags controller: `tagsync run` with
// the chart's memory limit, or in this process.
func (b *bench) startController(ctx context.Context) error {
	if b.o.controller == "process" {
		bin, err := benchkit.BuildTagsync(ctx, b.o.Tagsync, b.env.RootDir, b.dir)
		if err != nil {
			return err
		}
		flags, err := benchkit.AzureFlags(b.arm, b.dir)
		if err != nil {
			return err
		}
		flags = append(flags, "--azure-subscription", sub, "--controllers", workloadtags.ControllerName, "--memory-limit", chartMemoryLimit)
		b.proc, err = benchkit.StartRun(ctx, b.env, benchkit.Command{Bin: bin, Args: flags, Dir: b.dir, Timeout: b.o.Timeout, PeakEvery: time.Second})
		if err == nil {
			b.res.Memory = &Memory{Command: "tagsync run " + strings.Join(flags, " ")}
			err = b.sample("started, informers synced, no policy")
		}
		return err
	}
	p, err := benchkit.AzureProvider(ctx, b.arm, sub)
	if err != nil {
		return err
	}
	mgr, err := operator.Build(ctx, b.env.Config, operator.Options{MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true,
		Providers: []cloud.Provider{p}, Controllers: []string{workloadtags.ControllerName}})
	if err != nil {
		return err
	}
	run, stop := context.WithCancel(context.Background())
	b.stop = stop
	go func() {
		if err := mgr.Start(run); err != nil && run.Err() == nil {
			benchkit.Logf("the controller manager stopped: %v", err)
		}
	}()
	return nil
}

// sample records the controller process's memory.
func (b *bench) sample(at string) error {
	if b.proc == nil {
		return nil
	}
	s, err := b.proc.Sample(at)
	if err != nil {
		return err
	}
	b.res.Memory.Samples = append(b.res.Memory.Samples, s)
	benchkit.Logf("memory (%s): VmRSS %.1f MiB, VmHWM %.1f MiB, Go heap in use %.1f MiB", at, s.RSSMiB, s.HWMMiB, s.GoHeapInuseMiB)
	return nil
}

func (b *bench) Close() {
	if b.stop != nil {
		b.stop()
	}
	if b.proc != nil {
		_ = b.proc.Stop()
	}
	if b.arm != nil {
		_ = b.arm.Close()
	}
	if b.env != nil {
		benchkit.StopControlPlane(b.env, b.dir)
	}
}

func (b *bench) Scenarios(ctx context.Context) error {
	if !b.o.Has("cold") {
		return nil
	}
	if err := b.cold(ctx); err != nil {
		return fmt.Errorf("cold: %w", err)
	}
	if err := b.sample("cold: every resource in sync"); err != nil {
		return err
	}
	if b.o.Has("resync") {
		if err := b.resync(ctx); err != nil {
			return fmt.Errorf("resync: %w", err)
		}
	}
	if b.o.Has("retag") {
		if err := b.retag(ctx); err != nil {
			return fmt.Errorf("retag: %w", err)
		}
	}
	return b.sample("after the resync and the retags")
}

// cold creates the policy and waits until every resource is in sync.
func (b *bench) cold(ctx context.Context) error {
	total := b.o.namespaces*b.o.volumes + b.o.services
	b.arm.ResetCalls()
	start := time.Now()
	p := &v1alpha1.WorkloadTagPolicy{ObjectMeta: metav1.ObjectMeta{Name: policy}, Spec: v1alpha1.WorkloadTagPolicySpec{
		Resources: []v1alpha1.WorkloadResource{v1alpha1.WorkloadPersistentVolume, v1alpha1.WorkloadService},
		Tags:      []v1alpha1.WorkloadTag{{Key: key, Value: "${namespace.labels['" + key + "']}"}, {Key: "k8s-namespace", Value: "${namespace}"}}}}
	if err := b.c.Create(ctx, p); err != nil {
		return err
	}
	if err := b.waitInSync(ctx, total); err != nil {
		return err
	}
	quota := max(0, float64(total-armWriteCapacity)) / armWriteRefill
	b.res.Cold = &Cold{Resources: total, Seconds: benchkit.Secs(time.Since(start)), QuotaSeconds: quota, ARM: benchkit.TallyARM(b.arm.Calls())}
	benchkit.Logf("cold: %d resources in sync in %.1fs (the write quota allows %.1fs)", total, b.res.Cold.Seconds, quota)
	return nil
}

// waitInSync waits until the policy's last pass found n resources in sync.
func (b *bench) waitInSync(ctx context.Context, n int) error {
	var running func() error
	if b.proc != nil {
		running = b.proc.Running
	}
	return benchkit.WaitPolicyInSync(ctx, b.c, policy, n, running, func(p *v1alpha1.WorkloadTagPolicy) {
		ready := "no Ready condition yet"
		if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady); c != nil {
			ready = c.Reason + ": " + c.Message
		}
		benchkit.Logf("waiting: %d of %d in sync (%s); ARM %s", p.Status.InSync, n, ready, benchkit.OpsLine(benchkit.TallyARM(b.arm.Calls()).ByOp))
	}, b.o.Timeout)
}

// resync asks for one pass over the unchanged estate.
func (b *bench) resync(ctx context.Context) error {
	if !benchkit.Pause(ctx, 3*time.Second) { // the last writes' own passes end
		return ctx.Err()
	}
	b.arm.ResetCalls()
	p := &v1alpha1.WorkloadTagPolicy{ObjectMeta: metav1.ObjectMeta{Name: policy}}
	value := fmt.Sprint(time.Now().UnixNano())
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"`+v1alpha1.SyncRequestAnnotation+`":"`+value+`"}}}`))
	if err := b.c.Patch(ctx, p, patch); err != nil {
		return err
	}
	deadline := time.Now().Add(b.o.Timeout)
	for p.Status.LastSyncRequest != value {
		if time.Now().After(deadline) || !benchkit.Pause(ctx, 100*time.Millisecond) {
			return fmt.Errorf("the pass was not served")
		}
		if err := b.c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
	}
	b.res.Resync = &Resync{ARM: benchkit.TallyARM(b.arm.Calls())}
	return nil
}

// retag changes one namespace's label at a time and times its disks.
func (b *bench) retag(ctx context.Context) error {
	r := &Retag{Disks: b.o.volumes}
	for i := range b.o.retags {
		// Each change, the first too, comes retagSpacing after what came
		// before: the first must not find ARM's write bucket still spent
		// by the cold run (at 10,000 disks it would wait for the refill).
		if !benchkit.Pause(ctx, b.o.retagSpacing) {
			return ctx.Err()
		}
		n := i % b.o.namespaces
		value := fmt.Sprintf("cc-%d", i+1)
		ns := &corev1.Namespace{}
		if err := b.c.Get(ctx, client.ObjectKey{Name: fmt.Sprintf("team-%03d", n)}, ns); err != nil {
			return err
		}
		before := ns.DeepCopy()
		ns.Labels[key] = value
		start := time.Now()
		if err := b.c.Patch(ctx, ns, client.MergeFrom(before)); err != nil {
			return err
		}
		for _, id := range b.disks[n] {
			for {
				t, err := b.arm.Tags(id)
				if err != nil {
					return err
				}
				if t[key] == value {
					break
				}
				if time.Since(start) > b.o.Timeout || !benchkit.Pause(ctx, 20*time.Millisecond) {
					return fmt.Errorf("%s not retagged", id)
				}
			}
		}
		r.Seconds = append(r.Seconds, benchkit.Secs(time.Since(start)))
	}
	xs := slices.Clone(r.Seconds)
	r.P50, r.P99 = benchkit.Percentile(xs, 50), benchkit.Percentile(xs, 99)
	b.res.Retag = r
	return nil
}

// Goals are the verdicts.
func (b *bench) Goals() []benchkit.Goal {
	var g []benchkit.Goal
	if c := b.res.Cold; c != nil {
		g = append(g, benchkit.Goal{Goal: "A. cold tagging", Target: fmt.Sprintf("<= 1.1 x %.0fs, 0 x 429", c.QuotaSeconds),
			Measured: fmt.Sprintf("%.1fs, %d x 429", c.Seconds, c.ARM.Throttled), Met: c.Seconds <= 1.1*c.QuotaSeconds+1 && c.ARM.Throttled == 0})
	}
	if r := b.res.Resync; r != nil && b.res.Cold != nil {
		// One read per 1000 resources is one Resource Graph page (1000
		// rows at most) per 1000: a read of n resources has ceil(n/1000)
		// pages at least, as the metadata benchmark's discovery budget.
		budget := (b.res.Cold.Resources + 999) / 1000
		per := float64(r.ARM.Reads) * 1000 / float64(b.res.Cold.Resources)
		g = append(g, benchkit.Goal{Goal: "B. unchanged resync", Target: fmt.Sprintf("0 writes, <= 1 read per 1000 resources (%d)", budget),
			Measured: fmt.Sprintf("%d writes, %d reads (%.2f per 1000)", r.ARM.Writes, r.ARM.Reads, per), Met: r.ARM.Writes == 0 && r.ARM.Reads <= budget})
	}
	if r := b.res.Retag; r != nil {
		g = append(g, benchkit.Goal{Goal: fmt.Sprintf("C. namespace label change → its %d disks", r.Disks), Target: "p99 <= 5s",
			Measured: fmt.Sprintf("p50 %.2fs, p99 %.2fs", r.P50, r.P99), Met: r.P99 <= 5})
	}
	if m := b.res.Memory; m != nil && len(m.Samples) > 0 {
		first, last := m.Samples[0], m.Samples[len(m.Samples)-1]
		g = append(g, benchkit.Goal{Goal: "D. tagsync run --controllers workloadtags, RSS", Target: fmt.Sprintf("<= %d MiB (docs/operations.md sizing)", sizingMiB),
			Measured: fmt.Sprintf("peak %.0f MiB, last %.0f MiB (%.0f MiB before the policy)", last.HWMMiB, last.RSSMiB, first.RSSMiB), Met: last.HWMMiB <= sizingMiB})
	}
	return g
}

// Report prints the calls behind the verdicts.
func (b *bench) Report(w io.Writer) {
	if c := b.res.Cold; c != nil {
		fmt.Fprintf(w, "cold: %s\n", benchkit.OpsLine(c.ARM.ByOp))
	}
	if r := b.res.Resync; r != nil {
		fmt.Fprintf(w, "resync: %s\n", benchkit.OpsLine(r.ARM.ByOp))
	}
	if r := b.res.Retag; r != nil {
		fmt.Fprintf(w, "retag seconds: %v\n", r.Seconds)
	}
}
