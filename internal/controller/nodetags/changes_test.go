package nodetags

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/aws"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/tags"
)

const scaleSetID = "/subscriptions/s/resourceGroups/RG/providers/Microsoft.Compute/virtualMachineScaleSets/Pool"

func TestOwnerKeyMapsAScaleSetInstanceToItsScaleSet(t *testing.T) {
	for in, want := range map[string]string{
		scaleSetID:                         ownerKey(scaleSetID),
		scaleSetID + "/virtualMachines/3":  ownerKey(scaleSetID),
		scaleSetID + "/VIRTUALMACHINES/3/": ownerKey(scaleSetID),
		"/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm": "/subscriptions/s/resourcegroups/rg/providers/microsoft.compute/virtualmachines/vm",
	} {
		if got := ownerKey(in); got != want {
			t.Errorf("ownerKey(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestTheChangeBookRoutesToTheOwnersOnly(t *testing.T) {
	b := newChangeBook()
	pool := ownerKey(scaleSetID)
	b.record("a", map[string][]string{pool: {"n0", "n1"}}, nil, time.Now())
	b.record("b", map[string][]string{"/other": {"n2"}}, nil, time.Now())
	change := cloudchange.Change{Resource: scaleSetID + "/virtualMachines/0", Kind: cloudchange.KindWrite}
	if got := b.route(change); fmt.Sprint(got) != "[a]" {
		t.Fatalf("routed to %v, want [a]", got)
	}
	b.route(change)
	if ids, _, fresh := b.take("a"); fmt.Sprint(ids) != fmt.Sprint([]string{pool}) || fresh {
		t.Fatalf("a's changes: %v (fresh %v), want the scale set once", ids, fresh)
	}
	if got := b.nodesOn("a", []string{pool}); len(got) != 2 {
		t.Fatalf("nodes on the scale set: %v", got)
	}
	if got := b.route(cloudchange.Change{Resource: "/unowned"}); len(got) != 0 {
		t.Fatalf("a change of an unowned resource routed to %v", got)
	}
	b.forget("a")
	if got := b.route(change); len(got) != 0 {
		t.Fatalf("a forgotten NodeTagSync still routed: %v", got)
	}
	if got := b.overflow(); fmt.Sprint(got) != "[b]" {
		t.Fatalf("an overflow asked %v for a full pass, want [b]", got)
	}
	if _, _, fresh := b.take("b"); !fresh {
		t.Fatal("the full pass after an overflow is not fresh")
	}
}

// taker is a NodeProvider with AWS's tag rules that takes carried tags
// into its cache unless refuse (a unit test's stand-in; nothing else of
// it is called).
type taker struct {
	cloud.NodeProvider
	refuse bool
}

func (taker) Rules() tags.Rules { return aws.TagRules }

func (t taker) TakeTags(string, tags.Set, time.Time) bool { return !t.refuse }

// TestCarriedTagsServeTheChangesMadeAfterTheRead: a change made after the
// last read that carries its resource's tags is the resource's snapshot
// (without the cloud's own tags, its nodes placed as recorded); a change
// made before it, one without tags and a scale set instance's are read.
// The echo of a NodeTagSync's own write of a scale set reaches the other
// NodeTagSyncs placed on it, not the writer.
func TestTheEchoOfAWriteSkipsOnlyTheWriter(t *testing.T) {
	b := newChangeBook()
	pool := ownerKey(scaleSetID)
	b.record("writer", map[string][]string{pool: {"n0"}}, nil, time.Now())
	b.record("other", map[string][]string{pool: {"n1"}}, nil, time.Now())
	echo := cloudchange.Change{Resource: scaleSetID, Kind: cloudchange.KindWrite, EchoOf: "writer"}
	if got := b.route(echo); fmt.Sprint(got) != "[other]" {
		t.Fatalf("the echo was routed to %v, want [other]", got)
	}
	if ids, _, _ := b.take("writer"); len(ids) != 0 {
		t.Errorf("the writer has the echo pending: %v", ids)
	}
}

func TestCarriedTagsServeTheChangesMadeAfterTheRead(t *testing.T) {
	b := newChangeBook()
	const solo, group = "arn:aws:ec2:us-east-1:1:instance/i-1", "arn:aws:autoscaling:us-east-1:1:autoScalingGroup:u:autoScalingGroupName/Pool"
	pool := ownerKey(scaleSetID)
	read := time.Now()
	b.record("a", map[string][]string{ownerKey(solo): {"n0"}, ownerKey(group): {"n1", "n2"}, pool: {"n3"}},
		map[string]string{"n0": "in no group"}, read)
	carrying := tags.Set{"env": "prod", "aws:autoscaling:groupName": "Pool"}
	b.route(cloudchange.Change{Resource: solo, Tags: carrying, Time: read.Add(time.Second)})
	b.route(cloudchange.Change{Resource: group, Tags: carrying, Time: read})
	b.route(cloudchange.Change{Resource: scaleSetID + "/virtualMachines/0", Tags: carrying, Time: read.Add(time.Second)})
	ids, carried, _ := b.take("a")
	snap, unread := b.fromChanges("a", ids, carried, taker{})
	if fmt.Sprint(unread) != fmt.Sprint([]string{pool, ownerKey(group)}) {
		t.Errorf("to read: %v, want the group (a change as old as the read) and the scale set (an instance's change)", unread)
	}
	if res := snap.Resources[ownerKey(solo)]; res.ID != solo || !maps.Equal(res.Tags, tags.Set{"env": "prod"}) || len(snap.Resources) != 1 {
		t.Errorf("resources from the changes: %+v", snap.Resources)
	}
	if pl := snap.Placements["n0"]; !pl.Managed || pl.Resource != solo || pl.Note != "in no group" || len(snap.Placements) != 1 {
		t.Errorf("placements from the changes: %+v", snap.Placements)
	}
	// The change served is now the resource's last read: a redelivery of
	// it is read.
	b.route(cloudchange.Change{Resource: solo, Tags: carrying, Time: read.Add(time.Second)})
	ids, carried, _ = b.take("a")
	if _, unread := b.fromChanges("a", ids, carried, taker{}); len(unread) != 1 {
		t.Errorf("a change as old as the last one served: to read %v, want it", unread)
	}
	// A provider that does not take the tags into its cache (its read is
	// newer): read.
	b.route(cloudchange.Change{Resource: solo, Tags: carrying, Time: read.Add(time.Minute)})
	ids, carried, _ = b.take("a")
	if _, unread := b.fromChanges("a", ids, carried, taker{refuse: true}); len(unread) != 1 {
		t.Errorf("tags the provider refused: to read %v, want them", unread)
	}
}

// TestChangesBeforeTheIndexWaitForIt: after a restart or a leader change
// no NodeTagSync is placed anywhere until its first full pass ends. A
// change routed before then is kept, and the first pass's record gives it
// to the NodeTagSync placed on its resource (whose next pass serves it),
// not to one whose own write it echoes; once every expected index exists,
// a change of a resource no one is placed on is dropped again.
func TestChangesBeforeTheIndexWaitForIt(t *testing.T) {
	b := newChangeBook()
	pool := ownerKey(scaleSetID)
	b.expect("a")
	b.expect("b")
	early := cloudchange.Change{Resource: scaleSetID, Kind: cloudchange.KindWrite, Time: time.Now()}
	if got := b.route(early); len(got) != 0 {
		t.Fatalf("a change before any index routed to %v", got)
	}
	b.route(cloudchange.Change{Resource: "/other", Kind: cloudchange.KindWrite, EchoOf: "b"})
	if !b.record("a", map[string][]string{pool: {"n0"}}, nil, time.Now()) {
		t.Fatal("a's first record took none of the changes that came before it")
	}
	if ids, _, _ := b.take("a"); fmt.Sprint(ids) != fmt.Sprint([]string{pool}) {
		t.Fatalf("a's changes after its first record: %v, want the scale set", ids)
	}
	if b.record("b", map[string][]string{"/other": {"n1"}}, nil, time.Now()) {
		t.Fatal("b took the echo of its own write")
	}
	if got := b.route(cloudchange.Change{Resource: "/unowned", Kind: cloudchange.KindWrite}); len(got) != 0 || len(b.index.Warm.Replay()) != 0 {
		t.Fatalf("with every index there, a change of an unowned resource was kept or routed to %v", got)
	}
}
