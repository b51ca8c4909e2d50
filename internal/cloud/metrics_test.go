package cloud

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestRequestMetricsSharedByProviders: two providers register on one
// registry (the second reuses the collectors), each counts under its own
// provider label and keeps its own Calls; no answer counts as code "error".
func TestRequestMetricsSharedByProviders(t *testing.T) {
	reg := prometheus.NewRegistry()
	az, err := NewRequestMetrics("azure", reg)
	if err != nil {
		t.Fatal(err)
	}
	aws, err := NewRequestMetrics("aws", reg)
	if err != nil {
		t.Fatalf("a second provider on the same registry: %v", err)
	}
	az.Observe("Tags.UpdateAtScope", 429, true, time.Millisecond)
	az.Observe("Tags.UpdateAtScope", 200, false, time.Millisecond)
	aws.Observe("ec2:CreateTags", 0, false, time.Millisecond)
	aws.Held("ec2:CreateTags", "writes")

	for _, c := range []struct {
		got  float64
		want float64
		what string
	}{
		{testutil.ToFloat64(az.requests.WithLabelValues("azure", "Tags.UpdateAtScope", "429")), 1, "azure 429"},
		{testutil.ToFloat64(az.requests.WithLabelValues("azure", "Tags.UpdateAtScope", "200")), 1, "azure 200"},
		{testutil.ToFloat64(az.throttled.WithLabelValues("azure", "Tags.UpdateAtScope")), 1, "azure throttled"},
		{testutil.ToFloat64(az.requests.WithLabelValues("aws", "ec2:CreateTags", "error")), 1, "aws without an answer"},
		{testutil.ToFloat64(az.holds.WithLabelValues("aws", "ec2:CreateTags", "writes")), 1, "aws held"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	if got := az.Calls(); len(got) != 1 || got["Tags.UpdateAtScope"] != 2 {
		t.Errorf("azure calls = %v", got)
	}
	if got := aws.Calls(); len(got) != 1 || got["ec2:CreateTags"] != 1 {
		t.Errorf("aws calls = %v (a held attempt is not a call)", got)
	}
}
