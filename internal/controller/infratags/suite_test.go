package infratags_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/aws"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest"
	"github.com/tagsync/tagsync/internal/cloud/azure"
	"github.com/tagsync/tagsync/internal/controller/infratags"
	"github.com/tagsync/tagsync/internal/controller/metadata"
	"github.com/tagsync/tagsync/internal/operator"
	"github.com/tagsync/tagsync/internal/testenv"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

func TestMain(m *testing.M) { testenv.Main(m, nil) }

const (
	sub       = armsimtest.SubscriptionID
	namespace = "openshift-tags"
	waitFor   = 60 * time.Second
)

// TestInfrastructureKindIsOpenShifts: the adapter's kind is the one the
// openshift/api module defines.
func TestInfrastructureKindIsOpenShifts(t *testing.T) {
	if got := configv1.GroupVersion.WithKind("Infrastructure"); got != infratags.InfrastructureGVK {
		t.Fatalf("openshift/api says %v, the adapter %v", got, infratags.InfrastructureGVK)
	}
}

// shippingCRD is the Infrastructure CRD as OpenShift ships it, from the
// github.com/openshift/api module.
func shippingCRD(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/openshift/api").Output()
	if err != nil {
		t.Fatalf("locating the github.com/openshift/api module: %v", err)
	}
	p := filepath.Join(strings.TrimSpace(string(out)), "config", "v1", "zz_generated.crd-manifests",
		"0000_10_config-operator_01_infrastructures-Default.crd.yaml")
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// seedCRD is the proposal's Infrastructure CRD.
const seedCRD = "test/crds/openshift-seed"

// harness is one test's control plane, armsim and controllers.
type harness struct {
	t    *testing.T
	ctx  context.Context
	kube *testenv.Env
	c    client.Client
	az   *armsimtest.Env
	stop func()
}

// newHarness starts a control plane with the given CRDs, armsim, and the
// metadata and infratags controllers.
func newHarness(t *testing.T, crds ...string) *harness {
	t.Helper()
	return startHarness(t, nil, crds)
}

// startHarness is newHarness with more providers besides armsim's Azure.
func startHarness(t *testing.T, extra []cloud.Provider, crds []string) *harness {
	t.Helper()
	h := startWithoutNamespace(t, extra, crds)
	h.createNamespace()
	return h
}

// createNamespace creates the namespace the adapter writes its engine
// objects in.
func (h *harness) createNamespace() {
	h.t.Helper()
	if err := h.c.Create(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		h.t.Fatal(err)
	}
}

// startWithoutNamespace is startHarness before the adapter's namespace
// exists.
func startWithoutNamespace(t *testing.T, extra []cloud.Provider, crds []string) *harness {
	t.Helper()
	kube := testenv.StartWith(t, testenv.Options{ExtraCRDDirs: crds})
	h := &harness{t: t, ctx: context.Background(), kube: kube, c: kube.Client, az: armsimtest.Start(t)}
	az, err := azure.NewProvider(h.ctx, azure.Config{ARMEndpoint: h.az.Server.URL(), ARMAudience: h.az.Server.URL(),
		DefaultSubscription: sub, HTTPClient: h.az.HTTPClient},
		azure.WithCredential(h.az.Credential), azure.WithRegisterer(prometheus.NewRegistry()),
		azure.WithThrottleGates(azure.NewThrottleGates()),
		azure.WithRetry(azure.Retry{MaxRetries: 5, RetryDelay: 20 * time.Millisecond, MaxRetryDelay: 2 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := operator.Build(h.ctx, kube.Config, operator.Options{
		MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true,
		Providers:   append([]cloud.Provider{az}, extra...),
		Controllers: []string{metadata.ControllerName, infratags.ControllerName},
		InfraTags:   infratags.Options{Namespace: namespace, CRDPollInterval: 200 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.stop = testenv.StartManager(h.ctx, t, mgr)
	t.Cleanup(func() {
		h.stop()
		h.az.HTTPClient.CloseIdleConnections()
	})
	return h
}

// estate seeds the cluster's resources: every type a cluster owns carrying
// the owned tag, in the cluster's resource group.
func (h *harness) estate(infraID string) armsimtest.ClusterEstate {
	h.t.Helper()
	e := armsimtest.ClusterEstate{Infra: infraID, ResourceGroup: "rg-" + infraID,
		Tags: map[string]string{"kubernetes.io_cluster." + infraID: "owned"}}
	if err := e.Seed(h.az.Server); err != nil {
		h.t.Fatal(err)
	}
	return e
}

// infrastructure creates the Infrastructure named cluster with spec and
// status (status written through its subresource).
func (h *harness) infrastructure(spec, status map[string]any) *unstructured.Unstructured {
	h.t.Helper()
	u := build.Infrastructure(build.Field(spec, "spec"))
	if err := h.c.Create(h.ctx, u); err != nil {
		h.t.Fatalf("create the Infrastructure: %v", err)
	}
	u.Object["status"] = status
	if err := h.c.Status().Update(h.ctx, u); err != nil {
		h.t.Fatalf("write the Infrastructure's status: %v", err)
	}
	return u
}

// tagList renders k=v pairs as an Infrastructure resourceTags list.
func tagList(kv ...string) []any {
	var out []any
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, map[string]any{"key": kv[i], "value": kv[i+1]})
	}
	return out
}

// eventually is testenv.Eventually with the suite's deadline.
func eventually(t *testing.T, what string, cond func() string) {
	t.Helper()
	testenv.Eventually(t, waitFor, what, cond)
}

// waitTags waits until every id carries want.
func (h *harness) waitTags(ids []string, want map[string]string) {
	h.t.Helper()
	eventually(h.t, fmt.Sprintf("%d resources carrying %v", len(ids), want), func() string {
		for _, id := range ids {
			got, err := h.az.Server.Tags(id)
			if err != nil {
				return err.Error()
			}
			for k, v := range want {
				if got[k] != v {
					return fmt.Sprintf("%s has %v", id, got)
				}
			}
		}
		return ""
	})
}

// waitEvent waits for an event on the Infrastructure with reason whose note
// contains every fragment, and returns its note.
func (h *harness) waitEvent(reason string, fragments ...string) string {
	h.t.Helper()
	var note string
	eventually(h.t, "a "+reason+" event", func() string {
		var list eventsv1.EventList
		if err := h.c.List(h.ctx, &list); err != nil {
			return err.Error()
		}
		var seen []string
	events:
		for _, e := range list.Items {
			if e.Regarding.Kind != "Infrastructure" || e.Reason != reason {
				continue
			}
			seen = append(seen, e.Note)
			for _, f := range fragments {
				if !strings.Contains(e.Note, f) {
					continue events
				}
			}
			note = e.Note
			return ""
		}
		return fmt.Sprintf("%s events so far: %q", reason, seen)
	})
	return note
}

// newHarnessWithAWS is newHarness with an AWS provider on moto as well.
func newHarnessWithAWS(t *testing.T, moto *testenv.Moto, crds ...string) (*harness, *aws.Provider) {
	t.Helper()
	p := awstest.Provider(t, moto)
	return startHarness(t, []cloud.Provider{p}, crds), p
}
