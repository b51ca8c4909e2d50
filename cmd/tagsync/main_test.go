package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/testenv"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// runMainEnv makes the test binary run main() instead of the tests, so the
// tests run tagsync as a process -- signals, logs and exit code included --
// without building it.
const runMainEnv = "TAGSYNC_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// process is a tagsync child process.
type process struct {
	cmd    *exec.Cmd
	out    *testenv.SyncBuffer
	exited chan struct{}
	err    error // of Wait, set before exited closes
}

// start runs `tagsync args...` with extra environment variables; the
// process is killed when the test ends.
func start(t *testing.T, env []string, args ...string) *process {
	t.Helper()
	return startAs(t, os.Args[0], env, args...)
}

// startAs is start running the test binary as path (a symlink to it).
func startAs(t *testing.T, path string, env []string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(path, args...), out: &testenv.SyncBuffer{}, exited: make(chan struct{})}
	p.cmd.Env = append(append(os.Environ(), runMainEnv+"=1"), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("output of tagsync %v:\n%s", args, p.out.String())
		}
	})
	return p
}

// wait waits for the process to exit and returns its exit code.
func (p *process) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		t.Fatalf("tagsync did not exit within a minute")
	}
	var exit *exec.ExitError
	if errors.As(p.err, &exit) {
		return exit.ExitCode()
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	return 0
}

// TestExitsOneOnConfigurationErrors: tagsync run refuses flags that cannot
// work with exit code 1 and one message naming the flag, before it
// contacts anything.
func TestExitsOneOnConfigurationErrors(t *testing.T) {
	cases := map[string][]string{
		"--azure-read-qps -1 is negative":        {"--azure-read-qps=-1"},
		"--azure-write-qps -2 is negative":       {"--azure-write-qps=-2"},
		"--kube-api-qps -1 is negative":          {"--kube-api-qps=-1"},
		"--kube-api-burst -1 is negative":        {"--kube-api-burst=-1"},
		`--azure-arm-endpoint "not a url"`:       {"--azure-arm-endpoint=not a url"},
		`--azure-authority-host or $AZURE_AUTHO`: {"--azure-authority-host=login.microsoftonline.us"},
		"--azure-client-secret-file or $AZURE_CLIENT_SECRET": {"--azure-auth-mode=client-secret",
			"--azure-tenant-id=t", "--azure-client-id=c"},
	}
	env := []string{"AZURE_CLIENT_SECRET=", "AZURE_AUTHORITY_HOST=", "KUBECONFIG=" + filepath.Join(t.TempDir(), "none")}
	for want, args := range cases {
		t.Run(want, func(t *testing.T) {
			p := start(t, env, append([]string{"run"}, args...)...)
			if code := p.wait(t); code != 1 {
				t.Fatalf("exit code %d, want 1", code)
			}
			if out := p.out.String(); !strings.Contains(out, "tagsync: ") || !strings.Contains(out, want) {
				t.Fatalf("output does not say %q:\n%s", want, out)
			}
		})
	}
}

// errorLine matches an error-level log line: zap's JSON or klog's text.
var errorLine = regexp.MustCompile(`(?m)^.*("level":"(error|dpanic|panic|fatal)"|^E\d{4} ).*$`)

// TestSIGTERMStopsWithoutErrors runs two replicas with leader election and
// secure metrics against a real API server and armsim, lets the leader
// sync, then sends SIGTERM to the follower and to the leader, as Kubernetes
// does on a rollout: both exit 0, the leader gives up the Lease, and
// neither logs anything at error level (controller-runtime reports "leader
// election lost" on every stop; a stop we asked for is no error).
func TestSIGTERMStopsWithoutErrors(t *testing.T) {
	ctx := context.Background()
	kube := testenv.Start(t)
	cloud := armsimtest.Start(t)
	node := seed(ctx, t, kube, cloud)

	dir := t.TempDir()
	kubeconfig, secret := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "client-secret")
	for path, content := range map[string]string{kubeconfig: string(kube.KubeConfig), secret: armsimtest.ClientSecret} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := cloud.Server
	args := []string{"run", "--kubeconfig=" + kubeconfig, "--leader-election-namespace=default",
		"--lease-duration=4s", "--renew-deadline=3s", "--retry-period=500ms",
		"--metrics-bind-address=127.0.0.1:0", "--health-probe-bind-address=127.0.0.1:0",
		"--azure-auth-mode=client-secret", "--azure-tenant-id=" + s.TenantID(), "--azure-client-id=" + armsimtest.ClientID,
		"--azure-client-secret-file=" + secret, "--azure-authority-host=" + s.URL(), "--azure-arm-endpoint=" + s.URL(),
		"--azure-arm-audience=" + s.URL(), "--azure-ca-file=" + s.CAFile(), "--azure-subscription=" + cloud.SubscriptionID}
	a, b := start(t, nil, args...), start(t, nil, args...)

	testenv.Eventually(t, 30*time.Second, "the tag as a label on "+node, func() string {
		var n corev1.Node
		if err := kube.Client.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
			return err.Error()
		}
		if n.Labels["azure.tags/team"] != "a" {
			return "not synced yet"
		}
		return ""
	})
	leader, follower := a, b
	if !strings.Contains(a.out.String(), "Successfully acquired lease") {
		leader, follower = b, a
	}
	testenv.Eventually(t, 30*time.Second, "the follower to try for the Lease", func() string {
		if !strings.Contains(follower.out.String(), "Attempting to acquire leader lease") {
			return "it has not started leader election"
		}
		return ""
	})
	stopping := map[string]string{} // what each logged after SIGTERM
	for _, name := range []string{"follower", "leader"} {
		p := map[string]*process{"follower": follower, "leader": leader}[name]
		before := len(p.out.String())
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := p.wait(t); code != 0 {
			t.Errorf("the %s's exit code is %d after SIGTERM, want 0", name, code)
		}
		stopping[name] = p.out.String()[before:]
	}
	var lease coordinationv1.Lease
	if err := kube.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "tagsync-leader"}, &lease); err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("the Lease is still held by %s after the leader stopped", *h)
	}
	for name, out := range stopping {
		if lines := errorLine.FindAllString(out, -1); len(lines) > 0 {
			t.Errorf("the %s logged at error level while stopping:\n%s", name, strings.Join(lines, "\n"))
		}
	}
}

// TestSIGTERMWhileStartingExits: a replica whose caches cannot sync (here:
// a user RBAC allows nothing, so listing Nodes is forbidden) still exits 0
// promptly on SIGTERM; controller-runtime's manager alone would wait
// forever for the caches.
func TestSIGTERMWhileStartingExits(t *testing.T) {
	kube := testenv.Start(t)
	kubeconfig := impersonatingKubeconfig(t, kube, "nobody")
	p := start(t, nil, "run", "--kubeconfig="+kubeconfig, "--leader-elect=false",
		"--metrics-bind-address=127.0.0.1:0", "--health-probe-bind-address=127.0.0.1:0")
	testenv.Eventually(t, 30*time.Second, "the forbidden list of Nodes in the log", func() string {
		if !strings.Contains(p.out.String(), `cannot list resource \"nodes\"`) {
			return "not logged yet"
		}
		return ""
	})
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
}

// impersonatingKubeconfig writes a kubeconfig reaching kube's API server as
// its admin impersonating user (in no group).
func impersonatingKubeconfig(t *testing.T, kube *testenv.Env, user string) string {
	t.Helper()
	cfg := kube.Config
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData,
		Token: cfg.BearerToken, Impersonate: user}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// seed creates a tagged VM in armsim, its Node and a NodeTagSync, and
// returns the Node's name.
func seed(ctx context.Context, t *testing.T, kube *testenv.Env, cloud *armsimtest.Env) string {
	t.Helper()
	if _, err := cloud.Server.CreateResourceGroup(cloud.SubscriptionID, armsim.ResourceGroup{Name: "rg", Location: "westeurope"}); err != nil {
		t.Fatal(err)
	}
	id, err := cloud.Server.CreateVM(cloud.SubscriptionID, "rg", armsim.VirtualMachine{Name: "vm-0", Tags: map[string]string{"team": "a"}})
	if err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{
		build.Node("vm-0", build.ProviderID("azure://"+id)),
		build.NodeTagSync("default"),
	}
	for _, o := range objs {
		if err := kube.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	return "vm-0"
}
