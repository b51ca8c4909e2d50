package release_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// zeroDigest is the placeholder the committed bundle and krew template
// carry; no artifact of a release may.
var zeroDigest = strings.Repeat("0", 64)

// TestReleaseBundleNamesTheReleasedImage runs the bundle step of `make
// release` (hack/bundle with the image `release image` built and the
// release's version) and checks the CSV: named and versioned for the
// release, its Deployment and containerImage the image by that digest, and
// no placeholder digest anywhere in the bundle.
func TestReleaseBundleNamesTheReleasedImage(t *testing.T) {
	image := sharedImage(t)
	digest := strings.TrimSpace(readFile(t, filepath.Join(image, "digest")))
	out := filepath.Join(t.TempDir(), "bundle")
	cmd := exec.Command("go", "run", "./hack/bundle", "-helm", helmPath(t), "-digest", digest, "-version", "v"+version, "-out", out)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/bundle: %v\n%s", err, b)
	}
	var csv struct {
		Metadata struct {
			Name        string            `json:"name"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			Version string `json:"version"`
		} `json:"spec"`
	}
	raw := readFile(t, filepath.Join(out, "manifests", "tagsync.clusterserviceversion.yaml"))
	if err := yaml.Unmarshal([]byte(raw), &csv); err != nil {
		t.Fatal(err)
	}
	want := "ghcr.io/tagsync/tagsync@" + digest
	if csv.Metadata.Name != "tagsync.v"+version || csv.Spec.Version != version {
		t.Errorf("CSV %s version %s, want tagsync.v%s version %s", csv.Metadata.Name, csv.Spec.Version, version, version)
	}
	if got := csv.Metadata.Annotations["containerImage"]; got != want {
		t.Errorf("containerImage %q, want %q", got, want)
	}
	if !strings.Contains(raw, "image: "+want) {
		t.Errorf("the CSV's Deployment does not run %s", want)
	}
	noZeroDigest(t, out)
}

// noZeroDigest fails the test for every manifest under dir (YAML, JSON,
// checksums) that holds the placeholder digest.
func noZeroDigest(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch filepath.Ext(path) {
		case ".yaml", ".yml", ".json", ".txt", ".Dockerfile":
		default:
			return nil
		}
		b, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(b), zeroDigest) {
			t.Errorf("%s holds the placeholder digest (64 zeros): a release artifact names what it ships", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
