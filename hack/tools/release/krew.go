package main

import (
	"fmt"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"
)

// writeKrewManifest fills the krew manifest template with the version, each
// platform's archive URL and its sha256 and writes it to o.out. A platform
// of the manifest without an archive is an error unless o.allowPartial.
func (b *build) writeKrewManifest(o distOptions, archives map[platform]string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(b.root, o.krew))
	if err != nil {
		return "", err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return "", fmt.Errorf("%s: %w", o.krew, err)
	}
	spec := mapValue(doc.Content[0], "spec")
	setScalar(spec, "version", b.tag())
	platforms := mapValue(spec, "platforms")
	if platforms == nil {
		return "", fmt.Errorf("%s: no spec.platforms", o.krew)
	}
	var built []*yaml.Node
	for _, entry := range platforms.Content {
		ok, err := b.fillKrewPlatform(entry, archives, o.allowPartial)
		if err != nil {
			return "", fmt.Errorf("%s: %w", o.krew, err)
		}
		if ok {
			built = append(built, entry)
		}
	}
	// A partial build lists only the platforms it built: a platform with
	// the template's zero sum would be an install that always fails.
	platforms.Content = built
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return "", err
	}
	path := filepath.Join(o.out, "tagsync.krew.yaml")
	return path, os.WriteFile(path, out, 0o644)
}

// fillKrewPlatform sets uri and sha256 of one spec.platforms entry from the
// archive its selector names; false for a platform not built (allowed only
// with allowPartial).
func (b *build) fillKrewPlatform(entry *yaml.Node, archives map[platform]string, allowPartial bool) (bool, error) {
	labels := mapValue(mapValue(entry, "selector"), "matchLabels")
	p := platform{scalar(labels, "os"), scalar(labels, "arch")}
	archive, ok := archives[p]
	if !ok {
		if allowPartial {
			return false, nil
		}
		return false, fmt.Errorf("platform %s has no archive: build it (-platforms)", p)
	}
	sum, err := sha256File(archive)
	if err != nil {
		return false, err
	}
	setScalar(entry, "uri", b.archiveURL(p))
	setScalar(entry, "sha256", sum)
	return true, nil
}

// mapValue is the value node of key in mapping node m, or nil.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// scalar is the string value of key in mapping node m ("" if absent).
func scalar(m *yaml.Node, key string) string {
	if v := mapValue(m, key); v != nil {
		return v.Value
	}
	return ""
}

// setScalar sets key of mapping node m to the string value (quoted, so a
// hex sum never reads as a number).
func setScalar(m *yaml.Node, key, value string) {
	if v := mapValue(m, key); v != nil {
		v.Kind, v.Tag, v.Value, v.Style = yaml.ScalarNode, "!!str", value, yaml.DoubleQuotedStyle
		return
	}
	m.Content = append(m.Content,
		&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key},
		&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value, Style: yaml.DoubleQuotedStyle})
}
