// Command bundle writes the OLM bundle of tagsync into bundle/ (make
// bundle): manifests/ with the ClusterServiceVersion and the CRDs it owns,
// metadata/annotations.yaml, and bundle.Dockerfile, the bundle image's
// build file with the same labels.
//
// The bundle runs what fits an OpenShift cluster: the metadata controller
// and the OpenShift adapter (tags from the cluster's Infrastructure onto its
// Azure or AWS resources). The CSV's Deployment and RBAC are the Helm
// chart's own rendering for those controllers (bin/helm template with
// bundleValues), so the bundle and the chart cannot drift apart; the test
// in this package regenerates the bundle and fails when bundle/ differs,
// and validates it with operator-framework's validation library
// (github.com/operator-framework/api): the default bundle validators,
// OperatorHub and the community operators' checks.
//
// It is a program under hack/, not a tagsync subcommand: packaging for one
// distribution channel has no place in the binary users run.
//
// Usage (from the repository root):
//
//	go run ./hack/bundle -helm bin/helm [-image ghcr.io/tagsync/tagsync] [-digest sha256:...] [-out bundle]
//
// Without -digest the CSV names the image by PlaceholderDigest: set it to
// the released image's digest (make bundle IMAGE_DIGEST=sha256:...) before
// publishing the bundle.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	var o options
	flag.StringVar(&o.root, "root", ".", "the repository's root")
	flag.StringVar(&o.helm, "helm", "bin/helm", "the helm binary that renders the chart")
	flag.StringVar(&o.image, "image", DefaultImage, "the image repository of the operator")
	flag.StringVar(&o.digest, "digest", "", "the image's digest, sha256:<64 hex> (empty: "+PlaceholderDigest+", a placeholder to replace before publishing)")
	flag.StringVar(&o.version, "version", "", "the bundle's version (empty: the chart's appVersion)")
	out := flag.String("out", "bundle", "the bundle directory, written afresh (relative to -root unless absolute)")
	flag.Parse()
	files, err := generate(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
	dir := *out
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(o.root, dir)
	}
	if err := write(dir, files); err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
	fmt.Printf(">> wrote the OLM bundle into %s (%d files)\n", *out, len(files))
}

// write replaces dir's manifests/ and metadata/ with files (paths relative
// to dir).
func write(dir string, files map[string][]byte) error {
	for _, sub := range []string{"manifests", "metadata"} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			return err
		}
	}
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
