package tags_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/tags"
)

func TestInSyncScope(t *testing.T) {
	prefixes := []string{"rack.example.com", "my-prefix.kubernetes.io"}
	cases := []struct {
		key  string
		want bool
	}{
		{"rack.example.com/row", true},
		{"rack.example.com/", true},
		{"rack.example.com/a/b", true},
		{"my-prefix.kubernetes.io/zone", true},
		{"a.rack.example.com/row", false},
		{"rack.example.com.evil/row", false},
		{"rack.example.co/row", false},
		{"Rack.example.com/row", false},
		{"rack.example.com", false},
		{"row", false},
		{"kubernetes.io/hostname", false},
		{"", false},
	}
	for _, c := range cases {
		if got := tags.InSyncScope(c.key, prefixes); got != c.want {
			t.Errorf("InSyncScope(%q) = %v, want %v", c.key, got, c.want)
		}
	}
	if tags.InSyncScope("rack.example.com/row", nil) {
		t.Error("a key is in the scope of no prefixes")
	}
}

func TestSyncLabels(t *testing.T) {
	p := []string{"r.io", "zone.example.com"}
	type m = map[string]string
	cases := []struct {
		name       string
		host, node m
		prefixes   []string
		set        m
		del        []string
	}{
		{name: "in sync", host: m{"r.io/rack": "a"}, node: m{"r.io/rack": "a"}, prefixes: p},
		{name: "nothing in scope", host: m{"x.io/a": "1"}, node: m{"y.io/b": "2", "kubernetes.io/hostname": "n"}, prefixes: p},
		{name: "added on the host", host: m{"r.io/rack": "a", "r.io/row": "3"}, node: m{"r.io/rack": "a"}, prefixes: p,
			set: m{"r.io/row": "3"}},
		{name: "changed on the host", host: m{"r.io/rack": "b"}, node: m{"r.io/rack": "a"}, prefixes: p,
			set: m{"r.io/rack": "b"}},
		{name: "removed from the host", host: m{}, node: m{"r.io/rack": "a", "zone.example.com/z": "1"}, prefixes: p,
			del: []string{"r.io/rack", "zone.example.com/z"}},
		{name: "added on the node is removed", host: m{"r.io/rack": "a"}, node: m{"r.io/rack": "a", "r.io/extra": "x"}, prefixes: p,
			del: []string{"r.io/extra"}},
		{name: "changed on the node is reverted", host: m{"r.io/rack": "a"}, node: m{"r.io/rack": "hacked"}, prefixes: p,
			set: m{"r.io/rack": "a"}},
		{name: "removed from the node is re-added", host: m{"r.io/rack": "a"}, node: nil, prefixes: p,
			set: m{"r.io/rack": "a"}},
		{name: "empty value is a value", host: m{"r.io/flag": ""}, node: m{}, prefixes: p, set: m{"r.io/flag": ""}},
		{name: "out of scope on both sides untouched",
			host:     m{"other.io/a": "1", "r.io/rack": "a", "plain": "x"},
			node:     m{"other.io/a": "2", "node-role.kubernetes.io/worker": "", "plain": "y", "sub.r.io/x": "1"},
			prefixes: p, set: m{"r.io/rack": "a"}},
		{name: "no prefixes: nothing", host: m{"r.io/rack": "a"}, node: m{"r.io/rack": "b"}},
		{name: "a removed prefix leaves its labels", host: m{"r.io/rack": "a"}, node: m{"r.io/rack": "old", "zone.example.com/z": "1"},
			prefixes: []string{"zone.example.com"}, del: []string{"zone.example.com/z"}},
		{name: "set and delete at once", host: m{"r.io/a": "1", "r.io/b": "2"}, node: m{"r.io/b": "x", "r.io/c": "3", "r.io/d": "4"}, prefixes: p,
			set: m{"r.io/a": "1", "r.io/b": "2"}, del: []string{"r.io/c", "r.io/d"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := tags.SyncLabels(c.host, c.node, c.prefixes)
			if !reflect.DeepEqual(got.Set, map[string]string(c.set)) || !slices.Equal(got.Delete, c.del) {
				t.Fatalf("SyncLabels = set %v delete %v, want set %v delete %v", got.Set, got.Delete, c.set, c.del)
			}
			if got.IsEmpty() != (len(c.set) == 0 && len(c.del) == 0) {
				t.Fatalf("IsEmpty() = %v", got.IsEmpty())
			}
			// Applying the change makes the next comparison empty, and
			// never touches a label out of scope.
			after := map[string]string{}
			for k, v := range c.node {
				after[k] = v
			}
			for k, v := range got.Set {
				after[k] = v
			}
			for _, k := range got.Delete {
				delete(after, k)
			}
			if again := tags.SyncLabels(c.host, after, c.prefixes); !again.IsEmpty() {
				t.Fatalf("after applying, SyncLabels = %+v, want nothing", again)
			}
			for k, v := range c.node {
				if !tags.InSyncScope(k, c.prefixes) && after[k] != v {
					t.Fatalf("out-of-scope label %s changed", k)
				}
			}
		})
	}
}

func TestParseSyncPrefixes(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		errs []string // fragments of the error; nil: valid
	}{
		{in: "my-prefix.foobar.io, my.thing", want: []string{"my-prefix.foobar.io", "my.thing"}},
		{in: "  my-prefix.foobar.io  ,my-prefix.kubernetes.io ", want: []string{"my-prefix.foobar.io", "my-prefix.kubernetes.io"}},
		{in: "a,,b, ,", want: []string{"a", "b"}},
		{in: "a,b,a", want: []string{"a", "b"}},
		{in: "", want: nil},
		{in: " , ", want: nil},
		{in: "topology.kubernetes.io,team.k8s.io", want: []string{"topology.kubernetes.io", "team.k8s.io"}},
		{in: "good.io,kubernetes.io", errs: []string{`"kubernetes.io" is reserved`}},
		{in: "k8s.io", errs: []string{`"k8s.io" is reserved`}},
		{in: "kubelet.kubernetes.io", errs: []string{"reserved"}},
		{in: "beta.kubernetes.io", errs: []string{"reserved"}},
		{in: "Upper.io,good.io", errs: []string{`"Upper.io" is not a lower-case DNS subdomain`}},
		{in: "with/slash", errs: []string{`"with/slash" is not a lower-case DNS subdomain`}},
		{in: "bad_one, k8s.io, fine.io", errs: []string{`"bad_one"`, `"k8s.io" is reserved`}},
		{in: strings.Repeat("a", 254), errs: []string{"must be no more than 253 characters"}},
		{in: "my prefix.io", errs: []string{`"my prefix.io"`}},
	}
	for _, c := range cases {
		got, err := tags.ParseSyncPrefixes(c.in)
		if c.errs == nil {
			if err != nil || !slices.Equal(got, c.want) {
				t.Errorf("ParseSyncPrefixes(%q) = %q, %v; want %q", c.in, got, err, c.want)
			}
			continue
		}
		if err == nil || got != nil {
			t.Errorf("ParseSyncPrefixes(%q) = %q, %v; want rejected whole", c.in, got, err)
			continue
		}
		if !errors.Is(err, tags.ErrInvalidPrefix) {
			t.Errorf("ParseSyncPrefixes(%q): %v does not wrap ErrInvalidPrefix", c.in, err)
		}
		for _, frag := range c.errs {
			if !strings.Contains(err.Error(), frag) {
				t.Errorf("ParseSyncPrefixes(%q): %q does not say %q", c.in, err, frag)
			}
		}
	}
}

// TestReservedSyncPrefixesMatchTheAPI: admission (the CRD's CEL rule) and
// the annotation path refuse the same prefixes.
func TestReservedSyncPrefixesMatchTheAPI(t *testing.T) {
	if !slices.Equal(tags.ReservedSyncPrefixes, v1alpha1.ReservedLabelPrefixes) {
		t.Fatalf("tags.ReservedSyncPrefixes %v, v1alpha1.ReservedLabelPrefixes %v", tags.ReservedSyncPrefixes, v1alpha1.ReservedLabelPrefixes)
	}
}

func FuzzParseSyncPrefixes(f *testing.F) {
	for _, s := range []string{"a.io, b.io", "kubernetes.io", ",,", "A", "x/y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := tags.ParseSyncPrefixes(s)
		if err != nil {
			if got != nil {
				t.Fatalf("rejected %q but returned %q", s, got)
			}
			return
		}
		for _, p := range got {
			if tags.ValidateSyncPrefix(p) != nil || strings.TrimSpace(p) != p || p == "" {
				t.Fatalf("accepted %q in %q", p, s)
			}
		}
	})
}

func TestContestedLabels(t *testing.T) {
	type m = map[string]string
	r := []string{"r.io"}
	cases := []struct {
		name               string
		a, b               m
		aPrefixes, bPrefix []string
		want               []string
	}{
		{name: "same values", a: m{"r.io/rack": "1"}, b: m{"r.io/rack": "1"}, aPrefixes: r, bPrefix: r},
		{name: "other value", a: m{"r.io/rack": "1"}, b: m{"r.io/rack": "2"}, aPrefixes: r, bPrefix: r, want: []string{"r.io/rack"}},
		{name: "present against absent, either side", a: m{"r.io/row": "3"}, b: m{"r.io/rack": "2"}, aPrefixes: r, bPrefix: r,
			want: []string{"r.io/rack", "r.io/row"}},
		{name: "empty value is not absent", a: m{"r.io/flag": ""}, b: m{}, aPrefixes: r, bPrefix: r, want: []string{"r.io/flag"}},
		{name: "owned by one side only", a: m{"r.io/rack": "1", "z.io/zone": "a"}, b: m{"z.io/zone": "b"},
			aPrefixes: []string{"r.io", "z.io"}, bPrefix: []string{"z.io"}, want: []string{"z.io/zone"}},
		{name: "out of scope differences", a: m{"x.io/a": "1"}, b: m{"x.io/a": "2"}, aPrefixes: r, bPrefix: r},
		{name: "no common prefix", a: m{"r.io/rack": "1"}, b: m{}, aPrefixes: r, bPrefix: []string{"z.io"}},
	}
	for _, c := range cases {
		got := tags.ContestedLabels(c.a, c.aPrefixes, c.b, c.bPrefix)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: ContestedLabels = %v, want %v", c.name, got, c.want)
		}
		if back := tags.ContestedLabels(c.b, c.bPrefix, c.a, c.aPrefixes); !slices.Equal(back, got) {
			t.Errorf("%s: not symmetric: %v and %v", c.name, got, back)
		}
	}
}

func TestLabelChangesWithout(t *testing.T) {
	c := tags.LabelChanges{Set: map[string]string{"r.io/a": "1", "r.io/b": "2"}, Delete: []string{"r.io/c", "r.io/d"}}
	got := c.Without([]string{"r.io/a", "r.io/d"})
	if !reflect.DeepEqual(got.Set, map[string]string{"r.io/b": "2"}) || !slices.Equal(got.Delete, []string{"r.io/c"}) {
		t.Fatalf("Without = %+v", got)
	}
	if all := c.Without([]string{"r.io/a", "r.io/b", "r.io/c", "r.io/d"}); !all.IsEmpty() || all.Set != nil || all.Delete != nil {
		t.Fatalf("Without every key = %+v, want empty", all)
	}
}

func TestPlanLabelSyncSortsDeletionsByIntent(t *testing.T) {
	rec := tags.LabelRecord{"r.io": tags.PrefixRecord{Source: "p", Keys: []string{"r.io/gone", "r.io/rack"}}, "o.io": tags.PrefixRecord{Source: "other", Keys: []string{"o.io/x"}},
		"old.io": tags.PrefixRecord{Source: "p", Keys: []string{"old.io/y"}}}
	host := map[string]string{"r.io/rack": "a", "n.io/new": "1"}
	node := map[string]string{"r.io/rack": "a", "r.io/gone": "1", "r.io/extra": "2", "n.io/used": "3", "o.io/x": "4"}
	p := tags.PlanLabelSync(host, node, []string{"r.io", "n.io"}, "p", rec)
	if !slices.Equal(p.Reverts, []string{"r.io/extra"}) || !slices.Equal(p.Removals, []string{"r.io/gone"}) || !slices.Equal(p.Unclear, []string{"n.io/used"}) {
		t.Fatalf("reverts %v removals %v unclear %v", p.Reverts, p.Removals, p.Unclear)
	}
	if !slices.Equal(p.Changes.Delete, []string{"n.io/used", "r.io/extra", "r.io/gone"}) || p.Changes.Set["n.io/new"] != "1" {
		t.Fatalf("changes %+v", p.Changes)
	}
	// Everything written: n.io becomes the source's, old.io (no longer
	// synced by p) is dropped, o.io (another source's) is kept.
	want := tags.LabelRecord{"r.io": tags.PrefixRecord{Source: "p", Keys: []string{"r.io/rack"}}, "n.io": tags.PrefixRecord{Source: "p", Keys: []string{"n.io/new"}},
		"o.io": rec["o.io"]}
	if got := p.Record(nil, nil); got.Encode() != want.Encode() {
		t.Fatalf("Record(nil) = %s, want %s", got.Encode(), want.Encode())
	}
	// Held: n.io's label the Node carried before stays foreign while its
	// removal waits (and is unclear again next time); a held removal stays
	// owned.
	got := p.Record([]string{"n.io/used", "r.io/gone"}, nil)
	if !slices.Equal(got["n.io"].Foreign, []string{"n.io/used"}) || !slices.Equal(got["r.io"].Keys, []string{"r.io/gone", "r.io/rack"}) {
		t.Fatalf("Record(held) = %s", got.Encode())
	}
	again := tags.PlanLabelSync(host, node, []string{"r.io", "n.io"}, "p", got)
	if !slices.Equal(again.Unclear, []string{"n.io/used"}) || !slices.Equal(again.Removals, []string{"r.io/gone"}) {
		t.Fatalf("next pass: unclear %v removals %v", again.Unclear, again.Removals)
	}
	// A contested prefix keeps whatever entry it has; an entry with the
	// same keys is kept, whoever made it.
	if c := p.Record(nil, []string{"r.io/rack"}); c["r.io"].Source != "p" || !slices.Equal(c["r.io"].Keys, rec["r.io"].Keys) {
		t.Fatalf("contested r.io: %s", c.Encode())
	}
	same := tags.PlanLabelSync(map[string]string{"o.io/x": "4"}, node, []string{"o.io"}, "p",
		tags.LabelRecord{"o.io": {Source: "other", Keys: []string{"o.io/x"}}})
	if c := same.Record(nil, nil); c["o.io"].Source != "other" {
		t.Fatalf("an entry with the same keys was taken over: %s", c.Encode())
	}
	back, err := tags.ParseLabelRecord(got.Encode())
	if err != nil || back.Encode() != got.Encode() {
		t.Fatalf("round trip: %v %v", back, err)
	}
	if _, err := tags.ParseLabelRecord("[1]"); err == nil {
		t.Fatal("a malformed record parsed")
	}
}
