// Command release builds tagsync's release artifacts from one commit,
// reproducibly: every timestamp is the commit time (-source-date-epoch), so
// two builds of one commit give byte-identical outputs and the same image
// digest.
//
//	release image -version 0.2.0 -commit <sha> -source-date-epoch <unix> -out dist/image
//	    the OCI image index (linux/amd64, linux/arm64) as an OCI layout
//	    (dist/image/oci, what `crane push` and `skopeo copy oci:` take), one
//	    `docker load` tarball per platform and dist/image/digest.
//	release dist -version v0.2.0 ... -image dist/image -out dist
//	    tar.gz archives per OS and architecture, checksums.txt (sha256), the
//	    krew manifest filled from those sums, a CycloneDX SBOM per binary and
//	    the Helm chart packaged with the image pinned by digest.
//	release plan -version v0.2.0 ...
//	    builds nothing: prints, as JSON, the version each artifact of that
//	    release carries and the names image and dist would write (what `make
//	    release-plan VERSION=...` shows, and what a test checks).
//
// -version is SemVer with a leading v (v0.2.0, v0.3.0-rc.1); the artifacts
// carry it without the v where SemVer wants none (the binary's version, the
// image tag, the chart's version and appVersion) and with it where a tag is
// meant (the krew manifest, the release URLs). `make image` and `make
// release` run it from the repository root.
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: release image|dist|plan [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "image":
		err = runImage(os.Args[2:])
	case "dist":
		err = runDist(os.Args[2:])
	case "plan":
		err = runPlan(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: want image, dist or plan", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

// build is what every command needs to know about the build.
type build struct {
	root      string // the repository root
	version   string // the release version without a leading v (0.2.0)
	commit    string // the full commit hash
	epoch     int64  // the commit time, seconds since 1970 (SOURCE_DATE_EPOCH)
	platforms []platform
	source    string // the repository URL (org.opencontainers.image.source)
	repo      string // the image repository (ghcr.io/tagsync/tagsync)
}

// commonFlags registers the flags every command takes on fs.
func commonFlags(fs *flag.FlagSet, b *build, defaultPlatforms string) *string {
	fs.StringVar(&b.root, "root", ".", "the repository root")
	fs.StringVar(&b.version, "version", "", "the release version: SemVer with a leading v (v0.2.0); the artifacts carry it without the v")
	fs.StringVar(&b.commit, "commit", "", "the commit hash")
	fs.Int64Var(&b.epoch, "source-date-epoch", 0, "the commit time in seconds since 1970; every timestamp of the outputs")
	fs.StringVar(&b.source, "source", "https://github.com/tagsync/tagsync", "the source repository URL")
	fs.StringVar(&b.repo, "repository", "ghcr.io/tagsync/tagsync", "the image repository")
	return fs.String("platforms", defaultPlatforms, "comma-separated os/arch list")
}

// parse parses args into b and checks what every command needs.
func (b *build) parse(fs *flag.FlagSet, args []string, platforms *string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if b.version == "" || b.commit == "" || b.epoch <= 0 {
		return fmt.Errorf("-version, -commit and -source-date-epoch are required")
	}
	v, err := releaseVersion(b.version)
	if err != nil {
		return err
	}
	b.version = v
	ps, err := parsePlatforms(*platforms)
	b.platforms = ps
	return err
}

// date is the commit time, the date of every output.
func (b *build) date() time.Time { return time.Unix(b.epoch, 0).UTC() }

// semver is a SemVer 2.0.0 version with a leading v and without build
// metadata: vMAJOR.MINOR.PATCH with an optional pre-release (-rc.1,
// -3-g<sha>-dirty as git describe gives past a tag). Numbers have no
// leading zeros, pre-release identifiers are [0-9A-Za-z-] and a numeric one
// has no leading zero either.
var semver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)` +
	`(-(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(\.(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*)?$`)

// releaseVersion checks v (SemVer with a leading v) and returns it without
// the v. Build metadata (+...) is refused: an image tag cannot carry a +.
func releaseVersion(v string) (string, error) {
	if strings.Contains(v, "+") {
		return "", fmt.Errorf("version %q has build metadata (+...), which an image tag cannot carry: use a pre-release (-...) instead", v)
	}
	if !semver.MatchString(v) {
		return "", fmt.Errorf("version %q is not SemVer with a leading v: want vMAJOR.MINOR.PATCH, optionally -PRERELEASE (v0.2.0, v0.3.0-rc.1)", v)
	}
	return strings.TrimPrefix(v, "v"), nil
}

// tag is the release's git tag: the version with its v.
func (b *build) tag() string { return "v" + b.version }

// imageRef is the image index's tag: the repository and the version.
func (b *build) imageRef() string { return b.repo + ":" + b.version }

// chartPackage is the file name of the packaged chart.
func (b *build) chartPackage() string { return "tagsync-" + b.version + ".tgz" }

// archiveName is the file name of p's release archive.
func archiveName(p platform) string { return "tagsync_" + p.name() + ".tar.gz" }

// archiveURL is where the release publishes p's archive (the krew
// manifest's uri).
func (b *build) archiveURL(p platform) string {
	return fmt.Sprintf("%s/releases/download/%s/%s", strings.TrimSuffix(b.source, "/"), b.tag(), archiveName(p))
}
