// Package architecture checks the shape of the module: every import points
// down the layers docs/architecture.md draws.
package architecture

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	{"clouds", []string{"internal/cloud/...", "internal/armsim"}}, // every cloud package: internal/cloud/<name>
	{"cloudchange", []string{"internal/cloudchange/..."}},
	{"testkit", []string{"internal/testenv", "internal/testenv/build", "internal/cloud/cloudtest", "internal/cloud/aws/awstest/...",
		"internal/armsim/armsimtest", "internal/tags/tagstest", "internal/cloudchange/cloudchangetest", "internal/cloudchange/eventgrid/eventgridtest"}},
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
	testkitLayer := slices.IndexFunc(layers, func(l layer) bool { return l.name == testkit })
	pkgs := goList(t)
	for _, p := range pkgs {
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
}

// goList lists the module's packages.
func goList(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("go list: %v\n%s", err, exit.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages; expected the whole module", len(pkgs))
	}
	return pkgs
}

// arrow is the mermaid arrow of one layer importing a lower one.
var arrow = regexp.MustCompile(`^\s*([a-z]+) --> ([a-z]+)\s*$`)

// TestTheDocDrawsTheLayersAsTheyAre: the layer diagram of
// docs/architecture.md ("## Packages") names every layer and draws an
// arrow from one layer to another exactly when a package of the first
// imports one of the second.
func TestTheDocDrawsTheLayersAsTheyAre(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "## Packages\n")
	section, _, _ = strings.Cut(section, "\n## ")
	_, diagram, _ := strings.Cut(section, "```mermaid\n")
	diagram, _, _ = strings.Cut(diagram, "```")
	for _, l := range layers {
		if !strings.Contains(diagram, "<b>"+l.name+"</b>") {
			t.Errorf("the layer diagram does not name the layer %s", l.name)
		}
	}
	drawn := map[string]bool{}
	for _, line := range strings.Split(diagram, "\n") {
		if m := arrow.FindStringSubmatch(line); m != nil {
			drawn[m[1]+" --> "+m[2]] = true
		}
	}
	actual := map[string]bool{}
	for _, p := range goList(t) {
		from := layerOf(strings.TrimPrefix(p.ImportPath, module+"/"))
		for _, imp := range p.Imports {
			to, ok := strings.CutPrefix(imp, module+"/")
			if l := layerOf(to); ok && from >= 0 && l >= 0 && l != from {
				actual[layers[from].name+" --> "+layers[l].name] = true
			}
		}
	}
	for a := range actual {
		if !drawn[a] {
			t.Errorf("the layer diagram lacks %s: a package of the first imports one of the second", a)
		}
	}
	for d := range drawn {
		if !actual[d] {
			t.Errorf("the layer diagram draws %s, but no package of the first imports one of the second", d)
		}
	}
}
