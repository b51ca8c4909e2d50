package labelsync

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tagsync/tagsync/api/metal3"
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
}

// claim is what a claimant wants on a Node: its host's labels under its
// source's prefixes.
type claim struct {
	claimant
	// desc names the host and its source in messages.
	desc string
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

// contestKey is a contest between two claimants of one Node, a before b.
type contestKey struct {
	node types.UID
	a, b claimant
}

// claimRegistry is who wants what on which Node, by the Node's UID (one
// Node reached through two Clusters is one Node), and the contests known.
type claimRegistry struct {
	mu     sync.Mutex
	byNode map[types.UID]map[claimant]claim
	// known are the contested keys (joined) of each contest seen.
	known map[contestKey]string
}

func newClaimRegistry() *claimRegistry {
	return &claimRegistry{byNode: map[types.UID]map[claimant]claim{}, known: map[contestKey]string{}}
}

// newClaim is a host's claim as src syncs it.
func newClaim(src *source, l *link) claim {
	in := map[string]string{}
	for k, v := range l.host.Labels {
		if tags.InSyncScope(k, src.prefixes) {
			in[k] = v
		}
	}
	return claim{claimant: claimant{source: src.key, host: l.hostKey()}, cluster: l.cluster, prefixes: src.prefixes, labels: in,
		desc: fmt.Sprintf("host %s (%s %s)", l.hostKey(), src.kind(), src.name())}
}

// stake records a claim on a Node. It returns the sources to run again: the
// claimants whose contest with it began, changed or ended.
func (g *claimRegistry) stake(node types.UID, c claim) []types.NamespacedName {
	g.mu.Lock()
	defer g.mu.Unlock()
	claims := g.byNode[node]
	if claims == nil {
		claims = map[claimant]claim{}
		g.byNode[node] = claims
	}
	claims[c.claimant] = c
	var wake []types.NamespacedName
	for o, oc := range claims {
		if o.host == c.host {
			continue // one host wants one set of labels
		}
		key := pairOf(node, c.claimant, o)
		keys := strings.Join(tags.ContestedLabels(c.labels, c.prefixes, oc.labels, oc.prefixes), ",")
		if keys == g.known[key] {
			continue
		}
		if keys == "" {
			delete(g.known, key)
		} else {
			g.known[key] = keys
		}
		wake = append(wake, o.source, c.source)
	}
	return wake
}

// contestsOf are the contests of a claimant's claim on a Node.
func (g *claimRegistry) contestsOf(node types.UID, c claimant) []contest {
	g.mu.Lock()
	defer g.mu.Unlock()
	claims := g.byNode[node]
	mine, ok := claims[c]
	if !ok {
		return nil
	}
	var out []contest
	for o, oc := range claims {
		if o.host == c.host {
			continue
		}
		if keys := tags.ContestedLabels(mine.labels, mine.prefixes, oc.labels, oc.prefixes); len(keys) > 0 {
			out = append(out, contest{other: oc.desc, otherHost: o.host, keys: keys})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].other < out[j].other })
	return out
}

// release drops a source's claims that its last pass did not stake, except
// those keep holds on to. It returns the sources to run again: the other
// claimants of contests that ended.
func (g *claimRegistry) release(source types.NamespacedName, staked map[types.UID]map[claimant]bool, keep func(claim) bool) []types.NamespacedName {
	g.mu.Lock()
	defer g.mu.Unlock()
	var wake []types.NamespacedName
	for node, claims := range g.byNode {
		for cl, c := range claims {
			if cl.source != source || staked[node][cl] || (keep != nil && keep(c)) {
				continue
			}
			delete(claims, cl)
			for key := range g.known {
				if key.node == node && (key.a == cl || key.b == cl) {
					delete(g.known, key)
					wake = append(wake, key.a.source, key.b.source)
				}
			}
		}
		if len(claims) == 0 {
			delete(g.byNode, node)
		}
	}
	return wake
}

// pairOf orders two claimants of a Node into a contestKey.
func pairOf(node types.UID, x, y claimant) contestKey {
	if claimantString(y) < claimantString(x) {
		x, y = y, x
	}
	return contestKey{node: node, a: x, b: y}
}

func claimantString(c claimant) string { return c.source.String() + "|" + c.host.String() }

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
