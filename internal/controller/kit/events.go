package kit

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloudchange"
)

// EventsCondition is the Events condition of an object that polls every
// every while the sources are as h says (v1alpha1.ConditionEvents): a
// source down comes first, then a silence (h.Silent).
func EventsCondition(h cloudchange.Health, every time.Duration, generation int64) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionEvents, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonEventsOn,
		ObservedGeneration: generation,
		Message:            fmt.Sprintf("cloud changes arrive as events; polling every %s as a safety net", every)}
	switch {
	case !h.Up:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonEventSourceDown
		c.Message = fmt.Sprintf("events are degraded (%s): polling every %s until every source delivers again", h.Reason, every)
	case h.Silent != "":
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonEventsSilent
		c.Message = fmt.Sprintf("events stopped arriving though the sources are up (%s): polling every %s until they arrive again", h.Silent, every)
	}
	return c
}
