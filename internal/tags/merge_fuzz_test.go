package tags

import (
	"strings"
	"testing"
)

// fuzzSet decodes up to five tags from data: per key a byte chooses absent,
// a value, and a spelling.
func fuzzSet(data []byte) Set {
	names := []string{"env", "team", "cost", "owner", "app"}
	values := []string{"a", "b", ""}
	s := Set{}
	for i, n := range names {
		if i >= len(data) || data[i]%4 == 0 {
			continue
		}
		if data[i]&0x10 != 0 {
			n = strings.ToUpper(n[:1]) + n[1:]
		}
		s[n] = values[int(data[i]%4-1)%len(values)]
	}
	return s
}

func FuzzMerge(f *testing.F) {
	f.Add([]byte{1, 1, 1, 1, 1}, []byte{1, 1, 1, 1, 1}, []byte{1, 1, 1, 1, 1}, byte(0), byte(0), false, byte(0))
	f.Add([]byte{1, 2, 3, 0, 0}, []byte{2, 2, 0, 1, 0}, []byte{1, 3, 3, 1, 2}, byte(1), byte(1), false, byte(3))
	f.Add([]byte{1, 1, 1, 0, 0}, []byte{0, 0, 0, 1, 2}, []byte{1, 1, 1, 0, 0}, byte(0), byte(0), false, byte(0))
	f.Add([]byte{1, 1, 1, 0, 0}, []byte{0, 0, 0, 0, 0}, []byte{1, 1, 1, 0, 0}, byte(2), byte(2), false, byte(0))
	f.Add([]byte{}, []byte{1, 0x11, 2}, []byte{0x12, 1, 3}, byte(0), byte(1), true, byte(0))
	f.Add([]byte{1, 1, 1}, []byte{0, 0, 1}, []byte{2, 2, 0}, byte(2), byte(0), false, byte(0))
	f.Fuzz(func(t *testing.T, b, c, n []byte, dir, pol byte, noHistory bool, hold byte) {
		in := MergeInput{
			Base:      fuzzSet(b),
			Cloud:     fuzzSet(c),
			Node:      fuzzSet(n),
			Direction: []Direction{TwoWay, CloudToNode, NodeToCloud, ""}[dir%4],
			Policy:    []Policy{Ignore, CloudWins, NodeWins, ""}[pol%4],
		}
		if noHistory {
			in.Base = nil
		}
		if hold%3 == 1 {
			in.Hold = []string{"TEAM"}
		}
		checkFuzzMerge(t, CaseInsensitive, in)
		// The same sets under AWS's rules, where "Env" and "env" are two tags.
		if in.Hold != nil {
			in.Hold = []string{"team"}
		}
		checkFuzzMerge(t, CaseSensitive, in)
	})
}

func checkFuzzMerge(t *testing.T, nc NameCase, in MergeInput) {
	t.Helper()
	res := Merge(nc, in)
	checkMergeInvariants(t, nc, in, res)
	same := Merge(nc, MergeInput{Base: in.Cloud, Cloud: in.Cloud, Node: in.Cloud, Direction: in.Direction, Policy: in.Policy})
	if !same.CloudPatch.IsEmpty() || !same.NodePatch.IsEmpty() || len(same.Conflicts) > 0 {
		t.Errorf("%s: Cloud == Node == Base produced %+v", nc, same)
	}
	if res.Wiped && in.Direction.writes(SideNode) && len(res.NodePatch.Delete) > 0 {
		t.Errorf("%s: a wipe deleted labels: %v", nc, res.NodePatch.Delete)
	}
	if in.Base == nil && (len(res.NodePatch.Delete) > 0 || len(res.CloudPatch.Delete) > 0) {
		t.Errorf("%s: no history must never delete: %+v", nc, res)
	}
}
