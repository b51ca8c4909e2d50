package azure

import (
	"testing"

	"github.com/tagsync/tagsync/internal/tags"
)

// TestPlatformKeysDocumented: every platform key is a valid pattern and
// says who owns it, why, and where that is documented.
func TestPlatformKeysDocumented(t *testing.T) {
	if len(PlatformKeys) < 2 {
		t.Fatalf("platform keys %v", PlatformKeys)
	}
	for _, k := range PlatformKeys {
		if err := (tags.Filter{Platform: []string{k.Pattern}}).Validate(); err != nil {
			t.Errorf("%q: %v", k.Pattern, err)
		}
		if k.Owner == "" || k.Why == "" || k.Source == "" {
			t.Errorf("%q: owner, why and source must all be given: %+v", k.Pattern, k)
		}
	}
}
