package aws

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest/seed"
	"github.com/tagsync/tagsync/internal/tags"
)

// autoScalingError is an Auto Scaling (query protocol) error answer.
func autoScalingError(status int, code, msg string) *http.Response {
	body := fmt.Sprintf(`<?xml version="1.0"?><ErrorResponse><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>injected</RequestId></ErrorResponse>`, code, msg)
	return &http.Response{StatusCode: status, Status: http.StatusText(status), Header: http.Header{"Content-Type": {"text/xml"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}
}

// TestPatchGroupSplitsPerCall: a group change naming more than 50 tags is
// sent in calls of at most MaxGroupTagsPerCall, which the AWS rules in
// front of moto take (one call of 60 is refused).
func TestPatchGroupSplitsPerCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.seedConfig()
	const region = "us-east-1"
	groupARN, _ := seed.Group(t, cfg, region, "wide", 1, nil)
	var names []string
	for half := range 2 {
		s := map[string]string{}
		for i := range 30 {
			name := fmt.Sprintf("k%02d", half*30+i)
			s[name] = "v"
			names = append(names, name)
		}
		seed.SetGroupTags(t, cfg, region, "wide", s)
	}
	e.resetCalls()
	res, err := e.p.PatchTags(e.ctx, groupARN, tags.Patch{Set: tags.Set{"team": "blue"}, Delete: names})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(res.Tags, tags.Set{"team": "blue"}) {
		t.Fatalf("PatchTags = %+v, want team=blue only", res)
	}
	if got := e.p.Calls()["autoscaling:DeleteTags"]; got != 2 {
		t.Errorf("autoscaling:DeleteTags = %d, want 2 (60 tags, 50 a call)", got)
	}
	if got := seed.GroupTags(t, cfg, region, "wide"); len(got) != 1 || got["team"].Value != "blue" {
		t.Errorf("group tags = %v, want team=blue only", got)
	}
}

// TestPatchGroupNeverHalfApplied: when CreateOrUpdateTags fails after the
// patch's DeleteTags was answered, the deletion is undone and the group
// stays as it was; when the undo fails too, the error says which keys are
// written and which not.
func TestPatchGroupNeverHalfApplied(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fails int32 // CreateOrUpdateTags calls refused
		want  map[string]string
		msg   string
	}{
		{"undone", 1, map[string]string{"old": "x", "keep": "k"}, "left as it was (not written: keep, old, team)"},
		{"undo fails", 2, map[string]string{"keep": "k"}, "undoing it failed (written: old; not written: keep, team)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, WithRetryMaxAttempts(1))
			cfg := e.seedConfig()
			const region = "us-east-1"
			groupARN, _ := seed.Group(t, cfg, region, "pool", 1, map[string]string{"old": "x", "keep": "k"})
			var n atomic.Int32
			e.tr.setInject(func(_ *http.Request, op, _ string) *http.Response {
				if op == "CreateOrUpdateTags" && n.Add(1) <= tc.fails {
					return autoScalingError(http.StatusForbidden, "AccessDenied", "User is not authorized to perform: autoscaling:CreateOrUpdateTags")
				}
				return nil
			})
			_, err := e.p.PatchTags(e.ctx, groupARN, tags.Patch{Set: tags.Set{"team": "blue", "keep": "k2"}, Delete: []string{"old"}})
			if !errors.Is(err, cloud.ErrForbidden) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("PatchTags = %v, want ErrForbidden saying %q", err, tc.msg)
			}
			got := map[string]string{}
			for k, v := range seed.GroupTags(t, cfg, region, "pool") {
				got[k] = v.Value
			}
			if !maps.Equal(got, tc.want) {
				t.Fatalf("group tags = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPatchGroupKeepsPropagateAtLaunch: a group tag whose PropagateAtLaunch
// is false keeps it when a patch changes its value, is not copied to the
// group's instances, and is the group resource's OwnOnly in a Snapshot; a
// new tag propagates.
func TestPatchGroupKeepsPropagateAtLaunch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.seedConfig()
	const region = "us-east-1"
	groupARN, ids := seed.Group(t, cfg, region, "own", 2, nil)
	as := autoscaling.NewFromConfig(cfg, func(o *autoscaling.Options) { o.Region = region })
	if _, err := as.CreateOrUpdateTags(e.ctx, &autoscaling.CreateOrUpdateTagsInput{Tags: []astypes.Tag{{
		ResourceId: sdkaws.String("own"), ResourceType: sdkaws.String("auto-scaling-group"),
		Key: sdkaws.String("owner"), Value: sdkaws.String("a"), PropagateAtLaunch: sdkaws.Bool(false),
	}}}); err != nil {
		t.Fatal(err)
	}
	snap, err := e.p.Snapshot(e.ctx, []cloud.Node{node("n0", region, ids[0])}, cloud.ReadOptions{Fresh: true})
	if res := snap.Resources[cloud.CanonicalID(groupARN)]; err != nil || fmt.Sprint(res.OwnOnly) != "[owner]" {
		t.Errorf("Snapshot group %+v, %v; want OwnOnly [owner]", res, err)
	}
	if _, err := e.p.PatchTags(e.ctx, groupARN, tags.Patch{Set: tags.Set{"owner": "b", "team": "blue"}}); err != nil {
		t.Fatal(err)
	}
	want := map[string]seed.Tag{"owner": {Value: "b"}, "team": {Value: "blue", PropagateAtLaunch: true}}
	if got := seed.GroupTags(t, cfg, region, "own"); !maps.Equal(got, want) {
		t.Errorf("group tags = %v, want %v", got, want)
	}
	for _, id := range ids {
		if got := userTags(seed.InstanceTags(t, cfg, region, id)); !maps.Equal(got, tags.Set{"team": "blue"}) {
			t.Errorf("instance %s tags = %v, want team only (owner does not propagate)", id, got)
		}
	}
}
