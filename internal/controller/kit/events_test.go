package kit

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloudchange"
)

// TestEventsConditionSaysWhyEventsDoNotDrive: a source down comes first,
// then a silence; either is False with the interval polled meanwhile.
func TestEventsConditionSaysWhyEventsDoNotDrive(t *testing.T) {
	cases := []struct {
		health        cloudchange.Health
		status        metav1.ConditionStatus
		reason, parts string
	}{
		{cloudchange.Health{Up: true}, metav1.ConditionTrue, v1alpha1.ReasonEventsOn, "polling every 5m0s as a safety net"},
		{cloudchange.Health{Up: true, Silent: "azure events silent since ..."}, metav1.ConditionFalse, v1alpha1.ReasonEventsSilent,
			"(azure events silent since ...): polling every 5m0s"},
		{cloudchange.Health{Reason: "sqs: queue gone", Silent: "azure events silent"}, metav1.ConditionFalse, v1alpha1.ReasonEventSourceDown,
			"(sqs: queue gone): polling every 5m0s"},
	}
	for _, tc := range cases {
		c := EventsCondition(tc.health, 5*time.Minute, 3)
		if c.Status != tc.status || c.Reason != tc.reason || !strings.Contains(c.Message, tc.parts) || c.ObservedGeneration != 3 {
			t.Errorf("health %+v: %s %s %q, want %s %s with %q", tc.health, c.Status, c.Reason, c.Message, tc.status, tc.reason, tc.parts)
		}
	}
}
