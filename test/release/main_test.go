// Package release_test proves `make image` and `make release`
// (hack/tools/release): the image index is reproducible (two builds of one
// commit, one digest), runs as the Dockerfile says, and holds a static
// binary that knows its version; the release's archives, checksums, krew
// manifest, SBOMs and packaged chart agree with each other, with the image
// digest and with the binary's version.
//
// The tests run the release tool as `make` does, from a throwaway output
// directory, with a fixed version and the repository's HEAD commit and
// commit time. The chart is packaged with bin/helm (`make tools`; missing is
// a failure, never a skip).
//
// To keep `make test` short the tests build the image for this machine's
// platform only (linux/<GOARCH>), once, shared by every test (sharedImage);
// the reproducibility test builds it a second time. A cross-compiled arm64
// image costs a cold compile of every dependency for one more architecture
// and exercises no code the host build does not: `make release` builds both
// platforms, and TestReleasePlanCarriesTheVersion checks, without building,
// that it would (and with which version everywhere).
package release_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/testenv"
)

// version is the release version the tests build.
const version = "1.2.3"

var (
	root      string
	workDir   string // the release tool and the shared image, removed after the tests
	toolPath  string
	commit    string
	epoch     int64
	setupOnce sync.Once
	setupErr  error

	imageOnce sync.Once
	imageDir  string
	imageErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if workDir != "" {
		_ = os.RemoveAll(workDir)
	}
	os.Exit(code)
}

// hostPlatform is the one platform the tests build: this machine's
// architecture, on linux (the image's OS), so its binary runs here.
func hostPlatform() string { return "linux/" + runtime.GOARCH }

// setup finds the repository, its HEAD commit and commit time, and builds
// the release tool once.
func setup(t testing.TB) {
	t.Helper()
	setupOnce.Do(func() { setupErr = doSetup() })
	if setupErr != nil {
		t.Fatal(setupErr)
	}
}

func doSetup() error {
	var err error
	if root, err = testenv.RepoRoot(); err != nil {
		return err
	}
	out, err := gitOutput("log", "-1", "--format=%H %ct")
	if err != nil {
		return err
	}
	hash, ct, _ := strings.Cut(strings.TrimSpace(out), " ")
	commit = hash
	if epoch, err = strconv.ParseInt(ct, 10, 64); err != nil {
		return fmt.Errorf("commit time %q: %w", ct, err)
	}
	if workDir, err = os.MkdirTemp("", "tagsync-release-test-"); err != nil {
		return err
	}
	toolPath = filepath.Join(workDir, "release")
	cmd := exec.Command("go", "build", "-C", filepath.Join(root, "hack", "tools", "release"), "-o", toolPath, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building hack/tools/release: %v\n%s", err, out)
	}
	return nil
}

func gitOutput(args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %v: %w", args, err)
	}
	return string(out), nil
}

// runTool runs `release <command>` with the common flags and extra ones.
func runTool(t testing.TB, command string, extra ...string) {
	t.Helper()
	setup(t)
	took, err := tool(command, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("release %s took %s", command, took)
}

// tool runs `release <command>` with the common flags and extra ones and
// says how long it took.
func tool(command string, extra ...string) (time.Duration, error) {
	args := append([]string{command, "-root", root, "-version", "v" + version, "-commit", commit,
		"-source-date-epoch", strconv.FormatInt(epoch, 10)}, extra...)
	cmd := exec.Command(toolPath, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("release %s: %v\n%s", command, err, out.String())
	}
	return time.Since(start).Round(time.Second), nil
}

// buildImage runs `release image` for the host platform into a new
// directory and returns it.
func buildImage(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "image")
	runTool(t, "image", "-platforms", hostPlatform(), "-out", dir)
	return dir
}

// sharedImage is the image every test reads, built once (for the host
// platform) by whichever test asks first.
func sharedImage(t testing.TB) string {
	t.Helper()
	setup(t)
	imageOnce.Do(func() {
		imageDir = filepath.Join(workDir, "image")
		var took time.Duration
		took, imageErr = tool("image", "-platforms", hostPlatform(), "-out", imageDir)
		t.Logf("release image (shared by the tests) took %s", took)
	})
	if imageErr != nil {
		t.Fatal(imageErr)
	}
	return imageDir
}

// commitDate is the commit time as the build stamps it.
func commitDate() string { return time.Unix(epoch, 0).UTC().Format(time.RFC3339) }

// wantVersionLine is what `tagsync version` of a release binary of this
// platform prints.
func wantVersionLine(goos, goarch string) string {
	return fmt.Sprintf("tagsync %s (commit %s, built %s, %s %s/%s)\n", version, commit, commitDate(), runtime.Version(), goos, goarch)
}

// checkBinaryVersion runs bin version and compares its line.
func checkBinaryVersion(t testing.TB, bin string) {
	t.Helper()
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", bin, err, out)
	}
	if want := wantVersionLine("linux", runtime.GOARCH); string(out) != want {
		t.Errorf("%s version printed %q, want %q", bin, out, want)
	}
}
