package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/testenv"
)

// tagsyncProc is a `tagsync run` child process.
type tagsyncProc struct {
	name    string
	cmd     *exec.Cmd
	out     *testenv.SyncBuffer
	metrics string // host:port of /metrics
	probe   string // host:port of /healthz, /readyz
	exited  chan struct{}
	waitErr error
}

// startTagsync starts `tagsync run args...` with metrics and probes on free
// loopback ports. The process is killed when the test ends, and its output
// is printed if the test failed.
func startTagsync(t testing.TB, name string, args ...string) *tagsyncProc {
	t.Helper()
	return startTagsyncEnv(t, name, nil, args...)
}

// startTagsyncEnv is startTagsync with extra environment variables. It
// returns once the process serves /metrics and /readyz. A port taken by
// someone else between choosing and binding it is retried with new ports.
func startTagsyncEnv(t testing.TB, name string, env []string, args ...string) *tagsyncProc {
	t.Helper()
	return startTagsyncArgs(t, name, env, func() []string { return args })
}

// startTagsyncArgs is startTagsyncEnv whose arguments args makes anew for
// each attempt, so that ports it chooses are chosen again after a
// collision (the Event Grid webhook's: startWithHook).
func startTagsyncArgs(t testing.TB, name string, env []string, args func() []string) *tagsyncProc {
	t.Helper()
	for attempt := 1; ; attempt++ {
		p := launch(t, name, env, args())
		err := p.waitServing()
		if err == nil {
			return p
		}
		p.kill()
		if attempt < 3 && strings.Contains(p.logs(), "address already in use") {
			t.Logf("%s: a chosen port was taken meanwhile; retrying with new ports", name)
			continue
		}
		t.Fatalf("%s did not start: %v\n%s", name, err, tail(p.logs(), 60))
	}
}

// launch starts the process with metrics and probes on two free ports.
func launch(t testing.TB, name string, env, args []string) *tagsyncProc {
	t.Helper()
	addrs := freeAddrs(t, 2)
	p := &tagsyncProc{name: name, out: &testenv.SyncBuffer{}, metrics: addrs[0], probe: addrs[1], exited: make(chan struct{})}
	all := append([]string{"run"}, args...)
	all = append(all, "--metrics-bind-address="+p.metrics, "--health-probe-bind-address="+p.probe)
	p.start(t, env, all)
	return p
}

// start runs the tagsync binary with exactly argv (after the program name)
// and env added to the test's environment.
func (p *tagsyncProc) start(t testing.TB, env, argv []string) {
	t.Helper()
	p.cmd = exec.Command(tagsyncBinary(t), argv...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.Env = append(os.Environ(), env...)
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", p.name, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("output of %s (pid %d):\n%s", p.name, p.cmd.Process.Pid, tail(p.logs(), 120))
		}
	})
}

// waitServing waits until /readyz answers 200 and the metrics endpoint
// answers HTTPS (without a token: 401, which needs no TokenReview), or the
// process exits.
func (p *tagsyncProc) waitServing() error {
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, waitFor, true,
		func(context.Context) (bool, error) {
			if !p.running() {
				return false, fmt.Errorf("exited: %v", p.waitErr)
			}
			return answers("https://"+p.metrics+"/metrics") && readyz(p.probe), nil
		})
	if err != nil && p.running() {
		return fmt.Errorf("the metrics endpoint and /readyz not served within %s", waitFor)
	}
	return err
}

// answers reports whether url answers at all (any status).
func answers(url string) bool {
	resp, err := insecureClient.Get(url)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return true
}

// readyz reports whether /readyz on addr answers 200.
func readyz(addr string) bool {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// kill sends SIGKILL (kill -9) and waits for the process to be gone.
func (p *tagsyncProc) kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// stop sends SIGTERM, as Kubernetes does, and waits for a clean exit (the
// leader releases its Lease); it kills the process after a grace period.
func (p *tagsyncProc) stop(t testing.TB) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		if p.waitErr != nil {
			t.Logf("%s exited: %v", p.name, p.waitErr)
		}
	case <-time.After(20 * time.Second):
		p.kill()
		t.Fatalf("%s did not stop within 20s of SIGTERM", p.name)
	}
}

// running reports whether the process is still alive.
func (p *tagsyncProc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// logs is everything the process printed, with JSON string escapes of
// quotes undone so messages can be searched as the API server wrote them.
func (p *tagsyncProc) logs() string {
	return strings.ReplaceAll(p.out.String(), `\"`, `"`)
}

// metric sums the series of name in the process's /metrics whose label set
// includes labels (e.g. `name="tagsync-leader"`); 0 when there is none yet
// (a counter never incremented, a gauge never set). The scrape goes through
// the secure endpoint as Prometheus does (scrape); any scrape error fails
// the test, so it is never mistaken for a missing series.
func (p *tagsyncProc) metric(t testing.TB, name string, labels ...string) float64 {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(scrape(t, p)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	total := 0.0
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		series, value, ok := strings.Cut(line, " ")
		if !ok || !hasAll(series, labels) {
			continue
		}
		v, err := strconv.ParseFloat(strings.Fields(value)[0], 64)
		if err != nil {
			t.Fatalf("%s: metric line %q: %v", p.name, line, err)
		}
		total += v
	}
	return total
}

func hasAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// isLeader asks the process's metrics whether it holds the Lease.
func (p *tagsyncProc) isLeader(t testing.TB) bool {
	t.Helper()
	return p.metric(t, "leader_election_master_status", `name="tagsync-leader"`) == 1
}

// armsimFlags point `tagsync run` at armsim over HTTPS with client-secret
// auth (the service-principal mode of the chart).
func armsimFlags(t testing.TB, env *armsimtest.Env) []string {
	t.Helper()
	s := env.Server
	return []string{
		"--azure-auth-mode=client-secret",
		"--azure-client-id=" + armsimtest.ClientID,
		"--azure-tenant-id=" + s.TenantID(),
		"--azure-client-secret-file=" + tempFile(t, "client-secret", armsimtest.ClientSecret),
		"--azure-authority-host=" + s.URL(),
		"--azure-arm-endpoint=" + s.URL(),
		"--azure-arm-audience=" + s.URL(),
		"--azure-ca-file=" + s.CAFile(),
		"--azure-subscription=" + env.SubscriptionID,
	}
}

// freeAddrs returns n distinct loopback addresses whose ports were free at
// the time of the call (all held open together, so they differ).
func freeAddrs(t testing.TB, n int) []string {
	t.Helper()
	var addrs []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		addrs = append(addrs, l.Addr().String())
	}
	return addrs
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// startWithHook starts `tagsync run` whose Event Grid webhook listens on a
// free loopback port (args makes the arguments for it), choosing another
// when the port was taken before tagsync bound it; it returns the process
// and the webhook's host:port.
func startWithHook(t testing.TB, name string, args func(hook string) []string) (*tagsyncProc, string) {
	t.Helper()
	var hook string
	p := startTagsyncArgs(t, name, nil, func() []string {
		hook = freeAddrs(t, 1)[0]
		return args(hook)
	})
	return p, hook
}
