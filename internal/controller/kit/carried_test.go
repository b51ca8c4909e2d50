package kit

import (
	"maps"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/tags"
)

// TestPendingKeepsTheLatestCarriedTags: per resource the latest change's
// tags are kept whatever the order of arrival; a change without tags, a
// tie that disagrees and an Add make the resource one to read.
func TestPendingKeepsTheLatestCarriedTags(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	change := func(tagged string, at int, set tags.Set) cloudchange.Change {
		return cloudchange.Change{Resource: "ARN:" + tagged, Tags: set, Time: t0.Add(time.Duration(at) * time.Second)}
	}
	for _, tc := range []struct {
		name    string
		changes []cloudchange.Change
		add     bool
		want    tags.Set // nil: read
	}{
		{"latest wins", []cloudchange.Change{change("a", 2, tags.Set{"v": "2"}), change("a", 1, tags.Set{"v": "1"})}, false, tags.Set{"v": "2"}},
		{"a later change without tags", []cloudchange.Change{change("a", 1, tags.Set{"v": "1"}), change("a", 2, nil)}, false, nil},
		{"an earlier change without tags", []cloudchange.Change{change("a", 2, tags.Set{"v": "2"}), change("a", 1, nil)}, false, tags.Set{"v": "2"}},
		{"a tie that agrees", []cloudchange.Change{change("a", 1, tags.Set{"v": "1"}), change("a", 1, tags.Set{"v": "1"})}, false, tags.Set{"v": "1"}},
		{"a tie that disagrees", []cloudchange.Change{change("a", 1, tags.Set{"v": "1"}), change("a", 1, tags.Set{"v": "2"})}, false, nil},
		{"then Add", []cloudchange.Change{change("a", 1, tags.Set{"v": "1"})}, true, nil},
	} {
		var p Pending[string]
		for _, c := range tc.changes {
			p.AddChange("k", "arn:a", c)
		}
		if tc.add {
			p.Add("k", "arn:a")
		}
		ids, carried, flagged := p.TakeCarried("k")
		got := carried["arn:a"]
		if len(ids) != 1 || flagged || !maps.Equal(got.Tags, tc.want) || (tc.want == nil) != (got.Tags == nil) {
			t.Errorf("%s: ids %v, carried %+v, flagged %v; want tags %v", tc.name, ids, got, flagged, tc.want)
		}
		if got.Tags != nil && got.ID != "ARN:a" {
			t.Errorf("%s: carried ID %q, want the change's", tc.name, got.ID)
		}
		if ids, carried, _ := p.TakeCarried("k"); len(ids) != 0 || len(carried) != 0 {
			t.Errorf("%s: a second take found %v, %v", tc.name, ids, carried)
		}
	}
	read := t0.Add(time.Second)
	if (Carried{Tags: tags.Set{}, Time: read}).Usable(read) || !(Carried{Tags: tags.Set{}, Time: read.Add(time.Second)}).Usable(read) ||
		(Carried{Time: read.Add(time.Second)}).Usable(read) {
		t.Error("Usable: want tags from a change after the read only")
	}
}

// TestPendingKeepsTheLatestReceipt: per resource the latest receipt of its
// changes is kept, whichever change's tags are: a read sent after it shows
// them all.
func TestPendingKeepsTheLatestReceipt(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var p Pending[string]
	p.AddChange("k", "arn:a", cloudchange.Change{Resource: "arn:a", Tags: tags.Set{"v": "2"}, Time: t0.Add(2 * time.Second), Received: t0.Add(time.Minute)})
	p.AddChange("k", "arn:a", cloudchange.Change{Resource: "arn:a", Tags: tags.Set{"v": "1"}, Time: t0.Add(time.Second), Received: t0.Add(2 * time.Minute)})
	p.AddChange("k", "arn:a", cloudchange.Change{Resource: "arn:a", Tags: tags.Set{"v": "3"}, Time: t0.Add(3 * time.Second), Received: t0.Add(90 * time.Second)})
	_, carried, _ := p.TakeCarried("k")
	if got := carried["arn:a"]; got.Tags["v"] != "3" || !got.Received.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("carried %+v, want the tags of the latest change (v=3) and the latest receipt (%s)", got, t0.Add(2*time.Minute))
	}
}

// TestPendingVouchesForAWriterOnlyWhenItMadeEveryChange: a person's change
// taken with an application's (or an unnamed one's) in one window names no
// writer, whatever the order; Named, which vouches for nothing, is the
// latest writer named.
func TestPendingVouchesForAWriterOnlyWhenItMadeEveryChange(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ana := cloudchange.Writer{ID: "ana@example.com", Person: true}
	app := cloudchange.Writer{ID: "6dae42f8"}
	for _, tc := range []struct {
		name    string
		writers []cloudchange.Writer
		want    cloudchange.Writer
		named   string
	}{
		{"one person", []cloudchange.Writer{ana, ana}, ana, ana.ID},
		{"an application, then a person", []cloudchange.Writer{app, ana}, cloudchange.Writer{}, ana.ID},
		{"a person, then an application", []cloudchange.Writer{ana, app}, cloudchange.Writer{}, app.ID},
		{"an unnamed writer, then a person", []cloudchange.Writer{{}, ana}, cloudchange.Writer{}, ana.ID},
		{"an application, then an unnamed writer", []cloudchange.Writer{app, {}}, cloudchange.Writer{}, app.ID},
	} {
		var p Pending[string]
		for i, w := range tc.writers {
			p.AddChange("obj", "r", cloudchange.Change{Resource: "R", Writer: w, Time: t0.Add(time.Duration(i) * time.Second)})
		}
		_, carried, _ := p.TakeCarried("obj")
		if got := carried["r"].Writer; got != tc.want {
			t.Errorf("%s: writer %+v, want %+v", tc.name, got, tc.want)
		}
		if got := carried["r"].Named; got != tc.named {
			t.Errorf("%s: named %q, want %q (the latest that named one)", tc.name, got, tc.named)
		}
		p.AddChange("obj", "r", cloudchange.Change{Resource: "R", Writer: ana, Time: t0.Add(time.Minute)})
		if _, carried, _ := p.TakeCarried("obj"); carried["r"].Writer != ana {
			t.Errorf("%s: a new window after the take names %+v, want the person", tc.name, carried["r"].Writer)
		}
	}
}
