package main

import (
	"debug/buildinfo"
	"os"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// writeSBOM writes a CycloneDX JSON SBOM of bin to path: the binary (its
// SHA-256, platform and Go version) and the modules the Go toolchain
// recorded in it (what `go version -m` prints), with the commit time as its
// timestamp so it is reproducible too.
func (b *build) writeSBOM(path, bin string) error {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return err
	}
	sum, err := sha256File(bin)
	if err != nil {
		return err
	}
	main := cdx.Component{BOMRef: "pkg:golang/" + info.Main.Path + "@v" + b.version, Type: cdx.ComponentTypeApplication,
		Name: info.Main.Path, Version: "v" + b.version, PackageURL: "pkg:golang/" + info.Main.Path + "@v" + b.version,
		Hashes: &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: sum}}}
	props := []cdx.Property{{Name: "go.version", Value: info.GoVersion}, {Name: "vcs.revision", Value: b.commit}}
	for _, s := range info.Settings {
		if s.Key == "GOOS" || s.Key == "GOARCH" {
			props = append(props, cdx.Property{Name: "go." + s.Key, Value: s.Value})
		}
	}
	var deps []cdx.Component
	var refs []string
	for _, m := range info.Deps {
		if m.Replace != nil {
			m = m.Replace
		}
		purl := "pkg:golang/" + m.Path + "@" + m.Version
		deps = append(deps, cdx.Component{BOMRef: purl, Type: cdx.ComponentTypeLibrary, Name: m.Path,
			Version: m.Version, PackageURL: purl, Properties: moduleSum(m.Sum)})
		refs = append(refs, purl)
	}
	bom := cdx.NewBOM()
	bom.SerialNumber = ""
	bom.Metadata = &cdx.Metadata{Timestamp: b.date().Format(time.RFC3339), Component: &main, Properties: &props}
	bom.Components = &deps
	bom.Dependencies = &[]cdx.Dependency{{Ref: main.BOMRef, Dependencies: &refs}}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := cdx.NewBOMEncoder(f, cdx.BOMFileFormatJSON)
	enc.SetPretty(true)
	if err := enc.Encode(bom); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// moduleSum is the module's go.sum line hash (h1:, base64 of a SHA-256
// over its file tree, not of an artifact) as a property; nil when the
// binary records none.
func moduleSum(sum string) *[]cdx.Property {
	if sum == "" {
		return nil
	}
	return &[]cdx.Property{{Name: "go.sum", Value: sum}}
}
