package openshift

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// AzureUserTagsPath is the install-config field ValidateUserTags checks.
const AzureUserTagsPath = "platform.azure.userTags"

// MaxAzureUserTags is the most userTags an Azure install-config may hold.
const MaxAzureUserTags = 10

// The installer's patterns for Azure userTags, copied literally from
// openshift/installer pkg/types/azure/validation/platform.go (tagKeyRegex,
// tagValueRegex, tagKeyPrefixRegex) and compiled with Go's regexp, as there.
var (
	azureKeyPattern = regexp.MustCompile(`^[a-zA-Z]([0-9A-Za-z_.-]{0,126}[0-9A-Za-z_])?$`)
	// In the class below "+-@" is the range '+'..'@' (0x2B-0x40), not three
	// characters: it admits , - . / 0-9 : ; < = > ? @ as well, so the value
	// "a<b" is valid. The installer's pattern is kept as it is, surprise
	// included, because the point is to agree with the installer.
	azureValuePattern = regexp.MustCompile(`^[0-9A-Za-z_.=+-@]{1,256}$`)
	// (?i) makes the whole alternation case-insensitive; "name$" refuses the
	// key name itself, the others are prefixes.
	azureRestrictedPattern = regexp.MustCompile(`^(?i)(name$|kubernetes\.io|openshift\.io|microsoft|azure|windows)`)
)

const azureRestrictedRule = "the key name and keys beginning with kubernetes.io, openshift.io, microsoft, azure or windows, in any case, are kept for the platform"

// ValidateUserTags checks tags as the OpenShift installer checks
// platform.azure.userTags (see the package documentation for the rules). It
// returns nil when the installer would accept them, or every problem at once,
// joined with errors.Join: first the problems of the whole map (too many
// tags, then keys differing only in case), then at most one per key, by key.
// Each problem is a *FieldError.
func ValidateUserTags(tags map[string]string) error {
	return validateTags(tags, AzureUserTagsPath, MaxAzureUserTags, duplicateKeys, validateAzureTag)
}

// validateAzureTag returns the first rule key=value breaks, in the
// installer's order: key pattern, value pattern, restricted key.
func validateAzureTag(key, value string) error {
	if !azureKeyPattern.MatchString(key) {
		return keyError(AzureUserTagsPath, ReasonInvalidKey, key, value,
			"key must begin with a letter, end with a letter, digit or '_', be at most 128 characters long "+
				"and contain only letters, digits, '_', '.' and '-'")
	}
	if !azureValuePattern.MatchString(value) {
		return keyError(AzureUserTagsPath, ReasonInvalidValue, key, value,
			"value must be 1 to 256 characters long and contain only letters, digits and _ + , - . / : ; < = > ? @")
	}
	if m := azureRestrictedPattern.FindStringSubmatch(key); m != nil {
		if strings.EqualFold(m[1], "name") {
			return keyError(AzureUserTagsPath, ReasonRestrictedKey, key, value, "key %q is restricted: %s", key, azureRestrictedRule)
		}
		return keyError(AzureUserTagsPath, ReasonRestrictedKey, key, value,
			"key begins with the restricted prefix %q: %s", m[1], azureRestrictedRule)
	}
	return nil
}

// duplicateKeys reports keys that are equal once passed through
// strings.ToTitle, the installer's comparison, in one error.
func duplicateKeys(tags map[string]string) error {
	groups := map[string][]string{}
	for k := range tags {
		t := strings.ToTitle(k)
		groups[t] = append(groups[t], k)
	}
	var folded, keys []string
	for t, g := range groups {
		if len(g) > 1 {
			folded = append(folded, t)
		}
	}
	if len(folded) == 0 {
		return nil
	}
	sort.Strings(folded)
	parts := make([]string, len(folded))
	for i, t := range folded {
		g := groups[t]
		sort.Strings(g)
		keys = append(keys, g...)
		quoted := make([]string, len(g))
		for j, k := range g {
			quoted[j] = fmt.Sprintf("%q", k)
		}
		parts[i] = fmt.Sprintf("%q matches %d keys: %s", t, len(g), strings.Join(quoted, ", "))
	}
	sort.Strings(keys)
	return &FieldError{
		Field:  AzureUserTagsPath,
		Reason: ReasonDuplicateKeys,
		Keys:   keys,
		Detail: "found duplicate tag keys: " + strings.Join(parts, "; ") + " (tag keys are case-insensitive; keep one spelling)",
	}
}
