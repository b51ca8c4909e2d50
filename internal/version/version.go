// Package version holds the build's version, set at link time with
// -ldflags "-X github.com/tagsync/tagsync/internal/version.Version=...".
package version

import "runtime/debug"

// Version is the release this binary was built from. It defaults to the
// module version recorded by the Go toolchain, or "dev" for local builds.
var Version = ""

// Get returns the build's version string.
func Get() string {
	if Version != "" {
		return Version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "dev"
}
