package release_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestReleaseArtifactsAgree runs `release dist` for this machine's linux
// platform (a release builds four; the others only differ in GOOS/GOARCH)
// and checks that everything agrees: checksums.txt with the files, the krew
// manifest with the archive's sum and the version, the archived binary's
// `tagsync version` with the release, the SBOM with the binary's modules,
// and the packaged chart's version, appVersion and image digest with the
// release and the image `release image` built — so a rendered Deployment
// runs exactly that image, labelled with the version the binary prints.
func TestReleaseArtifactsAgree(t *testing.T) {
	image := sharedImage(t)
	out := filepath.Join(t.TempDir(), "dist")
	runTool(t, "dist", "-platforms", hostPlatform(), "-allow-partial", "-image", image,
		"-helm", helmPath(t), "-out", out)
	digest := strings.TrimSpace(readFile(t, filepath.Join(image, "digest")))
	archive := filepath.Join(out, "tagsync_linux_"+runtime.GOARCH+".tar.gz")

	sums := checkChecksums(t, out)
	checkKrewManifest(t, filepath.Join(out, "tagsync.krew.yaml"), sums[filepath.Base(archive)])
	if runtime.GOOS == "linux" {
		checkBinaryVersion(t, extractArchive(t, archive))
	}
	checkSBOM(t, filepath.Join(out, "tagsync_linux_"+runtime.GOARCH+".cdx.json"))
	checkPackagedChart(t, filepath.Join(out, "tagsync-"+version+".tgz"), digest)
	noZeroDigest(t, out)
}

// helmPath is bin/helm, built by `make tools`.
func helmPath(t testing.TB) string {
	t.Helper()
	setup(t)
	p := filepath.Join(root, "bin", "helm")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("bin/helm is missing (%v): run `make tools`", err)
	}
	return p
}

// checkChecksums checks every line of checksums.txt against its file and
// that every artifact has a line; it returns the sums by file name.
func checkChecksums(t *testing.T, dir string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(readFile(t, filepath.Join(dir, "checksums.txt"))), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("checksums.txt line %q is not `<sha256>  <file>`", line)
		}
		if got := sha256Hex(t, filepath.Join(dir, name)); got != sum {
			t.Errorf("checksums.txt says %s for %s, the file's sha256 is %s", sum, name, got)
		}
		sums[name] = sum
	}
	for _, pattern := range []string{"*.tar.gz", "*.tgz", "*.cdx.json", "*.krew.yaml"} {
		files, _ := filepath.Glob(filepath.Join(dir, pattern))
		if len(files) == 0 {
			t.Errorf("the release has no %s", pattern)
		}
		for _, f := range files {
			if _, ok := sums[filepath.Base(f)]; !ok {
				t.Errorf("checksums.txt has no line for %s", filepath.Base(f))
			}
		}
	}
	return sums
}

func sha256Hex(t testing.TB, path string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(readFile(t, path)))
	return hex.EncodeToString(sum[:])
}

// checkKrewManifest checks the filled manifest: the release version, and
// for this platform the archive's URL and sha256.
func checkKrewManifest(t *testing.T, path, archiveSum string) {
	t.Helper()
	var plugin struct {
		Spec struct {
			Version   string `json:"version"`
			Platforms []struct {
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				} `json:"selector"`
				URI    string `json:"uri"`
				SHA256 string `json:"sha256"`
			} `json:"platforms"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(readFile(t, path)), &plugin); err != nil {
		t.Fatal(err)
	}
	if plugin.Spec.Version != "v"+version {
		t.Errorf("krew spec.version %q, want v%s", plugin.Spec.Version, version)
	}
	found := false
	for _, p := range plugin.Spec.Platforms {
		if p.Selector.MatchLabels["os"] != "linux" || p.Selector.MatchLabels["arch"] != runtime.GOARCH {
			continue
		}
		found = true
		wantURI := "https://github.com/tagsync/tagsync/releases/download/v" + version + "/tagsync_linux_" + runtime.GOARCH + ".tar.gz"
		if p.SHA256 != archiveSum || p.URI != wantURI {
			t.Errorf("krew linux/%s: uri %s sha256 %s, want %s and the archive's %s", runtime.GOARCH, p.URI, p.SHA256, wantURI, archiveSum)
		}
	}
	if !found {
		t.Errorf("the krew manifest has no linux/%s platform", runtime.GOARCH)
	}
}

// extractArchive writes the archive's tagsync to a temporary file.
func extractArchive(t *testing.T, archive string) string {
	t.Helper()
	files := untarGz(t, archive)
	b, ok := files["tagsync"]
	if !ok {
		t.Fatalf("%s has no tagsync (krew's files: from tagsync)", archive)
	}
	out := filepath.Join(t.TempDir(), "tagsync")
	if err := os.WriteFile(out, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return out
}

// untarGz reads every regular file of a tar.gz.
func untarGz(t testing.TB, path string) map[string][]byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader([]byte(readFile(t, path))))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[hdr.Name] = b
	}
}

// checkSBOM checks the CycloneDX SBOM names tagsync at the release version
// and the modules it is built from.
func checkSBOM(t *testing.T, path string) {
	t.Helper()
	var bom struct {
		BOMFormat string `json:"bomFormat"`
		Metadata  struct {
			Component struct {
				Name, Version string
				Hashes        []struct{ Alg, Content string }
			} `json:"component"`
			Properties []struct{ Name, Value string } `json:"properties"`
		} `json:"metadata"`
		Components []struct{ Name, Version string } `json:"components"`
	}
	if err := json.Unmarshal([]byte(readFile(t, path)), &bom); err != nil {
		t.Fatal(err)
	}
	if bom.BOMFormat != "CycloneDX" || bom.Metadata.Component.Name != "github.com/tagsync/tagsync" || bom.Metadata.Component.Version != "v"+version {
		t.Errorf("SBOM %s: format %q, component %+v", path, bom.BOMFormat, bom.Metadata.Component)
	}
	props := map[string]string{}
	for _, p := range bom.Metadata.Properties {
		props[p.Name] = p.Value
	}
	if props["go.GOOS"] != "linux" || props["go.GOARCH"] != runtime.GOARCH {
		t.Errorf("SBOM %s names the platform %s/%s", path, props["go.GOOS"], props["go.GOARCH"])
	}
	if h := bom.Metadata.Component.Hashes; len(h) != 1 || h[0].Alg != "SHA-256" || len(h[0].Content) != 64 {
		t.Errorf("SBOM %s: the binary's hashes are %+v, want one hex SHA-256", path, h)
	}
	names := map[string]bool{}
	for _, c := range bom.Components {
		names[c.Name] = c.Version != ""
	}
	for _, m := range []string{"sigs.k8s.io/controller-runtime", "github.com/Azure/azure-sdk-for-go/sdk/azcore", "github.com/aws/aws-sdk-go-v2"} {
		if !names[m] {
			t.Errorf("the SBOM lacks %s (with its version)", m)
		}
	}
}

// checkPackagedChart checks Chart.yaml and values.yaml of the package, then
// renders it: the Deployment runs the image by digest, labelled with the
// version.
func checkPackagedChart(t *testing.T, pkg, digest string) {
	t.Helper()
	files := untarGz(t, pkg)
	var chart struct{ Version, AppVersion string }
	if err := yaml.Unmarshal(files["tagsync/Chart.yaml"], &chart); err != nil {
		t.Fatal(err)
	}
	if chart.Version != version || chart.AppVersion != version {
		t.Errorf("packaged Chart.yaml version %q appVersion %q, want %s for both", chart.Version, chart.AppVersion, version)
	}
	rendered, err := exec.Command(helmPath(t), "template", "tagsync", pkg, "--namespace", "tagsync-system").CombinedOutput()
	if err != nil {
		t.Fatalf("helm template %s: %v\n%s", pkg, err, rendered)
	}
	wantImage := `image: "ghcr.io/tagsync/tagsync@` + digest + `"`
	if !strings.Contains(string(rendered), wantImage) {
		t.Errorf("the packaged chart does not render %s", wantImage)
	}
	if !strings.Contains(string(rendered), `app.kubernetes.io/version: "`+version+`"`) {
		t.Errorf("the packaged chart does not label its objects with app.kubernetes.io/version %q", version)
	}
}
