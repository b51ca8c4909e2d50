package release_test

import (
	"bytes"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"sigs.k8s.io/yaml"

	"github.com/tagsync/tagsync/internal/testenv"
)

// TestReleasePushesTheChartToAnOCIRegistry: `make chart-push` (what `make
// release` runs when CHART_REGISTRY is set, and only then) pushes the
// packaged chart with `helm push` to an OCI registry -- here an in-process
// one (go-containerregistry's pkg/registry) on 127.0.0.1 over plain HTTP --
// from where `helm show chart` reads its version and appVersion and `helm
// pull` fetches the very package that was pushed.
func TestReleasePushesTheChartToAnOCIRegistry(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	const chartVersion = "1.2.3-oci.1"
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	repo := strings.TrimPrefix(srv.URL, "http://") + "/charts"
	helm := filepath.Join(root, "bin", "helm")
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("bin/helm is missing (%v): run `make tools`", err)
	}
	home := t.TempDir()
	env := append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = root, env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		return stdout.String()
	}

	// make release pushes the release's package, and only when asked (make
	// -n prints the commands, and runs the sub-make that prints chart-push's).
	push := "push " + filepath.Join(root, "dist", "tagsync-"+chartVersion+".tgz") + " oci://" + repo
	if out := run("make", "--no-print-directory", "-n", "release", "VERSION=v"+chartVersion, "CHART_REGISTRY="+repo); !strings.Contains(out, push) {
		t.Errorf("make -n release CHART_REGISTRY=%s does not run helm %s:\n%s", repo, push, out)
	}
	if out := run("make", "--no-print-directory", "-n", "release", "VERSION=v"+chartVersion); strings.Contains(out, "oci://") {
		t.Errorf("make -n release without CHART_REGISTRY pushes:\n%s", out)
	}

	pkgDir := t.TempDir()
	run(helm, "package", filepath.Join(root, "charts", "tagsync"), "--version", chartVersion, "--app-version", chartVersion, "--destination", pkgDir)
	pkg := filepath.Join(pkgDir, "tagsync-"+chartVersion+".tgz")
	run("make", "--no-print-directory", "chart-push", "CHART_REGISTRY="+repo, "CHART_PACKAGE="+pkg, "CHART_PUSH_FLAGS=--plain-http")

	ref := "oci://" + repo + "/tagsync"
	var chart struct {
		Name       string `json:"name"`
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal([]byte(run(helm, "show", "chart", ref, "--version", chartVersion, "--plain-http")), &chart); err != nil {
		t.Fatal(err)
	}
	if chart.Name != "tagsync" || chart.Version != chartVersion || chart.AppVersion != chartVersion {
		t.Errorf("the registry's chart is %s %s (appVersion %s), want tagsync %s", chart.Name, chart.Version, chart.AppVersion, chartVersion)
	}
	pulled := t.TempDir()
	run(helm, "pull", ref, "--version", chartVersion, "--plain-http", "--destination", pulled)
	want, err := os.ReadFile(pkg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(pulled, "tagsync-"+chartVersion+".tgz"))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("helm pull fetched another package than the one pushed (%v)", err)
	}
}
