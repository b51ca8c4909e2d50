package azure

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
	"github.com/tagsync/tagsync/internal/tags/tagstest"
)

func TestPatchTagsTagsAPI(t *testing.T) {
	env := startArmsim(t, armsimtest.WithLROPolls(1))
	sub := env.SubscriptionID
	vm := env.vm("rg", armsim.VirtualMachine{Name: "vm", Tags: map[string]string{"env": "prod", "owner": "alice", "keep": "me"}})
	p := env.provider()
	ctx := t.Context()
	nodes := []cloud.Node{node("vm", vmProviderID(sub, "rg", "vm"), nil)}
	if _, err := p.Snapshot(ctx, nodes, cloud.ReadOptions{}); err != nil { // warm the cache
		t.Fatal(err)
	}
	// Someone else writes a tag after our snapshot.
	if err := env.Server.SetTags(vm, map[string]string{"other": "x"}); err != nil {
		t.Fatal(err)
	}
	env.Server.ResetCalls()

	patch := tags.Patch{Set: tags.Set{"Env": "staging", "team": "a"}, Delete: []string{"owner", "absent"}}
	res, err := p.PatchTags(ctx, vm, patch)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"env": "staging", "team": "a", "keep": "me", "other": "x"}
	got := env.tags(vm)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("cloud tags = %v, want %v (existing spelling kept, others' tag kept)", got, want)
	}
	if fmt.Sprint(map[string]string(res.Tags)) != fmt.Sprint(want) || res.ID != vm {
		t.Errorf("returned %+v, want %v", res, want)
	}
	// Writes: Delete + Merge; reads: one fresh GET of the VM, plus the LROs'
	// final GETs of the tags (Tags.GetAtScope), never a list.
	calls := armCalls(env.Server, append(readOps, writeOps...)...)
	wantCalls := map[string]int{"Tags.GetAtScope": 2, "Tags.UpdateAtScope": 2, "VirtualMachines.Get": 1}
	if fmt.Sprint(calls) != fmt.Sprint(wantCalls) {
		t.Errorf("ARM calls = %v, want %v", calls, wantCalls)
	}
	if p.Calls()["LRO.Poll"] == 0 {
		t.Errorf("no LRO poll counted: %v", p.Calls())
	}

	// The cache saw the write: no read needed to see it.
	env.Server.ResetCalls()
	snap, err := p.Snapshot(ctx, nodes, cloud.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := snap.Resources[cloud.CanonicalID(vm)]; r.Tags["env"] != "staging" || r.Tags.Has(tags.CaseInsensitive, "owner") {
		t.Errorf("cached snapshot tags = %v", r.Tags)
	}
	if c := armCalls(env.Server, readOps...); len(c) != 0 {
		t.Errorf("snapshot after write read %v", c)
	}

	// Nothing to change: one read, no write.
	env.Server.ResetCalls()
	if _, err := p.PatchTags(ctx, vm, tags.Patch{Set: tags.Set{"ENV": "staging"}, Delete: []string{"owner"}}); err != nil {
		t.Fatal(err)
	}
	if c := armCalls(env.Server, writeOps...); len(c) != 0 {
		t.Errorf("no-op patch wrote: %v", c)
	}
}

func TestPatchTagsScaleSetAndGenericResource(t *testing.T) {
	env := startArmsim(t)
	ss := env.scaleSet("rg", armsim.ScaleSet{Name: "pool", Instances: []string{"0"}, Tags: map[string]string{"a": "1", "b": "2"}})
	disk := env.resource("rg", armsim.Resource{Type: armsim.TypeDisk, Name: "d", Tags: map[string]string{"a": "1"}})
	p := env.provider()
	for _, id := range []string{ss, disk} {
		res, err := p.PatchTags(t.Context(), id, tags.Patch{Set: tags.Set{"c": "3"}, Delete: []string{"a"}})
		if err != nil {
			t.Fatal(err)
		}
		got := env.tags(id)
		if _, ok := got["a"]; ok || got["c"] != "3" || !res.Tags.Equal(tags.CaseInsensitive, tags.Set(got)) {
			t.Errorf("%s: cloud %v, returned %v", id, got, res.Tags)
		}
	}
}

func TestPatchTagsRejected(t *testing.T) {
	env := startArmsim(t)
	vm := env.vm("rg", armsim.VirtualMachine{Name: "vm"})
	for _, m := range []WriteMethod{WriteTagsAPI, WriteResourcePatch} {
		p := env.provider(WithWriteMethod(m))
		_, err := p.PatchTags(t.Context(), vm, tags.Patch{Set: tags.Set{"azure-reserved": "x"}})
		if err == nil || !containsAll(err.Error(), vm, "azure-reserved", "400", "InvalidTagName") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err = %v, want one line naming the resource, the tag and ARM's reason", m, err)
		}
	}
	p := env.provider()
	if _, err := p.PatchTags(t.Context(), "/subscriptions/"+env.SubscriptionID+"/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/ghost",
		tags.Patch{Set: tags.Set{"a": "b"}}); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("missing VM: err = %v", err)
	}
	if _, err := p.PatchTags(t.Context(), "not-an-id", tags.Patch{}); err == nil {
		t.Error("bad ID accepted")
	}
}

func TestPatchTagsResourcePatchStaleETag(t *testing.T) {
	env := startArmsim(t, armsimtest.WithLROPolls(1))
	vm := env.vm("rg", armsim.VirtualMachine{Name: "vm", Tags: map[string]string{"env": "prod", "old": "x"}})
	var patches, concurrent atomic.Int32
	cfg := armsimConfig(env)
	cfg.HTTPClient = env.HookedClient(func(r *http.Request) {
		// Another writer changes the VM between our GET and our first PATCH.
		if r.Method == http.MethodPatch && patches.Add(1) <= concurrent.Load() {
			if err := env.Server.SetTags(vm, map[string]string{fmt.Sprintf("other%d", patches.Load()): "y"}); err != nil {
				t.Error(err)
			}
		}
	})
	p := newTestProvider(t, env, &cfg, WithWriteMethod(WriteResourcePatch))
	t.Cleanup(cfg.HTTPClient.CloseIdleConnections)

	concurrent.Store(1)
	env.Server.ResetCalls()
	res, err := p.PatchTags(t.Context(), vm, tags.Patch{Set: tags.Set{"env": "staging"}, Delete: []string{"old"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"env": "staging", "other1": "y"}
	if got := env.tags(vm); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("cloud tags = %v, want %v", got, want)
	}
	if !res.Tags.Equal(tags.CaseInsensitive, tags.Set(want)) {
		t.Errorf("returned %+v", res)
	}
	c := env.Server.Calls()
	if c.CountStatus("VirtualMachines.Update", http.StatusPreconditionFailed) != 1 || c.Count("VirtualMachines.Update") != 2 || c.Count("VirtualMachines.Get") < 2 {
		t.Errorf("calls: Update %v, Get %v", c["VirtualMachines.Update"], c["VirtualMachines.Get"])
	}

	// A writer that never stops: give up after MaxWriteAttempts.
	patches.Store(0)
	concurrent.Store(100)
	_, err = p.PatchTags(t.Context(), vm, tags.Patch{Set: tags.Set{"env": "dev"}})
	if err == nil || !containsAll(err.Error(), "412", vm, fmt.Sprintf("attempt %d", MaxWriteAttempts)) {
		t.Errorf("err = %v, want give-up after %d attempts", err, MaxWriteAttempts)
	}
	if n := patches.Load(); n != MaxWriteAttempts {
		t.Errorf("%d PATCHes, want %d", n, MaxWriteAttempts)
	}
}

// TestPatchTagsFailureDropsCachedListing: a refused write (a 51st tag)
// drops the cached listing of the resource's group, so a Snapshot within
// the cache's TTL lists afresh instead of serving the view the failed
// patch was computed from.
func TestPatchTagsFailureDropsCachedListing(t *testing.T) {
	env := startArmsim(t)
	sub := env.SubscriptionID
	vm := env.vm("rg", armsim.VirtualMachine{Name: "vm", Tags: fullTags()})
	p := env.provider()
	now := time.Unix(1_000_000, 0) // the cache never expires in this test
	p.now = func() time.Time { return now }
	ctx := t.Context()
	nodes := []cloud.Node{node("vm", vmProviderID(sub, "rg", "vm"), nil)}
	snapshotLists := func() int {
		t.Helper()
		env.Server.ResetCalls()
		if _, err := p.Snapshot(ctx, nodes, cloud.ReadOptions{}); err != nil {
			t.Fatal(err)
		}
		return env.Server.Calls().Count("VirtualMachines.List")
	}
	if n := snapshotLists(); n != 1 {
		t.Fatalf("first snapshot listed %d times", n)
	}
	if n := snapshotLists(); n != 0 {
		t.Fatalf("cached snapshot listed %d times", n)
	}
	if _, err := p.PatchTags(ctx, vm, tags.Patch{Set: tags.Set{"one-too-many": "x"}}); !errors.Is(err, cloud.ErrTooManyTags) {
		t.Fatalf("err = %v, want too many tags", err)
	}
	if n := snapshotLists(); n != 1 {
		t.Errorf("snapshot after a failed write listed %d times, want 1 (afresh)", n)
	}
}

// TestPatchTagsTagsAPISwapAtTagLimit: on a resource at the tag limit, a
// patch that deletes one tag and sets a new one ends within the limit.
// The Tags API write sends Delete first: Merge first would leave 51 tags
// for a moment, which ARM refuses.
func TestPatchTagsTagsAPISwapAtTagLimit(t *testing.T) {
	env := startArmsim(t)
	vm := env.vm("rg", armsim.VirtualMachine{Name: "vm", Tags: fullTags()})
	p := env.provider()
	res, err := p.PatchTags(t.Context(), vm, tags.Patch{Set: tags.Set{"new": "1"}, Delete: []string{"t00"}})
	if err != nil {
		t.Fatal(err)
	}
	want := fullTags()
	delete(want, "t00")
	want["new"] = "1"
	got := env.tags(vm)
	if fmt.Sprint(got) != fmt.Sprint(want) || !res.Tags.Equal(tags.CaseInsensitive, tags.Set(want)) {
		t.Errorf("cloud tags %v, returned %v, want %v", got, res.Tags, want)
	}
}

// TestPatchTagsTagsAPIDeleteAndSetOneNameInTwoSpellings: a patch that
// deletes "env" and sets "Env" sets the tag (names are case-insensitive)
// and sends no Delete: after the Merge, a Delete of env=prod would remove
// an Env=prod just set; before it, it would rename env to Env.
func TestPatchTagsTagsAPIDeleteAndSetOneNameInTwoSpellings(t *testing.T) {
	env := startArmsim(t)
	vm := env.vm("rg", armsim.VirtualMachine{Name: "vm", Tags: map[string]string{"env": "prod"}})
	p := env.provider()
	for _, c := range []struct {
		value  string
		writes int
	}{{"prod", 0}, {"staging", 1}} {
		env.Server.ResetCalls()
		if _, err := p.PatchTags(t.Context(), vm, tags.Patch{Set: tags.Set{"Env": c.value}, Delete: []string{"env"}}); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"env": c.value}
		if got := env.tags(vm); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Env=%s: cloud tags %v, want %v (set, existing spelling kept)", c.value, got, want)
		}
		if n := env.Server.Calls().Count("Tags.UpdateAtScope"); n != c.writes {
			t.Errorf("Env=%s: %d Tags API writes, want %d", c.value, n, c.writes)
		}
	}
}

// fullTags returns armsim.MaxTags tags t00, t01, ...
func fullTags() map[string]string { return tagstest.Numbered("t", armsim.MaxTags) }

// TestErrorKinds: ARM's refusals reach the caller as errors that report
// their cloud kind to errors.Is, still unwrap to *azcore.ResponseError and
// read as one line naming the resource and ARM's answer.
func TestErrorKinds(t *testing.T) {
	env := startArmsim(t)
	sub := env.SubscriptionID
	vm := env.vm("rg", armsim.VirtualMachine{Name: "vm", Tags: fullTags()})
	ghost := VirtualMachineResourceID(sub, "rg", "ghost")
	kinds := []error{cloud.ErrThrottled, cloud.ErrForbidden, cloud.ErrNotFound, cloud.ErrTooManyTags}
	for _, c := range []struct {
		name   string
		fault  *armsim.Fault
		id     string
		patch  tags.Patch
		kind   error // nil: none of kinds
		status int
		code   string
	}{
		{name: "forbidden", id: vm, patch: tags.Patch{Set: tags.Set{"t00": "w"}},
			fault: &armsim.Fault{Operation: "VirtualMachines.Get", Count: 1, Status: http.StatusForbidden, Code: "AuthorizationFailed",
				Message: "The client does not have authorization to perform action 'Microsoft.Compute/virtualMachines/read'."},
			kind: cloud.ErrForbidden, status: http.StatusForbidden, code: "AuthorizationFailed"},
		{name: "not found", id: ghost, patch: tags.Patch{Set: tags.Set{"a": "b"}},
			kind: cloud.ErrNotFound, status: http.StatusNotFound, code: "ResourceNotFound"},
		{name: "too many tags", id: vm, patch: tags.Patch{Set: tags.Set{"one-too-many": "x"}},
			kind: cloud.ErrTooManyTags, status: http.StatusBadRequest, code: armsim.CodeTooManyTags},
		{name: "throttled", id: vm, patch: tags.Patch{Set: tags.Set{"t00": "w"}},
			fault: &armsim.Fault{Operation: "Tags.UpdateAtScope", Count: 1, Status: http.StatusTooManyRequests, RetryAfter: 100 * time.Second},
			kind:  cloud.ErrThrottled, status: http.StatusTooManyRequests, code: "SubscriptionRequestsThrottled"},
		{name: "unavailable with Retry-After", id: vm, patch: tags.Patch{Set: tags.Set{"t00": "w"}},
			fault: &armsim.Fault{Operation: "Tags.UpdateAtScope", Count: 1, Status: http.StatusServiceUnavailable, RetryAfter: 100 * time.Second},
			kind:  cloud.ErrThrottled, status: http.StatusServiceUnavailable, code: "ServiceUnavailable"},
		{name: "server error", id: vm, patch: tags.Patch{Set: tags.Set{"t00": "w"}},
			fault:  &armsim.Fault{Operation: "Tags.UpdateAtScope", Count: 4, Status: http.StatusInternalServerError},
			status: http.StatusInternalServerError, code: "InternalServerError"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env.Server.ClearFaults()
			if c.fault != nil {
				env.Server.AddFault(*c.fault)
			}
			// Own gates: a throttled case must not hold the next one's calls.
			p := newTestProvider(t, env, nil, WithThrottleGates(NewThrottleGates()))
			_, err := p.PatchTags(t.Context(), c.id, c.patch)
			if err == nil {
				t.Fatal("no error")
			}
			for _, k := range kinds {
				if got, want := errors.Is(err, k), k == c.kind; got != want {
					t.Errorf("errors.Is(err, %q) = %t, want %t; err = %v", k, got, want, err)
				}
			}
			var re *azcore.ResponseError
			if !errors.As(err, &re) || re.StatusCode != c.status {
				t.Errorf("errors.As *azcore.ResponseError: %v, want status %d", re, c.status)
			}
			if msg := err.Error(); !containsAll(msg, c.id, fmt.Sprintf("ARM answered %d %s", c.status, c.code)) || strings.Contains(msg, "\n") {
				t.Errorf("message %q: want one line naming the resource and ARM's answer", msg)
			}
			if d, ok := cloud.RetryAfter(err); ok != (c.kind == cloud.ErrThrottled) || (ok && (d <= 90*time.Second || d > 100*time.Second)) {
				t.Errorf("cloud.RetryAfter = %v, %t", d, ok)
			}
		})
	}
}
