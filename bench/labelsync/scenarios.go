package main

import (
	"context"
	"fmt"
	"maps"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/bench/internal/benchkit"
)

// oneWait bounds the wait for one change or revert.
const oneWait = 30 * time.Second

// Scenarios starts the controller, creates the profile, waits for the
// initial sync and runs the selected scenarios in order: change, revert,
// steady, then the memory verdict over all of them.
func (b *bench) Scenarios(ctx context.Context) error {
	res := b.res
	if err := b.startController(ctx); err != nil {
		return err
	}
	res.Command = b.ctrl.Command
	mem := &MemoryResult{Memory: benchkit.Memory{GoalMiB: 150}, Hosts: len(b.workloads) * b.o.hostsPer, Clusters: len(b.workloads)}
	res.Memory = mem
	mem.sample(b, "informers synced, no profile yet")
	var err error
	if res.Initial, err = b.initialSync(ctx); err != nil {
		return fmt.Errorf("initial sync: %w", err)
	}
	mem.sample(b, "initial sync done")
	err = b.o.RunSteps(ctx, []benchkit.Step{
		{Name: "change", After: "after change", Run: func(ctx context.Context) (err error) { res.Change, err = b.changeScenario(ctx); return err }},
		{Name: "revert", After: "after revert", Run: func(ctx context.Context) (err error) { res.Revert, err = b.revertScenario(ctx); return err }},
		{Name: "steady", After: "after steady", Run: func(ctx context.Context) (err error) { res.Steady, err = b.steadyScenario(ctx); return err }},
	}, func(at string) { mem.sample(b, at) })
	if err != nil {
		return err
	}
	mem.Settle(b.ctrl, b.o.Scenarios, func(at string) benchkit.MemorySample { return mem.sample(b, at) })
	if b.o.heapProfile != "" {
		return b.saveHeapProfile(b.o.heapProfile)
	}
	return nil
}

// sample adds a sample of the controller process's memory now.
func (m *MemoryResult) sample(b *bench, at string) benchkit.MemorySample {
	s, _ := b.ctrl.Sample(at)
	anon, file := rssParts(b.ctrl.Pid())
	m.Samples = append(m.Samples, s)
	m.Parts = append(m.Parts, RSSParts{At: at, AnonMiB: anon, FileMiB: file})
	return s
}

// initialSync creates the profile and waits until every Node carries its
// host's in-scope labels and the profile is Ready with every host in sync.
func (b *bench) initialSync(ctx context.Context) (*InitialResult, error) {
	r := &InitialResult{}
	b.resetWrites()
	before := b.snapshot()
	p := &v1alpha1.LabelSyncProfile{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: profileName},
		Spec: v1alpha1.LabelSyncProfileSpec{
			HostSelector:   metav1.LabelSelector{MatchLabels: map[string]string{selectorLabel: profileName}},
			Prefixes:       []string{rackPrefix, securityPrefix},
			ResyncInterval: &metav1.Duration{Duration: b.o.resync},
		}}
	start := time.Now()
	if err := b.c.Create(ctx, p); err != nil {
		return r, err
	}
	last, err := b.awaitAllNodes(ctx)
	if err != nil {
		return r, err
	}
	r.LabelsSeconds = benchkit.Secs(last.Sub(start))
	if err := b.waitReady(ctx); err != nil {
		return r, err
	}
	r.StatusSeconds = benchkit.Secs(time.Since(start))
	r.Traffic = b.snapshot().since(before)
	benchkit.Logf("initial sync: %d Nodes labelled %.2fs after the profile was created (status %.2fs); %s",
		len(b.workloads)*b.o.hostsPer, r.LabelsSeconds, r.StatusSeconds, r.Traffic.summary())
	return r, nil
}

// awaitAllNodes waits until every Node's in-scope labels are its host's
// and returns the time of the last event that made one so.
func (b *bench) awaitAllNodes(ctx context.Context) (time.Time, error) {
	var last time.Time
	deadline := time.Now().Add(b.o.Timeout)
	for c, w := range b.workloads {
		for h := range b.o.hostsPer {
			want := b.want[c][h]
			at, err := w.nodes.Await(ctx, nodeKey(h), func(s benchkit.ObjState) bool { return maps.Equal(s.Labels, want) }, time.Until(deadline))
			if err != nil {
				return last, fmt.Errorf("%s: %w", clusterName(c), err)
			}
			last = later(last, at)
		}
	}
	return last, nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// waitReady waits until the profile is Ready for its generation with every
// host matched and in sync.
func (b *bench) waitReady(ctx context.Context) error {
	n := int32(len(b.workloads) * b.o.hostsPer)
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, b.o.Timeout, true, func(ctx context.Context) (bool, error) {
		if err := b.ctrl.Running(); err != nil {
			return false, err
		}
		p, err := b.profile(ctx)
		if err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionReady)
		last = fmt.Sprintf("matched %d, inSync %d, waiting %d, Ready %+v", p.Status.HostsMatched, p.Status.NodesInSync, p.Status.HostsWaiting, c)
		return c != nil && c.Status == metav1.ConditionTrue && p.Status.ObservedGeneration == p.Generation &&
			p.Status.HostsMatched == n && p.Status.NodesInSync == n, nil
	})
	if err != nil {
		return fmt.Errorf("profile %s: %w (last: %s); controller log:\n%s", profileName, err, last, benchkit.Tail(b.ctrl.LogFile, 20))
	}
	return nil
}

func (b *bench) profile(ctx context.Context) (*v1alpha1.LabelSyncProfile, error) {
	p := &v1alpha1.LabelSyncProfile{}
	return p, b.c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: profileName}, p)
}

// pick spreads the i-th of n changes over the clusters and hosts; offset
// keeps scenarios on different hosts.
func (b *bench) pick(i, offset int) (c, h int) {
	c = i % len(b.workloads)
	h = (i/len(b.workloads)*7 + offset) % b.o.hostsPer
	return c, h
}

// labelEdit is one change of a label: set (value) or removal (nil).
type labelEdit struct {
	op    string
	key   string
	value *string
}

// editFor is the i-th edit: a changed value, a new key, a removed key in
// turn.
func editFor(i int, tag string) labelEdit {
	v := fmt.Sprintf("%s%d", tag, i)
	switch i % 3 {
	case 0:
		return labelEdit{op: "change", key: rackPrefix + "/row", value: &v}
	case 1:
		return labelEdit{op: "add", key: rackPrefix + "/slot", value: &v}
	default:
		return labelEdit{op: "remove", key: securityPrefix + "/level"}
	}
}

// apply is labels with the edit made.
func (e labelEdit) apply(labels map[string]string) map[string]string {
	out := maps.Clone(labels)
	if e.value == nil {
		delete(out, e.key)
	} else {
		out[e.key] = *e.value
	}
	return out
}

// patchBody is the JSON merge patch of the edit.
func (e labelEdit) patchBody() []byte {
	v := "null"
	if e.value != nil {
		v = fmt.Sprintf("%q", *e.value)
	}
	return fmt.Appendf(nil, `{"metadata":{"labels":{%q:%s}}}`, e.key, v)
}

// latency makes n edits one after the other, each with edit(i), which
// returns the edit's operation and how long the Node took to show it, and
// judges the latencies; what is logged starts with what (given n).
func (b *bench) latency(ctx context.Context, what string, n int, edit func(i int) (string, time.Duration, error)) (*LatencyResult, error) {
	r := &LatencyResult{GoalSeconds: 1}
	before := b.snapshot()
	for i := range n {
		op, took, err := edit(i)
		if err != nil {
			return r, err
		}
		r.add(op, took)
	}
	r.finish(b.settleWrites(ctx, before))
	benchkit.Logf(what+": median %.3fs, p99 %.3fs, max %.3fs; writes %s", len(r.Seconds), r.Median, r.P99, r.Max, benchkit.OpsLine(r.Writes))
	return r, nil
}

// changeScenario (A) edits host labels one after the other and measures,
// for each, from just before the request until the harness's watch of the
// workload cluster sees the Node carry the host's in-scope labels.
func (b *bench) changeScenario(ctx context.Context) (*LatencyResult, error) {
	return b.latency(ctx, "A: %d host label changes", b.o.changes, func(i int) (string, time.Duration, error) {
		c, h := b.pick(i, 0)
		e := editFor(i, "c")
		want := e.apply(b.want[c][h])
		host := &metav1.PartialObjectMetadata{}
		host.SetGroupVersionKind(hostGVK)
		host.SetNamespace(namespace)
		host.SetName(hostName(c, h))
		start := time.Now()
		if err := b.c.Patch(ctx, host, client.RawPatch(types.MergePatchType, e.patchBody())); err != nil {
			return "", 0, err
		}
		b.want[c][h] = want
		at, err := b.workloads[c].nodes.Await(ctx, nodeKey(h), func(s benchkit.ObjState) bool { return maps.Equal(s.Labels, want) }, oneWait)
		if err != nil {
			return "", 0, fmt.Errorf("change %d (%s %s on %s): %w", i, e.op, e.key, hostName(c, h), err)
		}
		return e.op, at.Sub(start), nil
	})
}

// revertScenario (B) edits in-scope labels on Nodes one after the other
// (a changed value, an added key, a removed key in turn) and measures,
// for each, from just before the request until the harness's watch sees a
// newer version of the Node with the host's labels back.
func (b *bench) revertScenario(ctx context.Context) (*LatencyResult, error) {
	return b.latency(ctx, "B: %d Node edits reverted", b.o.reverts, func(i int) (string, time.Duration, error) {
		c, h := b.pick(i, 3)
		e := editFor(i, "edited")
		if e.op == "remove" {
			e.key = rackPrefix + "/zone"
		}
		want := b.want[c][h]
		start := time.Now()
		n, err := b.workloads[c].kube.CoreV1().Nodes().Patch(ctx, nodeName(h), types.MergePatchType, e.patchBody(), metav1.PatchOptions{})
		if err != nil {
			return "", 0, err
		}
		var edited uint64
		if _, err := fmt.Sscan(n.ResourceVersion, &edited); err != nil {
			return "", 0, fmt.Errorf("resourceVersion %q of node %s: %w", n.ResourceVersion, n.Name, err)
		}
		at, err := b.workloads[c].nodes.Await(ctx, nodeKey(h), func(s benchkit.ObjState) bool {
			return s.RV > edited && maps.Equal(s.Labels, want)
		}, oneWait)
		if err != nil {
			return "", 0, fmt.Errorf("revert %d (%s %s on node %s of %s): %w", i, e.op, e.key, nodeName(h), clusterName(c), err)
		}
		return e.op, at.Sub(start), nil
	})
}

// steadyScenario (C) waits, with nothing changing, for o.steadyResyncs
// periodic passes of the profile and counts every write in the management
// and workload clusters meanwhile, and the controller's own requests.
func (b *bench) steadyScenario(ctx context.Context) (*SteadyResult, error) {
	r := &SteadyResult{Resyncs: b.o.steadyResyncs, ResyncInterval: b.o.resync.String()}
	if err := b.quiet(ctx); err != nil {
		return r, err
	}
	before := b.snapshot()
	start := time.Now()
	var passes float64
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Duration(b.o.steadyResyncs+1)*b.o.resync+b.o.Timeout, true,
		func(context.Context) (bool, error) {
			if err := b.ctrl.Running(); err != nil {
				return false, err
			}
			text, err := b.ctrl.Metrics()
			if err != nil {
				return false, nil
			}
			passes = benchkit.MetricValue(text, "tagsync_labelsync_passes_total", `kind="LabelSyncProfile"`) - before.passes
			return passes >= float64(b.o.steadyResyncs), nil
		})
	if err != nil {
		return r, fmt.Errorf("%d periodic passes after %s: %w", int(passes), time.Since(start).Round(time.Second), err)
	}
	// The last pass's status patch, if any, comes after its pass is
	// counted: count what arrives within the next 2 s too.
	time.Sleep(2 * time.Second)
	after := b.snapshot()
	r.WindowSeconds = benchkit.Secs(time.Since(start))
	r.Passes = int(after.passes - before.passes)
	r.PassSeconds = benchkit.Round3((after.passSeconds - before.passSeconds) / max(1, after.passes-before.passes))
	r.Traffic = after.since(before)
	r.judge()
	benchkit.Logf("C: %d periodic passes (%.3fs each) in %.1fs: %s", r.Passes, r.PassSeconds, r.WindowSeconds, r.Traffic.summary())
	return r, nil
}

// quiet waits until no write has been seen for 2 s (the follow-up passes
// of the last scenario are done), polling with a deadline.
func (b *bench) quiet(ctx context.Context) error {
	last, lastChange := total(b.writesSeen()), time.Now()
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, b.o.Timeout, true, func(context.Context) (bool, error) {
		if n := total(b.writesSeen()); n != last {
			last, lastChange = n, time.Now()
		}
		return time.Since(lastChange) >= 2*time.Second, nil
	})
}
