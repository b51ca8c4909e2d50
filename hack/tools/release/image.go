package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's runtime settings. The Dockerfile at the repository root says
// the same (a test compares them).
const (
	binaryPath = "/usr/local/bin/tagsync"
	imageUser  = "65532:65532"
)

var (
	entrypoint = []string{binaryPath}
	defaultCmd = []string{"run"}
	imageEnv   = []string{"PATH=/usr/local/bin"}
)

// imagePlatforms are the platforms of the image index.
const imagePlatforms = "linux/amd64,linux/arm64"

func runImage(args []string) error {
	var b build
	fs := flag.NewFlagSet("image", flag.ExitOnError)
	platforms := commonFlags(fs, &b, imagePlatforms)
	out := fs.String("out", "dist/image", "the output directory (replaced)")
	if err := b.parse(fs, args, platforms); err != nil {
		return err
	}
	return b.writeImage(*out)
}

// writeImage builds the image index and writes the OCI layout out/oci, a
// `docker load` tarball per platform (out/tagsync_<os>_<arch>.docker.tar)
// and out/digest, the index digest.
func (b *build) writeImage(out string) error {
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	tag, err := name.NewTag(b.imageRef())
	if err != nil {
		return err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range b.platforms {
		img, err := b.image(p, filepath.Join(out, "bin", p.name()))
		if err != nil {
			return err
		}
		if err := tarball.WriteToFile(filepath.Join(out, "tagsync_"+p.name()+".docker.tar"), tag, img); err != nil {
			return err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: p.os, Architecture: p.arch, Variant: variant(p)}}})
	}
	idx = mutate.Annotations(idx, b.annotations()).(v1.ImageIndex)
	lp, err := layout.Write(filepath.Join(out, "oci"), empty.Index)
	if err != nil {
		return err
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": b.version,
		"io.containerd.image.name":          tag.String(),
	})); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s@%s\n", tag, digest)
	return os.WriteFile(filepath.Join(out, "digest"), []byte(digest.String()+"\n"), 0o644)
}

// variant is the platform variant registries and Docker expect for arm64.
func variant(p platform) string {
	if p.arch == "arm64" {
		return "v8"
	}
	return ""
}

// annotations are the OCI annotations of the index and of every image; the
// image configs carry them as labels too (docker inspect shows those).
func (b *build) annotations() map[string]string {
	return map[string]string{
		"org.opencontainers.image.source":   b.source,
		"org.opencontainers.image.revision": b.commit,
		"org.opencontainers.image.version":  b.version,
		"org.opencontainers.image.created":  b.date().Format("2006-01-02T15:04:05Z"),
		"org.opencontainers.image.title":    "tagsync",
	}
}

// image is the single-layer image of p: the static binary on an empty base.
func (b *build) image(p platform, binDir string) (v1.Image, error) {
	bin, err := b.goBuild(p, binDir)
	if err != nil {
		return nil, err
	}
	layer, err := b.binaryLayer(bin)
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, MediaType: types.OCILayer,
		History: v1.History{Created: v1.Time{Time: b.date()}, CreatedBy: "hack/tools/release image", Comment: "tagsync " + b.version}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.os, p.arch, variant(p)
	cf.Created = v1.Time{Time: b.date()}
	cf.Config = v1.Config{User: imageUser, Entrypoint: entrypoint, Cmd: defaultCmd, Env: imageEnv,
		WorkingDir: "/", Labels: b.annotations()}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, err
	}
	return mutate.Annotations(img, b.annotations()).(v1.Image), nil
}

// binaryLayer is the layer holding bin at binaryPath (root-owned, 0755,
// every time the commit time).
func (b *build) binaryLayer(bin string) (v1.Layer, error) {
	content, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := ""
	for _, d := range strings.Split(strings.Trim(filepath.Dir(binaryPath), "/"), "/") {
		dir += d + "/"
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: b.date()}); err != nil {
			return nil, err
		}
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(binaryPath, "/"), Mode: 0o755,
		Size: int64(len(content)), ModTime: b.date()}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(content); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerBytes := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}
