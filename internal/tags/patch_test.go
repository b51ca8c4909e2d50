package tags

import (
	"reflect"
	"testing"
)

func TestPatchApplySpelled(t *testing.T) {
	cur := Set{"Env": "a", "Old": "x", "keep": "k"}
	tests := []struct {
		name  string
		c     NameCase
		sp    Spelling
		patch Patch
		in    Set
		want  Set
	}{
		{"patch spelling renames", CaseInsensitive, PatchSpelling,
			Patch{Set: Set{"env": "b"}, Delete: []string{"OLD"}}, cur, Set{"env": "b", "keep": "k"}},
		{"keep spelling changes only the value", CaseInsensitive, KeepSpelling,
			Patch{Set: Set{"env": "b"}, Delete: []string{"OLD"}}, cur, Set{"Env": "b", "keep": "k"}},
		{"deleted and set keeps the spelling", CaseInsensitive, KeepSpelling,
			Patch{Set: Set{"ENV": "b"}, Delete: []string{"env"}}, cur, Set{"Env": "b", "Old": "x", "keep": "k"}},
		{"deleted and set renames", CaseInsensitive, PatchSpelling,
			Patch{Set: Set{"ENV": "b"}, Delete: []string{"env"}}, cur, Set{"ENV": "b", "Old": "x", "keep": "k"}},
		{"a new name takes the patch's spelling", CaseInsensitive, KeepSpelling,
			Patch{Set: Set{"New": "n"}}, cur, Set{"Env": "a", "Old": "x", "keep": "k", "New": "n"}},
		{"case-sensitive: another spelling is another tag", CaseSensitive, KeepSpelling,
			Patch{Set: Set{"env": "b"}, Delete: []string{"old"}}, cur, Set{"Env": "a", "env": "b", "Old": "x", "keep": "k"}},
		{"case-sensitive: both spellings agree", CaseSensitive, PatchSpelling,
			Patch{Set: Set{"env": "b"}, Delete: []string{"Old"}}, cur, Set{"Env": "a", "env": "b", "keep": "k"}},
		{"nil input", CaseInsensitive, KeepSpelling, Patch{}, nil, Set{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.in.Clone()
			got := tt.patch.ApplySpelled(tt.c, tt.in, tt.sp)
			if got == nil || !reflect.DeepEqual(map[string]string(got), map[string]string(tt.want)) {
				t.Errorf("ApplySpelled = %v, want %v", got, tt.want)
			}
			if !reflect.DeepEqual(tt.in, before) {
				t.Errorf("ApplySpelled changed its input: %v, was %v", tt.in, before)
			}
			if tt.sp == PatchSpelling {
				if apply := tt.patch.Apply(tt.c, tt.in); !reflect.DeepEqual(apply, got) {
					t.Errorf("Apply = %v, ApplySpelled(PatchSpelling) = %v", apply, got)
				}
			}
		})
	}
}
