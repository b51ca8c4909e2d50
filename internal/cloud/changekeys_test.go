package cloud

import (
	"slices"
	"testing"
)

// TestChangeKeys: an EC2 ARN is also known by its bare resource ID; other
// IDs (ARM's, another service's ARN) by themselves only.
func TestChangeKeys(t *testing.T) {
	for id, want := range map[string][]string{
		"arn:aws:ec2:us-east-1:123456789012:volume/vol-0ABC":                     {"arn:aws:ec2:us-east-1:123456789012:volume/vol-0abc", "vol-0abc"},
		"arn:aws:ec2:us-east-1:123456789012:snapshot/snap-1":                     {"arn:aws:ec2:us-east-1:123456789012:snapshot/snap-1", "snap-1"},
		"arn:aws:elasticloadbalancing:us-east-1:1:loadbalancer/net/a/b":          {"arn:aws:elasticloadbalancing:us-east-1:1:loadbalancer/net/a/b"},
		"/subscriptions/s/resourceGroups/RG/providers/Microsoft.Compute/disks/d": {"/subscriptions/s/resourcegroups/rg/providers/microsoft.compute/disks/d"},
	} {
		if got := ChangeKeys(id); !slices.Equal(got, want) {
			t.Errorf("ChangeKeys(%s) = %v, want %v", id, got, want)
		}
	}
}
