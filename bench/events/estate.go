package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/bench/internal/benchkit"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/testenv"
)

// bench is the control plane, armsim with both estates (benchkit.Azure:
// the Nodes and the harness's watch of them too).
type bench struct {
	env *testenv.Env
	c   client.Client
	dir string
	o   options
	res *Results
	az  *benchkit.Azure

	ctrl *benchkit.Process
}

// The namespace and name of the benchmark's objects (one NodeTagSync, one
// CloudMetadata with its AzureMetadata); the estate's owned tag and a
// NodeTagSync's label prefix on Azure.
const (
	namespace, objName      = "bench", "bench"
	classifier, labelPrefix = benchkit.AzureClassifier, benchkit.AzureLabelPrefix
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
	b.az = &benchkit.Azure{ScaleSets: b.o.scaleSets, PerSet: b.o.perSet, VMs: b.o.vms, Subs: b.o.subs, PerType: b.o.perType}
	if err := b.az.Start(b.dir, armsim.Options{}); err != nil {
		return "", err
	}
	return b.env.RootDir, b.az.CreateNodes(ctx, &cfg, b.c, 16, b.o.Timeout)
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
	if b.az != nil {
		b.az.Close()
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
	args, err := benchkit.AzureFlags(b.az.Arm, b.dir)
	if err != nil {
		return err
	}
	args = append([]string{"--controllers=nodetags,metadata"}, args...)
	var addr string
	if events {
		var hook []string
		if hook, addr, err = benchkit.WebhookFlags(b.dir, b.o.queueSize); err != nil {
			return err
		}
		args = append(args, hook...)
		args = append(args, "--events-silent-after", b.o.silentAfter.String())
	}
	b.ctrl, err = benchkit.StartRun(ctx, b.env, benchkit.Command{Bin: bin, Args: args, Dir: b.dir,
		Timeout: b.o.Timeout, PeakEvery: 200 * time.Millisecond})
	if err != nil || !events {
		return err
	}
	return b.az.Subscribe(ctx, addr, b.o.skipOwn)
}

// stopController deletes the event subscription and stops the controller.
func (b *bench) stopController() {
	if b.az != nil {
		b.az.Unsubscribe()
	}
	if b.ctrl != nil {
		if err := b.ctrl.Stop(); err != nil {
			benchkit.Logf("stopping tagsync: %v", err)
		}
		b.ctrl = nil
	}
}
