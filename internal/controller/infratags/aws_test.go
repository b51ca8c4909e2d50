package infratags_test

import (
	"fmt"
	"testing"

	"github.com/tagsync/tagsync/internal/cloud/aws/awstest"
	"github.com/tagsync/tagsync/internal/testenv"
)

// TestShippingSchemaAWS: on AWS the user tags in the shipping
// Infrastructure's status reach every EC2 resource carrying the cluster's
// owned tag (kubernetes.io/cluster/<infraID>=owned), in one CreateTags.
func TestShippingSchemaAWS(t *testing.T) {
	t.Parallel()
	moto := testenv.StartMoto(t)
	h, provider := newHarnessWithAWS(t, moto, shippingCRD(t))
	const infraID = "aws-3c4d5"
	ids := awstest.RunInstances(t, moto, 12, map[string]string{"kubernetes.io/cluster/" + infraID: "owned"})
	h.infrastructure(map[string]any{}, map[string]any{
		"infrastructureName": infraID,
		"platformStatus": map[string]any{"type": "AWS", "aws": map[string]any{
			"region": testenv.MotoRegion, "resourceTags": tagList("env", "prod", "team", "a")}},
	})
	eventually(t, "every instance tagged", func() string {
		for _, id := range ids {
			if got := awstest.Tags(t, moto, id); got["env"] != "prod" || got["team"] != "a" {
				return fmt.Sprintf("%s has %v", id, got)
			}
		}
		return ""
	})
	if n := provider.Calls()["ec2:CreateTags"]; n != 1 {
		t.Errorf("%d CreateTags calls for 12 instances, want 1", n)
	}
	h.waitEvent("UserTagsApplied", "aws: user tags applied to 12 resources")
}
