package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// distPlatforms are the platforms of the release archives (and the krew
// manifest).
const distPlatforms = "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64"

// distOptions are the dist command's own settings.
type distOptions struct {
	out, imageDir, helm, krew string
	allowPartial              bool
}

func runDist(args []string) error {
	var b build
	var o distOptions
	fs := flag.NewFlagSet("dist", flag.ExitOnError)
	platforms := commonFlags(fs, &b, distPlatforms)
	fs.StringVar(&o.out, "out", "dist", "the output directory")
	fs.StringVar(&o.imageDir, "image", "dist/image", "the output of `release image`, whose digest the chart pins")
	fs.StringVar(&o.helm, "helm", "bin/helm", "the helm binary (relative to -root)")
	fs.StringVar(&o.krew, "krew", "plugins/krew/tagsync.yaml", "the krew manifest template (relative to -root)")
	fs.BoolVar(&o.allowPartial, "allow-partial", false, "leave krew platforms without an archive unfilled (tests build fewer platforms)")
	if err := b.parse(fs, args, platforms); err != nil {
		return err
	}
	return b.writeDist(o)
}

// writeDist writes the archives, SBOMs, krew manifest, packaged chart and
// checksums.txt into o.out.
func (b *build) writeDist(o distOptions) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	var files []string
	archives := map[platform]string{}
	for _, p := range b.platforms {
		bin, err := b.goBuild(p, filepath.Join(o.out, "build", p.name()))
		if err != nil {
			return err
		}
		archive := filepath.Join(o.out, archiveName(p))
		if err := b.writeArchive(archive, bin); err != nil {
			return err
		}
		sbom := filepath.Join(o.out, "tagsync_"+p.name()+".cdx.json")
		if err := b.writeSBOM(sbom, bin); err != nil {
			return err
		}
		archives[p] = archive
		files = append(files, archive, sbom)
	}
	krew, err := b.writeKrewManifest(o, archives)
	if err != nil {
		return err
	}
	chart, err := b.packageChart(o)
	if err != nil {
		return err
	}
	files = append(files, krew, chart)
	return writeChecksums(filepath.Join(o.out, "checksums.txt"), files)
}

// sha256File is the hex sha256 of a file.
func sha256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeChecksums writes `sha256sum` lines ("<hex>  <name>") for files,
// sorted by name, so `sha256sum -c checksums.txt` checks them.
func writeChecksums(path string, files []string) error {
	sort.Slice(files, func(i, j int) bool { return filepath.Base(files[i]) < filepath.Base(files[j]) })
	var lines strings.Builder
	for _, f := range files {
		sum, err := sha256File(f)
		if err != nil {
			return err
		}
		fmt.Fprintf(&lines, "%s  %s\n", sum, filepath.Base(f))
	}
	return os.WriteFile(path, []byte(lines.String()), 0o644)
}
