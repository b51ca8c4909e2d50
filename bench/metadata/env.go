package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/bench/internal/benchkit"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/testenv"
)

const (
	// infra is the benchmark cluster's infrastructure name.
	infra = "bench1"
	// azureClassifier and awsClassifier are its owned tag in each cloud's spelling.
	azureClassifier = "kubernetes.io_cluster." + infra
	awsClassifier   = "kubernetes.io/cluster/" + infra
	// namespace holds the benchmark's objects.
	namespace = "bench"
	// armWriteCapacity and armWriteRefill are ARM's write bucket per
	// subscription (armsim enforces them).
	armWriteCapacity = 200
	armWriteRefill   = 10
	// networkWriteCapacity and networkWriteRefill are Network's write
	// budget per subscription (1000 per 5 minutes), which armsim charges
	// the Tags API's writes of its resources to.
	networkWriteCapacity = 1000
	networkWriteRefill   = 1000.0 / 300
)

// bench is the control plane, the simulated clouds and the harness's clients.
type bench struct {
	o   options
	res *Results
	env *testenv.Env
	dir string
	c   client.Client

	arm    *armsim.Server
	estate armsimtest.ClusterEstate
	writes *writeLog

	moto   *testenv.Moto
	ec2    *ec2.Client
	ec2IDs []string

	ctrl *benchkit.Process
}

// writeLog records the time of every ARM tag write armsim answered, by
// subscription and status (from armsim's request log).
type writeLog struct {
	mu     sync.Mutex
	on     bool
	bySub  map[string][]time.Time // 2xx writes
	status map[int]int
	first  time.Time
	last   time.Time
	ops    map[string]int
}

// start clears the log and records from now on.
func (w *writeLog) start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.on, w.bySub, w.status, w.ops = true, map[string][]time.Time{}, map[int]int{}, map[string]int{}
	w.first, w.last = time.Time{}, time.Time{}
}

// logf is armsim's Logf: "armsim: %s %s -> %s %d" (method, path, op, status).
func (w *writeLog) logf(_ string, args ...any) {
	if len(args) != 4 {
		return
	}
	path, _ := args[1].(string)
	op, _ := args[2].(string)
	status, _ := args[3].(int)
	if !strings.HasPrefix(op, "Tags.") || op == "Tags.GetAtScope" {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.on {
		return
	}
	w.ops[op]++
	w.status[status]++
	if status >= 300 {
		return
	}
	sub := ""
	if p := strings.Split(path, "/"); len(p) > 2 && strings.EqualFold(p[1], "subscriptions") {
		sub = strings.ToLower(p[2])
	}
	w.bySub[sub] = append(w.bySub[sub], now)
	if w.first.IsZero() {
		w.first = now
	}
	w.last = now
}

// snapshot returns the number of successful writes, the 429s and the last write time.
func (w *writeLog) snapshot() (ok, throttled int, last time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ts := range w.bySub {
		ok += len(ts)
	}
	return ok, w.status[http.StatusTooManyRequests], w.last
}

// Start starts the control plane and the clouds the scenarios need.
func (b *bench) Start(ctx context.Context) (string, error) {
	if b.o.auditLog != "none" && b.o.auditLog != "stderr" && b.o.auditLog != "file" {
		return "", fmt.Errorf("-audit-log %q: want none, stderr or file", b.o.auditLog)
	}
	var err error
	b.writes = &writeLog{}
	if b.env, b.dir, err = benchkit.StartControlPlane("tagsync-mdbench-"); err != nil {
		return "", err
	}
	cfg := rest.CopyConfig(b.env.Config)
	cfg.QPS, cfg.Burst = 500, 1000
	if b.c, err = client.New(cfg, client.Options{Scheme: b.env.Scheme}); err != nil {
		return "", err
	}
	if err := b.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return "", err
	}
	if b.o.azure() {
		if err := b.startARM(); err != nil {
			return "", err
		}
	}
	if b.o.aws() {
		if err := b.startMoto(ctx); err != nil {
			return "", err
		}
	}
	return b.env.RootDir, nil
}

// subscriptionID is the i-th benchmark subscription.
func subscriptionID(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1) }

// startARM starts armsim over HTTPS with ARM's throttling (writes: bucket
// 200, refill 10/s per subscription) and seeds the estate: PerType
// resources of each cluster type and the resource group in each
// subscription, each carrying the classifier and env=prod.
func (b *bench) startARM() error {
	s, err := benchkit.StartARM(b.dir, armsim.Options{
		Throttle: armsim.ThrottleOptions{
			Writes: armsim.Bucket{Capacity: armWriteCapacity, RefillPerSecond: armWriteRefill},
		},
		Logf: b.writes.logf,
	})
	if err != nil {
		return err
	}
	b.arm = s
	var subs []string
	for i := range b.o.subs {
		subs = append(subs, subscriptionID(i))
	}
	b.estate = armsimtest.ClusterEstate{Infra: infra, PerType: b.o.perType, Subscriptions: subs,
		Tags: map[string]string{azureClassifier: "owned", "env": "prod"}}
	start := time.Now()
	if err := b.estate.Seed(s); err != nil {
		return err
	}
	benchkit.Logf("armsim at %s: %d resources + %d groups in %d subscriptions seeded in %s", s.URL(),
		len(b.estate.ResourceIDs()), len(b.estate.GroupIDs()), b.o.subs, time.Since(start).Round(time.Millisecond))
	return nil
}

// azureResources is the number of classified Azure resources (groups included).
func (b *bench) azureResources() int {
	return len(b.estate.ResourceIDs()) + len(b.estate.GroupIDs())
}

// startMoto starts moto_server and runs the EC2 instances, each tagged with
// the classifier and env=prod, at most 1000 per RunInstances.
func (b *bench) startMoto(ctx context.Context) error {
	benchkit.Logf("starting moto_server")
	m, err := testenv.NewMoto()
	if err != nil {
		return err
	}
	b.moto = m
	b.ec2 = ec2.NewFromConfig(m.Config)
	start := time.Now()
	for left := b.o.awsResources; left > 0; {
		n := min(left, 1000)
		out, err := b.ec2.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: sdkaws.String("ami-12c6146b"),
			MinCount: sdkaws.Int32(int32(n)), MaxCount: sdkaws.Int32(int32(n)), InstanceType: ec2types.InstanceTypeT3Micro,
			TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance,
				Tags: []ec2types.Tag{{Key: sdkaws.String(awsClassifier), Value: sdkaws.String("owned")},
					{Key: sdkaws.String("env"), Value: sdkaws.String("prod")}}}}})
		if err != nil {
			return fmt.Errorf("RunInstances(%d): %w", n, err)
		}
		if len(out.Instances) != n {
			return fmt.Errorf("RunInstances(%d) started %d", n, len(out.Instances))
		}
		for _, in := range out.Instances {
			b.ec2IDs = append(b.ec2IDs, *in.InstanceId)
		}
		left -= n
	}
	benchkit.Logf("moto at %s: %d EC2 instances started in %s", m.URL, len(b.ec2IDs), time.Since(start).Round(time.Millisecond))
	return nil
}

// countEC2Tag counts the instances carrying key=value (DescribeTags, 1000 a page).
func (b *bench) countEC2Tag(ctx context.Context, key, value string) (int, error) {
	n := 0
	p := ec2.NewDescribeTagsPaginator(b.ec2, &ec2.DescribeTagsInput{MaxResults: sdkaws.Int32(1000), Filters: []ec2types.Filter{
		{Name: sdkaws.String("key"), Values: []string{key}}, {Name: sdkaws.String("value"), Values: []string{value}},
		{Name: sdkaws.String("resource-type"), Values: []string{"instance"}}}})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return n, err
		}
		n += len(out.Tags)
	}
	return n, nil
}

// Close stops the controller, the clouds and the control plane.
func (b *bench) Close() {
	if b.ctrl != nil {
		if err := b.ctrl.Stop(); err != nil {
			benchkit.Logf("stopping tagsync: %v", err)
		}
	}
	if b.moto != nil {
		_ = b.moto.Stop()
	}
	if b.arm != nil {
		_ = b.arm.Close()
	}
	if b.env != nil {
		benchkit.StopControlPlane(b.env, b.dir)
	}
}

// startController runs `tagsync run --controllers=metadata` against the
// control plane, armsim and moto: default budgets (but -azure-write-qps),
// static AWS test credentials from a file.
func (b *bench) startController(ctx context.Context) error {
	bin, err := benchkit.BuildTagsync(ctx, b.o.Tagsync, b.env.RootDir, b.dir)
	if err != nil {
		return err
	}
	audit := b.o.auditLog
	if audit == "file" {
		audit = filepath.Join(b.dir, "audit.jsonl")
	}
	args := []string{"--controllers=metadata", "--audit-log", audit}
	if b.arm != nil {
		azureFlags, err := benchkit.AzureFlags(b.arm, b.dir)
		if err != nil {
			return err
		}
		args = append(args, azureFlags...)
		if b.o.writeQPS > 0 {
			args = append(args, "--azure-write-qps", fmt.Sprint(b.o.writeQPS))
		}
	}
	if b.moto != nil {
		awsFlags, err := benchkit.AWSFlags(b.moto, b.dir)
		if err != nil {
			return err
		}
		args = append(args, awsFlags...)
	}
	b.ctrl, err = benchkit.StartRun(ctx, b.env, benchkit.Command{Bin: bin, Args: args, Dir: b.dir,
		Timeout: b.o.Timeout, PeakEvery: 200 * time.Millisecond})
	return err
}
