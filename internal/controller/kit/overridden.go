package kit

import (
	"fmt"
	"time"

	"github.com/tagsync/tagsync/internal/tags"
)

// Overridden are the tags whose write the cloud answered with another
// value (cloud.WriteResult.Overridden): something on the write's own path
// changes them (Azure Policy's modify or append effect), so writing them
// again only starts another round, and no cloud event names anyone else
// (the changed write is the controller's own). A controller stops writing
// such a tag on that resource at once, for RecentWindow, and names the
// policy. Not safe for concurrent use; the zero value is ready.
type Overridden map[RecentTag]Override

// Override is one tag's overridden write: when, and what the answer
// carried, in words.
type Override struct {
	At     time.Time
	Writer string
}

// Note records the names of set (the values written, keyed by key) that a
// write's answer carried with another value (answer).
func (o *Overridden) Note(at time.Time, set, answer tags.Set, key func(name, value string) RecentTag) {
	for _, name := range answer.Names() {
		value, ok := set[name]
		if !ok {
			continue
		}
		if *o == nil {
			*o = Overridden{}
		}
		(*o)[key(name, value)] = Override{At: at, Writer: OverrideWriter(name, answer[name])}
	}
}

// OverrideWriter names what overrode a write: the answer carried name=value.
func OverrideWriter(name, value string) string {
	return fmt.Sprintf("Azure Policy's modify or append effect, or another policy on the write path: the write's answer carried %s=%q", name, value)
}

// Prune forgets the overrides older than RecentWindow at now: such a tag
// is written again once an hour, at most.
func (o Overridden) Prune(now time.Time) {
	for k, v := range o {
		if now.Sub(v.At) >= RecentWindow {
			delete(o, k)
		}
	}
}

// Of returns the override of k, if any.
func (o Overridden) Of(k RecentTag) (Override, bool) {
	v, ok := o[k]
	return v, ok
}
