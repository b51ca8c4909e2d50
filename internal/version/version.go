// Package version holds the build's version, commit and build date, set at
// link time (make build, make image and make release do it):
//
//	-ldflags "-X github.com/tagsync/tagsync/internal/version.Version=v0.2.0
//	          -X github.com/tagsync/tagsync/internal/version.Commit=<sha>
//	          -X github.com/tagsync/tagsync/internal/version.Date=<RFC 3339>"
//
// A plain `go build` or `go install` falls back to what the Go toolchain
// recorded (module version, VCS revision and time), then to "dev" and
// "unknown".
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set at link time; see the package doc.
var (
	// Version is the release this binary was built from (git describe).
	Version = ""
	// Commit is the full git commit hash of the build.
	Commit = ""
	// Date is the commit time of the build in RFC 3339 (UTC), so two builds
	// of one commit carry the same date.
	Date = ""
)

// Unknown stands for a commit or date neither the linker nor the Go
// toolchain recorded.
const Unknown = "unknown"

// Info is what a build says about itself.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"date"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the build's version string.
func Get() string { return Read().Version }

// Read returns the build's version, commit, date, Go version and platform.
func Read() Info {
	info := Info{Version: Version, Commit: Commit, Date: Date,
		GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if build, ok := debug.ReadBuildInfo(); ok {
		fillFromBuildInfo(&info, build)
	}
	info.Version = orDefault(info.Version, "dev")
	info.Commit = orDefault(info.Commit, Unknown)
	info.Date = orDefault(info.Date, Unknown)
	return info
}

// fillFromBuildInfo fills what the linker left empty from the module
// version and VCS settings the Go toolchain recorded.
func fillFromBuildInfo(info *Info, build *debug.BuildInfo) {
	if v := build.Main.Version; info.Version == "" && v != "" && v != "(devel)" {
		info.Version = v
	}
	for _, s := range build.Settings {
		switch {
		case s.Key == "vcs.revision" && info.Commit == "":
			info.Commit = s.Value
		case s.Key == "vcs.time" && info.Date == "":
			info.Date = s.Value
		}
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// String is the one line `tagsync version` and `tagsync --version` print.
func (i Info) String() string {
	return fmt.Sprintf("tagsync %s (commit %s, built %s, %s %s)", i.Version, i.Commit, i.Date, i.GoVersion, i.Platform)
}
