package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// platform is one os/arch target.
type platform struct{ os, arch string }

func (p platform) String() string { return p.os + "/" + p.arch }

// name is the platform in file names: linux_amd64.
func (p platform) name() string { return p.os + "_" + p.arch }

func parsePlatforms(s string) ([]platform, error) {
	var out []platform
	for _, f := range strings.Split(s, ",") {
		o, a, ok := strings.Cut(strings.TrimSpace(f), "/")
		if !ok || o == "" || a == "" {
			return nil, fmt.Errorf("platform %q: want os/arch", f)
		}
		out = append(out, platform{o, a})
	}
	return out, nil
}

// versionPackage receives the build's version, commit and date at link time.
const versionPackage = "github.com/tagsync/tagsync/internal/version"

// goBuild builds ./cmd/tagsync for p into dir/tagsync: static (no cgo),
// without file system paths (-trimpath) or VCS stamps, with the version,
// commit and commit time linked in, so one commit gives one binary.
func (b *build) goBuild(p platform, dir string) (string, error) {
	out := filepath.Join(dir, "tagsync")
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", b.ldflags(), "-o", out, "./cmd/tagsync")
	cmd.Dir = b.root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.os, "GOARCH="+p.arch, "GOFLAGS=-mod=readonly")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build for %s: %w", p, err)
	}
	fmt.Fprintf(os.Stderr, ">> built tagsync for %s in %s\n", p, time.Since(start).Round(time.Second))
	return out, nil
}

// ldflags are the linker flags of a release binary: stripped, with the
// version (no v), commit and commit time linked into versionPackage, which
// `tagsync version` prints.
func (b *build) ldflags() string {
	return strings.Join([]string{"-s", "-w",
		"-X", versionPackage + ".Version=" + b.version,
		"-X", versionPackage + ".Commit=" + b.commit,
		"-X", versionPackage + ".Date=" + b.date().Format(time.RFC3339),
	}, " ")
}
