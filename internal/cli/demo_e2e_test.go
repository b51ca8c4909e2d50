package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/testenv"
)

// TestDemo is `make demo`, played once in `make test` (which does not run
// make demo besides): it builds ./cmd/tagsync and runs `tagsync demo` from
// the repository root, as the Makefile's demo target does, against a real
// kube-apiserver and etcd (bin/k8s, built by `make tools`), armsim and the
// controller. It is the check that the newcomer's command cannot rot: a
// step that does not hold exits 1 and fails the test. Each step may take a
// minute (--timeout 1m; the demo's default is 30 s) because here it shares
// the machine with the other packages' tests. It also checks the report,
// and that the demo leaves no temporary file behind.
func TestDemo(t *testing.T) {
	root, bin := buildTagsync(t)
	tmp := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var out, logs bytes.Buffer
	demo := exec.CommandContext(ctx, bin, "demo", "--timeout", "1m")
	demo.Dir = root
	demo.Env = append(os.Environ(), "TMPDIR="+tmp) // the demo's and envtest's temporary files land here
	demo.Stdout, demo.Stderr = &out, &logs
	err := demo.Run()
	t.Logf("demo output:\n%s", out.String())
	if err != nil {
		t.Fatalf("tagsync demo failed: %v\n%s", err, logs.String())
	}
	held := strings.Count(out.String(), "] ✓ ")
	if held < 8 || !strings.Contains(out.String(), fmt.Sprintf("all %d steps held", held)) {
		t.Errorf("the timeline shows %d held steps and no matching summary", held)
	}
	for _, want := range []string{"Node labels (corp.tags/<column>)", "Azure tags (armsim)", "ARM requests served by armsim", "0 throttled",
		"✓ labelsync: host label → its Node", "✓ labelsync: Node edit reverted", "✓ portal edit → event → labels",
		"✓ labelPrefix changed live → labels move", "0 of 13 tags deleted",
		"LabelSyncProfile metal/racks: 1 host matched, 1 node in sync, 0 waiting, Ready=True"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("the demo left %s behind in the temporary directory", e.Name())
	}
}

// buildTagsync builds ./cmd/tagsync into the test's temporary directory, as
// make demo builds bin/tagsync, and returns the repository root and the
// binary.
func buildTagsync(t *testing.T) (root, bin string) {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(t.TempDir(), "tagsync")
	if err := testenv.BuildTagsync(t.Context(), root, bin); err != nil {
		t.Fatal(err)
	}
	return root, bin
}
