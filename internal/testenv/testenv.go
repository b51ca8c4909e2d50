// Package testenv is the harness every test suite uses for the real parts
// tagsync talks to:
//
//   - Kubernetes: Start, StartWith and New start a real kube-apiserver and
//     etcd (built from Go modules into bin/k8s by `make tools`) through
//     controller-runtime's envtest, install tagsync's CRDs (and
//     Options.ExtraCRDDirs) and hand tests a client and rest config. Each
//     call starts an independent control plane; StartPair starts two at once
//     for multi-cluster tests.
//   - AWS: StartMoto and NewMoto run moto_server (installed into bin/moto by
//     `make tools`) on a loopback port, with an aws.Config for the AWS SDK
//     for Go v2 that reaches it.
//   - Waiting: Eventually polls a condition until a deadline, and
//     RequestPass asks a controller for one pass and waits for exactly that
//     pass.
//
// A missing control plane or moto_server fails the test, saying to run
// `make tools`; it is never a skip.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/internal/controlplane"
	"github.com/tagsync/tagsync/internal/scheme"
)

// Env is a running control plane with tagsync's CRDs installed.
type Env struct {
	// Config reaches the API server as a cluster admin.
	Config *rest.Config
	// Client is a controller-runtime client for Config with Scheme.
	Client client.Client
	// Scheme knows the built-in Kubernetes types and tagsync's API.
	Scheme *runtime.Scheme
	// KubeConfig is a kubeconfig file's content for Config.
	KubeConfig []byte
	// RootDir is the repository root (where go.mod is).
	RootDir string

	cp *controlplane.ControlPlane
}

// Scheme returns a scheme with the built-in Kubernetes types and tagsync's API.
func Scheme() *runtime.Scheme { return scheme.New() }

// Start starts a control plane for the test and stops it when the test ends.
// It fails the test (never skips) when the control plane cannot start.
func Start(t testing.TB) *Env {
	t.Helper()
	return StartWith(t, Options{})
}

// Options says what a control plane holds besides (or instead of) tagsync's
// CRDs.
type Options struct {
	// ExtraCRDDirs are more CRD files or directories of them to install, such
	// as test/crds for other projects' CRDs; a relative path is relative to
	// the repository root. A path that does not exist is an error.
	ExtraCRDDirs []string
	// WithoutTagsyncCRDs leaves tagsync's own CRDs out: the test installs
	// them (e.g. from a Helm chart).
	WithoutTagsyncCRDs bool
}

// StartWith is Start with options.
func StartWith(t testing.TB, opts Options) *Env {
	t.Helper()
	e, err := NewWith(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	return e
}

// StartPair starts two independent control planes with the same options at
// once (two clusters for multi-cluster tests: separate etcds, ports,
// certificates and admin users) and stops both when the test ends; starting
// and stopping them together costs little more wall time than one. For
// planes with different options, call StartWith twice.
func StartPair(t testing.TB, opts Options) (*Env, *Env) {
	t.Helper()
	var envs [2]*Env
	var errs [2]error
	var wg sync.WaitGroup
	for i := range envs {
		wg.Go(func() { envs[i], errs[i] = NewWith(opts) })
	}
	wg.Wait()
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, e := range envs {
			if e != nil {
				wg.Go(func() {
					if err := e.Stop(); err != nil {
						t.Errorf("stopping the control plane at %s: %v", e.Config.Host, err)
					}
				})
			}
		}
		wg.Wait()
	})
	if err := errors.Join(errs[:]...); err != nil {
		t.Fatal(err)
	}
	return envs[0], envs[1]
}

// New starts a control plane; the caller must Stop it. Use it from TestMain
// to share one control plane across a package's tests. Each call starts
// another independent control plane, so a process may run several.
func New() (*Env, error) {
	return NewWith(Options{})
}

// NewWith is New with options.
func NewWith(opts Options) (*Env, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	cp, err := controlplane.Start(controlplane.Options{
		RepoDir: root, ExtraCRDDirs: opts.ExtraCRDDirs, WithoutTagsyncCRDs: opts.WithoutTagsyncCRDs,
		MissingHint: "run `make tools` (or `make test`, which builds it) first",
	})
	if err != nil {
		return nil, fmt.Errorf("the test control plane: %w", err)
	}
	return &Env{Config: cp.Config, Client: cp.Client, Scheme: cp.Scheme, KubeConfig: cp.KubeConfig, RootDir: root, cp: cp}, nil
}

// Stop stops the control plane and removes its temporary files.
func (e *Env) Stop() error {
	return e.cp.Stop()
}

// RepoRoot finds the repository root by walking up from the working
// directory to the directory holding tagsync's go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "cmd", "tagsync")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the tagsync repository root (a go.mod beside cmd/tagsync) above the working directory")
		}
		dir = parent
	}
}

// pollInterval is how often Eventually re-checks its condition.
const pollInterval = 50 * time.Millisecond

// Eventually checks cond until it returns "" or timeout passes, then fails t
// with what was awaited and cond's last complaint. It never waits longer
// than the condition needs.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), pollInterval, timeout, true,
		func(context.Context) (bool, error) {
			last = cond()
			return last == "", nil
		})
	if err != nil {
		t.Fatalf("%s: not reached within %s: %s", what, timeout, last)
	}
}

// RunMain starts one control plane for a package's tests (from TestMain),
// hands it to use, runs the tests, stops it and returns the exit code. A
// control plane that cannot start fails the package, never skips it.
func RunMain(m *testing.M, use func(*Env)) int {
	env, err := New()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	use(env)
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
	}
	return code
}
