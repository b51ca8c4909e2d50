package release_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// makeCmd is `make args...` in the repository root, with the environment of
// a make started by hand (not the jobserver of a make test around this).
func makeCmd(t testing.TB, args ...string) *exec.Cmd {
	t.Helper()
	setup(t)
	cmd := exec.Command("make", append([]string{"--no-print-directory"}, args...)...)
	cmd.Dir = root
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" && k != "VERSION" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	return cmd
}

// plan mirrors what `release plan` prints.
type plan struct {
	Version, Tag, Commit, Date, LDFlags string
	Image                               struct {
		Ref         string
		Platforms   []string
		Annotations map[string]string
	}
	Chart struct{ Version, AppVersion, Package string }
	Krew  struct {
		Version string
		URIs    map[string]string
	}
	Archives []string
}

// TestReleasePlanCarriesTheVersion runs `make release-plan
// VERSION=v9.8.7-rc.1` (the release tool's plan: it builds nothing) and
// checks that the version given on the command line, not git's, reaches
// every artifact `make release` makes: the binary's stamp (the linker
// flags `tagsync version` prints), the image tag and annotations, the
// chart's version and appVersion, the krew manifest's version and every
// one of its platforms' URLs; that the image holds linux/amd64 and
// linux/arm64 and the archives the four platforms; and that `make build`
// stamps the same version.
func TestReleasePlanCarriesTheVersion(t *testing.T) {
	const v = "9.8.7-rc.1"
	cmd := makeCmd(t, "-s", "release-plan", "VERSION=v"+v, "DIST="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make release-plan: %v\n%s%s", err, out, stderrOf(err))
	}
	var p plan
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("make release-plan printed %s: %v", out, err)
	}
	stamp := "-X github.com/tagsync/tagsync/internal/version.Version=" + v + " "
	for _, c := range []struct{ what, got, want string }{
		{"version", p.Version, v},
		{"git tag", p.Tag, "v" + v},
		{"commit", p.Commit, commit},
		{"image tag", p.Image.Ref, "ghcr.io/tagsync/tagsync:" + v},
		{"image annotation org.opencontainers.image.version", p.Image.Annotations["org.opencontainers.image.version"], v},
		{"chart version", p.Chart.Version, v},
		{"chart appVersion", p.Chart.AppVersion, v},
		{"chart package", p.Chart.Package, "tagsync-" + v + ".tgz"},
		{"krew version", p.Krew.Version, "v" + v},
	} {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", c.what, c.got, c.want)
		}
	}
	if !strings.Contains(p.LDFlags+" ", stamp) {
		t.Errorf("the release binaries' ldflags %q do not stamp %q", p.LDFlags, stamp)
	}
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(p.Image.Platforms, want) {
		t.Errorf("make image would build the platforms %v, want %v", p.Image.Platforms, want)
	}
	wantArchives := []string{"tagsync_linux_amd64.tar.gz", "tagsync_linux_arm64.tar.gz", "tagsync_darwin_amd64.tar.gz", "tagsync_darwin_arm64.tar.gz"}
	if !slices.Equal(p.Archives, wantArchives) {
		t.Errorf("make release would build the archives %v, want %v", p.Archives, wantArchives)
	}
	// Every platform of the krew manifest gets an archive of this version.
	for _, kp := range krewPlatforms(t) {
		uri, ok := p.Krew.URIs[kp]
		if want := "/releases/download/v" + v + "/tagsync_" + strings.ReplaceAll(kp, "/", "_") + ".tar.gz"; !ok || !strings.HasSuffix(uri, want) {
			t.Errorf("krew platform %s: uri %q, want one ending in %s", kp, uri, want)
		}
	}

	// make build stamps the same version.
	dry, err := makeCmd(t, "-n", "build", "VERSION=v"+v).Output()
	if err != nil {
		t.Fatalf("make -n build: %v%s", err, stderrOf(err))
	}
	if !strings.Contains(string(dry)+" ", stamp) {
		t.Errorf("make build VERSION=v%s runs %q, which does not stamp %q", v, dry, stamp)
	}
}

// krewPlatforms are the os/arch of every platform the krew manifest
// template lists.
func krewPlatforms(t testing.TB) []string {
	t.Helper()
	var m struct {
		Spec struct {
			Platforms []struct {
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				} `json:"selector"`
			} `json:"platforms"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(readFile(t, filepath.Join(root, "plugins", "krew", "tagsync.yaml"))), &m); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range m.Spec.Platforms {
		out = append(out, p.Selector.MatchLabels["os"]+"/"+p.Selector.MatchLabels["arch"])
	}
	if len(out) == 0 {
		t.Fatal("the krew manifest template lists no platform")
	}
	return out
}

// TestReleaseRefusesAVersionThatIsNotSemVer: `make release VERSION=...`
// with a version that is not SemVer with a leading v fails at once, saying
// so, before it builds anything; the release tool refuses it too (and a
// few the Makefile's quick check lets through).
func TestReleaseRefusesAVersionThatIsNotSemVer(t *testing.T) {
	bad := []string{"1.2.3", "v1.2", "v1.2.3.4", "latest", "v1.2.3+build.5", "v01.2.3", "v1.2.3-", "v1.2.3 x"}
	for _, v := range bad {
		dist := t.TempDir()
		out, err := makeCmd(t, "release", "VERSION="+v, "DIST="+dist).CombinedOutput()
		if err == nil {
			t.Errorf("make release VERSION=%q succeeded:\n%s", v, out)
			continue
		}
		if !strings.Contains(string(out), "is not SemVer with a leading v") {
			t.Errorf("make release VERSION=%q failed without saying why:\n%s", v, out)
		}
		if entries, _ := os.ReadDir(dist); len(entries) != 0 {
			t.Errorf("make release VERSION=%q built %d file(s) before refusing", v, len(entries))
		}
	}
	for _, v := range append(bad, "v1.2.3-01", "v1.2.3-rc..1") {
		out, err := exec.Command(toolPath, "plan", "-version", v, "-commit", commit, "-source-date-epoch", "1").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "version") {
			t.Errorf("release plan -version %q: %v\n%s", v, err, out)
		}
	}
	for _, v := range []string{"v0.1.0", "v0.3.0-rc.1", "v0.2.0-3-gabc1234-dirty", "v0.0.0-20261126223344-abcdef123456"} {
		if out, err := exec.Command(toolPath, "plan", "-version", v, "-commit", commit, "-source-date-epoch", "1").CombinedOutput(); err != nil {
			t.Errorf("release plan -version %q refused a SemVer version: %v\n%s", v, err, out)
		}
		if out, err := makeCmd(t, "-s", "check-version", "VERSION="+v).CombinedOutput(); err != nil {
			t.Errorf("make check-version VERSION=%q refused a SemVer version: %v\n%s", v, err, out)
		}
	}
}

// stderrOf is the standard error an *exec.ExitError captured.
func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return "\n" + string(ee.Stderr)
	}
	return ""
}
