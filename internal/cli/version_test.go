package cli

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/tagsync/tagsync/internal/version"
)

// TestVersionCommandAndFlagPrintVersionCommitDateAndGo: `tagsync version`
// and `tagsync --version` print the same line, with the version, commit and
// date set at link time and the Go version.
func TestVersionCommandAndFlagPrintVersionCommitDateAndGo(t *testing.T) {
	defer setVersion("v9.8.7", "0123456789abcdef0123456789abcdef01234567", "2026-01-02T03:04:05Z")()
	want := "tagsync v9.8.7 (commit 0123456789abcdef0123456789abcdef01234567, built 2026-01-02T03:04:05Z, " +
		runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")\n"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, _, err := runWith(context.Background(), []*cobra.Command{NewVersionCommand()}, args...)
		if err != nil {
			t.Fatal(err)
		}
		if out != want {
			t.Errorf("tagsync %s printed %q, want %q", strings.Join(args, " "), out, want)
		}
	}
}

// TestVersionWithoutLinkerValues: a plain go build (no -ldflags) still says
// something for each field rather than printing empty ones.
func TestVersionWithoutLinkerValues(t *testing.T) {
	defer setVersion("", "", "")()
	info := version.Read()
	if info.Version == "" || info.Commit == "" || info.Date == "" {
		t.Fatalf("version.Read() = %+v: no field may be empty", info)
	}
}

// setVersion sets the link-time variables for a test and returns a func
// that restores them.
func setVersion(v, commit, date string) func() {
	old := [3]string{version.Version, version.Commit, version.Date}
	version.Version, version.Commit, version.Date = v, commit, date
	return func() { version.Version, version.Commit, version.Date = old[0], old[1], old[2] }
}

func TestVersionCommandRejectsArguments(t *testing.T) {
	if _, _, err := runWith(context.Background(), []*cobra.Command{NewVersionCommand()}, "version", "extra"); ExitCode(err) != ExitUsage {
		t.Fatalf("version with an unexpected argument: %v (exit %d), want exit %d", err, ExitCode(err), ExitUsage)
	}
}
