// Package controlplane starts a real Kubernetes control plane — kube-apiserver
// and etcd built from Go modules into bin/k8s by `make tools` — through
// controller-runtime's envtest, with tagsync's CRDs installed. The test
// harness (internal/testenv), the benchmark and `tagsync demo` all start
// their control planes here.
package controlplane

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tagsync/tagsync/internal/scheme"
)

// Options say where things are.
type Options struct {
	// RepoDir is the tagsync repository: its config/crd/bases are installed.
	RepoDir string
	// WithoutTagsyncCRDs starts the control plane without tagsync's CRDs
	// (only ExtraCRDDirs), for tests that install them themselves, such
	// as a Helm chart's install and upgrade.
	WithoutTagsyncCRDs bool
	// AssetsDir holds kube-apiserver and etcd; empty means
	// $KUBEBUILDER_ASSETS, else RepoDir/bin/k8s.
	AssetsDir string
	// ExtraCRDDirs are more CRD files or directories to install (other
	// projects' CRDs), relative to RepoDir or absolute.
	ExtraCRDDirs []string
	// StartTimeout bounds the start; 0 means a minute.
	StartTimeout time.Duration
	// MissingHint ends the error for missing binaries, saying how to get
	// them (e.g. "run `make tools`").
	MissingHint string
}

// ControlPlane is a running kube-apiserver and etcd.
type ControlPlane struct {
	// Config reaches the API server as a cluster admin.
	Config *rest.Config
	// Client is a client for Config with Scheme.
	Client client.Client
	// Scheme knows the built-in types and tagsync's API.
	Scheme *runtime.Scheme
	// KubeConfig is a kubeconfig file's content for Config.
	KubeConfig []byte
	// AssetsDir is where kube-apiserver and etcd were found.
	AssetsDir string

	env *envtest.Environment
}

// serviceRange is the test clusters' Service IP range: 65,534 cluster IPs.
const serviceRange = "10.0.0.0/16"

// Start starts a control plane; the caller must Stop it. On error nothing
// is left running.
func Start(o Options) (*ControlPlane, error) {
	assets, err := AssetsDir(o.AssetsDir, o.RepoDir, o.MissingHint)
	if err != nil {
		return nil, err
	}
	crds, err := crdPaths(o)
	if err != nil {
		return nil, err
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = time.Minute
	}
	sch := scheme.New()
	env := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        crds,
		ErrorIfCRDPathMissing:    true,
		Scheme:                   sch,
		ControlPlaneStartTimeout: o.StartTimeout,
		ControlPlaneStopTimeout:  time.Minute,
	}
	// envtest's default Service range is a /24 (254 cluster IPs): too few
	// for the benchmarks' 500 Services. A real cluster's is a /12
	// (kubeadm's 10.96.0.0/12); a /16 keeps the test clusters small.
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", serviceRange)
	cfg, err := env.Start()
	if err != nil {
		// Start leaves what it started running when a later step (a CRD
		// that does not install) fails.
		_ = env.Stop()
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: sch})
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("building a Kubernetes client: %w", err)
	}
	return &ControlPlane{Config: cfg, Client: c, Scheme: sch, KubeConfig: env.KubeConfig, AssetsDir: assets, env: env}, nil
}

// Stop stops kube-apiserver and etcd and removes their files; a second call
// does nothing.
func (cp *ControlPlane) Stop() error {
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

// AssetsDir returns the directory holding kube-apiserver and etcd: dir when
// given, else $KUBEBUILDER_ASSETS, else bin/k8s in the repository root. It
// errors when a binary is missing, ending with hint.
func AssetsDir(dir, root, hint string) (string, error) {
	if dir == "" {
		dir = os.Getenv("KUBEBUILDER_ASSETS")
	}
	if dir == "" {
		dir = filepath.Join(root, "bin", "k8s")
	}
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.IsDir() {
			return "", fmt.Errorf("the control plane is missing %s in %s: %s", name, dir, hint)
		}
	}
	return dir, nil
}

// crdPaths are tagsync's CRDs (unless WithoutTagsyncCRDs) and the extra
// ones, checked to exist.
func crdPaths(o Options) ([]string, error) {
	if o.RepoDir == "" {
		return nil, errors.New("controlplane: no repository directory to install tagsync's CRDs from")
	}
	var paths []string
	if !o.WithoutTagsyncCRDs {
		paths = append(paths, filepath.Join(o.RepoDir, "config", "crd", "bases"))
	}
	for _, dir := range o.ExtraCRDDirs {
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(o.RepoDir, dir)
		}
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("extra CRDs: %w (paths are relative to the repository root %s, or absolute)", err, o.RepoDir)
		}
		paths = append(paths, dir)
	}
	return paths, nil
}
