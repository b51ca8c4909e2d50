package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tagsync/tagsync/bench/internal/benchkit"
	"github.com/tagsync/tagsync/internal/operator"
	"github.com/tagsync/tagsync/internal/testenv"
)

// HAResult is the ha scenario: the chart's two replicas (leader election
// with its default timing: lease 15 s, renew deadline 10 s, retry period
// 2 s) behind one round-robin address, Event Grid retrying on its real
// schedule (10 s, 30 s, 1 min, ...).
type HAResult struct {
	// Served are the latencies while a leader serves; Kill those of the
	// edits made from the leader's SIGKILL on, one of each kind every
	// KillSpacingSeconds, while the follower takes over.
	Served             *LatencyResult `json:"served"`
	Kill               *LatencyResult `json:"kill,omitempty"`
	KillSpacingSeconds float64        `json:"killSpacingSeconds"`
	// TakeoverSeconds is from the kill until the follower led.
	TakeoverSeconds float64 `json:"takeoverSeconds"`
	// Event Grid's counters over each part: failed delivery attempts (each
	// a retry 10 s or more later) and events dropped.
	ServedFailedAttempts int `json:"servedFailedAttempts"`
	KillFailedAttempts   int `json:"killFailedAttempts"`
	Dropped              int `json:"dropped"`
	// Forwarded counts the deliveries the follower forwarded to the leader
	// while it served (tagsync_eventgrid_deliveries_total{result="forwarded"}).
	Forwarded int `json:"forwarded"`
	// ByReplica is what each replica answered, through the round robin.
	ByReplica map[string]int `json:"deliveriesByReplica"`
}

// haKillSpacing spaces the edits made across the leader kill, so that they
// cover the takeover (the lease's 15 s and the retry periods).
const haKillSpacing = time.Second

// runHA starts two replicas with leader election and the webhook behind
// one round-robin address, subscribes it, measures the latencies while
// the first leads, kills it (SIGKILL) and measures the edits made while
// the second takes over.
func (b *bench) runHA(ctx context.Context) error {
	a, hookA, err := b.startReplica(ctx, "replica-a", "")
	if err != nil {
		return err
	}
	defer func() { _ = a.Stop() }()
	follower, hookB, err := b.startReplica(ctx, "replica-b", "serving Event Grid deliveries")
	if err != nil {
		return err
	}
	defer func() { _ = follower.Stop() }()
	front, err := testenv.StartRoundRobin(hookA, hookB)
	if err != nil {
		return err
	}
	defer func() { _ = front.Close() }()
	if err := b.az.Subscribe(ctx, front.Addr(), b.o.skipOwn); err != nil {
		return err
	}
	defer b.az.Unsubscribe()
	b.ctrl = a
	defer func() { b.ctrl = nil }()
	if err := b.awaitFirstPasses(ctx); err != nil {
		return err
	}
	r := &HAResult{KillSpacingSeconds: haKillSpacing.Seconds()}
	b.res.HA = r
	before := b.az.Arm.EventGridStats()
	if r.Served, err = b.latency(ctx, "ha-served"); err != nil {
		return err
	}
	served := b.az.Arm.EventGridStats()
	r.ServedFailedAttempts = served.FailedAttempts - before.FailedAttempts
	if text, err := follower.Metrics(); err == nil {
		r.Forwarded = int(benchkit.MetricValue(text, "tagsync_eventgrid_deliveries_total", `result="forwarded"`))
	}
	benchkit.Logf("ha: %d failed delivery attempts while replica-a led; replica-b forwarded %d", r.ServedFailedAttempts, r.Forwarded)

	a.Kill()
	killed := time.Now()
	b.ctrl = follower
	benchkit.Logf("ha: killed replica-a (SIGKILL)")
	took := make(chan time.Duration, 1)
	go func() {
		_ = b.until(ctx, func() bool {
			text, _ := follower.Metrics()
			return benchkit.MetricValue(text, "leader_election_master_status") == 1
		}, "replica-b to take over")
		took <- time.Since(killed)
	}()
	spacing := b.o.spacing
	b.o.spacing = haKillSpacing
	r.Kill, err = b.latency(ctx, "ha-kill")
	b.o.spacing = spacing
	r.TakeoverSeconds = benchkit.Secs(<-took)
	end := b.az.Arm.EventGridStats()
	r.KillFailedAttempts, r.Dropped = end.FailedAttempts-served.FailedAttempts, end.Dropped-before.Dropped
	r.ByReplica = map[string]int{}
	for addr, n := range front.Served() {
		name := "replica-a"
		if addr == hookB {
			name = "replica-b"
		}
		r.ByReplica[name] = n
	}
	benchkit.Logf("ha: replica-b took over %.1fs after the kill; %d failed delivery attempts since, %d dropped", r.TakeoverSeconds,
		r.KillFailedAttempts, r.Dropped)
	return err
}

// startReplica starts one `tagsync run --controllers=nodetags,metadata`
// replica with leader election and the webhook on a free port, logging
// into a directory of its own; it returns once the log says ready ("":
// its workers started, i.e. it leads).
func (b *bench) startReplica(ctx context.Context, name, ready string) (*benchkit.Process, string, error) {
	bin, err := benchkit.BuildTagsync(ctx, b.o.Tagsync, b.env.RootDir, b.dir)
	if err != nil {
		return nil, "", err
	}
	args, err := benchkit.AzureFlags(b.az.Arm, b.dir)
	if err != nil {
		return nil, "", err
	}
	hook, addr, err := benchkit.WebhookFlags(b.dir, b.o.queueSize)
	if err != nil {
		return nil, "", err
	}
	dir := filepath.Join(b.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	// The replica's Pod and its peer token, as the kubelet would project it:
	// a follower forwards deliveries only with it.
	token, err := b.env.ReplicaPod(ctx, dir, namespace, name, "tagsync", operator.PeerAudience)
	if err != nil {
		return nil, "", err
	}
	args = append(append([]string{"--controllers=nodetags,metadata", "--leader-elect", "--leader-election-namespace", namespace,
		"--events-webhook-peer-token-file=" + token}, args...), hook...)
	p, err := benchkit.StartRun(ctx, b.env, benchkit.Command{Bin: bin, Args: args, Dir: dir, Timeout: b.o.Timeout, ReadyLog: ready})
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", name, err)
	}
	b.res.Command = p.Command
	return p, addr, nil
}

// haGoals are the ha scenario's verdicts.
func haGoals(r *HAResult) []benchkit.Goal {
	if r == nil || r.Served == nil {
		return nil
	}
	g := []benchkit.Goal{
		{Goal: "1. portal edit -> labels, 2 replicas", Target: "p99 <= 5 s", Measured: measured(r.Served.Node), Met: r.Served.Node.P99 <= 5 && lost(r.Served.Node) == 0},
		{Goal: "1. owned tag edit -> revert, 2 replicas", Target: "p99 <= 5 s", Measured: measured(r.Served.Metadata),
			Met: r.Served.Metadata.P99 <= 5 && lost(r.Served.Metadata) == 0},
		{Goal: "1. failed Event Grid deliveries, 2 replicas", Target: "0", Measured: fmt.Sprintf("%d (%d forwarded by the follower)", r.ServedFailedAttempts, r.Forwarded),
			Met: r.ServedFailedAttempts == 0},
	}
	if k := r.Kill; k != nil {
		// Nobody acts on a change until the follower takes over (the lease
		// expires): the bound is the takeover plus the goal.
		bound := r.TakeoverSeconds + 5
		target := fmt.Sprintf("p99 <= takeover + 5 s = %.1f s", bound)
		g = append(g,
			benchkit.Goal{Goal: "1. portal edit -> labels, across a leader kill", Target: target, Measured: measured(k.Node),
				Met: k.Node.P99 <= bound && lost(k.Node) == 0},
			benchkit.Goal{Goal: "1. owned tag edit -> revert, across a leader kill", Target: target, Measured: measured(k.Metadata),
				Met: k.Metadata.P99 <= bound && lost(k.Metadata) == 0},
			benchkit.Goal{Goal: "1. failed Event Grid deliveries, across a leader kill", Target: "0",
				Measured: fmt.Sprintf("%d; takeover %.1f s; %d dropped", r.KillFailedAttempts, r.TakeoverSeconds, r.Dropped), Met: r.KillFailedAttempts == 0 && r.Dropped == 0})
	}
	return g
}

// lost counts the edits that never arrived within -timeout (latency
// records them as a negative duration).
func lost(s benchkit.Spread) int {
	n := 0
	for _, v := range s.Seconds {
		if v < 0 {
			n++
		}
	}
	return n
}

// measured is the spread, and the edits lost if any.
func measured(s benchkit.Spread) string {
	if n := lost(s); n > 0 {
		return fmt.Sprintf("%s, %d never arrived", s, n)
	}
	return s.String()
}
