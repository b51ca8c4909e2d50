// Command release builds tagsync's release artifacts from one commit,
// reproducibly: every timestamp is the commit time (-source-date-epoch), so
// two builds of one commit give byte-identical outputs and the same image
// digest.
//
//	release image -version 0.2.0 -commit <sha> -source-date-epoch <unix> -out dist/image
//	    the OCI image index (linux/amd64, linux/arm64) as an OCI layout
//	    (dist/image/oci, what `crane push` and `skopeo copy oci:` take), one
//	    `docker load` tarball per platform and dist/image/digest.
//	release dist -version 0.2.0 ... -image dist/image -out dist
//	    tar.gz archives per OS and architecture, checksums.txt (sha256), the
//	    krew manifest filled from those sums, a CycloneDX SBOM per binary and
//	    the Helm chart packaged with the image pinned by digest.
//
// `make image` and `make release` run it from the repository root.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: release image|dist [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "image":
		err = runImage(os.Args[2:])
	case "dist":
		err = runDist(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: want image or dist", os.Args[1])
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
	fs.StringVar(&b.version, "version", "", "the release version (a leading v is dropped)")
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
	b.version = strings.TrimPrefix(b.version, "v")
	if b.version == "" || b.commit == "" || b.epoch <= 0 {
		return fmt.Errorf("-version, -commit and -source-date-epoch are required")
	}
	ps, err := parsePlatforms(*platforms)
	b.platforms = ps
	return err
}

// date is the commit time, the date of every output.
func (b *build) date() time.Time { return time.Unix(b.epoch, 0).UTC() }
