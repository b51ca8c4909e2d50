package armsim_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v8"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v4"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/testenv"
)

var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// wantRefused checks err is ARM's refusal with status and code.
func wantRefused(t *testing.T, err error, status int, code string) *armsim.Error {
	t.Helper()
	var ae *armsim.Error
	if !errors.As(err, &ae) || ae.Status != status || ae.Code != code {
		t.Fatalf("want %d %s, got %v", status, code, err)
	}
	return ae
}

// handshakeAnswer makes a receiver answer the handshake (of method) with
// status, header and body instead of passing it.
func handshakeAnswer(method string, status int, header map[string]string, body string) func(http.ResponseWriter, *http.Request) bool {
	return func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != method || (method == http.MethodPost && r.Header.Get("aeg-event-type") != "SubscriptionValidation") {
			return false
		}
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
		return true
	}
}

func TestEventGridHandshake(t *testing.T) {
	t.Parallel()
	env, _ := eventGridEnv(t)
	for _, tc := range []struct {
		name, schema string
		handshake    func(http.ResponseWriter, *http.Request) bool
		wantMessage  string // "" when the PUT succeeds
		wantState    string
	}{
		{name: "validation code", schema: armsim.SchemaEventGrid, wantState: "Succeeded"},
		{name: "allowed origin", schema: armsim.SchemaCloudEvents, wantState: "Succeeded"},
		{name: "allowed origin *", schema: armsim.SchemaCloudEvents, wantState: "Succeeded",
			handshake: handshakeAnswer(http.MethodOptions, 200, map[string]string{"WebHook-Allowed-Origin": "*"}, "")},
		{name: "wrong validation code", schema: armsim.SchemaEventGrid,
			handshake:   handshakeAnswer(http.MethodPost, 200, nil, `{"validationResponse":"nope"}`),
			wantMessage: "does not match the validation code"},
		{name: "validation refused", schema: armsim.SchemaEventGrid,
			handshake:   handshakeAnswer(http.MethodPost, 500, nil, ""),
			wantMessage: "Http POST request failed with response code 500"},
		{name: "no allowed origin", schema: armsim.SchemaCloudEvents,
			handshake:   handshakeAnswer(http.MethodOptions, 200, nil, ""),
			wantMessage: "without a WebHook-Allowed-Origin header"},
		{name: "other origin", schema: armsim.SchemaCloudEvents,
			handshake:   handshakeAnswer(http.MethodOptions, 200, map[string]string{"WebHook-Allowed-Origin": "example.com"}, ""),
			wantMessage: "'example.com' does not allow eventgrid.azure.net"},
		{name: "options refused", schema: armsim.SchemaCloudEvents,
			handshake:   handshakeAnswer(http.MethodOptions, 405, nil, ""),
			wantMessage: "Http OPTIONS request failed with response code 405"},
		{name: "accepted without the code", schema: armsim.SchemaEventGrid, wantState: "AwaitingManualAction",
			handshake: handshakeAnswer(http.MethodPost, 200, nil, "{}")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := startReceiver(t)
			rc.setHandshake(tc.handshake)
			props := armsimtest.WebHook(rc.srv.URL + "/hook?code=secret")
			props.EventDeliverySchema = tc.schema
			name := "hs-" + strings.ReplaceAll(tc.name, " ", "-")
			name = strings.ReplaceAll(name, "*", "star")
			es, err := env.PutEventSubscription(ctx(t), name, props)
			if tc.wantMessage != "" {
				ae := wantRefused(t, err, http.StatusBadRequest, "Url validation")
				if !strings.Contains(ae.Message, tc.wantMessage) || !strings.Contains(ae.Message, rc.srv.URL+"/hook.") {
					t.Errorf("message %q, want %q about %s/hook (no query)", ae.Message, tc.wantMessage, rc.srv.URL)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkStored(t, env, es, name, tc.wantState, rc.srv.URL)
		})
	}
}

// checkStored checks a created subscription's answer, GET, list and full URL.
func checkStored(t *testing.T, env *armsimtest.Env, es armsim.EventSubscription, name, state, base string) {
	t.Helper()
	id := armsimtest.EventSubscriptionPath(env.SubscriptionID, name)
	dest := es.Properties.Destination.Properties
	if es.ID != id || es.Type != armsim.TypeEventSubscription || es.Properties.ProvisioningState != state ||
		es.Properties.Topic != "/subscriptions/"+env.SubscriptionID || dest.EndpointURL != "" || dest.EndpointBaseURL != base+"/hook" ||
		dest.MaxEventsPerBatch != 1 || dest.PreferredBatchSizeInKilobytes != 64 ||
		es.Properties.RetryPolicy.MaxDeliveryAttempts != 30 || es.Properties.RetryPolicy.EventTimeToLiveInMinutes != 1440 {
		t.Errorf("PUT answered %+v %+v", es, dest)
	}
	var got armsim.EventSubscription
	if err := env.ARM(ctx(t), http.MethodGet, id, nil, &got); err != nil || got.Properties.ProvisioningState != state {
		t.Errorf("GET: %+v %v", got, err)
	}
	var full struct{ EndpointURL string }
	if err := env.ARM(ctx(t), http.MethodPost, id+"/getFullUrl", nil, &full); err != nil || full.EndpointURL != base+"/hook?code=secret" {
		t.Errorf("getFullUrl: %+v %v", full, err)
	}
	var list struct{ Value []armsim.EventSubscription }
	if err := env.ARM(ctx(t), http.MethodGet, "/subscriptions/"+env.SubscriptionID+"/providers/Microsoft.EventGrid/eventSubscriptions", nil, &list); err != nil {
		t.Fatal(err)
	}
	for _, v := range list.Value {
		if v.ID == id {
			return
		}
	}
	t.Errorf("list %+v lacks %s", list.Value, id)
}

func TestEventGridManualValidation(t *testing.T) {
	t.Parallel()
	env, e := eventGridEnv(t)
	rc := startReceiver(t)
	validationURL := make(chan string, 1)
	rc.setHandshake(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("aeg-event-type") != "SubscriptionValidation" {
			return false
		}
		var evs []event
		_ = json.NewDecoder(r.Body).Decode(&evs)
		validationURL <- evs[0].data("validationUrl")
		w.WriteHeader(http.StatusOK)
		return true
	})
	env.Subscribe(t, "manual", onlyUnder(armsimtest.WebHook(rc.srv.URL), groupScope(env)))
	u := <-validationURL
	if err := env.Server.SetTags(e.standalone, map[string]string{"before": "validation"}); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(u)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET validation URL %s: %v %v", u, resp, err)
	}
	_ = resp.Body.Close()
	if err := env.Server.SetTags(e.standalone, map[string]string{"after": "validation"}); err != nil {
		t.Fatal(err)
	}
	waitIdle(t, env)
	if evs := rc.events(t); len(evs) != 1 {
		t.Errorf("want only the event after validation, got %v", evs)
	}
}

func TestEventGridRefusesWhatItCannotDo(t *testing.T) {
	t.Parallel()
	env, _ := eventGridEnv(t)
	rc := startReceiver(t)
	for name, change := range map[string]func(p *armsim.EventSubscriptionProperties){
		"batch too large": func(p *armsim.EventSubscriptionProperties) { p.Destination.Properties.MaxEventsPerBatch = 5001 },
		"batch KB too many": func(p *armsim.EventSubscriptionProperties) {
			p.Destination.Properties.PreferredBatchSizeInKilobytes = 1025
		},
		"attempts": func(p *armsim.EventSubscriptionProperties) {
			p.RetryPolicy = &armsim.RetryPolicy{MaxDeliveryAttempts: 31}
		},
		"ttl": func(p *armsim.EventSubscriptionProperties) {
			p.RetryPolicy = &armsim.RetryPolicy{EventTimeToLiveInMinutes: 1441}
		},
		"schema":        func(p *armsim.EventSubscriptionProperties) { p.EventDeliverySchema = "CustomInputSchema" },
		"endpoint type": func(p *armsim.EventSubscriptionProperties) { p.Destination.EndpointType = "EventHub" },
		"relative URL":  func(p *armsim.EventSubscriptionProperties) { p.Destination.Properties.EndpointURL = "/hook" },
		"operator": func(p *armsim.EventSubscriptionProperties) {
			p.Filter = &armsim.EventSubscriptionFilter{AdvancedFilters: []armsim.AdvancedFilter{{OperatorType: "NumberIn", Key: "data.x", Values: []string{"1"}}}}
		},
	} {
		p := armsimtest.WebHook(rc.srv.URL)
		change(&p)
		_, err := env.PutEventSubscription(ctx(t), "bad", p)
		wantRefused(t, err, http.StatusBadRequest, "InvalidRequest")
		t.Logf("%s: %v", name, err)
	}
	_, err := env.PutEventSubscription(ctx(t), "x", armsimtest.WebHook(rc.srv.URL))
	wantRefused(t, err, http.StatusBadRequest, "InvalidRequest")
	err = env.ARM(ctx(t), http.MethodGet, armsimtest.EventSubscriptionPath(env.SubscriptionID, "absent"), nil, nil)
	wantRefused(t, err, http.StatusNotFound, "ResourceNotFound")
	_, err = (&armsimtest.Env{Server: env.Server, SubscriptionID: "00000000-0000-4000-8000-0000000000ff",
		Credential: env.Credential, HTTPClient: env.HTTPClient}).PutEventSubscription(ctx(t), "nosub", armsimtest.WebHook(rc.srv.URL))
	wantRefused(t, err, http.StatusNotFound, "SubscriptionNotFound")
	if len(rc.got()) != 0 {
		t.Errorf("refused subscriptions delivered %d POSTs", len(rc.got()))
	}

	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	_, err = env.PutEventSubscription(ctx(t), "unreachable", armsimtest.WebHook(closed.URL+"/hook?code=secret"))
	if ae := wantRefused(t, err, http.StatusBadRequest, "Url validation"); strings.Contains(ae.Message, "secret") ||
		!strings.Contains(ae.Message, "response code Unknown") {
		t.Errorf("unreachable endpoint: %s", ae.Message)
	}
}

// write is one write armsim serves or makes out of band, and the event it
// must publish.
type write struct {
	name          string
	do            func(t *testing.T)
	eventType     string
	resource, op  string
	viaManagement bool // an ARM request: the event carries the caller
}

// tagsOf is what the Tags API's events name for a scope's tags.
func tagsOf(scope string) string { return scope + "/providers/Microsoft.Resources/tags/default" }

func writeKinds(env *armsimtest.Env, e estate) []write {
	tags := func(t *testing.T) tagOps { return tagOps{t, tagsClient(t, env)} }
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	const tagsWrite, vmssWrite = "Microsoft.Resources/tags/write", armsim.TypeScaleSet + "/write"
	return []write{
		{"Tags PUT", func(t *testing.T) { must(t, tags(t).put(e.disk, map[string]string{"a": "1"})) },
			armsim.EventResourceWriteSuccess, tagsOf(e.disk), tagsWrite, true},
		{"Tags PATCH", func(t *testing.T) {
			_, err := tags(t).patch(e.flexVM0, armresources.TagsPatchOperationMerge, map[string]string{"b": "2"})
			must(t, err)
		}, armsim.EventResourceWriteSuccess, tagsOf(e.flexVM0), tagsWrite, true},
		{"Tags DELETE", func(t *testing.T) { must(t, tags(t).del(e.nic)) },
			armsim.EventResourceWriteSuccess, tagsOf(e.nic), "Microsoft.Resources/tags/delete", true},
		{"Tags PUT on the group", func(t *testing.T) { must(t, tags(t).put(groupScope(env), map[string]string{"g": "1"})) },
			armsim.EventResourceWriteSuccess, tagsOf(groupScope(env)), tagsWrite, true},
		{"VM PATCH", func(t *testing.T) {
			p, err := vmClient(t, env).BeginUpdate(ctx(t), rg, "standalone-vm", armcompute.VirtualMachineUpdate{Tags: ptrMap(map[string]string{"c": "3"})}, nil)
			must(t, err)
			_, err = p.PollUntilDone(ctx(t), fastPoll)
			must(t, err)
		}, armsim.EventResourceWriteSuccess, e.standalone, armsim.TypeVirtualMachine + "/write", true},
		{"VMSS PATCH", func(t *testing.T) {
			p, err := vmssClient(t, env).BeginUpdate(ctx(t), rg, "aks-nodepool1-12345678-vmss", armcompute.VirtualMachineScaleSetUpdate{Tags: ptrMap(map[string]string{"d": "4"})}, nil)
			must(t, err)
			_, err = p.PollUntilDone(ctx(t), fastPoll)
			must(t, err)
		}, armsim.EventResourceWriteSuccess, e.uniform, vmssWrite, true},
		{"VMSS VM PUT", func(t *testing.T) {
			p, err := vmssVMClient(t, env).BeginUpdate(ctx(t), rg, "aks-nodepool1-12345678-vmss", "1", armcompute.VirtualMachineScaleSetVM{Location: ptr("eastus")}, nil)
			must(t, err)
			_, err = p.PollUntilDone(ctx(t), fastPoll)
			must(t, err)
		}, armsim.EventResourceWriteSuccess, e.instances[1], armsim.TypeScaleSetVM + "/write", true},
		{"portal edit", func(t *testing.T) { must(t, env.Server.SetTags(e.lb, map[string]string{"e": "5"})) },
			armsim.EventResourceWriteSuccess, tagsOf(e.lb), tagsWrite, false},
		{"portal edit over the admin API", func(t *testing.T) {
			resp := rawRequestToken(t, env, http.MethodPost, "/_admin/tags", []byte(`{"id":"`+e.pip+`","set":{"f":"6"}}`), "")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("admin tags: %d", resp.StatusCode)
			}
		}, armsim.EventResourceWriteSuccess, tagsOf(e.pip), tagsWrite, false},
		{"portal tag removal", func(t *testing.T) { must(t, env.Server.DeleteTags(e.lb, "e")) },
			armsim.EventResourceWriteSuccess, tagsOf(e.lb), tagsWrite, false},
		{"platform rewrite", func(t *testing.T) { must(t, env.Server.ReplaceTags(e.uniform, map[string]string{"g": "7"})) },
			armsim.EventResourceWriteSuccess, e.uniform, vmssWrite, false},
		{"scale-out", func(t *testing.T) {
			_, err := env.Server.AddInstances(e.uniform, 1)
			must(t, err)
		}, armsim.EventResourceWriteSuccess, e.uniform, vmssWrite, false},
		{"scale-in", func(t *testing.T) { must(t, env.Server.DeleteResource(e.instances[2])) },
			armsim.EventResourceDeleteSuccess, e.instances[2], armsim.TypeScaleSetVM + "/delete", false},
		{"resource delete", func(t *testing.T) { must(t, env.Server.DeleteResource(e.storage)) },
			armsim.EventResourceDeleteSuccess, e.storage, armsim.TypeStorageAccount + "/delete", false},
	}
}

func TestEventGridEventPerWrite(t *testing.T) {
	t.Parallel()
	env, e := eventGridEnv(t)
	rc := startReceiver(t)
	env.Subscribe(t, "writes", onlyUnder(armsimtest.WebHook(rc.srv.URL), groupScope(env)))
	readEverything(t, env, e)
	for i, w := range writeKinds(env, e) {
		w.do(t)
		evs := waitEvents(t, rc, i+1)
		if len(evs) != i+1 {
			t.Fatalf("after %s: %d events, want %d (a read published one?): %v", w.name, len(evs), i+1, evs[i:])
		}
		checkResourceEvent(t, env, w, evs[i])
	}
	if st := waitIdle(t, env); st.Delivered != len(writeKinds(env, e)) || st.FailedAttempts != 0 || st.Dropped != 0 {
		t.Errorf("stats %+v", st)
	}
}

// readEverything makes the reads armsim serves: none may publish an event.
func readEverything(t *testing.T, env *armsimtest.Env, e estate) {
	if _, err := vmClient(t, env).Get(ctx(t), rg, "standalone-vm", nil); err != nil {
		t.Fatal(err)
	}
	tagOps{t, tagsClient(t, env)}.get(e.disk)
	pager := resourcesClient(t, env).NewListByResourceGroupPager(rg, nil)
	if _, err := pager.NextPage(ctx(t)); err != nil {
		t.Fatal(err)
	}
	query := rawRequest(t, env, http.MethodPost, "/providers/Microsoft.ResourceGraph/resources?api-version=2024-04-01",
		[]byte(`{"query":"resources | project id"}`))
	if query.StatusCode != http.StatusOK {
		t.Fatalf("Resource Graph query: %d", query.StatusCode)
	}
	// A refused write publishes nothing either.
	tags := tagOps{t, tagsClient(t, env)}
	if err := tags.put(groupScope(env)+"/providers/Microsoft.Compute/disks/absent", map[string]string{"a": "1"}); err == nil {
		t.Fatal("tagging a missing resource succeeded")
	}
}

// checkResourceEvent checks an Event Grid schema event against its write.
func checkResourceEvent(t *testing.T, env *armsimtest.Env, w write, ev event) {
	t.Helper()
	topic := "/subscriptions/" + env.SubscriptionID
	if ev.str("eventType") != w.eventType || ev.str("subject") != w.resource || ev.str("topic") != topic ||
		!uuidPattern.MatchString(ev.str("id")) || ev.str("dataVersion") != "2" || ev.str("metadataVersion") != "1" {
		t.Errorf("%s: envelope %v", w.name, ev)
	}
	if when, err := time.Parse(time.RFC3339Nano, ev.str("eventTime")); err != nil || time.Since(when) > time.Minute {
		t.Errorf("%s: eventTime %q", w.name, ev.str("eventTime"))
	}
	if ev.data("resourceUri") != w.resource || ev.data("operationName") != w.op || ev.data("status") != "Succeeded" ||
		ev.data("subscriptionId") != env.SubscriptionID || ev.data("tenantId") != env.Server.TenantID() ||
		ev.data("correlationId") == "" || ev.data("resourceGroup") != rg {
		t.Errorf("%s: data %v", w.name, ev["data"])
	}
	data := ev["data"].(map[string]any)
	if _, ok := data["httpRequest"]; ok != w.viaManagement {
		t.Errorf("%s: httpRequest present %v, want %v", w.name, ok, w.viaManagement)
	}
	if claims, _ := data["claims"].(map[string]any); w.viaManagement && claims["appid"] != armsimtest.ClientID {
		t.Errorf("%s: claims %v", w.name, claims)
	}
}

// post is one request a receiver got.
type post struct {
	header http.Header
	body   []byte
	at     time.Time
}

// request rebuilds the request a post was.
func (p post) request() *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(p.body))
	r.Header = p.header.Clone()
	return r
}

// event is a delivered event in either schema, as JSON.
type event map[string]any

func (e event) str(key string) string { s, _ := e[key].(string); return s }

func (e event) data(key string) string { s, _ := e["data"].(map[string]any)[key].(string); return s }

// receiver is a webhook on a real HTTP server: it passes both handshakes
// (unless told otherwise), records every notification and answers it with
// the status fail gives (200 when fail is nil).
type receiver struct {
	srv *httptest.Server

	mu        sync.Mutex
	posts     []post
	handshake func(w http.ResponseWriter, r *http.Request) bool // true: answered
	fail      func(n int) int                                   // status for notification n (0-based)
}

func startReceiver(t testing.TB) *receiver { return listen(t, httptest.NewServer) }

// startTLSReceiver is a receiver on HTTPS; armsim reaches it with its
// srv.Client().
func startTLSReceiver(t testing.TB) *receiver { return listen(t, httptest.NewTLSServer) }

func listen(t testing.TB, start func(http.Handler) *httptest.Server) *receiver {
	rc := &receiver{}
	rc.srv = start(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	rc.mu.Lock()
	hs := rc.handshake
	rc.mu.Unlock()
	if hs != nil && hs(w, r) {
		return
	}
	switch {
	case r.Method == http.MethodOptions:
		w.Header().Set("WebHook-Allowed-Origin", r.Header.Get("WebHook-Request-Origin"))
	case r.Header.Get("aeg-event-type") == "SubscriptionValidation":
		var evs []event
		_ = json.Unmarshal(body, &evs)
		writeBody(w, http.StatusOK, map[string]string{"validationResponse": evs[0].data("validationCode")})
	default:
		w.WriteHeader(rc.record(r.Header, body))
	}
}

// record keeps a notification and returns the status to answer.
func (rc *receiver) record(h http.Header, body []byte) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := len(rc.posts)
	rc.posts = append(rc.posts, post{header: h.Clone(), body: body, at: time.Now()})
	if rc.fail == nil {
		return http.StatusOK
	}
	return rc.fail(n)
}

func writeBody(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// setFail sets the status of each notification by its number.
func (rc *receiver) setFail(f func(n int) int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.fail = f
}

func (rc *receiver) setHandshake(f func(w http.ResponseWriter, r *http.Request) bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.handshake = f
}

// got returns the notifications so far.
func (rc *receiver) got() []post {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]post(nil), rc.posts...)
}

// events decodes every event of every acknowledged notification, in the
// order received: a POST is a JSON array or one CloudEvent.
func (rc *receiver) events(t testing.TB) []event {
	t.Helper()
	var out []event
	for _, p := range rc.got() {
		out = append(out, decodePost(t, p)...)
	}
	return out
}

func decodePost(t testing.TB, p post) []event {
	t.Helper()
	if strings.HasPrefix(strings.TrimSpace(string(p.body)), "{") {
		var ev event
		if err := json.Unmarshal(p.body, &ev); err != nil {
			t.Fatalf("decoding %s: %v", p.body, err)
		}
		return []event{ev}
	}
	var evs []event
	if err := json.Unmarshal(p.body, &evs); err != nil {
		t.Fatalf("decoding %s: %v", p.body, err)
	}
	return evs
}

// waitIdle waits until armsim has nothing left to deliver.
func waitIdle(t testing.TB, env *armsimtest.Env) armsim.EventGridStats {
	t.Helper()
	if err := env.Server.WaitEventGridIdle(ctx(t)); err != nil {
		t.Fatalf("event delivery still pending: %+v", env.Server.EventGridStats())
	}
	return env.Server.EventGridStats()
}

// waitEvents waits until the receiver has n events and returns them.
func waitEvents(t testing.TB, rc *receiver, n int) []event {
	t.Helper()
	var evs []event
	testenv.Eventually(t, 20*time.Second, "events delivered", func() string {
		if evs = rc.events(t); len(evs) < n {
			return "have " + itoa(len(evs)) + " of " + itoa(n)
		}
		return ""
	})
	return evs
}

// onlyUnder keeps the subscription to events about resources under scope
// (leaving out, e.g., the event of the subscription's own creation).
func onlyUnder(p armsim.EventSubscriptionProperties, scope string) armsim.EventSubscriptionProperties {
	p.Filter = &armsim.EventSubscriptionFilter{SubjectBeginsWith: scope}
	return p
}

// eventGridEnv starts armsim over plain HTTP with a fast retry schedule
// and the test estate.
func eventGridEnv(t *testing.T, opts ...armsimtest.Option) (*armsimtest.Env, estate) {
	o := append([]armsimtest.Option{armsimtest.WithPlainHTTP(),
		armsimtest.WithRetrySchedule(10*time.Millisecond, 20*time.Millisecond, 40*time.Millisecond)}, opts...)
	env := armsimtest.Start(t, o...)
	return env, seedEstate(t, env.Server, env.SubscriptionID)
}

// groupScope is the test estate's resource group ID.
func groupScope(env *armsimtest.Env) string {
	return "/subscriptions/" + env.SubscriptionID + "/resourceGroups/" + rg
}
