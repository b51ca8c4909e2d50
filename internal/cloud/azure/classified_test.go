package azure

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
	"github.com/tagsync/tagsync/internal/tags/tagstest"
)

// Classifier tags of the tests.
const (
	clusterTag = "kubernetes.io_cluster.c1"
	ownerTag   = "tagsync.io_owner"
)

// classifiers are the two classifiers the discovery tests OR.
var classifiers = []cloud.Classifier{{Name: clusterTag, Value: "owned"}, {Name: ownerTag, Value: "c1"}}

// discoveredIDs returns the IDs of d's resources, in d's order.
func discoveredIDs(d cloud.Discovery) []string {
	out := make([]string, 0, len(d.Resources))
	for _, r := range d.Resources {
		out = append(out, r.ID)
	}
	return out
}

// sortedCanonical returns ids sorted by CanonicalID.
func sortedCanonical(ids []string) []string {
	out := append([]string(nil), ids...)
	sort.Slice(out, func(i, j int) bool { return cloud.CanonicalID(out[i]) < cloud.CanonicalID(out[j]) })
	return out
}

// TestDiscoverTwoSubscriptions: one Resource Graph query over two
// subscriptions with two OR-ed classifiers finds every classified resource
// and resource group once, with all its tags and its type's rules, and
// nothing else.
func TestDiscoverTwoSubscriptions(t *testing.T) {
	env := startArmsim(t)
	a, b := env.SubscriptionID, otherSubscription
	s := env.Server
	est := armsimtest.ClusterEstate{Infra: "c1", Subscriptions: []string{a, b}, Tags: map[string]string{clusterTag: "owned", "env": "prod"}}
	if err := est.Seed(s); err != nil {
		t.Fatal(err)
	}
	both := must[string](t)(s.CreateResource(a, "shared", armsim.Resource{Type: armsim.TypeDisk, Name: "both",
		Tags: map[string]string{clusterTag: "owned", ownerTag: "c1"}}))
	ownerOnly := must[string](t)(s.CreateResource(b, "shared", armsim.Resource{Type: armsim.TypeNetworkInterface, Name: "nic",
		Tags: map[string]string{ownerTag: "c1"}}))
	// The classifier's name in another case is the same tag name to ARM.
	otherCase := must[string](t)(s.CreateResource(a, "shared", armsim.Resource{Type: armsim.TypeDisk, Name: "other-case",
		Tags: map[string]string{strings.ToUpper(clusterTag): "owned"}}))
	// Not classified: another cluster's value, the value in another case,
	// no tags, and a subscription carrying the classifier.
	for _, r := range []armsim.Resource{
		{Type: armsim.TypeDisk, Name: "other-cluster", Tags: map[string]string{clusterTag: "shared"}},
		{Type: armsim.TypeDisk, Name: "value-case", Tags: map[string]string{clusterTag: "OWNED"}},
		{Type: armsim.TypeDisk, Name: "untagged"},
	} {
		must[string](t)(s.CreateResource(a, "shared", r))
	}
	if err := s.SetTags("/subscriptions/"+a, map[string]string{clusterTag: "owned"}); err != nil {
		t.Fatal(err)
	}
	p := env.provider()
	s.ResetCalls()

	d, err := p.Discover(t.Context(), classifiers, cloud.DiscoverOptions{Scopes: []string{a, strings.ToUpper(b), a}})
	if err != nil {
		t.Fatal(err)
	}
	want := sortedCanonical(append(append(est.ResourceIDs(), est.GroupIDs()...), both, ownerOnly, otherCase))
	if got := discoveredIDs(d); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("found\n%v\nwant\n%v", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if d.Calls != 1 || len(d.Failed) != 0 || s.Calls().Count("ResourceGraph.Resources") != 1 || p.Calls()["ResourceGraph.Resources"] != 1 {
		t.Errorf("calls %d (armsim %d), failed %v", d.Calls, s.Calls().Count("ResourceGraph.Resources"), d.Failed)
	}
	byID := map[string]cloud.Classified{}
	for _, r := range d.Resources {
		byID[cloud.CanonicalID(r.ID)] = r
	}
	check := func(id, typ, scope string, maxTags, maxName int) {
		t.Helper()
		r, ok := byID[cloud.CanonicalID(id)]
		switch {
		case !ok:
			t.Errorf("%s not found", id)
		case r.Type != typ || r.Scope != scope || r.Rules.MaxTags != maxTags || r.Rules.MaxNameLen != maxName || !r.Rules.CaseInsensitive:
			t.Errorf("%s: type %q scope %q rules %+v", id, r.Type, r.Scope, r.Rules)
		}
	}
	check(est.ID(a, armsim.TypeDNSZone, 0), "microsoft.network/dnszones", a, 15, 512)
	check(est.ID(b, armsim.TypePrivateDNSZone, 0), "microsoft.network/privatednszones", strings.ToUpper(b), 15, 512)
	check(est.ID(a, armsim.TypeStorageAccount, 0), "microsoft.storage/storageaccounts", a, 50, 128)
	check(est.ID(b, armsim.TypeDisk, 0), "microsoft.compute/disks", strings.ToUpper(b), 50, 512)
	check(est.GroupID(a), "microsoft.resources/subscriptions/resourcegroups", a, 50, 512)
	if r := byID[cloud.CanonicalID(both)]; fmt.Sprint(map[string]string(r.Tags)) != fmt.Sprint(map[string]string{clusterTag: "owned", ownerTag: "c1"}) {
		t.Errorf("tags of %s: %v", both, r.Tags)
	}
	if r := byID[cloud.CanonicalID(est.GroupID(b))]; r.Tags["env"] != "prod" || r.Tags[clusterTag] != "owned" {
		t.Errorf("group tags %v", r.Tags)
	}

	// No classifier: nothing to find, no call.
	if d, err := p.Discover(t.Context(), nil, cloud.DiscoverOptions{}); err != nil || d.Calls != 0 || len(d.Resources) != 0 {
		t.Errorf("no classifiers: %+v, %v", d, err)
	}
}

// TestDiscoverPages: more than 1000 rows cost ceil(n/1000) requests, the
// default subscription is searched when no scope is given, and
// Discovery.Calls counts a retried request twice.
func TestDiscoverPages(t *testing.T) {
	env := startArmsim(t)
	env.seedOwned("big", 250)
	p := env.provider()
	d, err := p.Discover(t.Context(), classifiers, cloud.DiscoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(d.Resources); n != 2501 || d.Calls != 3 || env.Server.Calls().Count("ResourceGraph.Resources") != 3 {
		t.Errorf("%d resources in %d calls, want 2501 in 3", n, d.Calls)
	}
	env.Server.FailNext("ResourceGraph.Resources", 1, http.StatusInternalServerError)
	d, err = p.Discover(t.Context(), classifiers, cloud.DiscoverOptions{})
	if err != nil || len(d.Resources) != 2501 || d.Calls != 4 || len(d.Failed) != 0 {
		t.Errorf("with a retry: %d resources in %d calls, failed %v, err %v", len(d.Resources), d.Calls, d.Failed, err)
	}

	cfg := armsimConfig(env)
	cfg.DefaultSubscription = ""
	bare := newTestProvider(t, env, &cfg)
	if _, err := bare.Discover(t.Context(), classifiers, cloud.DiscoverOptions{}); err == nil || !strings.Contains(err.Error(), FlagSubscription) {
		t.Errorf("no subscription: err = %v", err)
	}
}

// TestDiscoverQuotesInClassifiers: a classifier's quotes and backslashes
// are escaped in the query: the value matches literally and cannot add a
// condition.
func TestDiscoverQuotesInClassifiers(t *testing.T) {
	env := startArmsim(t)
	tricky := cloud.Classifier{Name: `o'brien "x"`, Value: `it's a \ "test"` + "\t"}
	injection := cloud.Classifier{Name: "team", Value: `x' or tags['env'] == 'prod`}
	found := env.resource("rg", armsim.Resource{Type: armsim.TypeDisk, Name: "tricky", Tags: map[string]string{tricky.Name: tricky.Value}})
	env.resource("rg", armsim.Resource{Type: armsim.TypeDisk, Name: "prod", Tags: map[string]string{"env": "prod", "team": "x"}})
	env.resource("rg", armsim.Resource{Type: armsim.TypeDisk, Name: "near", Tags: map[string]string{tricky.Name: "it's a "}})
	p := env.provider()
	d, err := p.Discover(t.Context(), []cloud.Classifier{tricky, injection}, cloud.DiscoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := discoveredIDs(d); len(got) != 1 || got[0] != found || len(d.Failed) != 0 {
		t.Errorf("found %v, failed %v; want only %s", got, d.Failed, found)
	}
	q, err := discoveryQuery([]cloud.Classifier{injection, tricky, injection})
	want := `resources | union resourcecontainers | where type != 'microsoft.resources/subscriptions' ` +
		`| mv-expand bagexpansion=array tag = tags | where ` +
		`(tostring(tag[0]) =~ 'o\'brien "x"' and tostring(tag[1]) == 'it\'s a \\ "test"\t') or ` +
		`(tostring(tag[0]) =~ 'team' and tostring(tag[1]) == 'x\' or tags[\'env\'] == \'prod') ` +
		`| project id, name, type, subscriptionId, resourceGroup, tags`
	if err != nil || q != want {
		t.Errorf("query\n%s\nwant\n%s (%v)", q, want, err)
	}
	for _, bad := range []cloud.Classifier{{Name: "", Value: "x"}, {Name: "a", Value: "bell\a"}, {Name: "a", Value: "\xff"}} {
		if _, err := p.Discover(t.Context(), []cloud.Classifier{bad}, cloud.DiscoverOptions{}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestDiscoverForbiddenSubscription: Resource Graph refuses a query
// naming a subscription the caller may not read as a whole; Discover then
// asks each subscription alone, reports the forbidden one and returns the
// other's resources.
func TestDiscoverForbiddenSubscription(t *testing.T) {
	env := startArmsim(t)
	a, b := env.SubscriptionID, otherSubscription
	env.seedOwned("c1", 0, a, b)
	env.Server.AddFault(armsim.Fault{Status: http.StatusForbidden, Scope: "/subscriptions/" + b,
		Message: "The client does not have authorization to read subscription " + b + "."})
	p := env.provider()
	d, err := p.Discover(t.Context(), classifiers, cloud.DiscoverOptions{Scopes: []string{a, b}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range d.Resources {
		if r.Scope != a {
			t.Errorf("%s found in %s", r.ID, r.Scope)
		}
	}
	if len(d.Resources) != len(armsimtest.ClusterTypes)+1 || d.Calls != 3 {
		t.Errorf("%d resources in %d calls, want %d in 3 (both, then each alone)", len(d.Resources), d.Calls, len(armsimtest.ClusterTypes)+1)
	}
	if len(d.Failed) != 1 || d.Failed[0].Scope != b || !errors.Is(d.Failed[0].Err, cloud.ErrForbidden) ||
		!containsAll(d.Failed[0].Err.Error(), "subscription "+b, "403", "AccessDenied") {
		t.Errorf("failed %v", d.Failed)
	}
}

// TestDiscoverThrottled: a throttled query fails every subscription (ARG's
// quota is per principal, not per subscription) with a ThrottledError, and
// closes the Resource Graph gate: the next search is not sent.
func TestDiscoverThrottled(t *testing.T) {
	env := startArmsim(t)
	a, b := env.SubscriptionID, otherSubscription
	env.Server.AddFault(armsim.Fault{Operation: "ResourceGraph.Resources", Status: http.StatusTooManyRequests, RetryAfter: time.Hour})
	p := env.provider(WithThrottleGates(NewThrottleGates()))
	for i, wantCalls := range []int{1, 0} {
		d, err := p.Discover(t.Context(), classifiers, cloud.DiscoverOptions{Scopes: []string{a, b}})
		if err != nil {
			t.Fatal(err)
		}
		if d.Calls != wantCalls || len(d.Failed) != 2 || len(d.Resources) != 0 {
			t.Fatalf("search %d: calls %d, failed %v", i, d.Calls, d.Failed)
		}
		for _, f := range d.Failed {
			var te *cloud.ThrottledError
			if !errors.As(f.Err, &te) || te.RetryAfter < 30*time.Minute || te.Scope != "Resource Graph queries" {
				t.Errorf("search %d: %s: %v", i, f.Scope, f.Err)
			}
		}
	}
	if n := env.Server.Calls().Count("ResourceGraph.Resources"); n != 1 {
		t.Errorf("%d queries sent, want 1", n)
	}
	if held := counterValue(t, p.reg, cloud.MetricHeld, map[string]string{"bucket": "resourcegraph"}); held != 1 {
		t.Errorf("held %v", held)
	}
}

// TestDiscoverWaitsForGraphQuota: when Resource Graph says its quota is
// spent until a reset (x-ms-user-quota-remaining 0), the next page waits
// for the reset instead of being throttled, and the search completes.
func TestDiscoverWaitsForGraphQuota(t *testing.T) {
	env := startArmsim(t, armsimtest.WithThrottle(armsim.ThrottleOptions{Graph: armsim.Bucket{Capacity: 2, RefillPerSecond: 2}}))
	env.seedOwned("big", 250)
	p := env.provider(WithThrottleGates(NewThrottleGates()))
	d, err := p.Discover(t.Context(), classifiers, cloud.DiscoverOptions{})
	if err != nil || len(d.Failed) != 0 || len(d.Resources) != 2501 || d.Calls != 3 {
		t.Fatalf("%d resources in %d calls, failed %v, err %v", len(d.Resources), d.Calls, d.Failed, err)
	}
	if n := env.Server.Calls().CountStatus("ResourceGraph.Resources", http.StatusTooManyRequests); n != 0 {
		t.Errorf("%d queries throttled", n)
	}
	if held := counterValue(t, p.reg, cloud.MetricHeld, map[string]string{"bucket": "resourcegraph"}); held != 1 {
		t.Errorf("held %v, want the third page held once", held)
	}
}

// tagsPatch is one Tags API PATCH a test saw.
type tagsPatch struct {
	Scope, Operation string
	Tags             map[string]string
}

// patchRecorder records the Tags API PATCHes and counts GETs.
type patchRecorder struct {
	mu      sync.Mutex
	patches []tagsPatch
	gets    int
}

// hook records one request.
func (r *patchRecorder) hook(req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if req.Method == http.MethodGet && strings.HasPrefix(req.URL.Path, "/subscriptions/") {
		r.gets++
	}
	if req.Method != http.MethodPatch || req.Body == nil {
		return
	}
	body, _ := io.ReadAll(req.Body)
	req.Body = io.NopCloser(bytes.NewReader(body))
	var b struct {
		Operation  string `json:"operation"`
		Properties struct {
			Tags map[string]string `json:"tags"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(body, &b)
	scope := strings.TrimSuffix(req.URL.Path, "/providers/Microsoft.Resources/tags/default")
	r.patches = append(r.patches, tagsPatch{Scope: cloud.CanonicalID(scope), Operation: b.Operation, Tags: b.Properties.Tags})
}

// ops returns the operations sent to each scope, in order.
func (r *patchRecorder) ops() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]string{}
	for _, p := range r.patches {
		out[p.Scope] = append(out[p.Scope], p.Operation)
	}
	return out
}

// recordingProvider is a test provider whose requests rec sees.
func recordingProvider(t *testing.T, env *armsimEnv, rec *patchRecorder, opts ...Option) *testProvider {
	cfg := armsimConfig(env)
	cfg.HTTPClient = env.HookedClient(rec.hook)
	t.Cleanup(cfg.HTTPClient.CloseIdleConnections)
	return newTestProvider(t, env, &cfg, opts...)
}

// TestWriteTagsMixedResources: one set and one delete on 20 resources of
// every cluster type: per resource one Delete then one Merge, no read;
// the DNS zone at its 15-tag limit refuses the new tag while the others
// take it; results come in input order.
func TestWriteTagsMixedResources(t *testing.T) {
	env := startArmsim(t)
	s, sub := env.Server, env.SubscriptionID
	est := armsimtest.ClusterEstate{Infra: "c1", PerType: 2, Tags: map[string]string{clusterTag: "owned", "old": "x"}}
	if err := est.Seed(s); err != nil {
		t.Fatal(err)
	}
	ids := est.ResourceIDs()
	if len(ids) != 20 {
		t.Fatalf("%d resources", len(ids))
	}
	zone := est.ID(sub, armsim.TypeDNSZone, 1)
	full := tagstest.Numbered("z", 14)
	full[clusterTag] = "owned"
	if err := s.ReplaceTags(zone, full); err != nil { // 15 tags, none of them "old"
		t.Fatal(err)
	}
	rec := &patchRecorder{}
	// 40 writes: past the default budget's burst of 20 they would go at 4/s.
	p := recordingProvider(t, env, rec, WithRateLimit(RateLimit{WritesPerSecond: 1000, WriteBurst: 50}))
	env.Server.ResetCalls()
	ids[3] = strings.ToUpper(ids[3]) // IDs are case-insensitive; results keep the caller's spelling
	res := p.WriteTags(t.Context(), []cloud.TagWrite{
		{IDs: ids[:7], Patch: tags.Patch{Set: tags.Set{"owner": "team-a"}, Delete: []string{"old"}}},
		{IDs: ids[7:], Patch: tags.Patch{Set: tags.Set{"owner": "team-a"}, Delete: []string{"OLD"}}},
	}, nil)
	if len(res) != 20 {
		t.Fatalf("%d results", len(res))
	}
	for i, r := range res {
		if r.ID != ids[i] {
			t.Errorf("result %d is %s, want %s", i, r.ID, ids[i])
		}
		got := env.tags(r.ID)
		if cloud.CanonicalID(r.ID) == cloud.CanonicalID(zone) {
			if !errors.Is(r.Err, cloud.ErrTooManyTags) || !containsAll(r.Err.Error(), zone, "owner", "TooManyTags") || fmt.Sprint(got) != fmt.Sprint(full) {
				t.Errorf("zone: err %v, tags %v", r.Err, got)
			}
			continue
		}
		if r.Err != nil || got["owner"] != "team-a" || got["old"] != "" || got[clusterTag] != "owned" || len(got) != 2 {
			t.Errorf("%s: err %v, tags %v", r.ID, r.Err, got)
		}
	}
	ops := rec.ops()
	if len(ops) != 20 {
		t.Errorf("%d scopes written, want 20", len(ops))
	}
	for _, id := range ids {
		if o := ops[cloud.CanonicalID(id)]; fmt.Sprint(o) != "[Delete Merge]" {
			t.Errorf("%s: operations %v, want one Delete then one Merge", id, o)
		}
	}
	for _, pt := range rec.patches {
		if pt.Operation == "Delete" && (len(pt.Tags) != 1 || !strings.EqualFold(firstKey(pt.Tags), "old") || firstValue(pt.Tags) != "") {
			t.Errorf("delete payload %v, want old with no value (any value)", pt.Tags)
		}
	}
	if rec.gets != 0 || s.Calls().Count("Tags.GetAtScope") != 0 || s.Calls().Count("Resources.GetByID") != 0 {
		t.Errorf("%d reads", rec.gets)
	}
}

// firstKey returns a map's only key.
func firstKey(m map[string]string) string {
	for k := range m {
		return k
	}
	return ""
}

// firstValue returns a map's only value.
func firstValue(m map[string]string) string {
	for _, v := range m {
		return v
	}
	return ""
}

// TestWriteTagsExpect: a delete guarded by Expect removes the tag only
// while it has the expected value; an unguarded one removes any value; a
// name the patch also sets is set, not deleted.
func TestWriteTagsExpect(t *testing.T) {
	env := startArmsim(t)
	s, sub := env.Server, env.SubscriptionID
	unchanged := env.resource("rg", armsim.Resource{Type: armsim.TypeDisk, Name: "unchanged", Tags: map[string]string{"Owner": "a", "stale": "1", "env": "dev"}})
	changed := env.resource("rg", armsim.Resource{Type: armsim.TypePublicIP, Name: "changed", Tags: map[string]string{"owner": "b", "stale": "2", "env": "dev"}})
	group, err := s.CreateResourceGroup(sub, armsim.ResourceGroup{Name: "rg-tagged", Tags: map[string]string{"owner": "a", "stale": "3"}})
	if err != nil {
		t.Fatal(err)
	}
	rec := &patchRecorder{}
	p := recordingProvider(t, env, rec)
	res := p.WriteTags(t.Context(), []cloud.TagWrite{{
		IDs:    []string{unchanged, changed, group},
		Patch:  tags.Patch{Set: tags.Set{"Env": "prod"}, Delete: []string{"env", "owner", "stale"}},
		Expect: tags.Set{"OWNER": "a", "env": "dev"},
	}}, nil)
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("%s: %v", r.ID, r.Err)
		}
	}
	for id, want := range map[string]map[string]string{
		unchanged: {"env": "prod"},
		changed:   {"owner": "b", "env": "prod"}, // someone changed owner: kept
		group:     {"Env": "prod"},
	} {
		if got := env.tags(id); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: tags %v, want %v", id, got, want)
		}
	}
	for _, pt := range rec.patches {
		if pt.Operation == "Delete" && fmt.Sprint(pt.Tags) != fmt.Sprint(map[string]string{"owner": "a", "stale": ""}) {
			t.Errorf("delete payload %v", pt.Tags)
		}
	}
}

// TestWriteTagsErrors: each resource's error has its cloud kind; the
// others are written.
func TestWriteTagsErrors(t *testing.T) {
	env := startArmsim(t)
	s, sub := env.Server, env.SubscriptionID
	ok := env.resource("rg", armsim.Resource{Type: armsim.TypeDisk, Name: "ok"})
	locked := env.resource("rg-locked", armsim.Resource{Type: armsim.TypeDisk, Name: "locked"})
	s.AddFault(armsim.Fault{Status: http.StatusForbidden, Scope: "/subscriptions/" + sub + "/resourceGroups/rg-locked"})
	gone := "/subscriptions/" + sub + "/resourceGroups/rg/providers/Microsoft.Compute/disks/gone"
	p := env.provider()
	res := p.WriteTags(t.Context(), []cloud.TagWrite{{IDs: []string{locked, gone, "not-an-id", ok}, Patch: tags.Patch{Set: tags.Set{"a": "1"}}}}, nil)
	for i, want := range []error{cloud.ErrForbidden, cloud.ErrNotFound, nil, nil} {
		if r := res[i]; want != nil && !errors.Is(r.Err, want) {
			t.Errorf("%s: err %v, want %v", r.ID, r.Err, want)
		}
	}
	if res[2].Err == nil || res[3].Err != nil || env.tags(ok)["a"] != "1" {
		t.Errorf("bad ID: %v; ok: %v", res[2].Err, res[3].Err)
	}
	if res := p.WriteTags(t.Context(), nil, nil); len(res) != 0 {
		t.Errorf("no writes: %v", res)
	}
}

// TestWriteTagsThrottleStorm: ARM throttles every write with a long
// Retry-After: every resource fails with a ThrottledError, and only the
// requests already in flight when the first answer came were sent (at
// most one per worker); the Merges after throttled Deletes are not sent.
func TestWriteTagsThrottleStorm(t *testing.T) {
	env := startArmsim(t)
	s, sub := env.Server, env.SubscriptionID
	est := armsimtest.ClusterEstate{Infra: "c1", PerType: 2, Tags: map[string]string{"old": "x"}}
	if err := est.Seed(s); err != nil {
		t.Fatal(err)
	}
	s.AddFault(armsim.Fault{Operation: "Tags.UpdateAtScope", Status: http.StatusTooManyRequests, RetryAfter: time.Hour})
	c := &sentCounter{n: map[string]int{}}
	const workers = 4
	p := newTestProvider(t, env, countingConfig(t, env, c), WithThrottleGates(NewThrottleGates()), WithWriteConcurrency(workers))
	res := p.WriteTags(t.Context(), []cloud.TagWrite{{IDs: est.ResourceIDs(), Patch: tags.Patch{Set: tags.Set{"new": "1"}, Delete: []string{"old"}}}}, nil)
	for _, r := range res {
		if wait, ok := cloud.RetryAfter(r.Err); !errors.Is(r.Err, cloud.ErrThrottled) || !ok || wait < 30*time.Minute {
			t.Errorf("%s: %v", r.ID, r.Err)
		}
	}
	if n := c.get(sub, "writes"); n < 1 || n > workers {
		t.Errorf("%d writes sent to the throttled subscription, want 1..%d", n, workers)
	}
	if n := s.Calls().Count("Tags.UpdateAtScope"); n != c.get(sub, "writes") {
		t.Errorf("armsim saw %d writes, the wire %d", n, c.get(sub, "writes"))
	}
	if got := env.tags(est.ID(sub, armsim.TypeDisk, 0)); got["old"] != "x" || got["new"] != "" {
		t.Errorf("tags %v", got)
	}
}

// TestRulesFor: the azure package's type limits agree with armsim's.
func TestRulesFor(t *testing.T) {
	if fmt.Sprint(SmallTagLimitTypes()) != fmt.Sprint(armsim.SmallTagLimitTypes) {
		t.Errorf("15-tag types %v, armsim %v", SmallTagLimitTypes(), armsim.SmallTagLimitTypes)
	}
	for _, typ := range append(append([]string{armsim.TypeResourceGroup, "microsoft.resources/subscriptions/resourcegroups",
		armsim.TypeVirtualMachine, armsim.TypeScaleSet, armsim.TypePrivateDNSZoneLink, "MICROSOFT.CDN/PROFILES"},
		armsimtest.ClusterTypes...), armsim.SmallTagLimitTypes...) {
		r := RulesFor(typ)
		if r.MaxTags != armsim.TagLimit(typ) || r.MaxNameLen != armsim.TagNameLimit(typ) || r.MaxValueLen != armsim.MaxTagValueLength || !r.CaseInsensitive {
			t.Errorf("%s: %+v; armsim: %d tags, names of %d", typ, r, armsim.TagLimit(typ), armsim.TagNameLimit(typ))
		}
	}
	if RulesFor(armsim.TypeStorageAccount).MaxNameLen != 128 || RulesFor("Microsoft.Network/dnsZones").MaxTags != 15 {
		t.Error("storage or DNS rules")
	}
	// The per-type name rules: what armsim refuses, tagsync refuses before
	// writing (a skipped tag, not a failed call), and the rest it accepts.
	for _, typ := range []string{armsim.TypeDNSZone, armsim.TypePrivateDNSZone, "Microsoft.Network/trafficManagerProfiles",
		"Microsoft.Network/frontDoors", armsim.TypeNetworkInterface} {
		for _, name := range []string{"cost center", "team(a)", "1team", "a#b", "a:b", "team-a_b.c"} {
			want := armsim.ValidateTags(typ, map[string]string{name: "v"})
			if got := RulesFor(typ).ValidateName(name); (got == nil) != (want == nil) {
				t.Errorf("%s, name %q: tagsync says %v, armsim %v", typ, name, got, want)
			}
		}
	}
}

// TestGraphGateAndQuotaHeaders: Resource Graph requests have their own
// tenant-level gate, and its quota headers close it until the reset.
func TestGraphGateAndQuotaHeaders(t *testing.T) {
	u := &url.URL{Host: "Management.Azure.com", Path: "/providers/Microsoft.ResourceGraph/resources"}
	k := gateKeyOf(u, http.MethodPost)
	if k != (gateKey{host: "management.azure.com", bucket: bucketGraph}) || k.scope() != "Resource Graph queries" {
		t.Errorf("key %+v scope %q", k, k.scope())
	}
	if k := gateKeyOf(&url.URL{Host: "h", Path: "/subscriptions/S/providers/Microsoft.ResourceGraph/x"}, http.MethodPost); k.bucket != bucketWrites || k.sub != "s" {
		t.Errorf("subscription path %+v", k)
	}
	resp := func(remaining, resets string) *http.Response {
		h := http.Header{}
		h.Set(headerQuotaRemaining, remaining)
		h.Set(headerQuotaResetsAfter, resets)
		return &http.Response{StatusCode: http.StatusOK, Header: h}
	}
	for _, c := range []struct {
		key       gateKey
		remaining string
		resets    string
		want      time.Duration
	}{
		{k, "0", "00:00:04", 4 * time.Second},
		{k, "0", "01:02:03.5", time.Hour + 2*time.Minute + 3500*time.Millisecond},
		{k, "3", "00:00:04", 0},
		{k, "0", "4s", 0},
		{gateKey{sub: "s", bucket: bucketWrites}, "0", "00:00:04", 0},
	} {
		if got := graphQuotaWait(c.key, resp(c.remaining, c.resets)); got != c.want {
			t.Errorf("%v %s %s: %v, want %v", c.key.bucket, c.remaining, c.resets, got, c.want)
		}
	}
}

// holdingTransport holds every tag write to one subscription until
// release is closed, and records the subscription of each answered write
// in order.
type holdingTransport struct {
	base    http.RoundTripper
	held    string // lower-cased subscription
	release chan struct{}

	mu       sync.Mutex
	answered []string
	onAnswer func(answered []string)
}

func (h *holdingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	sub := strings.ToLower(subscriptionOf(r.URL.Path))
	if r.Method == http.MethodPatch && sub == h.held {
		select {
		case <-h.release:
		case <-time.After(20 * time.Second): // a guard, so that a failing test ends
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	resp, err := h.base.RoundTrip(r)
	if err == nil && r.Method == http.MethodPatch {
		h.mu.Lock()
		h.answered = append(h.answered, sub)
		h.onAnswer(h.answered)
		h.mu.Unlock()
	}
	return resp, err
}

// TestWriteTagsSubscriptionsInParallel: the first subscription's writes
// cannot get through (as when its quota is spent), yet the second
// subscription's, listed after them, are all written meanwhile: the
// workers are shared among the subscriptions. Results keep the input
// order.
func TestWriteTagsSubscriptionsInParallel(t *testing.T) {
	env := startArmsim(t)
	a, b := strings.ToLower(env.SubscriptionID), otherSubscription
	est := env.seedOwned("c1", 2, a, b)
	ids := est.ResourceIDs() // 20 in a, then 20 in b
	h := &holdingTransport{base: env.HTTPClient.Transport, held: a, release: make(chan struct{})}
	h.onAnswer = func(answered []string) {
		if n := len(answered); n > 0 && answered[n-1] == b && n == 20 {
			close(h.release) // every write to b is answered: let a's through
		}
	}
	cfg := armsimConfig(env)
	cfg.HTTPClient = &http.Client{Transport: h}
	t.Cleanup(cfg.HTTPClient.CloseIdleConnections)
	p := newTestProvider(t, env, &cfg)
	res := p.WriteTags(t.Context(), []cloud.TagWrite{{IDs: ids, Patch: tags.Patch{Set: tags.Set{"owner": "team-a"}}}}, nil)
	for i, r := range res {
		if r.ID != ids[i] || r.Err != nil {
			t.Errorf("result %d: %s %v, want %s written", i, r.ID, r.Err, ids[i])
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	want := append(slices.Repeat([]string{b}, 20), slices.Repeat([]string{a}, 20)...)
	if !slices.Equal(h.answered, want) {
		t.Errorf("writes answered by subscription: %v\nwant all of %s first", h.answered, b)
	}
}

// TestWriteQueueRoundRobin: free workers take the subscriptions in turn,
// each subscription's resources in order.
func TestWriteQueueRoundRobin(t *testing.T) {
	q := newWriteQueue([]string{"a", "a", "a", "b", "b", "c"}, 2)
	var got []int
	for {
		i, s, ok := q.take()
		if !ok {
			break
		}
		got = append(got, i)
		q.done(s)
	}
	if want := []int{0, 3, 5, 1, 4, 2}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	// A subscription holds at most its share: 2 workers, 2 subscriptions.
	q = newWriteQueue([]string{"a", "a", "a", "b"}, 2)
	i1, _, _ := q.take()
	i2, _, _ := q.take()
	if i1 != 0 || i2 != 3 {
		t.Errorf("first two jobs %d, %d; want 0 (a) and 3 (b)", i1, i2)
	}
}

// TestWriteTagsStreamsAndStops: each resource is reported pending before
// its write reaches ARM and with its result while others are still
// unwritten; an error from the report stops the writes: ARM sees no write
// after it, and the resources left fail wrapping it.
func TestWriteTagsStreamsAndStops(t *testing.T) {
	env := startArmsim(t)
	est := env.seedOwned("st", 2)
	ids := est.ResourceIDs() // 20
	cfg := armsimConfig(env)
	p := newTestProvider(t, env, &cfg, WithWriteConcurrency(1))
	stop := errors.New("audit sink full")
	var reports []string
	each := func(r cloud.WriteResult) error {
		tg, err := env.Server.Tags(r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Pending {
			reports = append(reports, "pending")
			if tg["owner"] != "" {
				t.Errorf("%s reported pending after its write", r.ID)
			}
			return nil
		}
		reports = append(reports, "done")
		if tg["owner"] != "team-a" {
			t.Errorf("%s reported done before its write", r.ID)
		}
		if len(reports) == 6 {
			return stop
		}
		return nil
	}
	res := p.WriteTags(t.Context(), []cloud.TagWrite{{IDs: ids, Patch: tags.Patch{Set: tags.Set{"owner": "team-a"}}}}, each)
	if got := strings.Join(reports, ","); got != "pending,done,pending,done,pending,done" {
		t.Errorf("reports %s, want three resources pending then done", got)
	}
	for i, r := range res {
		tg, _ := env.Server.Tags(ids[i])
		switch {
		case i < 3 && (r.Err != nil || tg["owner"] != "team-a"):
			t.Errorf("result %d: %v, tags %v; want written", i, r.Err, tg)
		case i >= 3 && (!errors.Is(r.Err, stop) || tg["owner"] != ""):
			t.Errorf("result %d: %v, tags %v; want not written, wrapping the stop", i, r.Err, tg)
		}
	}
}
