package release_test

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// descriptor, manifest and imageConfig are the parts of the OCI image
// spec's JSON the tests read.
type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
	Platform    *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

type manifest struct {
	MediaType   string            `json:"mediaType"`
	Config      descriptor        `json:"config"`
	Layers      []descriptor      `json:"layers"`
	Manifests   []descriptor      `json:"manifests"`
	Annotations map[string]string `json:"annotations"`
}

type imageConfig struct {
	Created      time.Time `json:"created"`
	OS           string    `json:"os"`
	Architecture string    `json:"architecture"`
	Config       struct {
		User       string            `json:"User"`
		Entrypoint []string          `json:"Entrypoint"`
		Cmd        []string          `json:"Cmd"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
}

// layout is an OCI image layout directory.
type layout string

// blob decodes the JSON blob of digest into v.
func (l layout) blob(t testing.TB, digest string, v any) {
	t.Helper()
	b, err := os.ReadFile(l.blobPath(digest))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("blob %s: %v", digest, err)
	}
}

func (l layout) blobPath(digest string) string {
	algo, hex, _ := strings.Cut(digest, ":")
	return filepath.Join(string(l), "blobs", algo, hex)
}

// index is the image index the layout's index.json points at.
func (l layout) index(t testing.TB) (descriptor, manifest) {
	t.Helper()
	var top manifest
	b, err := os.ReadFile(filepath.Join(string(l), "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &top); err != nil || len(top.Manifests) != 1 {
		t.Fatalf("index.json: %v, %d manifests, want 1 (the image index)", err, len(top.Manifests))
	}
	var idx manifest
	l.blob(t, top.Manifests[0].Digest, &idx)
	return top.Manifests[0], idx
}

// TestImageIsReproducibleAndRunsAsTheDockerfileSays builds the image a
// second time from one commit and compares the index digests (and every
// file) with the shared build, then checks the index: the platform built,
// OCI annotations from the commit, the image's user, entrypoint and command
// as the Dockerfile's, created at the commit time, and a layer holding the
// static binary, which prints the release version. (The tests build the
// host's platform only; `make release` builds linux/amd64 and linux/arm64
// with the same code.)
func TestImageIsReproducibleAndRunsAsTheDockerfileSays(t *testing.T) {
	first, second := sharedImage(t), buildImage(t)
	top1, _ := layout(filepath.Join(first, "oci")).index(t)
	top2, _ := layout(filepath.Join(second, "oci")).index(t)
	if top1.Digest != top2.Digest {
		t.Fatalf("two builds of commit %s gave index digests %s and %s", commit, top1.Digest, top2.Digest)
	}
	t.Logf("image index %s (both builds)", top1.Digest)
	for _, f := range []string{"digest", "tagsync_linux_" + runtime.GOARCH + ".docker.tar"} {
		if !sameFile(t, filepath.Join(first, f), filepath.Join(second, f)) {
			t.Errorf("%s differs between two builds of one commit", f)
		}
	}
	if got := strings.TrimSpace(readFile(t, filepath.Join(first, "digest"))); got != top1.Digest {
		t.Errorf("dist/image/digest says %s, the layout's index is %s", got, top1.Digest)
	}
	if ref := top1.Annotations["org.opencontainers.image.ref.name"]; ref != version {
		t.Errorf("the layout tags the index %q, want the version %q", ref, version)
	}
	checkIndex(t, layout(filepath.Join(first, "oci")))
}

// checkIndex checks the index's platforms, annotations and images.
func checkIndex(t *testing.T, l layout) {
	_, idx := l.index(t)
	checkAnnotations(t, "the index", idx.Annotations)
	var platforms []string
	for _, m := range idx.Manifests {
		if m.Platform == nil {
			t.Fatalf("index entry %s has no platform", m.Digest)
		}
		p := m.Platform.OS + "/" + m.Platform.Architecture
		platforms = append(platforms, p)
		t.Run(p, func(t *testing.T) { checkImage(t, l, m) })
	}
	if want := []string{hostPlatform()}; !slices.Equal(platforms, want) {
		t.Errorf("index platforms %v, want %v", platforms, want)
	}
}

// checkAnnotations checks the OCI annotations every image and the index carry.
func checkAnnotations(t *testing.T, what string, got map[string]string) {
	t.Helper()
	want := map[string]string{
		"org.opencontainers.image.source":   "https://github.com/tagsync/tagsync",
		"org.opencontainers.image.revision": commit,
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.created":  commitDate(),
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: annotation %s = %q, want %q", what, k, got[k], v)
		}
	}
}

// checkImage checks one platform's image against the Dockerfile and runs
// its binary when it is this machine's.
func checkImage(t *testing.T, l layout, desc descriptor) {
	var m manifest
	l.blob(t, desc.Digest, &m)
	checkAnnotations(t, "the manifest", m.Annotations)
	var cfg imageConfig
	l.blob(t, m.Config.Digest, &cfg)
	checkAnnotations(t, "the config labels", cfg.Config.Labels)
	if !cfg.Created.Equal(time.Unix(epoch, 0)) {
		t.Errorf("created %s, want the commit time %s", cfg.Created, commitDate())
	}
	docker := dockerfileFinalStage(t)
	if cfg.Config.User != docker.user || !slices.Equal(cfg.Config.Entrypoint, docker.entrypoint) || !slices.Equal(cfg.Config.Cmd, docker.cmd) {
		t.Errorf("image user %q entrypoint %q cmd %q; the Dockerfile says %q %q %q",
			cfg.Config.User, cfg.Config.Entrypoint, cfg.Config.Cmd, docker.user, docker.entrypoint, docker.cmd)
	}
	if cfg.Config.User != "65532:65532" || !slices.Equal(cfg.Config.Cmd, []string{"run"}) {
		t.Errorf("image user %q cmd %q, want 65532:65532 and [run]", cfg.Config.User, cfg.Config.Cmd)
	}
	if len(m.Layers) != 1 {
		t.Fatalf("%d layers, want 1 (the binary on an empty base)", len(m.Layers))
	}
	bin := extractEntrypoint(t, l.blobPath(m.Layers[0].Digest), cfg.Config.Entrypoint[0])
	if runtime.GOOS == "linux" && cfg.Architecture == runtime.GOARCH {
		checkBinaryVersion(t, bin)
	}
}

// extractEntrypoint finds path in the gzipped layer, checks it is a
// root-owned executable dated at the commit time, and writes it to a
// temporary file.
func extractEntrypoint(t *testing.T, layer, path string) string {
	t.Helper()
	f, err := os.Open(layer)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			t.Fatalf("the layer has no %s", path)
		}
		if err != nil {
			t.Fatal(err)
		}
		if !hdr.ModTime.Equal(time.Unix(epoch, 0)) {
			t.Errorf("%s is dated %s, want the commit time", hdr.Name, hdr.ModTime)
		}
		if "/"+hdr.Name != path {
			continue
		}
		if hdr.Mode != 0o755 || hdr.Uid != 0 || hdr.Gid != 0 {
			t.Errorf("%s: mode %o uid %d gid %d, want 755 root:root", path, hdr.Mode, hdr.Uid, hdr.Gid)
		}
		out := filepath.Join(t.TempDir(), "tagsync")
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, b, 0o755); err != nil {
			t.Fatal(err)
		}
		return out
	}
}

// dockerStage is what the Dockerfile's final stage says about running.
type dockerStage struct {
	user            string
	entrypoint, cmd []string
}

// dockerfileFinalStage reads USER, ENTRYPOINT and CMD (JSON form) of the
// Dockerfile's last FROM stage.
func dockerfileFinalStage(t testing.TB) dockerStage {
	t.Helper()
	var s dockerStage
	sc := bufio.NewScanner(strings.NewReader(readFile(t, filepath.Join(root, "Dockerfile"))))
	for sc.Scan() {
		instr, arg, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		switch strings.ToUpper(instr) {
		case "FROM":
			s = dockerStage{}
		case "USER":
			s.user = strings.TrimSpace(arg)
		case "ENTRYPOINT":
			s.entrypoint = execForm(t, instr, arg)
		case "CMD":
			s.cmd = execForm(t, instr, arg)
		}
	}
	if s.user == "" || s.entrypoint == nil || s.cmd == nil {
		t.Fatalf("the Dockerfile's final stage lacks USER, ENTRYPOINT or CMD: %+v", s)
	}
	return s
}

// execForm decodes an instruction's JSON (exec) form; the shell form would
// run through /bin/sh, which an empty base has not.
func execForm(t testing.TB, instr, arg string) []string {
	t.Helper()
	var v []string
	if err := json.Unmarshal([]byte(arg), &v); err != nil {
		t.Fatalf("Dockerfile %s %s: want the JSON form: %v", instr, arg, err)
	}
	return v
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sameFile reports whether two files have the same content.
func sameFile(t testing.TB, a, b string) bool {
	t.Helper()
	return readFile(t, a) == readFile(t, b)
}
