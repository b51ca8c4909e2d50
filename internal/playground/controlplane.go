package playground

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/internal/controlplane"
)

// controlPlane is a real kube-apiserver and etcd (internal/controlplane)
// with tagsync's CRDs installed, plus the files the demo hands out.
type controlPlane struct {
	*controlplane.ControlPlane
	config     *rest.Config
	client     client.Client
	kubeconfig string // file path
	kubectl    string // kubectl beside kube-apiserver, when present
	repo       string // the tagsync repository its CRDs came from
}

// startControlPlane starts kube-apiserver and etcd from o.AssetsDir (or
// bin/k8s) and installs the CRDs of o.RepoDir; the kubeconfig is written
// into dir.
func startControlPlane(o Options, dir string) (*controlPlane, error) {
	root, err := repoDir(o.RepoDir)
	if err != nil {
		return nil, err
	}
	started, err := controlplane.Start(controlplane.Options{
		RepoDir: root, AssetsDir: o.AssetsDir, StartTimeout: 2 * time.Minute,
		MissingHint: "run `make tools` (or `make demo`, which builds it; the first build takes about 5 minutes) in the tagsync repository",
	})
	if err != nil {
		return nil, err
	}
	cp := &controlPlane{ControlPlane: started, config: started.Config, client: started.Client, repo: root}
	cp.config.UserAgent = "tagsync-demo"
	cp.kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(cp.kubeconfig, started.KubeConfig, 0o600); err != nil {
		_ = cp.stop()
		return nil, fmt.Errorf("writing the kubeconfig: %w", err)
	}
	if k := filepath.Join(started.AssetsDir, "kubectl"); isFile(k) {
		cp.kubectl = k
	}
	return cp, nil
}

// stop stops kube-apiserver and etcd and removes their files.
func (cp *controlPlane) stop() error {
	if cp == nil {
		return nil
	}
	return cp.Stop()
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
