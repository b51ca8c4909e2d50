package kit

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// who is a test claimant: an object and a part of it.
type who struct{ obj, part string }

func (w who) String() string { return w.obj + "/" + w.part }

// differing contests the names both wants hold with different values.
func differing(_ who, a map[string]string, _ who, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if bv, ok := b[k]; ok && bv != v {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func newTestContests() *Contests[string, who, map[string]string] {
	return NewContests[string](differing, func(w who) types.NamespacedName { return types.NamespacedName{Name: w.obj} })
}

// names renders wake lists.
func names(keys []types.NamespacedName) string { return fmt.Sprint(keys) }

func TestContestsBeginChangeAndEnd(t *testing.T) {
	c := newTestContests()
	a, b := who{"a", "x"}, who{"b", "y"}
	if got := c.Stake(a, map[string]string{"team": "red", "env": "prod"}, []string{"r1", "r2"}); len(got) != 0 {
		t.Fatalf("a first claim wakes %v", got)
	}
	// b wants another team on r2 only: a contest there, a woken.
	if got := names(c.Stake(b, map[string]string{"team": "blue", "env": "prod"}, []string{"r2", "r3"})); got != "[/a]" {
		t.Fatalf("the contest began, woke %s; want a (b's pass is the one staking)", got)
	}
	rivals := c.Rivals(a, []string{"r1", "r2", "r3"})
	if len(rivals) != 1 || fmt.Sprint(rivals["r2"]) != "[{b/y [team] false}]" {
		t.Fatalf("a's rivals = %v, want b on r2 for team", rivals)
	}
	// The same claim again: nothing changed, nobody woken.
	if got := c.Stake(b, map[string]string{"team": "blue", "env": "prod"}, []string{"r2", "r3"}); len(got) != 0 {
		t.Fatalf("an unchanged claim woke %v", got)
	}
	// b now differs on env too: the contest changed.
	if got := names(c.Stake(b, map[string]string{"team": "blue", "env": "dev"}, []string{"r2", "r3"})); got != "[/a]" {
		t.Fatalf("the contest changed, woke %s", got)
	}
	if got := fmt.Sprint(c.Rivals(b, []string{"r2"})["r2"]); got != "[{a/x [env team] false}]" {
		t.Fatalf("b's rivals on r2 = %s", got)
	}
	// b leaves r2: the contest ended there.
	if got := names(c.Stake(b, map[string]string{"team": "blue", "env": "dev"}, []string{"r3"})); got != "[/a]" {
		t.Fatalf("the contest ended, woke %s", got)
	}
	if got := c.Rivals(a, []string{"r2"}); len(got) != 0 {
		t.Fatalf("a still has rivals %v", got)
	}
}

func TestContestsReleaseWakesTheRivals(t *testing.T) {
	c := newTestContests()
	a, b, d := who{"a", "x"}, who{"b", "y"}, who{"d", "z"}
	c.Stake(a, map[string]string{"team": "red"}, []string{"r1"})
	c.Stake(b, map[string]string{"team": "blue"}, []string{"r1"})
	c.Stake(d, map[string]string{"team": "red"}, []string{"r1"}) // agrees with a
	if got := names(c.Release(func(w who, _ map[string]string) bool { return w == b })); got != "[/a /d]" {
		t.Fatalf("releasing b woke %s; want its rivals", got)
	}
	if got := c.Rivals(a, []string{"r1"}); len(got) != 0 {
		t.Fatalf("a has rivals %v after b left", got)
	}
	if got := c.Release(func(w who, _ map[string]string) bool { return w == a }); len(got) != 0 {
		t.Fatalf("releasing a, who contested nothing, woke %v", got)
	}
	if len(c.at.one) != 1 || len(c.at.crowd) != 0 || len(c.at.ids) != 1 || len(c.known) != 0 {
		t.Fatalf("left: places %v %v, claimants %v, contests %v", c.at.one, c.at.crowd, c.at.ids, c.known)
	}
}

// TestContestsExpectedClaimantsContestEverywhere: a claimant announced but
// not staked (its object's first pass has not run since the start)
// contests its names on every place; staking its claim wakes its rivals,
// and from then on only the places both claim count.
func TestContestsExpectedClaimantsContestEverywhere(t *testing.T) {
	c := newTestContests()
	a, b := who{"a", "x"}, who{"b", "y"}
	c.Expect(b, map[string]string{"team": "blue"})
	c.Stake(a, map[string]string{"team": "red", "env": "prod"}, []string{"r1", "r2"})
	c.Expect(a, map[string]string{"team": "green"}) // a has a claim: no announcement
	rivals := c.Rivals(a, []string{"r1", "r2"})
	if len(rivals) != 2 || fmt.Sprint(rivals["r1"]) != "[{b/y [team] true}]" {
		t.Fatalf("a's rivals before b staked = %v, want b everywhere for team", rivals)
	}
	if got := names(c.Stake(b, map[string]string{"team": "blue"}, []string{"r3"})); got != "[/a]" {
		t.Fatalf("b's first claim woke %s, want a (whose names b held)", got)
	}
	if got := c.Rivals(a, []string{"r1", "r2"}); len(got) != 0 {
		t.Fatalf("a's rivals after b staked elsewhere = %v, want none", got)
	}
	d := who{"d", "z"}
	c.Expect(d, map[string]string{"env": "dev"})
	if got := names(c.Release(func(w who, _ map[string]string) bool { return w == d })); got != "[/a]" {
		t.Fatalf("releasing the expected d woke %s, want a", got)
	}
	if got := c.Rivals(a, []string{"r1"}); len(got) != 0 {
		t.Fatalf("a's rivals after d was released = %v", got)
	}
}
