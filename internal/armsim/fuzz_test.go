package armsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"testing"
)

const fuzzSub = "00000000-0000-4000-8000-00000000f022"

// newFuzzServer is an unthrottled in-process server with a small estate.
func newFuzzServer(t testing.TB) (*Server, string) {
	s, err := New(Options{PageSize: 2, LROPolls: 1, Throttle: ThrottleOptions{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateScaleSet(fuzzSub, "rg", ScaleSet{Name: "vmss", Tags: map[string]string{"env": "prod"}, Instances: []string{"0", "1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateScaleSet(fuzzSub, "rg", ScaleSet{Name: "flex", Mode: Flexible}); err != nil {
		t.Fatal(err)
	}
	for _, vm := range []VirtualMachine{{Name: "vm1", ScaleSet: "flex"}, {Name: "vm2", AvailabilitySet: "as"}, {Name: "vm3"}} {
		if _, err := s.CreateVM(fuzzSub, "rg", vm); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CreateResource(fuzzSub, "rg", Resource{Type: TypeStorageAccount, Name: "st"}); err != nil {
		t.Fatal(err)
	}
	return s, "Bearer " + s.issueToken(s.opts.TenantID, "fuzz", "http://armsim")
}

func FuzzServeHTTP(f *testing.F) {
	base := "/subscriptions/" + fuzzSub + "/resourceGroups/rg/providers/Microsoft.Compute/"
	for _, seed := range []struct{ method, target, body string }{
		{"GET", base + "virtualMachines/vm1?api-version=2026-04-01", ""},
		{"PATCH", base + "virtualMachines/VM1?api-version=2026-04-01", `{"tags":{"a":"b"}}`},
		{"PATCH", base + "virtualMachineScaleSets/vmss?api-version=2026-04-01", `{"tags":{"a/b":"c"}}`},
		{"PUT", base + "virtualMachineScaleSets/vmss/virtualMachines/0?api-version=2026-04-01", `{"tags":{"x":"y"}}`},
		{"GET", base + "virtualMachines?api-version=2026-04-01&$filter='virtualMachineScaleSet/id' eq 'x'", ""},
		{"GET", base + "virtualMachines?api-version=2026-04-01&$skiptoken=%%%", ""},
		{"PATCH", base + "virtualMachines/vm1/providers/Microsoft.Resources/tags/default?api-version=2025-04-01", `{"operation":"Delete","properties":{"tags":{"a":""}}}`},
		{"PUT", "/subscriptions/" + fuzzSub + "/providers/Microsoft.Resources/tags/default?api-version=2025-04-01", `{"properties":{"tags":{"Env":"x","env":"y"}}}`},
		{"DELETE", "//subscriptions/" + fuzzSub + "/resourceGroups/rg/providers/Microsoft.Resources/tags/default?api-version=1", ""},
		{"GET", "/subscriptions/" + fuzzSub + "/resources?api-version=2025-04-01&$filter=tagName eq 'a''b' and tagValue eq ''", ""},
		{"POST", "/providers/Microsoft.ResourceGraph/resources?api-version=2024-04-01", `{"query":"resources | where tags['a'] in~ ('b', 'c') | project id","options":{"$skipToken":"zz"}}`},
		{"POST", "/providers/Microsoft.ResourceGraph/resources?api-version=2024-04-01", `{"query":"resources | where name == '\\'"}`},
		{"POST", "/providers/Microsoft.ResourceGraph/resources?api-version=2024-04-01", `{"subscriptions":["` + fuzzSub + `"],"query":"resources | union resourcecontainers | where type != 'x' and (tags['a'] == @'b''c' or tags[\"d\"] == 'e\\'f') | project id"}`},
		{"GET", "/subscriptions/" + fuzzSub + "/providers/Microsoft.Compute/locations/eastus/operations/nope?api-version=1", ""},
		{"POST", "/t/oauth2/v2.0/token", "grant_type=client_credentials&client_id=a&client_secret=b&scope=x%2F.default"},
		{"GET", "/subscriptions/../../_admin/state", ""},
		{"PATCH", base + "virtualMachines/vm1?api-version=1", `{"tags":null}`},
		{"PATCH", base + "virtualMachines/vm1?api-version=1", "\x00\xff"},
	} {
		f.Add(seed.method, seed.target, seed.body)
	}
	s, auth := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, method, target, body string) {
		req := fuzzRequest(method, target, body, auth)
		if req == nil {
			return
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code < 100 || rec.Code >= 500 {
			t.Fatalf("%s %q: status %d: %s", method, target, rec.Code, rec.Body)
		}
		if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") && !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %q: invalid JSON body %q", method, target, rec.Body)
		}
		if err := s.checkInvariants(); err != nil {
			t.Fatalf("%s %q %q: %v", method, target, body, err)
		}
	})
}

// fuzzRequest builds a request without the validation httptest.NewRequest
// does, so odd paths reach the router; nil if it cannot be a request.
func fuzzRequest(method, target, body, auth string) *http.Request {
	if method == "" || strings.ContainsAny(method, " \r\n") || strings.HasPrefix(target, "/_admin") {
		return nil
	}
	path, query, _ := strings.Cut(target, "?")
	u := &url.URL{Path: path, RawQuery: query}
	req := httptest.NewRequest(http.MethodGet, "http://armsim/", strings.NewReader(body))
	req.Method, req.URL, req.RequestURI = method, u, u.RequestURI()
	req.Header.Set("Authorization", auth)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req
}

// checkInvariants verifies the store: the index is sorted and matches the
// map, and every tag set obeys ARM's rules.
func (s *Server) checkInvariants() error {
	s.st.mu.RLock()
	defer s.st.mu.RUnlock()
	if len(s.st.sorted) != len(s.st.objs) {
		return fmt.Errorf("index has %d entries, map %d", len(s.st.sorted), len(s.st.objs))
	}
	if !sort.SliceIsSorted(s.st.sorted, func(i, j int) bool { return s.st.sorted[i].key < s.st.sorted[j].key }) {
		return fmt.Errorf("index not sorted")
	}
	for _, o := range s.st.sorted {
		if s.st.objs[o.key] != o || o.key != strings.ToLower(o.id) {
			return fmt.Errorf("index entry %s does not match the map", o.id)
		}
		if err := checkTagSet(o.typ, o.tags); err != nil {
			return fmt.Errorf("%s: %v", o.id, err)
		}
	}
	for _, g := range s.st.groups {
		if err := checkTagSet(TypeResourceGroup, g.tags); err != nil {
			return fmt.Errorf("%s: %v", g.id, err)
		}
	}
	for _, sub := range s.st.subs {
		if err := checkTagSet("Microsoft.Resources/subscriptions", sub.tags); err != nil {
			return fmt.Errorf("%s: %v", sub.id, err)
		}
	}
	return nil
}

func checkTagSet(typ string, t tagSet) error {
	if len(t) > TagLimit(typ) {
		return fmt.Errorf("%d tags", len(t))
	}
	seen := map[string]bool{}
	for k, v := range t {
		if seen[strings.ToLower(k)] {
			return fmt.Errorf("duplicate tag name %q", k)
		}
		seen[strings.ToLower(k)] = true
		if e := checkTag(typ, k, v); e != nil {
			return e
		}
	}
	return nil
}
