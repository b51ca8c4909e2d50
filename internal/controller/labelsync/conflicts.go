package labelsync

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tagsync/tagsync/api/metal3"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/tags"
)

// One writer per key: when two hosts reach one Node (a reprovisioned host
// while the old Machine is still deleting, two Clusters reaching one API
// server) and want different values for a key both of their sources own,
// neither writes that key. Both are reported (problem ContestedKeys, the
// Conflict condition, a Warning) until one of the hosts changes or no
// longer reaches the Node; then the other's source runs at once and writes.
// The oldest object does not silently win.

// claimant is one host as one source syncs it.
type claimant struct {
	// source is the source's reconcile request.
	source types.NamespacedName
	host   types.NamespacedName
	// desc names the host and its source in messages.
	desc string
}

// String names the host and its source.
func (c claimant) String() string { return c.desc }

// want is what a claimant wants on its Node: its host's labels under its
// source's prefixes.
type want struct {
	// cluster is the Cluster the Node was reached through.
	cluster  types.NamespacedName
	prefixes []string
	// labels are the host's in-scope labels (a copy).
	labels map[string]string
}

// contest is another claimant of a Node that wants other values for keys.
type contest struct {
	other     string
	otherHost types.NamespacedName
	keys      []string
}

// claimRegistry is who wants what on which Node, by the Node's UID (one
// Node reached through two Clusters is one Node), and the contests known.
type claimRegistry = kit.Contests[types.UID, claimant, want]

// newClaimRegistry returns an empty registry: two hosts of one Node contest
// the keys both sources own that they want otherwise (one host wants one
// set of labels, through any source); a contest runs both sources again.
func newClaimRegistry() *claimRegistry {
	return kit.NewContests[types.UID](func(c claimant, w want, o claimant, ow want) []string {
		if c.host == o.host {
			return nil
		}
		return tags.ContestedLabels(w.labels, w.prefixes, ow.labels, ow.prefixes)
	}, func(c claimant) types.NamespacedName { return c.source })
}

// claimOf is a host's claim as src syncs it: who, and what it wants.
func claimOf(src *source, l *link) (claimant, want) {
	in := map[string]string{}
	for k, v := range l.host.Labels {
		if tags.InSyncScope(k, src.prefixes) {
			in[k] = v
		}
	}
	return claimant{source: src.key, host: l.hostKey(), desc: fmt.Sprintf("host %s (%s %s)", l.hostKey(), src.kind(), src.name())},
		want{cluster: l.cluster, prefixes: src.prefixes, labels: in}
}

// contestsOf are the contests of a claimant on a Node.
func contestsOf(g *claimRegistry, node types.UID, c claimant) []contest {
	var out []contest
	for _, r := range g.Rivals(c, []types.UID{node})[node] {
		out = append(out, contest{other: r.Who.desc, otherHost: r.Who.host, keys: r.Names})
	}
	return out
}

// describeContests renders a host's contests for its problem: which keys,
// and who else wants them.
func describeContests(cs []contest) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%s wants other values for %s", c.other, strings.Join(c.keys, ", "))
	}
	return strings.Join(parts, "; ")
}

// hostRef is a BareMetalHost named as an event's related object.
func hostRef(key types.NamespacedName) *metal3.BareMetalHost {
	return &metal3.BareMetalHost{TypeMeta: metav1.TypeMeta{APIVersion: metal3.HostGVK.GroupVersion().String(), Kind: metal3.HostGVK.Kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
}

// contestedKeys are the keys of contests, each once.
func contestedKeys(cs []contest) []string {
	var out []string
	for _, c := range cs {
		for _, k := range c.keys {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}
