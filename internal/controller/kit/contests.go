package kit

import (
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Contests is one writer per key among the objects of a controller, in
// every namespace: who wants what where. A claimant (a label sync host, a
// metadata request) stakes its want on places (Nodes, cloud resources);
// two claimants of one place whose wants differ for some names contest
// those names there: neither writes them, and both report it, until one
// gives way. The oldest object does not silently win.
//
// The registry remembers the contests it found: Stake and Release return
// the objects (by the owner function) to pass again because a contest of
// theirs began, changed or ended, so the rival that may write now does not
// wait for its next interval (the claimant that staked or left is not
// among them, unless a rival has the same owner: its pass is the one
// running). It is safe for concurrent use.
//
// A controller that starts (or becomes the leader) knows what each object
// wants before it knows where: until an object's first pass has staked
// its claim, the others would write names it contests wherever they like.
// So a controller announces what every object wants (Expect); an expected
// claimant contests its names on every place until it stakes its claim,
// and its rivals are woken when it does.
//
// P names a place, C a claimant (its String orders rivals in reports), W
// what a claimant wants: one want per claimant, on each of its places.
type Contests[P comparable, C Claimant, W any] struct {
	mu     sync.Mutex
	claims map[C]*staked[P, W]
	at     placeIndex[P, C]
	known  map[contestKey[P, C]]string
	// expected are the claimants announced but not staked yet.
	expected map[C]W
	// contested returns the names who's want contests with other's want
	// (none: nil); owner the object that passes again for a claimant.
	contested func(who C, want W, other C, otherWant W) []string
	owner     func(C) types.NamespacedName
}

// Claimant is what a Contests' claimant must be: a map key with a name for
// messages, which also orders rivals.
type Claimant interface {
	comparable
	String() string
}

// staked is a claimant's want and its places.
type staked[P comparable, W any] struct {
	want   W
	places map[P]bool
}

// contestKey names what claimant a contests with b on one place.
type contestKey[P comparable, C comparable] struct {
	place P
	a, b  C
}

// Rival is another claimant of a place and the names it contests there.
type Rival[C Claimant] struct {
	Who   C
	Names []string
	// Expected says the rival has not staked its claim yet: it contests
	// its names on every place until it has.
	Expected bool
}

// NewContests returns an empty registry: contested says which names two
// wants contest (from the first's side), owner which object to pass again
// for a claimant.
func NewContests[P comparable, C Claimant, W any](contested func(who C, want W, other C, otherWant W) []string,
	owner func(C) types.NamespacedName) *Contests[P, C, W] {
	return &Contests[P, C, W]{claims: map[C]*staked[P, W]{}, at: newPlaceIndex[P, C](), known: map[contestKey[P, C]]string{},
		expected: map[C]W{}, contested: contested, owner: owner}
}

// Stake records who's want on places, replacing its earlier claim (the
// places it no longer names are given up). It returns the objects to pass
// again.
func (c *Contests[P, C, W]) Stake(who C, want W, places []P) []types.NamespacedName {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := make(map[P]bool, len(places))
	for _, p := range places {
		next[p] = true
	}
	w := wakeSet{}
	c.arrived(who, w)
	if old := c.claims[who]; old != nil {
		for p := range old.places {
			if !next[p] {
				c.leave(who, p, w)
			}
		}
	}
	prev := c.claims[who]
	c.claims[who] = &staked[P, W]{want: want, places: next}
	memo := map[C][2]string{}
	for p := range next {
		if prev == nil || !prev.places[p] {
			c.at.add(p, who)
		}
		c.at.each(p, func(other C) {
			if other == who {
				return
			}
			pair, ok := memo[other]
			if !ok {
				ow := c.claims[other].want
				pair = [2]string{strings.Join(c.contested(who, want, other, ow), "\x00"), strings.Join(c.contested(other, ow, who, want), "\x00")}
				memo[other] = pair
			}
			mine, theirs := c.remember(contestKey[P, C]{p, who, other}, pair[0]), c.remember(contestKey[P, C]{p, other, who}, pair[1])
			if mine || theirs {
				w.add(c.owner(other))
			}
		})
	}
	return w.list()
}

// Expect announces what a claimant that has no claim yet wants: until it
// stakes one (or is released), it contests its names on every place. A
// claimant with a claim is not announced again.
func (c *Contests[P, C, W]) Expect(who C, want W) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.claims[who]; !ok {
		c.expected[who] = want
	}
}

// arrived ends who's expectation, if any, and wakes the claimants it
// contested names with; the caller holds the lock.
func (c *Contests[P, C, W]) arrived(who C, w wakeSet) {
	want, ok := c.expected[who]
	if !ok {
		return
	}
	delete(c.expected, who)
	for other, s := range c.claims {
		if other != who && len(c.contested(other, s.want, who, want)) > 0 {
			w.add(c.owner(other))
		}
	}
}

// Release gives up the whole claim, or the expectation, of every claimant
// gone says is gone, and returns the objects to pass again: their rivals,
// which may write now.
func (c *Contests[P, C, W]) Release(gone func(who C, want W) bool) []types.NamespacedName {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := wakeSet{}
	for who, want := range c.expected {
		if gone(who, want) {
			c.arrived(who, w)
		}
	}
	for who, s := range c.claims {
		if !gone(who, s.want) {
			continue
		}
		for p := range s.places {
			c.leave(who, p, w)
		}
		delete(c.claims, who)
	}
	return w.list()
}

// Rivals returns, per place of places where who has a claim and rivals,
// the rivals and the names each contests with who there (sorted by the
// rival's name); it changes no claim.
func (c *Contests[P, C, W]) Rivals(who C, places []P) map[P][]Rival[C] {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.claims[who]
	if s == nil {
		return nil
	}
	var awaited []Rival[C] // the expected claimants contest everywhere
	for other, ow := range c.expected {
		if names := c.contested(who, s.want, other, ow); other != who && len(names) > 0 {
			awaited = append(awaited, Rival[C]{Who: other, Names: names, Expected: true})
		}
	}
	out := map[P][]Rival[C]{}
	for _, p := range places {
		if !s.places[p] {
			continue
		}
		c.at.each(p, func(other C) {
			if names := c.known[contestKey[P, C]{p, who, other}]; names != "" {
				out[p] = append(out[p], Rival[C]{Who: other, Names: strings.Split(names, "\x00")})
			}
		})
		out[p] = append(out[p], awaited...)
		if len(out[p]) == 0 {
			delete(out, p)
			continue
		}
		slices.SortFunc(out[p], func(a, b Rival[C]) int { return strings.Compare(a.Who.String(), b.Who.String()) })
	}
	return out
}

// leave takes who off place p, forgetting its contests there and waking
// both sides of each; the caller holds the lock.
func (c *Contests[P, C, W]) leave(who C, p P, w wakeSet) {
	c.at.remove(p, who)
	c.at.each(p, func(other C) {
		mine, theirs := c.remember(contestKey[P, C]{p, who, other}, ""), c.remember(contestKey[P, C]{p, other, who}, "")
		if mine || theirs {
			w.add(c.owner(other))
		}
	})
}

// remember records the names of a contest ("" for none) and reports
// whether they changed; the caller holds the lock.
func (c *Contests[P, C, W]) remember(k contestKey[P, C], names string) bool {
	if c.known[k] == names {
		return false
	}
	if names == "" {
		delete(c.known, k)
	} else {
		c.known[k] = names
	}
	return true
}

// wakeSet collects the objects to pass again, each once.
type wakeSet map[types.NamespacedName]bool

func (w wakeSet) add(keys ...types.NamespacedName) {
	for _, k := range keys {
		w[k] = true
	}
}

// list returns the objects, sorted.
func (w wakeSet) list() []types.NamespacedName {
	out := make([]types.NamespacedName, 0, len(w))
	for k := range w {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// placeIndex is who claims each place, kept small for registries of many
// places (a metadata object's thousands of resources): claimants are
// numbered, and a place holds the number of its one claimant, the usual
// case, with the others of a crowded place apart. It is not safe for
// concurrent use (Contests holds its lock).
type placeIndex[P comparable, C comparable] struct {
	ids   map[C]int32
	names []C
	refs  []int32 // places per claimant number
	free  []int32
	one   map[P]int32
	crowd map[P][]int32
}

func newPlaceIndex[P comparable, C comparable]() placeIndex[P, C] {
	return placeIndex[P, C]{ids: map[C]int32{}, one: map[P]int32{}, crowd: map[P][]int32{}}
}

// add records that c claims p (once).
func (x *placeIndex[P, C]) add(p P, c C) {
	id, ok := x.ids[c]
	if !ok {
		if n := len(x.free); n > 0 {
			id, x.free = x.free[n-1], x.free[:n-1]
			x.names[id] = c
		} else {
			id = int32(len(x.names))
			x.names, x.refs = append(x.names, c), append(x.refs, 0)
		}
		x.ids[c] = id
	}
	x.refs[id]++
	if _, taken := x.one[p]; taken {
		x.crowd[p] = append(x.crowd[p], id)
		return
	}
	x.one[p] = id
}

// remove records that c, which claimed p, no longer does.
func (x *placeIndex[P, C]) remove(p P, c C) {
	id, ok := x.ids[c]
	if !ok {
		return
	}
	rest := x.crowd[p]
	switch first, taken := x.one[p]; {
	case taken && first == id && len(rest) > 0:
		x.one[p], rest = rest[0], rest[1:]
	case taken && first == id:
		delete(x.one, p)
	default:
		rest = slices.DeleteFunc(rest, func(v int32) bool { return v == id })
	}
	if len(rest) == 0 {
		delete(x.crowd, p)
	} else {
		x.crowd[p] = rest
	}
	if x.refs[id]--; x.refs[id] == 0 {
		var zero C
		delete(x.ids, c)
		x.names[id] = zero
		x.free = append(x.free, id)
	}
}

// each calls f with every claimant of p.
func (x *placeIndex[P, C]) each(p P, f func(C)) {
	id, ok := x.one[p]
	if !ok {
		return
	}
	f(x.names[id])
	for _, id := range x.crowd[p] {
		f(x.names[id])
	}
}
