package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// chartDir is the chart in the repository.
const chartDir = "charts/tagsync"

// digestLine is the image.digest line of the chart's values.yaml.
var digestLine = regexp.MustCompile(`(?m)^(image:\n(?:[ \t]+.*\n|[ \t]*\n)*?[ \t]+digest: ).*$`)

// packageChart packages a copy of the chart with version and appVersion set
// to the release and image.digest set to the index digest of o.imageDir, so
// the release deploys exactly the image it was built with.
func (b *build) packageChart(o distOptions) (string, error) {
	digest, err := os.ReadFile(filepath.Join(o.imageDir, "digest"))
	if err != nil {
		return "", fmt.Errorf("the image digest (run `release image` first): %w", err)
	}
	tmp, err := os.MkdirTemp("", "tagsync-chart-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	chart := filepath.Join(tmp, "tagsync")
	if err := os.CopyFS(chart, os.DirFS(filepath.Join(b.root, chartDir))); err != nil {
		return "", err
	}
	if err := pinImageDigest(filepath.Join(chart, "values.yaml"), strings.TrimSpace(string(digest))); err != nil {
		return "", err
	}
	out, err := filepath.Abs(o.out)
	if err != nil {
		return "", err
	}
	helm := o.helm
	if !filepath.IsAbs(helm) {
		helm = filepath.Join(b.root, helm)
	}
	cmd := exec.Command(helm, "package", chart,
		"--version", b.version, "--app-version", b.version, "--destination", out)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("helm package: %w", err)
	}
	return filepath.Join(out, b.chartPackage()), nil
}

// pinImageDigest sets image.digest in the values file (keeping its comments
// and layout) and checks the result parses to that digest.
func pinImageDigest(values, digest string) error {
	raw, err := os.ReadFile(values)
	if err != nil {
		return err
	}
	if !digestLine.Match(raw) {
		return fmt.Errorf("%s: no image.digest line to pin", values)
	}
	pinned := digestLine.ReplaceAll(raw, []byte(`${1}"`+digest+`"`))
	var parsed struct {
		Image struct {
			Digest string `yaml:"digest"`
		} `yaml:"image"`
	}
	if err := yaml.Unmarshal(pinned, &parsed); err != nil || parsed.Image.Digest != digest {
		return fmt.Errorf("%s: pinning image.digest gave %q (%v)", values, parsed.Image.Digest, err)
	}
	return os.WriteFile(values, pinned, 0o644)
}
