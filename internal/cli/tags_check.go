package cli

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/tags"
)

// Limits of the provider metadata schema (api/v1alpha1).
const (
	maxRequestTags   = 50
	maxIgnoreTags    = 50
	maxAzureNameLen  = 512
	maxAWSKeyLen     = 128
	maxTagValueLen   = 256
	azureForbiddenCh = `<>%&?/;\`
)

// awsCharset is the AWSMetadata CEL rule's pattern for keys and values.
var awsCharset = regexp.MustCompile(`^[\p{L}\p{Z}\p{N}_.:/=+@-]*$`)

// checkSpec returns every reason the API server's admission (schema and
// CEL rules of api/v1alpha1) or the controller (the cloud's tag rules: the
// Approved condition) would refuse the spec s of kind k.
func checkSpec(k providerKind, s providerSpec) []string {
	problems := k.admission(s)
	set := tags.Set(*s.tags)
	if *s.opcode == v1alpha1.OpcodeDelete {
		set = tags.Set{}
		for n := range *s.tags {
			set[n] = ""
		}
	}
	if err := k.rules.ValidateSet(set); err != nil {
		admitted := len(problems)
		for _, p := range problemsOf(err) {
			if !mentions(problems[:admitted], p.Tag) {
				problems = append(problems, p.Message+" (the controller would apply nothing: Approved=False)")
			}
		}
	}
	return problems
}

// mentions reports whether a problem already names tag (quoted); a tag
// admission refuses is not reported twice.
func mentions(problems []string, tag string) bool {
	return tag != "" && slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, strconv.Quote(tag)) })
}

// azureAdmission mirrors the AzureMetadata schema and CEL rules on
// resourceTags and ignoreTags.
func azureAdmission(s providerSpec) []string {
	p := tagProblems(s, "Azure", "name", maxAzureNameLen, azureTagProblem)
	p = append(p, listLimits(s, maxAzureNameLen)...)
	for _, i := range *s.ignore {
		for k := range *s.tags {
			if asciiLower(k) == asciiLower(i) {
				p = append(p, fmt.Sprintf("tag %q is both in resourceTags and ignoreTags (Azure tag names ignore case): ignored tags are never written, so remove it from one of them", i))
			}
		}
	}
	return p
}

// azureTagProblem is what else the AzureMetadata schema refuses in a tag's
// name; "" when nothing.
func azureTagProblem(k, _ string) string {
	switch {
	case strings.ContainsAny(k, azureForbiddenCh):
		return fmt.Sprintf(`tag name %q: Azure tag names may not contain any of < > %% & \ ? / ;`, k)
	case hasASCIIPrefix(k, "microsoft", "azure", "windows"):
		return fmt.Sprintf("tag name %q: Azure reserves tag names starting with microsoft, azure or windows (in any case)", k)
	}
	return ""
}

// awsAdmission mirrors the AWSMetadata schema and CEL rules on
// resourceTags and ignoreTags.
func awsAdmission(s providerSpec) []string {
	p := tagProblems(s, "AWS", "key", maxAWSKeyLen, awsTagProblem)
	p = append(p, listLimits(s, maxAWSKeyLen)...)
	for _, i := range *s.ignore {
		if _, both := (*s.tags)[i]; both {
			p = append(p, fmt.Sprintf("tag %q is both in resourceTags and ignoreTags: ignored tags are never written, so remove it from one of them", i))
		}
	}
	return p
}

// awsTagProblem is what else the AWSMetadata schema refuses in a tag's key
// or value; "" when nothing.
func awsTagProblem(k, v string) string {
	switch {
	case !awsCharset.MatchString(k) || !awsCharset.MatchString(v):
		return fmt.Sprintf("tag %q: AWS tag keys and values may only contain letters, digits, spaces and + - = . _ : / @", k)
	case hasASCIIPrefix(k, "aws:"):
		return fmt.Sprintf("tag key %q: AWS reserves tag keys starting with aws: (in any case)", k)
	}
	return ""
}

// tagProblems checks each requested tag, in name order: an empty or too
// long name (noun: "name" or "key", of at most maxName characters), else
// the cloud's own check; and the value's length.
func tagProblems(s providerSpec, cloud, noun string, maxName int, check func(k, v string) string) []string {
	var p []string
	for _, k := range sortedKeys(*s.tags) {
		v := (*s.tags)[k]
		var msg string
		switch {
		case k == "":
			msg = fmt.Sprintf("tag %ss may not be empty", noun)
		case utf8.RuneCountInString(k) > maxName:
			msg = fmt.Sprintf("tag %s %q: %s tag %ss must be at most %d characters long", noun, k, cloud, noun, maxName)
		default:
			msg = check(k, v)
		}
		if msg != "" {
			p = append(p, msg)
		}
		if utf8.RuneCountInString(v) > maxTagValueLen {
			p = append(p, fmt.Sprintf("tag %q: %s tag values must be at most %d characters long", k, cloud, maxTagValueLen))
		}
	}
	return p
}

// listLimits checks the sizes the schema bounds: at most 50 tags, at most
// 50 ignored names of 1 to maxName characters.
func listLimits(s providerSpec, maxName int) []string {
	var p []string
	if n := len(*s.tags); n > maxRequestTags {
		p = append(p, fmt.Sprintf("resourceTags: %d tags; at most %d", n, maxRequestTags))
	}
	if n := len(*s.ignore); n > maxIgnoreTags {
		p = append(p, fmt.Sprintf("ignoreTags: %d names; at most %d", n, maxIgnoreTags))
	}
	for _, i := range *s.ignore {
		if n := utf8.RuneCountInString(i); n < 1 || n > maxName {
			p = append(p, fmt.Sprintf("ignoreTags: %q must be 1 to %d characters long", i, maxName))
		}
	}
	return p
}

// hasASCIIPrefix reports whether s, lower-cased as CEL's lowerAscii does
// (ASCII letters only), starts with one of prefixes.
func hasASCIIPrefix(s string, prefixes ...string) bool {
	l := asciiLower(s)
	for _, p := range prefixes {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

// asciiLower lower-cases the ASCII letters of s only, as CEL's lowerAscii.
func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + ('a' - 'A')
		}
		return r
	}, s)
}
