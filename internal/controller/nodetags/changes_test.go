package nodetags

import (
	"fmt"
	"testing"

	tagevents "github.com/tagsync/tagsync/internal/events"
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
	b.record("a", map[string][]string{pool: {"n0", "n1"}})
	b.record("b", map[string][]string{"/other": {"n2"}})
	change := tagevents.Change{Resource: scaleSetID + "/virtualMachines/0", Kind: tagevents.KindWrite}
	if got := b.route(change); fmt.Sprint(got) != "[a]" {
		t.Fatalf("routed to %v, want [a]", got)
	}
	b.route(change)
	if ids, fresh := b.take("a"); fmt.Sprint(ids) != fmt.Sprint([]string{pool}) || fresh {
		t.Fatalf("a's changes: %v (fresh %v), want the scale set once", ids, fresh)
	}
	if got := b.nodesOn("a", []string{pool}); len(got) != 2 {
		t.Fatalf("nodes on the scale set: %v", got)
	}
	if got := b.route(tagevents.Change{Resource: "/unowned"}); len(got) != 0 {
		t.Fatalf("a change of an unowned resource routed to %v", got)
	}
	b.forget("a")
	if got := b.route(change); len(got) != 0 {
		t.Fatalf("a forgotten NodeTagSync still routed: %v", got)
	}
	if got := b.overflow(); fmt.Sprint(got) != "[b]" {
		t.Fatalf("an overflow asked %v for a full pass, want [b]", got)
	}
	if _, fresh := b.take("b"); !fresh {
		t.Fatal("the full pass after an overflow is not fresh")
	}
}
