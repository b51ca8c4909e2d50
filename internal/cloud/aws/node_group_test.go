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
