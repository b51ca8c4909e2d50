package armsim

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ARM error codes for tag rule violations. InvalidTagValueLength is ARM's
// observed code; the others follow its naming (see docs/armsim.md).
const (
	CodeInvalidTagNameCharacters = "InvalidTagNameCharacters"
	CodeInvalidTagNameLength     = "InvalidTagNameLength"
	CodeInvalidTagValueLength    = "InvalidTagValueLength"
	CodeInvalidTagName           = "InvalidTagName"
	CodeTooManyTags              = "TooManyTags"
)

// Tag limits.
const (
	// MaxTags is the number of tags a resource may carry.
	MaxTags = 50
	// MaxTagsSmall is the limit of the types listed in SmallTagLimitTypes.
	MaxTagsSmall = 15
	// MaxTagNameLength is the longest tag name, in characters.
	MaxTagNameLength = 512
	// MaxStorageTagNameLength is the longest tag name on a storage account.
	MaxStorageTagNameLength = 128
	// MaxTagValueLength is the longest tag value, in characters.
	MaxTagValueLength = 256
)

// forbiddenTagNameChars may not appear in tag names.
const forbiddenTagNameChars = `<>%&\?/`

// reservedTagPrefixes may not start a tag name written by a client.
var reservedTagPrefixes = []string{"microsoft", "azure", "windows"}

// SmallTagLimitTypes are the resource types (lower-case) that carry at most
// MaxTagsSmall tags: Azure Automation, Azure CDN, public DNS zones and
// private DNS zones with their virtual network links. Treat it as
// read-only.
var SmallTagLimitTypes = []string{
	"microsoft.automation/automationaccounts",
	"microsoft.cdn/profiles",
	"microsoft.cdn/profiles/endpoints",
	"microsoft.network/dnszones",
	"microsoft.network/privatednszones",
	"microsoft.network/privatednszones/virtualnetworklinks",
}

// TagLimit returns the maximum number of tags on a resource of type typ
// (any casing): MaxTagsSmall for SmallTagLimitTypes, else MaxTags.
func TagLimit(typ string) int {
	for _, t := range SmallTagLimitTypes {
		if strings.EqualFold(typ, t) {
			return MaxTagsSmall
		}
	}
	return MaxTags
}

// TagNameLimit returns the longest tag name on a resource of type typ (any
// casing): MaxStorageTagNameLength for storage accounts, else
// MaxTagNameLength.
func TagNameLimit(typ string) int {
	if strings.EqualFold(typ, TypeStorageAccount) {
		return MaxStorageTagNameLength
	}
	return MaxTagNameLength
}

// ValidateTags checks a complete tag set for a resource of type typ against
// ARM's rules, as if every tag were newly written. It returns nil or an
// *Error with ARM's code and message.
func ValidateTags(typ string, tags map[string]string) error {
	if err := checkWrite(typ, nil, tagSetFrom(tags), tags); err != nil {
		return err
	}
	return nil
}

// checkWrite validates a write: written are the name/value pairs the client
// sent, result the tag set the resource would end with. Pairs already
// present unchanged in existing are not re-checked (a platform-set
// reserved tag does not block edits of other tags).
func checkWrite(typ string, existing, result tagSet, written map[string]string) *Error {
	if err := checkFoldDuplicates(written); err != nil {
		return err
	}
	for _, name := range sortedKeys(written) {
		value := written[name]
		if old, ok := existing.get(name); ok && old == value {
			if k, _ := existing.key(name); k == name {
				continue
			}
		}
		if err := checkTag(typ, name, value); err != nil {
			return err
		}
	}
	if limit := TagLimit(typ); len(result) > limit {
		return errBadRequest(CodeTooManyTags,
			"The request would leave %d tags on the resource; at most %d tags are allowed on a resource of type '%s'.",
			len(result), limit, typ)
	}
	return nil
}

// checkTag validates one name/value pair.
func checkTag(typ, name, value string) *Error {
	if strings.TrimSpace(name) == "" {
		return errBadRequest(CodeInvalidTagName, "Tag names cannot be empty or whitespace.")
	}
	if strings.ContainsAny(name, forbiddenTagNameChars) || strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return errBadRequest(CodeInvalidTagNameCharacters,
			"The tag names '%s' have reserved characters '<,>,%%,&,\\,?,/' or control characters.", name)
	}
	if e := checkTypeName(typ, name); e != nil {
		return e
	}
	if limit := TagNameLimit(typ); utf8.RuneCountInString(name) > limit {
		return errBadRequest(CodeInvalidTagNameLength,
			"Tag name too large. Following tag name '%s' exceeded the maximum length. Maximum allowed length for tag name - '%d' characters.",
			name, limit)
	}
	if utf8.RuneCountInString(value) > MaxTagValueLength {
		return errBadRequest(CodeInvalidTagValueLength,
			"Tag value too large.  Following tag value '%s' exceeded the maximum length. Maximum allowed length for tag value - '%d' characters.",
			value, MaxTagValueLength)
	}
	lower := strings.ToLower(name)
	for _, p := range reservedTagPrefixes {
		if strings.HasPrefix(lower, p) {
			return errBadRequest(CodeInvalidTagName,
				"The tag name '%s' is invalid: the prefixes 'microsoft', 'azure' and 'windows' are reserved for Azure use.", name)
		}
	}
	return nil
}

// checkFoldDuplicates rejects two names in one request that differ only in case.
func checkFoldDuplicates(written map[string]string) *Error {
	if len(written) < 2 {
		return nil
	}
	seen := make(map[string]string, len(written))
	for _, name := range sortedKeys(written) {
		f := strings.ToLower(name)
		if other, ok := seen[f]; ok {
			return errBadRequest(CodeInvalidTagName,
				"The tag names '%s' and '%s' differ only in case; tag names are case-insensitive.", other, name)
		}
		seen[f] = name
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// typeNameRules are the types that refuse more in tag names than ARM does
// (Microsoft's "Use tags to organize your Azure resources", "Limitations"):
// the characters, and whether a leading digit is refused.
var typeNameRules = map[string]struct {
	forbidden      string
	noLeadingDigit bool
}{
	"microsoft.network/dnszones":               {" ()", true},
	"microsoft.network/privatednszones":        {" ()", true},
	"microsoft.network/trafficmanagerprofiles": {" #:", true},
	"microsoft.network/frontdoors":             {"#:", false},
}

// checkTypeName applies typ's own tag name rules.
func checkTypeName(typ, name string) *Error {
	rule, ok := typeNameRules[strings.ToLower(typ)]
	if !ok {
		return nil
	}
	first, _ := utf8.DecodeRuneInString(name)
	if strings.ContainsAny(name, rule.forbidden) || (rule.noLeadingDigit && unicode.IsDigit(first)) {
		return errBadRequest(CodeInvalidTagNameCharacters,
			"The tag name '%s' is not supported on resources of type '%s': it may not contain %q%s.",
			name, typ, rule.forbidden, map[bool]string{true: " or start with a digit"}[rule.noLeadingDigit])
	}
	return nil
}
