package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"golang.org/x/sync/errgroup"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/bench/internal/benchkit"
)

// oneWait bounds the wait for one label sync change or revert.
const oneWait = 30 * time.Second

// Scenarios starts the controller and runs the selected scenarios in
// order (cold, latency, resync), sampling its memory after each, then the
// memory verdict over all of them.
func (b *bench) Scenarios(ctx context.Context) error {
	res := b.res
	res.Estate = Estate{Nodes: b.az.NodeCount(), ScaleSets: b.o.scaleSets, Classified: b.az.Classified(), Subscriptions: b.o.subs,
		Hosts: b.Hosts(), Clusters: len(b.Workloads), NodeBytes: b.nodeBytes(), HostNodeBytes: b.NodeObjectBytes(),
		Volumes: b.o.volumes, VolumeNamespaces: b.o.volumeNamespaces}
	start := time.Now()
	if err := b.startController(ctx); err != nil {
		return err
	}
	res.Command = b.ctrl.Command
	res.StartSeconds = benchkit.Secs(time.Since(start))
	mem := &MemoryResult{Memory: benchkit.Memory{GoalMiB: b.o.memoryGoalMiB}}
	res.Memory = mem
	mem.sample(b, "informers synced, no objects yet")
	err := b.o.RunSteps(ctx, []benchkit.Step{
		{Name: "cold", After: "cold syncs done", Run: func(ctx context.Context) (err error) { res.Cold, err = b.cold(ctx); return err }},
		{Name: "latency", After: "latency edits done", Run: func(ctx context.Context) (err error) { res.Latency, err = b.latency(ctx); return err }},
		{Name: "resync", After: "requested full passes done", Run: func(ctx context.Context) (err error) { res.Resync, err = b.resync(ctx); return err }},
	}, func(at string) { mem.sample(b, at) })
	if err != nil {
		return err
	}
	mem.Settle(b.ctrl, b.o.Scenarios, func(at string) benchkit.MemorySample { return mem.sample(b, at) })
	return nil
}

// sample adds a sample of the controller process's memory now.
func (m *MemoryResult) sample(b *bench, at string) benchkit.MemorySample {
	s, _ := b.ctrl.Sample(at)
	m.Samples = append(m.Samples, s)
	return s
}

// nodeBytes is the size of one AKS-like Node as created.
func (b *bench) nodeBytes() int {
	n := b.az.Node("pool00-000000", "azure://x", "pool00", 0)
	raw, err := n.Marshal()
	if err != nil {
		return 0
	}
	return len(raw)
}

// meter measures a phase: wall time, the controller's CPU time and
// Kubernetes requests, armsim's calls (reset at the start).
type meter struct {
	b     *bench
	start time.Time
	cpu   float64
	kube  map[string]int
}

func (b *bench) meter() *meter {
	b.az.Arm.ResetCalls()
	text, _ := b.ctrl.Metrics()
	return &meter{b: b, start: time.Now(), cpu: benchkit.ProcCPU(b.ctrl.Pid()), kube: benchkit.KubeRequests(text, b.Mgmt.Config.Host)}
}

// done is the phase so far.
func (m *meter) done() Phase {
	wall := time.Since(m.start).Seconds()
	cpu := benchkit.ProcCPU(m.b.ctrl.Pid()) - m.cpu
	text, _ := m.b.ctrl.Metrics()
	return Phase{Seconds: benchkit.Round3(wall), CPUSeconds: benchkit.Round3(cpu), CPUCores: benchkit.Round3(cpu / max(wall, 0.001)),
		ARM: benchkit.TallyARM(m.b.az.Arm.Calls()), Kube: benchkit.DiffCalls(m.kube, benchkit.KubeRequests(text, m.b.Mgmt.Config.Host))}
}

// cold creates the NodeTagSync, the AzureMetadata with its CloudMetadata
// and the LabelSyncProfile at once and measures, for each controller, from
// then until its first sync is done: every Node carries its scale set's
// tags as labels; the CloudMetadata is Ready with every classified
// resource matched and in sync (the estate already carries env=prod: a
// full read, no write); every workload Node carries its host's labels and
// the profile is Ready.
func (b *bench) cold(ctx context.Context) (*ColdResult, error) {
	r := &ColdResult{Nodes: b.az.NodeCount(), GoalSeconds: coldGoal(b.az.NodeCount())}
	m := b.meter()
	b.az.Nodes.ResetWrites()
	start := time.Now()
	objs := []client.Object{
		&v1alpha1.NodeTagSync{ObjectMeta: metav1.ObjectMeta{Name: objName}, Spec: v1alpha1.NodeTagSyncSpec{Provider: v1alpha1.ProviderAzure}},
		&v1alpha1.AzureMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: objName},
			Spec: v1alpha1.AzureMetadataSpec{Opcode: v1alpha1.OpcodeAdd, ResourceTags: map[string]string{"env": "prod"}, Subscriptions: b.az.SubIDs[1:]}},
		&v1alpha1.CloudMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: objName},
			Spec: v1alpha1.CloudMetadataSpec{Classifiers: map[string]string{benchkit.AzureClassifier: "owned"},
				ControllerConfig: v1alpha1.ControllerConfig{Limit: v1alpha1.LimitPartial, SyncEvery: "5m"},
				CloudProvider:    v1alpha1.CloudProviderRefs{AzureRef: &v1alpha1.LocalObjectRef{Name: objName}}}},
		benchkit.Profile(b.o.labelResync),
	}
	if p := b.volumesPolicy(); p != nil {
		objs = append(objs, p)
	}
	for _, o := range objs {
		if err := b.C.Create(ctx, o); err != nil {
			return r, err
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		var last time.Time
		for i, host := range b.az.Hosts {
			at, err := b.az.Labelled(gctx, host, benchkit.AzureLabelPrefix+"nodepool", fmt.Sprintf("pool%02d", i), b.o.Timeout)
			if err != nil {
				return fmt.Errorf("node sync: %w", err)
			}
			last = later(last, at)
		}
		r.NodeSyncSeconds = benchkit.Secs(last.Sub(start))
		benchkit.Logf("cold: node sync labelled %d Nodes in %.1fs", b.az.NodeCount(), r.NodeSyncSeconds)
		return nil
	})
	g.Go(func() error {
		if err := benchkit.WaitMatched(gctx, b.C, namespace, objName, b.az.Classified(), b.ctrl.Running, b.ctrl.LogFile, b.o.Timeout); err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
		r.MetadataSeconds = benchkit.Secs(time.Since(start))
		benchkit.Logf("cold: metadata matched %d resources in %.1fs", b.az.Classified(), r.MetadataSeconds)
		return nil
	})
	g.Go(func() error {
		last, err := b.AwaitAllNodes(gctx, b.o.Timeout)
		if err != nil {
			return fmt.Errorf("label sync: %w", err)
		}
		r.LabelSyncSeconds = benchkit.Secs(last.Sub(start))
		if err := b.WaitReady(gctx, b.ctrl.Running, b.ctrl.LogFile, b.o.Timeout); err != nil {
			return fmt.Errorf("label sync: %w", err)
		}
		r.LabelStatusSeconds = benchkit.Secs(time.Since(start))
		benchkit.Logf("cold: label sync labelled %d Nodes in %.1fs (profile Ready %.1fs)", b.Hosts(), r.LabelSyncSeconds, r.LabelStatusSeconds)
		return nil
	})
	if b.o.volumes > 0 {
		g.Go(func() error {
			if err := benchkit.WaitPolicyInSync(gctx, b.C, volumePolicy, b.o.volumes, b.ctrl.Running, nil, b.o.Timeout); err != nil {
				return fmt.Errorf("workload tags: %w", err)
			}
			r.WorkloadSeconds = benchkit.Secs(time.Since(start))
			benchkit.Logf("cold: workload tags found %d disks in sync in %.1fs", b.o.volumes, r.WorkloadSeconds)
			return nil
		})
	}
	err := g.Wait()
	r.Phase = m.done()
	writes, _ := b.az.Nodes.WritesSeen()
	r.NodeWrites = writes["update"]
	return r, err
}

// coldGoal is the node sync's cold-sync goal at n Nodes: 30 s (stated at
// 1050 Nodes), or 1.25 × the time the Kubernetes client's default budget
// allows for n Node PATCHes (burst 200, then 100/s) when that is more.
func coldGoal(n int) float64 {
	return max(30, 1.25*float64(max(0, n-200))/100)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// latency runs, at once, the cloud edits of the events benchmark (a
// portal edit of a scale set's tags to every Node's labels, an outside
// edit of an owned tag to its revert: -edits of each, one every -spacing)
// and the label sync's edits (-changes host label changes, then -reverts
// Node-side edits, one after the other).
func (b *bench) latency(ctx context.Context) (*LatencyResult, error) {
	r := &LatencyResult{}
	m := b.meter()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		r.Cloud, err = b.az.Latency(gctx, "edit", b.o.edits, b.o.spacing, b.ctrl.Running, b.o.Timeout)
		return err
	})
	g.Go(func() error {
		for i := range b.o.changes {
			_, took, err := b.ChangeHost(gctx, i, oneWait)
			if err != nil {
				return err
			}
			r.HostChange.Seconds = append(r.HostChange.Seconds, benchkit.Secs(took))
		}
		for i := range b.o.reverts {
			_, took, err := b.EditNode(gctx, i, oneWait)
			if err != nil {
				return err
			}
			r.NodeRevert.Seconds = append(r.NodeRevert.Seconds, benchkit.Secs(took))
		}
		return nil
	})
	err := g.Wait()
	for _, s := range []*benchkit.Spread{&r.HostChange, &r.NodeRevert} {
		s.P50, s.P99 = benchkit.Percentile(s.Seconds, 50), benchkit.Percentile(s.Seconds, 99)
	}
	r.Phase = m.done()
	benchkit.Logf("latency: label sync host change %s; Node edit reverted %s", r.HostChange, r.NodeRevert)
	return r, err
}

// resync asks the NodeTagSync for a full pass and waits for its status's
// lastFullSyncTime to change, then the CloudMetadata and waits for its
// status to say the pass was served; each is measured alone (3 s or 2 s
// after for any follow-up pass): ARM calls, Node writes.
func (b *bench) resync(ctx context.Context) (*ResyncResult, error) {
	r := &ResyncResult{}
	benchkit.Pause(ctx, 5*time.Second) // follow-up passes of the latency edits
	m := b.meter()
	b.az.Nodes.ResetWrites()
	secs, err := b.nodeSyncPass(ctx)
	if err != nil {
		return r, err
	}
	benchkit.Pause(ctx, 3*time.Second)
	writes, _ := b.az.Nodes.WritesSeen()
	r.NodeSync = Pass{Seconds: secs, Phase: m.done(), NodeWrites: writes["update"], ReadBudget: b.o.scaleSets + 1}
	benchkit.Logf("resync: node sync pass %.2fs; ARM %s; %d Node writes", secs, benchkit.OpsLine(r.NodeSync.ARM.ByOp), r.NodeSync.NodeWrites)
	m = b.meter()
	if secs, err = benchkit.RequestPass(ctx, b.C, namespace, objName, b.ctrl.Running, b.o.Timeout); err != nil {
		return r, err
	}
	benchkit.Pause(ctx, 2*time.Second)
	r.Metadata = Pass{Seconds: secs, Phase: m.done(), ReadBudget: (b.az.Classified() + 999) / 1000}
	benchkit.Logf("resync: metadata pass %.2fs; ARM %s", secs, benchkit.OpsLine(r.Metadata.ARM.ByOp))
	return r, nil
}

// nodeSyncPass bumps the NodeTagSync's sync-request annotation (a pass
// with fresh cloud reads) and returns the seconds until its status's
// lastFullSyncTime changed (it has one-second resolution: the request is
// made at the start of a wall-clock second).
func (b *bench) nodeSyncPass(ctx context.Context) (float64, error) {
	nts := &v1alpha1.NodeTagSync{}
	if err := b.C.Get(ctx, client.ObjectKey{Name: objName}, nts); err != nil {
		return 0, err
	}
	var prev time.Time
	if t := nts.Status.LastFullSyncTime; t != nil {
		prev = t.Time
	}
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.SyncRequestAnnotation, strconv.FormatInt(time.Now().UnixNano(), 10))
	start := time.Now()
	if err := b.C.Patch(ctx, &v1alpha1.NodeTagSync{ObjectMeta: metav1.ObjectMeta{Name: objName}}, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return 0, err
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, b.o.Timeout, true, func(ctx context.Context) (bool, error) {
		if err := b.ctrl.Running(); err != nil {
			return false, err
		}
		if err := b.C.Get(ctx, client.ObjectKey{Name: objName}, nts); err != nil {
			return false, err
		}
		t := nts.Status.LastFullSyncTime
		return t != nil && !t.Time.Equal(prev), nil
	})
	return benchkit.Secs(time.Since(start)), err
}
