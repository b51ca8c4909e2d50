package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/internal/testenv"
)

// shared is one control plane for the package's tests that need a cluster
// (the operator verbs), started by the first of them and stopped by
// TestMain; tests keep apart by namespace (newNamespace).
var shared struct {
	once       sync.Once
	env        *testenv.Env
	kubeconfig string
	err        error
}

func TestMain(m *testing.M) {
	// klog's logger is process-wide, and managers started by the plan
	// tests leave event broadcasters behind that read it: `tagsync run`
	// in-process must not set it under them.
	setKlogLogger = func(logr.Logger) {}
	code := m.Run()
	if shared.env != nil {
		if err := shared.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
		_ = os.RemoveAll(filepath.Dir(shared.kubeconfig))
	}
	os.Exit(code)
}

// kube returns the package's control plane and a kubeconfig file for it,
// starting it on first use.
func kube(t *testing.T) (*testenv.Env, string) {
	t.Helper()
	shared.once.Do(func() {
		shared.env, shared.err = testenv.New()
		if shared.err != nil {
			return
		}
		dir, err := os.MkdirTemp("", "tagsync-cli-")
		if err != nil {
			shared.err = err
			return
		}
		shared.kubeconfig = filepath.Join(dir, "kubeconfig")
		shared.err = os.WriteFile(shared.kubeconfig, shared.env.KubeConfig, 0o600)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.env, shared.kubeconfig
}

var (
	namespaces atomic.Int32
	nonName    = regexp.MustCompile(`[^a-z0-9-]+`)
)

// newNamespace creates a namespace of its own for the test.
func newNamespace(t *testing.T, env *testenv.Env) string {
	t.Helper()
	name := strings.Trim(nonName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(name) > 50 {
		name = name[:50]
	}
	ns := fmt.Sprintf("%s-%d", name, namespaces.Add(1))
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// runCLI runs `tagsync args...` (with status, tags and validate) in the process and
// returns its standard output, standard error and error.
func runCLI(ctx context.Context, args ...string) (string, string, error) {
	return runWith(ctx, []*cobra.Command{NewStatusCommand(), NewTagsCommand(), NewValidateCommand()}, args...)
}

// runVerb runs `tagsync args...` with the one verb cmd.
func runVerb(ctx context.Context, cmd *cobra.Command, args ...string) (string, string, error) {
	return runWith(ctx, []*cobra.Command{cmd}, args...)
}

// runWith runs `tagsync args...` with verbs in the process and returns its
// standard output, standard error and error.
func runWith(ctx context.Context, verbs []*cobra.Command, args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	err := executeTo(ctx, &out, &errOut, verbs, args...)
	return out.String(), errOut.String(), err
}

// executeTo runs `tagsync args...` with verbs in the process, its standard
// output and error going to out and errOut, and returns its error.
func executeTo(ctx context.Context, out, errOut io.Writer, verbs []*cobra.Command, args ...string) error {
	root := NewRootCommand()
	root.AddCommand(verbs...)
	root.SetOut(out)
	root.SetErr(errOut)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

// writeFile writes content to name in a fresh temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
