package main

import (
	"encoding/json"
	"flag"
	"os"
	"time"
)

// releasePlan is what `release plan` prints: the version every artifact of
// a release carries and the names `release image` and `release dist` write,
// computed by the functions those commands use, without building anything.
type releasePlan struct {
	// Version is the release version without its v (the binary's version,
	// the image tag, the chart's version and appVersion).
	Version string `json:"version"`
	// Tag is the git tag, with its v (the krew manifest's version).
	Tag    string `json:"tag"`
	Commit string `json:"commit"`
	// Date is the commit time, every timestamp of the outputs.
	Date string `json:"date"`
	// LDFlags stamp the binaries: `tagsync version` prints what they set.
	LDFlags string    `json:"ldflags"`
	Image   planImage `json:"image"`
	Chart   planChart `json:"chart"`
	Krew    planKrew  `json:"krew"`
	// Archives are the archive names of the dist platforms.
	Archives []string `json:"archives"`
}

type planImage struct {
	Ref       string   `json:"ref"`
	Platforms []string `json:"platforms"`
	// Annotations are the OCI annotations of the index and every image.
	Annotations map[string]string `json:"annotations"`
}

type planChart struct {
	Version    string `json:"version"`
	AppVersion string `json:"appVersion"`
	Package    string `json:"package"`
}

type planKrew struct {
	Version string            `json:"version"`
	URIs    map[string]string `json:"uris"`
}

func runPlan(args []string) error {
	var b build
	fs := flag.NewFlagSet("plan", flag.ExitOnError)
	platforms := commonFlags(fs, &b, distPlatforms)
	imagePlats := fs.String("image-platforms", imagePlatforms, "comma-separated os/arch list of the image index")
	if err := b.parse(fs, args, platforms); err != nil {
		return err
	}
	ips, err := parsePlatforms(*imagePlats)
	if err != nil {
		return err
	}
	plan := releasePlan{Version: b.version, Tag: b.tag(), Commit: b.commit, Date: b.date().Format(time.RFC3339),
		LDFlags: b.ldflags(),
		Image:   planImage{Ref: b.imageRef(), Annotations: b.annotations()},
		Chart:   planChart{Version: b.version, AppVersion: b.version, Package: b.chartPackage()},
		Krew:    planKrew{Version: b.tag(), URIs: map[string]string{}}}
	for _, p := range ips {
		plan.Image.Platforms = append(plan.Image.Platforms, p.String())
	}
	for _, p := range b.platforms {
		plan.Archives = append(plan.Archives, archiveName(p))
		plan.Krew.URIs[p.String()] = b.archiveURL(p)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(plan)
}
