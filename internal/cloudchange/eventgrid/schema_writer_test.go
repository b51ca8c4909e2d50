package eventgrid

import (
	"testing"

	"github.com/tagsync/tagsync/internal/cloudchange"
)

// The writer of an ARM event, from its claims as Azure spells them.
func TestWriterOf(t *testing.T) {
	for name, c := range map[string]struct {
		claims map[string]any
		want   cloudchange.Writer
	}{
		"a person (v2 token)": {map[string]any{"idtyp": "user", "upn": "ana@example.com", "oid": "1"},
			cloudchange.Writer{ID: "ana@example.com", Person: true}},
		"a person (v1 token, long claim names)": {map[string]any{"http://schemas.xmlsoap.org/ws/2005/05/identity/claims/upn": "bo@example.com", "appid": "04b07795"},
			cloudchange.Writer{ID: "bo@example.com", Person: true}},
		"an application": {map[string]any{"idtyp": "app", "appid": "6dae42f8", "oid": "2"},
			cloudchange.Writer{ID: "6dae42f8"}},
		"a managed identity, no idtyp": {map[string]any{"appid": "7ab1", "http://schemas.microsoft.com/identity/claims/objectidentifier": "3"},
			cloudchange.Writer{ID: "7ab1"}},
		"no claims":               {nil, cloudchange.Writer{}},
		"a claim of another type": {map[string]any{"idtyp": []any{"user"}, "appid": "x"}, cloudchange.Writer{ID: "x"}},
	} {
		if got := writerOf(c.claims); got != c.want {
			t.Errorf("%s: %+v, want %+v", name, got, c.want)
		}
	}
}
