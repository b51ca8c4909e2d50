package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/internal/testenv"
)

// TestChartDeploymentStartsTheBinary renders the chart for each values file
// of charts/tagsync/ci and runs the built binary exactly as the rendered
// Deployment's container would run: its command (none: the image's
// entrypoint, tagsync) and args, its env (Secret references filled with the
// test's own values), the files of its volume mounts (written to a
// directory each; args naming a mount path point there), and as its
// ServiceAccount, with the chart's RBAC, through a kubeconfig in KUBECONFIG
// (what in-cluster config gives the pod). It must start, take the rendered
// Lease, answer the rendered readiness and liveness probes and serve
// metrics with the scheme the metrics port's name says. Only the
// container ports are moved, in args and probes alike, to free ones (tests
// of several checkouts share the machine). A renamed or dropped flag, a
// probe on a path or port the binary does not serve, or RBAC short of what
// starting needs fails here.
func TestChartDeploymentStartsTheBinary(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(chartDir(), "ci", "*-values.yaml"))
	must(t, err)
	if len(files) == 0 {
		t.Fatal("charts/tagsync/ci has no values files")
	}
	ctx := context.Background()
	installLabelSyncCRDs(t)
	installInfrastructureCRD(t)
	const ns = "tagsync-system"
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), "-values.yaml"), func(t *testing.T) {
			objs := renderChart(t, ns, "--values", file)
			for _, role := range ofKind(objs, "Role") {
				ensureNamespace(ctx, t, role.GetNamespace())
			}
			installRBAC(ctx, t, ns, objs)
			deleteOnCleanup(t, append(ofKind(objs, "RoleBinding"), ofKind(objs, "Role")...)...)
			dep := deployment(t, objs)
			pod := newRenderedPod(t, dep.Spec.Template)
			p := pod.run(t, filepath.Base(file))
			pod.waitProbesAndMetrics(t, p)
			lease := argValue(pod.args, "--leader-election-id")
			eventually(t, "the Lease "+lease+" held", func() string {
				var l coordinationv1.Lease
				if err := kube.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: lease}, &l); err != nil {
					return err.Error()
				}
				if h := l.Spec.HolderIdentity; h == nil || *h == "" {
					return "no holder"
				}
				return ""
			})
			p.stop(t)
			// The next values file starts afresh, not as a follower.
			must(t, client.IgnoreNotFound(kube.Client.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: lease}})))
		})
	}
}

// renderedPod is the manager container of a rendered pod spec, made
// runnable here.
type renderedPod struct {
	container corev1.Container
	sa        string
	args, env []string
	ports     map[string]string // container port name -> host:port it is moved to
}

// newRenderedPod reads the container and prepares its args, env and files.
func newRenderedPod(t *testing.T, template corev1.PodTemplateSpec) *renderedPod {
	t.Helper()
	spec := template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("the Deployment has %d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	if len(c.Command) != 0 {
		t.Fatalf("the container sets command %v: the image's entrypoint (tagsync) is what the chart relies on", c.Command)
	}
	pod := &renderedPod{container: c, sa: spec.ServiceAccountName, args: c.Args, ports: map[string]string{}}
	addrs := freeAddrs(t, len(c.Ports))
	for i, port := range c.Ports {
		pod.ports[port.Name] = addrs[i]
		pod.args = replaceInArgs(pod.args, ":"+strconv.Itoa(int(port.ContainerPort)), addrs[i])
	}
	for _, m := range c.VolumeMounts {
		dir := writeVolume(t, spec, m.Name)
		pod.args = replaceInArgs(pod.args, m.MountPath, dir)
	}
	for _, e := range c.Env {
		pod.env = append(pod.env, e.Name+"="+envValue(t, e))
	}
	if template.Labels["azure.workload.identity/use"] == "true" {
		// What the AKS workload identity webhook injects into such pods.
		pod.env = append(pod.env, "AZURE_FEDERATED_TOKEN_FILE="+tempFile(t, "azure-identity-token", federatedToken))
	}
	return pod
}

// replaceInArgs replaces old with new in every =value of args.
func replaceInArgs(args []string, old, new string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if flag, value, ok := strings.Cut(a, "="); ok && (value == old || strings.HasPrefix(value, old+"/")) {
			a = flag + "=" + new + strings.TrimPrefix(value, old)
		}
		out[i] = a
	}
	return out
}

// writeVolume makes a directory standing for the volume: a Secret's items
// as files holding test values, an emptyDir empty, a projected service
// account token as the kubelet writes it (for a Pod object named after the
// test, see replicaPod).
func writeVolume(t *testing.T, spec corev1.PodSpec, name string) string {
	t.Helper()
	dir := t.TempDir()
	for _, v := range spec.Volumes {
		if v.Name != name {
			continue
		}
		pod := "tagsync-" + strings.ToLower(filepath.Base(t.Name()))
		if tokens := projectedToken(context.Background(), t, v, "tagsync-system", pod, spec.ServiceAccountName); tokens != "" {
			return tokens
		}
		if v.Secret == nil {
			continue
		}
		for _, item := range v.Secret.Items {
			must(t, os.WriteFile(filepath.Join(dir, item.Path), []byte(testSecretValue(item.Key)), 0o440))
		}
	}
	return dir
}

// envValue is an env var's value: literal, the test's stand-in for a
// Secret key, or the loopback address for the Pod's IP (the downward API's
// status.podIP: the binary runs on this machine).
func envValue(t *testing.T, e corev1.EnvVar) string {
	t.Helper()
	switch {
	case e.ValueFrom == nil:
		return e.Value
	case e.ValueFrom.SecretKeyRef != nil:
		return testSecretValue(e.ValueFrom.SecretKeyRef.Key)
	case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP":
		return "127.0.0.1"
	}
	t.Fatalf("env %s takes its value from %+v, which this test does not stand in for", e.Name, e.ValueFrom)
	return ""
}

// run starts the binary with the pod's args and env, as its ServiceAccount.
func (pod *renderedPod) run(t *testing.T, name string) *tagsyncProc {
	t.Helper()
	kubeconfig := writeKubeconfig(t, serviceAccountUser("tagsync-system", pod.sa), serviceAccountGroups("tagsync-system")...)
	p := &tagsyncProc{name: name, out: &testenv.SyncBuffer{}, exited: make(chan struct{})}
	p.start(t, append(pod.env, "KUBECONFIG="+kubeconfig), pod.args)
	return p
}

// waitProbesAndMetrics waits until the readiness and liveness probes answer
// 200 and the metrics port answers in its scheme (https: any answer, a
// scrape without a token is refused; http: 200).
func (pod *renderedPod) waitProbesAndMetrics(t *testing.T, p *tagsyncProc) {
	t.Helper()
	c := pod.container
	if c.ReadinessProbe == nil || c.LivenessProbe == nil {
		t.Fatal("the container has no readiness or liveness probe")
	}
	metricsPort := "https"
	if _, ok := pod.ports["http"]; ok {
		metricsPort = "http"
	}
	eventually(t, "probes and metrics answered", func() string {
		if !p.running() {
			t.Fatalf("%s exited: %v\n%s", p.name, p.waitErr, tail(p.logs(), 40))
		}
		for _, probe := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
			if msg := pod.probe(probe.HTTPGet); msg != "" {
				return msg
			}
		}
		url := metricsPort + "://" + pod.ports[metricsPort] + "/metrics"
		resp, err := insecureClient.Get(url)
		if err != nil {
			return err.Error()
		}
		_ = resp.Body.Close()
		if metricsPort == "http" && resp.StatusCode != http.StatusOK {
			return fmt.Sprintf("%s: %s", url, resp.Status)
		}
		return ""
	})
}

// probe does what the kubelet does for an httpGet probe on a named port.
func (pod *renderedPod) probe(get *corev1.HTTPGetAction) string {
	if get == nil {
		return "a probe is not httpGet"
	}
	addr, ok := pod.ports[get.Port.StrVal]
	if get.Port.Type != intstr.String || !ok {
		return fmt.Sprintf("a probe's port %s is not a named container port", get.Port.String())
	}
	scheme := strings.ToLower(string(get.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	resp, err := insecureClient.Get(scheme + "://" + addr + get.Path)
	if err != nil {
		return err.Error()
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("%s %s: %s", scheme, get.Path, resp.Status)
	}
	return ""
}

// argValue is the value of --flag=value in args.
func argValue(args []string, flag string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

// testSecretValue is what the test puts in a Secret's key: long enough for
// every secret the binary checks the length of (the Event Grid webhook's
// shared secret needs 16 characters).
func testSecretValue(key string) string { return "test-value-of-" + key }
