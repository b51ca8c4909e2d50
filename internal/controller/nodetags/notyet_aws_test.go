package nodetags_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest/seed"
	"github.com/tagsync/tagsync/internal/testenv"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// TestAWSNewInstanceNotYet: a new Node whose instance EC2 does not show yet
// keeps the pending taint without the "remove it by hand" warning, and its
// NodeTagSync looks again within seconds (not at its hour-long resync), while
// its NewInstanceGrace, counted from the Node's creation, lasts.
func TestAWSNewInstanceNotYet(t *testing.T) {
	h, c := newMotoHarness(t)
	o := &onCloud{harness: h, cloud: c, provider: v1alpha1.ProviderAWS, name: "notyet"}
	_, pid := c.solo(h, o.name, map[string]string{"env": "prod"})
	pending := build.NoSchedule(v1alpha1.NodeTagsPendingTaintKey, "true")
	synced := o.node(0, pid, nil, nil, pending)
	early := o.node(1, seed.ProviderID(testenv.MotoRegion, "i-0123456789abcdef0"), nil, nil, pending)
	o.sync(func(s *v1alpha1.NodeTagSyncSpec) { s.ResyncInterval = &metav1.Duration{Duration: time.Hour} })
	o.waitLabel(synced, o.label("env"), "prod")
	nts := o.passDone(o.name, 2)
	if nts.Status.UnmanagedNodes != 1 {
		t.Fatalf("status %+v, want the early node unmanaged (not yet)", nts.Status)
	}
	full, _ := h.passes(o.name)
	o.eventually("another pass without any trigger", func() string {
		if now, _ := h.passes(o.name); now < full+2 {
			return "passes stayed at the resync interval"
		}
		return ""
	})
	if got := h.events("NodePending", early); len(got) != 0 {
		t.Errorf("NodePending events about %s while EC2 may not show its instance yet: %v", early, got)
	}
	if !hasTaint(o.getNode(early), v1alpha1.NodeTagsPendingTaintKey) {
		t.Errorf("%s lost the pending taint although it is not synced", early)
	}
}
