// Package e2e_test proves the Helm chart (charts/tagsync) against real parts:
// the chart lints and renders for every auth mode and the API server accepts
// what it renders; each auth mode's rendered flags get tokens and sync; its
// CRDs are the generated ones; the plain-YAML sample is the chart; its admission policy
// keeps kubelets away from synced labels; its RBAC is enough for a full sync
// and every rule in it is needed, for each controller (ClusterRole or
// per-namespace Roles; the rows of rbacProofs), and every rendering of it
// (the rows of chartCases) is checked; its metadata and AWS
// values wire what they say; two `tagsync run` replicas fail over
// without repeating an ARM write; and uninstalling deletes no tag or label.
//
// The tests share one real kube-apiserver + etcd (internal/testenv), run the
// chart through bin/helm (built by `make tools`; missing is a failure, never
// a skip) and the controller as the real binary, built once from
// ./cmd/tagsync, against armsim over HTTPS.
package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/testenv"
)

// kube is the control plane the package's tests share. Tests run one after
// the other and clean up the cluster-scoped objects they create.
var kube *testenv.Env

func TestMain(m *testing.M) {
	code := testenv.RunMain(m, func(env *testenv.Env) { kube = env })
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

const (
	// waitFor bounds every wait for a condition in these tests.
	waitFor = 30 * time.Second
)

// eventually polls cond until it returns "" or waitFor passes, then fails
// the test with cond's last complaint.
func eventually(t testing.TB, what string, cond func() string) {
	t.Helper()
	eventuallyWithin(t, waitFor, what, cond)
}

func eventuallyWithin(t testing.TB, limit time.Duration, what string, cond func() string) {
	t.Helper()
	testenv.Eventually(t, limit, what, cond)
}

var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

// tagsyncBinary builds ./cmd/tagsync once per test run and returns its path.
func tagsyncBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tagsync-e2e-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binDir = dir
		binPath = filepath.Join(dir, "tagsync")
		start := time.Now()
		if buildErr = testenv.BuildTagsync(context.Background(), kube.RootDir, binPath); buildErr != nil {
			return
		}
		fmt.Fprintf(os.Stderr, "e2e: built %s in %s\n", binPath, time.Since(start).Round(time.Millisecond))
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}
