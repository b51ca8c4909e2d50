package nodetags

import (
	"hash/fnv"
	"strconv"

	"github.com/tagsync/tagsync/internal/cloud"
)

// A node that a pass found fully in sync (nothing to write on either side,
// no conflict, nothing unrepresentable) stays in sync while neither the
// Node, nor its resource's tags, nor the NodeTagSync's spec change. The next
// pass then counts it as synced without decoding its labels or merging: at
// 10,000 nodes most of a resync's work and allocation.
//
// A steady mark is the node's resourceVersion, a hash of the resource's tags
// and the spec's generation. Each pass keeps only the marks of the nodes it
// saw, so nodes that left (deleted, deselected) are forgotten.

// steadyMark identifies the state in which a node was found in sync.
func steadyMark(node *cachedNode, tagsHash uint64, generation int64) string {
	return node.ResourceVersion + "/" + strconv.FormatUint(tagsHash, 36) + "/" + strconv.FormatInt(generation, 10)
}

// hashTags hashes a resource's tags (names and values exactly as stored).
func hashTags(res cloud.Resource) uint64 {
	h := fnv.New64a()
	for _, n := range res.Tags.Names() { // sorted
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write([]byte(res.Tags[n]))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// isSteady reports whether the previous pass found node in sync in this
// same state; either way the node is carried into this pass's marks only
// if it is still steady.
func (p *pass) isSteady(node *cachedNode, mark string) bool {
	if p.st.steady[node.Name] != mark {
		return false
	}
	p.nextSteady[node.Name] = mark
	return true
}

// markSteady records that node was found fully in sync in this pass.
func (p *pass) markSteady(node *cachedNode, mark string) {
	p.nextSteady[node.Name] = mark
}
