package armsim_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/testenv"
)

// editTags makes n portal edits of the estate's disk, each a new event.
func editTags(t *testing.T, env *armsimtest.Env, e estate, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if err := env.Server.SetTags(e.disk, map[string]string{"n": itoa(i)}); err != nil {
			t.Fatal(err)
		}
	}
}

// heldEvents pauses delivery, makes n edits and returns the resume.
func heldEvents(t *testing.T, env *armsimtest.Env, e estate, n int, f armsim.EventGridFaults) {
	t.Helper()
	f.Paused = true
	env.Server.SetEventGridFaults(f)
	editTags(t, env, e, n)
	f.Paused = false
	env.Server.SetEventGridFaults(f)
}

// eventIDs returns the events' IDs.
func eventIDs(evs []event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.str("id"))
	}
	return out
}

func TestEventGridBatching(t *testing.T) {
	t.Parallel()
	env, e := eventGridEnv(t)
	rc := startReceiver(t)
	p := onlyUnder(armsimtest.WebHook(rc.srv.URL), e.disk)
	p.Destination.Properties.MaxEventsPerBatch = 3
	env.Subscribe(t, "batches", p)
	heldEvents(t, env, e, 5, armsim.EventGridFaults{})
	waitIdle(t, env)
	posts := rc.got()
	if len(posts) != 2 || len(decodePost(t, posts[0])) != 3 || len(decodePost(t, posts[1])) != 2 {
		t.Fatalf("want batches of 3 and 2, got %d POSTs", len(posts))
	}
	if ct := posts[0].header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q", ct)
	}

	// A size cap: 1 KB holds one resource event at most.
	p.Destination.Properties.MaxEventsPerBatch, p.Destination.Properties.PreferredBatchSizeInKilobytes = 10, 1
	env.Subscribe(t, "batches", p)
	heldEvents(t, env, e, 3, armsim.EventGridFaults{})
	waitIdle(t, env)
	for _, post := range rc.got()[2:] {
		if n := len(decodePost(t, post)); n != 1 && len(post.body) > 1024 {
			t.Errorf("a POST of %d events has %d bytes", n, len(post.body))
		}
	}
	if n := len(rc.events(t)); n != 8 {
		t.Errorf("%d events, want 8", n)
	}
}

func TestEventGridCloudEvents(t *testing.T) {
	t.Parallel()
	env, e := eventGridEnv(t)
	rc := startReceiver(t)
	p := onlyUnder(armsimtest.WebHook(rc.srv.URL), e.disk)
	p.EventDeliverySchema = armsim.SchemaCloudEvents
	env.Subscribe(t, "cloud", p)
	editTags(t, env, e, 1)
	waitIdle(t, env)
	single := rc.got()[0]
	ev := decodePost(t, single)[0]
	if ct := single.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/cloudevents+json") {
		t.Errorf("single event Content-Type %q", ct)
	}
	if ev.str("specversion") != "1.0" || ev.str("type") != armsim.EventResourceWriteSuccess ||
		ev.str("source") != "/subscriptions/"+env.SubscriptionID || ev.str("subject") != tagsOf(e.disk) ||
		!uuidPattern.MatchString(ev.str("id")) || ev.str("time") == "" || ev.data("resourceUri") != tagsOf(e.disk) ||
		ev.data("operationName") != "Microsoft.Resources/tags/write" {
		t.Errorf("CloudEvent %v", ev)
	}

	if got, err := cehttp.NewEventFromHTTPRequest(single.request()); err != nil || got.ID() != ev.str("id") ||
		got.Type() != armsim.EventResourceWriteSuccess || got.Subject() != tagsOf(e.disk) {
		t.Errorf("the CloudEvents SDK reads %v: %v", got, err)
	}

	p.Destination.Properties.MaxEventsPerBatch = 5
	env.Subscribe(t, "cloud", p)
	heldEvents(t, env, e, 2, armsim.EventGridFaults{})
	waitIdle(t, env)
	batch := rc.got()[1]
	if ct := batch.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/cloudevents-batch+json") || len(decodePost(t, batch)) != 2 {
		t.Errorf("batch Content-Type %q, %s", ct, batch.body)
	}
	if got, err := cehttp.NewEventsFromHTTPRequest(batch.request()); err != nil || len(got) != 2 || got[1].Source() != "/subscriptions/"+env.SubscriptionID {
		t.Errorf("the CloudEvents SDK reads the batch as %v: %v", got, err)
	}
}

func TestEventGridRetriesWithBackoff(t *testing.T) {
	t.Parallel()
	schedule := []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond}
	env, e := eventGridEnv(t, armsimtest.WithRetrySchedule(schedule...))
	rc := startReceiver(t)
	rc.setFail(func(n int) int {
		if n < 3 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	env.Subscribe(t, "retry", onlyUnder(armsimtest.WebHook(rc.srv.URL), e.disk))
	editTags(t, env, e, 1)
	st := waitIdle(t, env)
	posts := rc.got()
	if len(posts) != 4 || st.Delivered != 1 || st.FailedAttempts != 3 || st.Dropped != 0 {
		t.Fatalf("%d POSTs, stats %+v", len(posts), st)
	}
	id := decodePost(t, posts[0])[0].str("id")
	for i, p := range posts {
		if got := p.header.Get("aeg-delivery-count"); got != itoa(i) || decodePost(t, p)[0].str("id") != id {
			t.Errorf("attempt %d: aeg-delivery-count %s, a new event id", i, got)
		}
		if i > 0 && p.at.Sub(posts[i-1].at) < schedule[i-1] {
			t.Errorf("retry %d came %v after the failure, before its wait %v", i, p.at.Sub(posts[i-1].at), schedule[i-1])
		}
	}
}

func TestEventGridDropsAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	env, e := eventGridEnv(t)
	rc := startReceiver(t)
	rc.setFail(func(int) int { return http.StatusInternalServerError })
	p := onlyUnder(armsimtest.WebHook(rc.srv.URL), e.disk)
	p.RetryPolicy = &armsim.RetryPolicy{MaxDeliveryAttempts: 3}
	env.Subscribe(t, "drop", p)
	editTags(t, env, e, 1)
	if st := waitIdle(t, env); len(rc.got()) != 3 || st.Dropped != 1 || st.FailedAttempts != 3 || st.Delivered != 0 {
		t.Fatalf("%d POSTs, stats %+v", len(rc.got()), st)
	}

	// 400, 401, 403 and 413 are final: no retry.
	rc.setFail(func(int) int { return http.StatusUnauthorized })
	editTags(t, env, e, 1)
	if st := waitIdle(t, env); len(rc.got()) != 4 || st.Dropped != 2 {
		t.Fatalf("%d POSTs, stats %+v", len(rc.got()), st)
	}
}

func TestEventGridDuplicatesAndReorder(t *testing.T) {
	t.Parallel()
	env, e := eventGridEnv(t)
	rc := startReceiver(t)
	env.Subscribe(t, "faults", onlyUnder(armsimtest.WebHook(rc.srv.URL), groupScope(env)))

	env.Server.SetEventGridFaults(armsim.EventGridFaults{DuplicateRate: 1})
	editTags(t, env, e, 2)
	st := waitIdle(t, env)
	ids := eventIDs(rc.events(t))
	if len(ids) != 4 || st.Subscriptions[0].Duplicated != 2 || st.Delivered != 4 {
		t.Fatalf("ids %v, stats %+v", ids, st)
	}
	seen := map[string]int{}
	for _, id := range ids {
		seen[id]++
	}
	for id, n := range seen {
		if n != 2 {
			t.Errorf("event %s delivered %d times, want 2", id, n)
		}
	}

	const latency = 30 * time.Millisecond
	env.Server.SetEventGridFaults(armsim.EventGridFaults{Latency: latency})
	start := time.Now()
	editTags(t, env, e, 1)
	waitIdle(t, env)
	if late := rc.got()[4]; late.at.Sub(start) < latency {
		t.Errorf("delivered %v after the write, before the latency %v", late.at.Sub(start), latency)
	}

	env.Server.SetEventGridFaults(armsim.EventGridFaults{Reorder: true, Paused: true})
	edited := []string{e.disk, e.nic, e.lb}
	for _, id := range edited {
		if err := env.Server.SetTags(id, map[string]string{"b": "1"}); err != nil {
			t.Fatal(err)
		}
	}
	env.Server.SetEventGridFaults(armsim.EventGridFaults{Reorder: true})
	waitIdle(t, env)
	var order []string
	for _, ev := range rc.events(t)[5:] {
		order = append(order, ev.str("subject"))
	}
	if strings.Join(order, ",") != strings.Join([]string{tagsOf(e.lb), tagsOf(e.nic), tagsOf(e.disk)}, ",") {
		t.Errorf("reordered delivery %v, want newest first", order)
	}
}

func TestEventGridAdminAPI(t *testing.T) {
	t.Parallel()
	env, e := eventGridEnv(t)
	rc := startReceiver(t)
	env.Subscribe(t, "admin", onlyUnder(armsimtest.WebHook(rc.srv.URL), e.disk))
	resp := rawRequestToken(t, env, http.MethodPut, "/_admin/eventgrid/config",
		[]byte(`{"paused":true,"latency":"1ms","retrySchedule":["5ms"]}`), "")
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PUT config: %d", resp.StatusCode)
	}
	editTags(t, env, e, 1)
	resp = rawRequestToken(t, env, http.MethodGet, "/_admin/eventgrid?wait=20ms", nil, "")
	var st armsim.EventGridStats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || resp.StatusCode != http.StatusRequestTimeout || st.Pending != 1 {
		t.Fatalf("paused wait: %d %+v %v", resp.StatusCode, st, err)
	}
	rawRequestToken(t, env, http.MethodPut, "/_admin/eventgrid/config", []byte(`{"paused":false}`), "")
	resp = rawRequestToken(t, env, http.MethodGet, "/_admin/eventgrid?wait=20s", nil, "")
	st = armsim.EventGridStats{}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || resp.StatusCode != http.StatusOK || st.Pending != 0 ||
		st.Delivered != 1 || len(st.Subscriptions) != 1 || st.Subscriptions[0].Endpoint != rc.srv.URL {
		t.Fatalf("stats: %d %+v %v", resp.StatusCode, st, err)
	}
	var cfg map[string]any
	_ = json.NewDecoder(rawRequestToken(t, env, http.MethodGet, "/_admin/eventgrid/config", nil, "").Body).Decode(&cfg)
	if cfg["latency"] != "1ms" || cfg["paused"] != false {
		t.Errorf("config %v", cfg)
	}

	// A deleted subscription delivers nothing more.
	id := armsimtest.EventSubscriptionPath(env.SubscriptionID, "admin")
	if err := env.ARM(ctx(t), http.MethodDelete, id, nil, nil); err != nil {
		t.Fatal(err)
	}
	editTags(t, env, e, 1)
	if n := len(rc.got()); n != 1 || len(env.Server.EventGridStats().Subscriptions) != 0 {
		t.Errorf("%d POSTs after delete", n)
	}

	// Reset forgets event subscriptions with the estate.
	env.Subscribe(t, "again", onlyUnder(armsimtest.WebHook(rc.srv.URL), e.disk))
	rawRequestToken(t, env, http.MethodPost, "/_admin/reset", nil, "")
	if st := env.Server.EventGridStats(); len(st.Subscriptions) != 0 {
		t.Errorf("after reset: %+v", st)
	}
}

func TestEventGridFilters(t *testing.T) {
	t.Parallel()
	env, e := eventGridEnv(t)
	filters := map[string]*armsim.EventSubscriptionFilter{
		"deletes": {IncludedEventTypes: []string{armsim.EventResourceDeleteSuccess}},
		"vms": {SubjectBeginsWith: strings.ToUpper(groupScope(env)), SubjectEndsWith: "/STANDALONE-VM/PROVIDERS/MICROSOFT.RESOURCES/TAGS/DEFAULT",
			AdvancedFilters: []armsim.AdvancedFilter{{OperatorType: "StringContains", Key: "subject", Values: []string{"virtualMachines/"}}}},
		"tag writes": {AdvancedFilters: []armsim.AdvancedFilter{
			{OperatorType: "StringIn", Key: "data.operationName", Values: []string{"microsoft.resources/tags/write"}},
			{OperatorType: "StringNotIn", Key: "subject", Values: []string{tagsOf(e.lb)}},
		}},
		"case-sensitive": {SubjectEndsWith: "/STANDALONE-VM", IsSubjectCaseSensitive: true},
	}
	receivers := map[string]*receiver{}
	for name, f := range filters {
		rc := startReceiver(t)
		receivers[name] = rc
		p := armsimtest.WebHook(rc.srv.URL)
		p.Filter = f
		env.Subscribe(t, strings.ReplaceAll(name, " ", "-"), p)
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(env.Server.SetTags(e.standalone, map[string]string{"a": "1"}))
	must(env.Server.SetTags(e.lb, map[string]string{"a": "1"}))
	must(env.Server.ReplaceTags(e.flexVM0, map[string]string{"a": "1"}))
	must(env.Server.DeleteResource(e.storage))
	waitIdle(t, env)
	want := map[string][]string{
		"deletes":        {e.storage},
		"vms":            {tagsOf(e.standalone)},
		"tag writes":     {tagsOf(e.standalone)},
		"case-sensitive": nil,
	}
	for name, rc := range receivers {
		var got []string
		for _, ev := range rc.events(t) {
			got = append(got, ev.str("subject"))
		}
		if strings.Join(got, ",") != strings.Join(want[name], ",") {
			t.Errorf("%s: subjects %v, want %v", name, got, want[name])
		}
	}
}

func TestEventGridBearerToken(t *testing.T) {
	t.Parallel()
	rc := startTLSReceiver(t)
	env := armsimtest.Start(t, armsimtest.WithRetrySchedule(10*time.Millisecond), armsimtest.WithWebhookClient(rc.srv.Client())) // HTTPS
	e := seedEstate(t, env.Server, env.SubscriptionID)
	const audience = "api://tagsync-webhook"
	provider, err := oidc.NewProvider(oidc.ClientContext(ctx(t), env.HTTPClient), env.Server.Issuer(""))
	if err != nil {
		t.Fatal(err)
	}
	verifier := provider.Verifier(&oidc.Config{ClientID: audience})
	other := provider.Verifier(&oidc.Config{ClientID: "api://someone-else"})
	var mu sync.Mutex
	var verified []string
	rc.setHandshake(func(w http.ResponseWriter, r *http.Request) bool {
		raw, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		vctx := oidc.ClientContext(r.Context(), env.HTTPClient)
		tok, err := verifier.Verify(vctx, raw)
		if err != nil {
			t.Errorf("%s %s: %v", r.Method, r.Header.Get("aeg-event-type"), err)
			w.WriteHeader(http.StatusUnauthorized)
			return true
		}
		if _, err := other.Verify(vctx, raw); err == nil {
			t.Error("a token for another audience verified")
		}
		var claims struct{ AppID, Tid string }
		_ = tok.Claims(&claims)
		if claims.AppID != armsim.EventGridAppID || claims.Tid != env.Server.TenantID() {
			t.Errorf("claims %+v", claims)
		}
		mu.Lock()
		verified = append(verified, r.Header.Get("aeg-event-type"))
		mu.Unlock()
		return false
	})
	p := onlyUnder(armsimtest.WebHook(rc.srv.URL), e.disk)
	p.Destination.Properties.AzureActiveDirectoryApplicationIDOrURI = audience
	env.Subscribe(t, "protected", p)
	editTags(t, env, e, 1)
	st := waitIdle(t, env)
	mu.Lock()
	defer mu.Unlock()
	if st.Delivered != 1 || strings.Join(verified, ",") != "SubscriptionValidation,Notification" {
		t.Errorf("verified %v, stats %+v", verified, st)
	}
}

// BenchmarkEventGridDelivery measures out-of-band edits from publication
// to acknowledgement by a local webhook, one event per POST and up to 100.
func BenchmarkEventGridDelivery(b *testing.B) {
	for _, batch := range []int{1, 100} {
		b.Run("batch"+itoa(batch), func(b *testing.B) {
			env := armsimtest.Start(b, armsimtest.WithPlainHTTP())
			e := seedEstate(b, env.Server, env.SubscriptionID)
			rc := startReceiver(b)
			p := onlyUnder(armsimtest.WebHook(rc.srv.URL), e.disk)
			p.Destination.Properties.MaxEventsPerBatch = batch
			env.Subscribe(b, "bench", p)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := env.Server.SetTags(e.disk, map[string]string{"n": itoa(i)}); err != nil {
					b.Fatal(err)
				}
			}
			waitIdle(b, env)
		})
	}
}

// TestEventGridDelaysAnUnhealthyEndpoint: after DelayAfterFailures failed
// deliveries in a row, Event Grid delays every delivery to the endpoint,
// new events and retries alike, for DelayedDelivery; the stats say until
// when. Once the endpoint answers again and the delay has passed, the
// events arrive and the delay ends.
func TestEventGridDelaysAnUnhealthyEndpoint(t *testing.T) {
	t.Parallel()
	const delay = 700 * time.Millisecond
	env, e := eventGridEnv(t, armsimtest.WithOptions(func(o *armsim.Options) {
		o.EventGrid.DelayAfterFailures, o.EventGrid.DelayedDelivery = 3, delay
	}))
	rc := startReceiver(t)
	rc.setFail(func(int) int { return http.StatusInternalServerError })
	env.Subscribe(t, "flaky", onlyUnder(armsimtest.WebHook(rc.srv.URL), groupScope(env)))
	if err := env.Server.SetTags(e.disk, map[string]string{"a": "1"}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "3 failed deliveries", func() string {
		if st := env.Server.EventGridStats(); st.FailedAttempts < 3 || st.Subscriptions[0].DelayedUntil == nil {
			return fmt.Sprintf("%+v", st)
		}
		return ""
	})
	rc.setFail(nil)
	healthy, before := time.Now(), len(rc.got())
	if err := env.Server.SetTags(e.nic, map[string]string{"b": "2"}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "both events delivered", func() string {
		if st := env.Server.EventGridStats(); st.Delivered < 2 {
			return fmt.Sprintf("%+v", st)
		}
		return ""
	})
	after := rc.got()[before:]
	if len(after) == 0 {
		t.Fatal("no delivery after the endpoint recovered")
	}
	if wait := after[0].at.Sub(healthy); wait < delay/2 {
		t.Errorf("the first delivery after the endpoint recovered came %v after, within the delay", wait)
	}
	if st := waitIdle(t, env); st.Subscriptions[0].DelayedUntil != nil || st.Delivered != 2 {
		t.Errorf("after the delay: %+v", st)
	}
}
