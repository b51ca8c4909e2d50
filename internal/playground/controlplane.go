package playground

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tagsync/tagsync/internal/scheme"
)

// controlPlane is a real kube-apiserver and etcd started by envtest (each in
// its own process group, so a Ctrl-C reaches only tagsync, which stops them
// in order) with tagsync's CRDs installed.
type controlPlane struct {
	env        *envtest.Environment
	config     *rest.Config
	client     client.Client
	kubeconfig string // file path
	kubectl    string // kubectl beside kube-apiserver, when present
}

// startControlPlane starts kube-apiserver and etcd from o.AssetsDir (or
// bin/k8s) and installs the CRDs of o.RepoDir; the kubeconfig is written
// into dir.
func startControlPlane(o Options, dir string) (*controlPlane, error) {
	root, err := repoDir(o.RepoDir)
	if err != nil {
		return nil, err
	}
	assets, err := assetsDir(o.AssetsDir, root)
	if err != nil {
		return nil, err
	}
	sch := scheme.New()
	env := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing:    true,
		Scheme:                   sch,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	cp := &controlPlane{env: env, config: cfg}
	cp.config.UserAgent = "tagsync-demo"
	if cp.client, err = client.New(cfg, client.Options{Scheme: sch}); err != nil {
		_ = cp.stop()
		return nil, fmt.Errorf("building a Kubernetes client: %w", err)
	}
	cp.kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(cp.kubeconfig, env.KubeConfig, 0o600); err != nil {
		_ = cp.stop()
		return nil, fmt.Errorf("writing the kubeconfig: %w", err)
	}
	if k := filepath.Join(assets, "kubectl"); isFile(k) {
		cp.kubectl = k
	}
	return cp, nil
}

// stop stops kube-apiserver and etcd and removes envtest's files.
func (cp *controlPlane) stop() error {
	if cp == nil || cp.env == nil {
		return nil
	}
	env := cp.env
	cp.env = nil
	if err := env.Stop(); err != nil {
		return fmt.Errorf("stopping kube-apiserver and etcd: %w", err)
	}
	return nil
}

// assetsDir returns the directory holding kube-apiserver and etcd: dir when
// given, else $KUBEBUILDER_ASSETS, else bin/k8s in the repository. It errors
// when a binary is missing, saying how to build them.
func assetsDir(dir, root string) (string, error) {
	if dir == "" {
		dir = os.Getenv("KUBEBUILDER_ASSETS")
	}
	if dir == "" {
		dir = filepath.Join(root, "bin", "k8s")
	}
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if !isFile(filepath.Join(dir, name)) {
			return "", fmt.Errorf("the demo needs %s in %s: run `make tools` (or `make demo`, which builds it; "+
				"the first build takes about 6 minutes) in the tagsync repository", name, dir)
		}
	}
	return dir, nil
}

// repoDir returns dir when given, else the tagsync repository above the
// working directory or, failing that, above the executable (bin/tagsync).
func repoDir(dir string) (string, error) {
	if dir != "" {
		if !isRepo(dir) {
			return "", fmt.Errorf("%s is not the tagsync repository (no config/crd/bases beside cmd/tagsync)", dir)
		}
		return dir, nil
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, start := range starts {
		for d := start; ; d = filepath.Dir(d) {
			if isRepo(d) {
				return d, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", errors.New("cannot find the tagsync repository (for its CRDs in config/crd/bases): " +
		"run the demo from a checkout (`make demo`), or pass --repo")
}

func isRepo(d string) bool {
	return isFile(filepath.Join(d, "go.mod")) && isDir(filepath.Join(d, "cmd", "tagsync")) &&
		isDir(filepath.Join(d, "config", "crd", "bases"))
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
