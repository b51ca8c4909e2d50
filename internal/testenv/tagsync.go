package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
)

// TagsyncBuildFlags and TagsyncBuildEnv are how tests, benchmarks and
// `make build` build cmd/tagsync: as the release image does
// (hack/tools/release), static and without file system paths. One build
// configuration for every tagsync binary of a test run means its packages
// are compiled once, whichever test builds first; the others only link.
var (
	TagsyncBuildFlags = []string{"-trimpath"}
	TagsyncBuildEnv   = []string{"CGO_ENABLED=0"}
)

// BuildTagsync builds ./cmd/tagsync of the repository at root into out
// with TagsyncBuildFlags and TagsyncBuildEnv.
func BuildTagsync(ctx context.Context, root, out string) error {
	args := append([]string{"build"}, TagsyncBuildFlags...)
	cmd := exec.CommandContext(ctx, "go", append(args, "-o", out, "./cmd/tagsync")...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), TagsyncBuildEnv...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/tagsync: %w\n%s", err, b)
	}
	return nil
}
