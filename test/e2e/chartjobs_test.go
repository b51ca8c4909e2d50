package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/internal/testenv"
)

// chartJobObjects returns the objects the chart's objects Job applies after
// the rollout (the JSON of its `tagsync chart apply --object` arguments):
// what the cluster holds once the install has finished.
func chartJobObjects(t testing.TB, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, job := range ofKind(objs, "Job") {
		args := jobArgs(t, job)
		if len(args) < 2 || args[0] != "chart" || args[1] != "apply" {
			continue
		}
		for _, a := range args[2:] {
			text, ok := strings.CutPrefix(a, "--object=")
			if !ok {
				continue
			}
			o := &unstructured.Unstructured{}
			if err := json.Unmarshal([]byte(text), &o.Object); err != nil {
				t.Fatalf("Job %s: --object is not JSON: %v", job.GetName(), err)
			}
			out = append(out, o)
		}
	}
	return out
}

// jobArgs returns the arguments of a Job's only container.
func jobArgs(t testing.TB, job *unstructured.Unstructured) []string {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(job.Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 {
		t.Fatalf("Job %s has %d containers, want 1", job.GetName(), len(containers))
	}
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	return args
}

// chartJobs stands in for the kubelet and the Job and Deployment controllers
// an envtest control plane lacks, for a `helm install` or `upgrade` of the
// chart: it runs each Job's container as the real tagsync binary, acting as
// the Job's ServiceAccount, and records the outcome in the Job's status, and
// it marks each Deployment rolled out (unless held), so the objects Job's
// wait for the rollout ends.
type chartJobs struct {
	t       *testing.T
	cluster *testenv.Env
	hold    atomic.Bool

	mu   sync.Mutex
	seen map[types.UID]bool
	runs []chartJobRun
}

// chartJobRun is one Job run: its name, arguments, output so far and, once
// it has finished, its error.
type chartJobRun struct {
	Name   string
	Args   []string
	output *testenv.SyncBuffer
	done   bool
	Err    error
}

// Output is what the run has printed so far.
func (r chartJobRun) Output() string { return r.output.String() }

// runChartJobs starts a chartJobs on cluster until the test ends.
func runChartJobs(t *testing.T, cluster *testenv.Env) *chartJobs {
	j := &chartJobs{t: t, cluster: cluster, seen: map[types.UID]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			j.rollOut(ctx)
			j.startJobs(ctx, &wg)
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return j
}

// Runs returns the Job runs finished so far.
func (j *chartJobs) Runs() []chartJobRun {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]chartJobRun(nil), j.runs...)
}

// rollOut marks every Deployment whose status is behind its spec rolled out,
// unless held.
func (j *chartJobs) rollOut(ctx context.Context) {
	if j.hold.Load() {
		return
	}
	var list appsv1.DeploymentList
	if err := j.cluster.Client.List(ctx, &list); err != nil {
		return
	}
	for i := range list.Items {
		d := &list.Items[i]
		n := ptr.Deref(d.Spec.Replicas, 1)
		want := appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
		if d.Status.ObservedGeneration == want.ObservedGeneration && d.Status.AvailableReplicas == n && d.Status.Replicas == n && d.Status.UpdatedReplicas == n {
			continue
		}
		d.Status = want
		_ = j.cluster.Client.Status().Update(ctx, d) // a conflict is retried on the next round
	}
}

// startJobs starts each Job not seen before.
func (j *chartJobs) startJobs(ctx context.Context, wg *sync.WaitGroup) {
	var list batchv1.JobList
	if err := j.cluster.Client.List(ctx, &list); err != nil {
		return
	}
	for i := range list.Items {
		job := list.Items[i].DeepCopy()
		j.mu.Lock()
		seen := j.seen[job.UID]
		j.seen[job.UID] = true
		j.mu.Unlock()
		if seen || job.Status.CompletionTime != nil || len(job.Status.Conditions) > 0 {
			continue
		}
		wg.Go(func() { j.run(ctx, job) })
	}
}

// run runs job's container as the tagsync binary acting as the Job's
// ServiceAccount and writes the outcome to the Job's status.
func (j *chartJobs) run(ctx context.Context, job *batchv1.Job) {
	spec := job.Spec.Template.Spec
	start := metav1.Now()
	j.mu.Lock()
	i := len(j.runs)
	j.runs = append(j.runs, chartJobRun{Name: job.Name, output: &testenv.SyncBuffer{}})
	out := j.runs[i].output
	j.mu.Unlock()
	var err error
	if len(spec.Containers) != 1 {
		err = fmt.Errorf("%d containers, want 1", len(spec.Containers))
	} else {
		j.mu.Lock()
		j.runs[i].Args = spec.Containers[0].Args
		j.mu.Unlock()
		var kubeconfig string
		kubeconfig, err = kubeconfigAs(j.cluster.KubeConfig, serviceAccountUser(job.Namespace, spec.ServiceAccountName), serviceAccountGroups(job.Namespace)...)
		if err == nil {
			cmd := exec.CommandContext(ctx, tagsyncBinary(j.t), spec.Containers[0].Args...)
			cmd.Env = []string{"KUBECONFIG=" + tempFile(j.t, "kubeconfig", kubeconfig), "HOME=" + j.t.TempDir()}
			cmd.Stdout, cmd.Stderr = out, out
			err = cmd.Run()
		}
	}
	j.mu.Lock()
	j.runs[i].done, j.runs[i].Err = true, err
	run := j.runs[i]
	j.mu.Unlock()
	if ctx.Err() != nil {
		return
	}
	now := metav1.Now()
	cond := func(t batchv1.JobConditionType) batchv1.JobCondition {
		return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, LastProbeTime: now, LastTransitionTime: now}
	}
	job.Status = batchv1.JobStatus{StartTime: &start}
	if run.Err == nil {
		job.Status.Succeeded, job.Status.CompletionTime = 1, &now
		job.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet), cond(batchv1.JobComplete)}
	} else {
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget), cond(batchv1.JobFailed)}
		j.t.Logf("Job %s failed: %v\n%s", job.Name, run.Err, run.Output())
	}
	if err := j.cluster.Client.Status().Update(ctx, job); err != nil && ctx.Err() == nil {
		j.t.Errorf("recording Job %s's outcome: %v", job.Name, err)
	}
}

// kubeconfigAs returns the admin kubeconfig raw, impersonating user in
// groups.
func kubeconfigAs(raw []byte, user string, groups ...string) (string, error) {
	kc, err := clientcmd.Load(raw)
	if err != nil {
		return "", err
	}
	for _, a := range kc.AuthInfos {
		a.Impersonate, a.ImpersonateGroups = user, groups
	}
	b, err := clientcmd.Write(*kc)
	return string(b), err
}

// succeeded counts the runs of the Job named name that succeeded.
func (j *chartJobs) succeeded(name string) int {
	n := 0
	for _, r := range j.Runs() {
		if r.Name == name && r.done && r.Err == nil {
			n++
		}
	}
	return n
}

// running returns the output so far of the unfinished run of the Job named
// name ("" and false when none runs).
func (j *chartJobs) running(name string) (string, bool) {
	for _, r := range j.Runs() {
		if r.Name == name && !r.done {
			return r.Output(), true
		}
	}
	return "", false
}

// TestChartObjectsJobRBACIsEnoughAndEveryRuleIsNeeded runs the objects
// Job's commands as the real binary, as the Job's ServiceAccount with the
// chart's hook RBAC: `chart apply` waits for the Deployment and creates the
// NodeTagSync, then updates it; `chart keep` marks it. Then each verb of the
// hook RBAC is taken away in turn and the command that needs it is refused
// for exactly that verb.
func TestChartObjectsJobRBACIsEnoughAndEveryRuleIsNeeded(t *testing.T) {
	ctx := context.Background()
	const ns, name = "objects-job", "objects-job"
	ensureNamespace(ctx, t, ns)
	hooks := renderChartHooks(t, ns, "--set", "fullnameOverride="+name+",nodeTagSync.name="+name)
	var rbac []*unstructured.Unstructured
	var applyArgs, keepArgs []string
	for _, o := range hooks {
		switch o.GetKind() {
		case "Job":
			if args := jobArgs(t, o); args[1] == "apply" {
				applyArgs = args
			}
		default:
			rbac = append(rbac, o)
		}
	}
	keepArgs = []string{"chart", "keep", applyArgs[len(applyArgs)-1]} // the same --object
	apply(ctx, t, rbac)
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "tagsync"}}}}}}
	must(t, kube.Client.Create(ctx, deploy))
	deploy.Status = appsv1.DeploymentStatus{ObservedGeneration: deploy.Generation, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
	must(t, kube.Client.Status().Update(ctx, deploy))
	nts := newObject(nodeTagSyncGVK)
	nts.SetName(name)
	t.Cleanup(func() { _ = kube.Client.Delete(ctx, nts) })
	kubeconfig := writeKubeconfig(t, serviceAccountUser(ns, name+"-objects"), serviceAccountGroups(ns)...)
	run := func(args ...string) (string, error) {
		if args[1] == "apply" {
			args = append(slices.Clip(args), "--timeout=30s")
		}
		cmd := exec.Command(tagsyncBinary(t), args...)
		cmd.Env = []string{"KUBECONFIG=" + kubeconfig, "HOME=" + t.TempDir()}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// Enough: created, applied again, kept.
	for _, args := range [][]string{applyArgs, applyArgs, keepArgs} {
		if out, err := run(args...); err != nil {
			t.Fatalf("tagsync %s: %v\n%s", strings.Join(args[:2], " "), err, out)
		}
	}
	got := getObject(ctx, t, kube.Client, nodeTagSyncGVK, "", name)
	if got.GetAnnotations()["helm.sh/resource-policy"] != "keep" || got.GetAnnotations()["tagsync.io/requires-version"] == "" {
		t.Errorf("the NodeTagSync's annotations are %v, want the chart's and helm.sh/resource-policy: keep", got.GetAnnotations())
	}
	// Needed: each verb, and the command that is refused without it.
	for _, c := range []struct {
		kind, verb string
		rule       int
		absent     bool // the NodeTagSync deleted first
		args       []string
		refused    string
	}{
		{"ClusterRole", "create", 1, true, applyArgs, `cannot create resource "nodetagsyncs"`},
		{"ClusterRole", "patch", 0, false, applyArgs, `cannot patch resource "nodetagsyncs"`},
		{"ClusterRole", "get", 0, false, keepArgs, `cannot get resource "nodetagsyncs"`},
		{"Role", "get", 0, false, applyArgs, `cannot get resource "deployments"`},
	} {
		t.Run(c.kind+" "+c.verb, func(t *testing.T) {
			role := oneOfKind(t, rbac, c.kind)
			if c.absent {
				must(t, client.IgnoreNotFound(kube.Client.Delete(ctx, nts)))
				eventually(t, "the NodeTagSync gone", func() string {
					if err := kube.Client.Get(ctx, client.ObjectKeyFromObject(nts), newObject(nodeTagSyncGVK)); !apierrors.IsNotFound(err) {
						return fmt.Sprint(err)
					}
					return ""
				})
			}
			apply(ctx, t, []*unstructured.Unstructured{withoutVerb(t, role, c.rule, c.verb)})
			eventually(t, "refused without "+c.verb, func() string {
				out, err := run(c.args...)
				if err == nil || !strings.Contains(out, c.refused) {
					return fmt.Sprintf("%v: %s", err, out)
				}
				return ""
			})
			apply(ctx, t, []*unstructured.Unstructured{role})
			eventually(t, "allowed again", func() string {
				if out, err := run(c.args...); err != nil {
					return fmt.Sprintf("%v: %s", err, out)
				}
				return ""
			})
		})
	}
}
