package labelsync

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	discoveryfake "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/cluster-api/controllers/clustercache"

	"github.com/tagsync/tagsync/api/metal3"
	"github.com/tagsync/tagsync/api/v1alpha1"
)

func TestParseInterval(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"", v1alpha1.DefaultLabelResync, ""},
		{" 30s ", 30 * time.Second, ""},
		{"10s", 10 * time.Second, ""},
		{"1h30m", 90 * time.Minute, ""},
		{"24h", 24 * time.Hour, ""},
		{"9s", 0, "shorter than 10s"},
		{"25h", 0, "longer than 24h"},
		{"soon", 0, "not a duration"},
		{"30", 0, "not a duration"},
	}
	for _, c := range cases {
		got, err := ParseInterval(c.in)
		if c.err == "" && (err != nil || got != c.want) {
			t.Errorf("ParseInterval(%q) = %s, %v; want %s", c.in, got, err, c.want)
		}
		if c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("ParseInterval(%q) = %s, %v; want an error saying %q", c.in, got, err, c.err)
		}
	}
}

func TestParseAnnotations(t *testing.T) {
	cases := []struct {
		name     string
		a        map[string]string
		prefixes []string
		resync   time.Duration
		errs     []string
	}{
		{name: "no annotation: no source", a: map[string]string{metal3.IntervalAnnotation: "30s"}},
		{name: "CAPM3's example", a: map[string]string{metal3.PrefixesAnnotation: "my-prefix.foobar.io, my.thing", metal3.IntervalAnnotation: "30s"},
			prefixes: []string{"my-prefix.foobar.io", "my.thing"}, resync: 30 * time.Second},
		{name: "default interval", a: map[string]string{metal3.PrefixesAnnotation: "a.io"}, prefixes: []string{"a.io"}, resync: time.Minute},
		{name: "empty list syncs nothing", a: map[string]string{metal3.PrefixesAnnotation: " , "}, prefixes: []string{}, resync: time.Minute},
		{name: "a reserved prefix refuses all", a: map[string]string{metal3.PrefixesAnnotation: "a.io, kubernetes.io"},
			errs: []string{metal3.PrefixesAnnotation, `"kubernetes.io" is reserved`}},
		{name: "a bad interval refuses all", a: map[string]string{metal3.PrefixesAnnotation: "a.io", metal3.IntervalAnnotation: "1s"},
			errs: []string{metal3.IntervalAnnotation, "shorter than 10s"}},
		{name: "both wrong, both said", a: map[string]string{metal3.PrefixesAnnotation: "A.io", metal3.IntervalAnnotation: "x"},
			errs: []string{`"A.io"`, `"x" is not a duration`}},
	}
	for _, c := range cases {
		prefixes, resync, err := parseAnnotations(c.a)
		if c.errs == nil {
			if err != nil || !slices.Equal(prefixes, c.prefixes) || (prefixes == nil) != (c.prefixes == nil) || resync != c.resync {
				t.Errorf("%s: got %q, %s, %v; want %q, %s", c.name, prefixes, resync, err, c.prefixes, c.resync)
			}
			continue
		}
		if err == nil || prefixes != nil {
			t.Errorf("%s: got %q, %v; want refused", c.name, prefixes, err)
			continue
		}
		for _, frag := range c.errs {
			if !strings.Contains(err.Error(), frag) {
				t.Errorf("%s: %q does not say %q", c.name, err, frag)
			}
		}
	}
}

func TestMissingKinds(t *testing.T) {
	served := func(leave ...string) discovery.DiscoveryInterface {
		fake := &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{}}
		byGV := map[string]*metav1.APIResourceList{}
		for _, n := range neededResources {
			if slices.Contains(leave, n.resource) {
				continue
			}
			gv := n.gvk.GroupVersion().String()
			if byGV[gv] == nil {
				byGV[gv] = &metav1.APIResourceList{GroupVersion: gv}
				fake.Resources = append(fake.Resources, byGV[gv])
			}
			byGV[gv].APIResources = append(byGV[gv].APIResources, metav1.APIResource{Name: n.resource, Kind: n.gvk.Kind})
		}
		return fake
	}
	if got := missingKinds(served()); got != "" {
		t.Fatalf("all kinds served: %q", got)
	}
	got := missingKinds(served("baremetalhosts"))
	if !strings.Contains(got, "BareMetalHost (metal3.io/v1alpha1)") || strings.Contains(got, "Machine (") {
		t.Fatalf("missing BareMetalHost: %q", got)
	}
	got = missingKinds(served("metal3machines"))
	if !strings.Contains(got, "Metal3Machine (infrastructure.cluster.x-k8s.io/v1beta1)") || strings.Contains(got, "Metal3Cluster") {
		t.Fatalf("missing Metal3Machine, its group served: %q", got)
	}
	all := []string{"baremetalhosts", "metal3machines", "metal3clusters", "machines", "clusters"}
	if got := missingKinds(served(all...)); strings.Count(got, "/v1") != len(all) {
		t.Fatalf("nothing served: %q", got)
	}
}

func TestClusterBackoff(t *testing.T) {
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute}
	for i, w := range want {
		if got := clusterBackoff(i + 1); got != w {
			t.Errorf("clusterBackoff(%d) = %s, want %s", i+1, got, w)
		}
	}
	if got := clusterBackoff(1000); got != maxClusterRetry {
		t.Errorf("clusterBackoff(1000) = %s", got)
	}
}

// TestOneBackoffPerCluster: two sources whose passes fail to reach the
// same cluster at the same time count one failure, not two, so sharing a
// cluster does not double its backoff.
func TestOneBackoffPerCluster(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	r := NewReconciler(nil, nil, nil, clk)
	r.init()
	shared := types.NamespacedName{Namespace: "ns", Name: "shared"}
	for range 2 {
		if got := r.clusterFailed(shared, errors.New("down")); got != time.Second {
			t.Fatalf("retry after %s, want 1s", got)
		}
	}
	if n := r.clusterFailures(shared); n != 1 {
		t.Fatalf("%d failures counted, want 1", n)
	}
	clk.SetTime(clk.Now().Add(time.Second))
	if got := r.clusterFailed(shared, errors.New("down")); got != 2*time.Second {
		t.Fatalf("retry after %s once the first backoff ended, want 2s", got)
	}
}

// TestErrorsReachingACluster: which errors mean a workload cluster cannot
// be reached (its hosts wait instead of failing), and the cause each names.
func TestErrorsReachingACluster(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:1", Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}
	gr := schema.GroupResource{Resource: "nodes"}
	cases := []struct {
		err         error
		unreachable bool
		cause       UnreachableCause
	}{
		{refused, true, CauseConnectionRefused},
		{fmt.Errorf("patching node n1: %w", refused), true, CauseConnectionRefused},
		{&url.Error{Op: "Get", URL: "https://10.0.0.1", Err: context.DeadlineExceeded}, true, CauseTimedOut},
		{&url.Error{Op: "Get", URL: "https://10.0.0.1", Err: x509.UnknownAuthorityError{}}, true, CauseTLS},
		{clustercache.ErrClusterNotConnected, true, CauseConnecting},
		{fmt.Errorf("get client: %w", clustercache.ErrClusterNotConnected), true, CauseConnecting},
		{apierrors.NewServiceUnavailable("shutting down"), true, CauseNoAnswer},
		{apierrors.NewTimeoutError("slow", 1), true, CauseNoAnswer},
		{apierrors.NewUnauthorized("bad token"), false, CauseAuthRefused},
		{apierrors.NewForbidden(gr, "n1", errors.New("no")), false, CauseAuthRefused},
		{apierrors.NewNotFound(gr, "n1"), false, CauseNoAnswer},
		{apierrors.NewConflict(gr, "n1", errors.New("changed")), false, CauseNoAnswer},
		{errors.New("something else"), false, CauseNoAnswer},
	}
	for _, c := range cases {
		if got := isUnreachable(c.err); got != c.unreachable {
			t.Errorf("isUnreachable(%v) = %v, want %v", c.err, got, c.unreachable)
		}
		if got := causeOf(c.err); got != c.cause {
			t.Errorf("causeOf(%v) = %q, want %q", c.err, got, c.cause)
		}
	}
	if isUnreachable(nil) {
		t.Error("isUnreachable(nil) = true")
	}
}

// TestWithdrawn: only a Secret that is gone, malformed or forbidden closes
// the connection; a read that failed otherwise keeps it.
func TestWithdrawn(t *testing.T) {
	c := types.NamespacedName{Namespace: "ns", Name: "c"}
	gr := schema.GroupResource{Resource: "secrets"}
	cases := []struct {
		bad  *unreachableError
		want bool
	}{
		{unreachable(c, CauseSecretMissing, "", apierrors.NewNotFound(gr, "c-kubeconfig")), true},
		{unreachable(c, CauseKubeconfigMalformed, "", nil), true},
		{unreachable(c, CauseSecretUnreadable, "", apierrors.NewForbidden(gr, "c-kubeconfig", errors.New("no"))), true},
		{unreachable(c, CauseSecretUnreadable, "", apierrors.NewServerTimeout(gr, "get", 1)), false},
	}
	for _, tc := range cases {
		if got := withdrawn(tc.bad); got != tc.want {
			t.Errorf("withdrawn(%v) = %v, want %v", tc.bad, got, tc.want)
		}
	}
}

func TestRequestKeys(t *testing.T) {
	infra := infraRequest(types.NamespacedName{Namespace: "metal", Name: "alpha"})
	if isProfileRequest(infra.NamespacedName) || infra.Name != "Metal3Cluster:alpha" {
		t.Fatalf("the request of a Metal3Cluster is %v", infra)
	}
	for _, name := range []string{"p1", "m", "metal3cluster-alpha", "Metal3Cluster"} {
		if !isProfileRequest(types.NamespacedName{Namespace: "metal", Name: name}) {
			t.Errorf("%q is taken for a Metal3Cluster", name)
		}
	}
}

func TestSyncedNodeNeedsNothing(t *testing.T) {
	prefixes := []string{"r.io"}
	u := updateFor(map[string]string{"r.io/a": "1"}, map[string]string{"r.io/a": "1", "x": "y"}, prefixes, nil, false)
	if !u.IsEmpty() {
		t.Fatalf("a synced Node gets %+v", u)
	}
	u = updateFor(map[string]string{"r.io/a": "1"}, map[string]string{"r.io/a": "1"}, prefixes, []corev1.Taint{{Key: v1alpha1.LabelSyncPendingTaintKey, Effect: corev1.TaintEffectNoSchedule}}, false)
	if u.IsEmpty() || u.Taints == nil || len(u.Taints) != 0 || !u.Labels.IsEmpty() {
		t.Fatalf("a synced Node with the pending taint gets %+v", u)
	}
}

func TestRetainKeepsWhatSyncWouldRemove(t *testing.T) {
	prefixes := []string{"r.io"}
	host := map[string]string{"r.io/a": "2"}
	node := map[string]string{"r.io/a": "1", "r.io/gone": "x", "r.io/extra": "y", "other": "z"}
	taint := []corev1.Taint{{Key: v1alpha1.LabelSyncPendingTaintKey, Effect: corev1.TaintEffectNoSchedule}}
	u := updateFor(host, node, prefixes, taint, true)
	if len(u.Labels.Delete) != 0 || u.Labels.Set["r.io/a"] != "2" || len(u.Labels.Set) != 1 {
		t.Fatalf("Retain: labels %+v, want r.io/a set and nothing removed", u.Labels)
	}
	if strings.Join(u.Retained, ",") != "r.io/extra,r.io/gone" {
		t.Fatalf("retained %v, want r.io/extra and r.io/gone", u.Retained)
	}
	if u.Taints == nil {
		t.Fatal("Retain: the pending taint stays although the host's labels land")
	}
	u = updateFor(host, node, prefixes, nil, false)
	if strings.Join(u.Labels.Delete, ",") != "r.io/extra,r.io/gone" || len(u.Retained) != 0 {
		t.Fatalf("Delete: %+v, want r.io/extra and r.io/gone removed", u)
	}
	// Only kept labels differ: nothing to write.
	if u := updateFor(map[string]string{"r.io/a": "1"}, node, prefixes, nil, true); !u.IsEmpty() || len(u.Retained) != 2 {
		t.Fatalf("Retain on a Node with only extra labels: %+v, want no write and 2 kept", u)
	}
}
