package playground

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestDemo plays the whole demo scenario against a real kube-apiserver and
// etcd (bin/k8s, built by `make tools`), armsim and the controller: it is
// the check that `tagsync demo` cannot rot. It also checks that the demo
// leaves no temporary file behind.
func TestDemo(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // the demo's and envtest's temporary files land here
	var out, logs bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	err := Run(ctx, Options{Out: &out, LogOut: &logs, StepTimeout: time.Minute})
	t.Logf("demo output:\n%s", out.String())
	if err != nil {
		t.Fatalf("the demo failed: %v", err)
	}
	held := strings.Count(out.String(), "] ✓ ")
	if held < 8 || !strings.Contains(out.String(), fmt.Sprintf("all %d steps held", held)) {
		t.Errorf("the timeline shows %d held steps and no matching summary", held)
	}
	for _, want := range []string{"Node labels (azure.tags/<column>)", "Azure tags (armsim)", "ARM requests served by armsim", "0 throttled",
		"✓ labelsync: host label → its Node", "✓ labelsync: Node edit reverted",
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
