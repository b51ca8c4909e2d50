package azure

import (
	"sort"
	"strings"

	"github.com/tagsync/tagsync/internal/tags"
)

// Tag limits of the resource types that differ from ARM's defaults.
const (
	// MaxTagsSmall is the tag limit of the types SmallTagLimitTypes lists.
	MaxTagsSmall = 15
)

// smallTagLimitTypes are the lower-cased resource types that carry at most
// MaxTagsSmall tags: Azure Automation, Azure CDN, public DNS zones, and
// private DNS zones with their virtual network links.
var smallTagLimitTypes = map[string]bool{
	"microsoft.automation/automationaccounts":               true,
	"microsoft.cdn/profiles":                                true,
	"microsoft.cdn/profiles/endpoints":                      true,
	"microsoft.network/dnszones":                            true,
	"microsoft.network/privatednszones":                     true,
	"microsoft.network/privatednszones/virtualnetworklinks": true,
}

// typeStorageAccount is the type of storage accounts, whose tag names are
// limited to 128 characters.
const typeStorageAccount = "microsoft.storage/storageaccounts"

// SmallTagLimitTypes returns the resource types (lower-case, as Resource
// Graph spells them) that carry at most MaxTagsSmall tags instead of 50,
// sorted.
func SmallTagLimitTypes() []string {
	out := make([]string, 0, len(smallTagLimitTypes))
	for t := range smallTagLimitTypes {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// RulesFor returns the tag rules of a resource of type resourceType
// ("Namespace/type[/subtype]", in any casing, as ARM or Resource Graph
// spells it): StorageTagRules for storage accounts (names of at
// most 128 characters), TagRules with MaxTags 15 for the types
// SmallTagLimitTypes lists (DNS zones, private DNS zones and their links,
// CDN profiles and endpoints, Automation accounts), TagRules
// otherwise (resource groups included); with the name rules of DNS zones,
// Traffic Manager profiles and Front Doors (nameRules).
func RulesFor(resourceType string) tags.Rules {
	t := strings.ToLower(strings.Trim(resourceType, "/"))
	r := TagRules
	switch {
	case t == typeStorageAccount:
		return StorageTagRules
	case smallTagLimitTypes[t]:
		r.MaxTags = MaxTagsSmall
	}
	if n, ok := nameRules[t]; ok {
		r.ForbiddenNameChars += n.forbidden
		r.NoLeadingDigit = n.noLeadingDigit
	}
	return r
}

// nameRule is what a resource type refuses in tag names beyond ARM's rules.
type nameRule struct {
	forbidden      string
	noLeadingDigit bool
}

// nameRules are the types whose tag names have rules of their own
// (Microsoft's "Use tags to organize your Azure resources", "Limitations"):
// DNS zones refuse spaces, parentheses and a leading digit; Traffic Manager
// spaces, '#', ':' and a leading digit; Front Door '#' and ':'.
var nameRules = map[string]nameRule{
	"microsoft.network/dnszones":               {forbidden: " ()", noLeadingDigit: true},
	"microsoft.network/privatednszones":        {forbidden: " ()", noLeadingDigit: true},
	"microsoft.network/trafficmanagerprofiles": {forbidden: " #:", noLeadingDigit: true},
	"microsoft.network/frontdoors":             {forbidden: "#:"},
}
