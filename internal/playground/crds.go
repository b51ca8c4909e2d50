package playground

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The labelsync act needs Cluster API's Cluster and Machine CRDs and
// Metal3's BareMetalHost, Metal3Machine and Metal3Cluster. Cluster API's come
// from the sigs.k8s.io/cluster-api module go.mod requires, so they match the
// Go types the controller was built with: tagsync links the module
// (clustercache), so the `go build` of `make demo` has put it in the module
// cache. The minimal Metal3 CRDs come from the repository (test/crds/metal3),
// found like tagsync's own CRDs: the demo runs from a checkout.
const (
	// capiModule is the Go module that ships Cluster API's CRDs.
	capiModule = "sigs.k8s.io/cluster-api"
	// metal3CRDDir holds the minimal Metal3 CRDs, in the repository.
	metal3CRDDir = "test/crds/metal3"
	// moduleLookupTimeout bounds `go list -m`, which never downloads here.
	moduleLookupTimeout = 30 * time.Second
	// crdInstallTimeout bounds the wait for installed CRDs to be served.
	crdInstallTimeout = 30 * time.Second
)

// capiCRDFiles are the Cluster API CRDs label sync reads, in the module.
var capiCRDFiles = []string{
	"core/config/crd/bases/cluster.x-k8s.io_clusters.yaml",
	"core/config/crd/bases/cluster.x-k8s.io_machines.yaml",
}

// module is a Go module as `go list -m -json` describes it.
type module struct {
	Path, Version, Dir string
}

// labelSyncCRDs returns the CRD files and directories the act installs,
// and the Cluster API module they come from; the error says what is
// missing and how to get it.
func labelSyncCRDs(ctx context.Context, repo string) ([]string, module, error) {
	mod, err := findModule(ctx, repo, capiModule)
	if err != nil {
		return nil, mod, err
	}
	var paths []string
	for _, f := range capiCRDFiles {
		p := filepath.Join(mod.Dir, filepath.FromSlash(f))
		if !isFile(p) {
			return nil, mod, fmt.Errorf("module %s %s (in %s) has no %s", mod.Path, mod.Version, mod.Dir, f)
		}
		paths = append(paths, p)
	}
	m3 := filepath.Join(repo, filepath.FromSlash(metal3CRDDir))
	if !isDir(m3) {
		return nil, mod, fmt.Errorf("the repository %s has no %s (the minimal Metal3 CRDs)", repo, metal3CRDDir)
	}
	return append(paths, m3), mod, nil
}

// findModule finds a module the repository requires in the module cache
// with `go list -m`, as testenv.ModuleDir does, but never downloads
// (GOPROXY=off): a module that is not there is reported at once, with what
// to run, instead of waiting on the network.
func findModule(ctx context.Context, repo, path string) (module, error) {
	ctx, cancel := context.WithTimeout(ctx, moduleLookupTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-json", path)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "GOPROXY=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	hint := fmt.Sprintf("run `go mod download %s` in %s (or `make demo`, whose go build fetches it)", path, repo)
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return module{}, fmt.Errorf("cannot find Go module %s: the go command is not on PATH (the demo needs Go to find Cluster API's CRDs)", path)
		}
		return module{}, fmt.Errorf("cannot find Go module %s (go list -m: %v: %s): %s", path, err, strings.TrimSpace(stderr.String()), hint)
	}
	var m module
	if err := json.Unmarshal(out, &m); err != nil {
		return module{}, fmt.Errorf("reading go list -m for %s: %w", path, err)
	}
	if m.Dir == "" || !isDir(m.Dir) {
		return m, fmt.Errorf("module %s %s is not in the Go module cache: %s", path, m.Version, hint)
	}
	return m, nil
}

// installCRDs installs the CRDs at paths and waits until the API server
// serves them.
func installCRDs(cfg *rest.Config, paths []string) error {
	_, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		Paths: paths, ErrorIfPathMissing: true, MaxTime: crdInstallTimeout,
	})
	return err
}
