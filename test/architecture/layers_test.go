// Package architecture checks the shape of the module: every import points
// down the layers docs/architecture.md draws.
package architecture

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/tagsync/tagsync"

// layers are the module's packages from the bottom up (docs/architecture.md
// draws them under the same names). A package may import packages of its
// own layer and of the layers below; its tests (TestImports) may also
// import the testkit. A pattern ending in "/..." covers the package and
// everything under it; the longest matching pattern places a package.
var layers = []layer{
	{"api", []string{"api/..."}},
	{"core", []string{"internal/tags/...", "internal/openshift", "internal/metrics", "internal/version",
		"internal/notify", "internal/audit", "internal/scheme", "internal/controlplane"}},
	{"clouds", []string{"internal/cloud", "internal/cloud/aws", "internal/cloud/azure", "internal/armsim"}},
	{"cloudchange", []string{"internal/cloudchange/..."}},
	{"testkit", []string{"internal/testenv", "internal/cloud/cloudtest", "internal/cloud/aws/awstest/...",
		"internal/armsim/armsimtest", "internal/tags/tagstest", "internal/cloudchange/cloudchangetest"}},
	{"kit", []string{"internal/controller/kit"}},
	{"controllers", []string{"internal/controller/..."}},
	{"operator", []string{"internal/operator"}},
	{"app", []string{"internal/cli", "internal/playground"}},
	{"entry", []string{"cmd/...", "bench/...", "test/...", "hack/..."}},
}

// layer is one layer: its name and its packages' patterns.
type layer struct {
	name     string
	packages []string
}

// testkit is the layer tests of every layer may import.
const testkit = "testkit"

// layerOf returns the index of the layer that places the package p (a path
// inside the module), or -1.
func layerOf(p string) int {
	best, bestLen := -1, -1
	for i, l := range layers {
		for _, pat := range l.packages {
			base, tree := strings.CutSuffix(pat, "/...")
			if (p == base || tree && strings.HasPrefix(p, base+"/")) && len(base) > bestLen {
				best, bestLen = i, len(base)
			}
		}
	}
	return best
}

// pkg is what go list says of one package.
type pkg struct {
	ImportPath  string
	Imports     []string
	TestImports []string
}

// TestEveryImportPointsDown: no package of the module imports one of a
// higher layer, in its code or in its own test files; every package is
// placed in a layer. A package's external tests (package x_test) are
// clients of it, as cmd is, and may import anything.
func TestEveryImportPointsDown(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("go list: %v\n%s", err, exit.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	testkitLayer := slices.IndexFunc(layers, func(l layer) bool { return l.name == testkit })
	dec := json.NewDecoder(bytes.NewReader(out))
	seen := 0
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		seen++
		from := strings.TrimPrefix(p.ImportPath, module+"/")
		at := layerOf(from)
		if at < 0 {
			t.Errorf("%s is in no layer: add it to layers (and to docs/architecture.md)", from)
			continue
		}
		check := func(imports []string, inTests bool) {
			for _, imp := range imports {
				to, ok := strings.CutPrefix(imp, module+"/")
				if !ok || to == from {
					continue
				}
				l := layerOf(to)
				if l < 0 || l <= at || inTests && l == testkitLayer {
					continue
				}
				where := "imports"
				if inTests {
					where = "tests import"
				}
				t.Errorf("%s (%s) %s %s (%s), a layer above it", from, layers[at].name, where, to, layers[l].name)
			}
		}
		check(p.Imports, false)
		check(p.TestImports, true)
	}
	if seen < 10 {
		t.Fatalf("go list found %d packages; expected the whole module", seen)
	}
}
