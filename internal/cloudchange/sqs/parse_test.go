package sqs

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/tags"
)

// Sample bodies as EventBridge delivers them to SQS (the shapes of AWS's
// documented examples).
const (
	tagChangeBody = `{
  "version": "0",
  "id": "bddcf1d6-0251-35a1-aab0-adc1fb47c11c",
  "detail-type": "Tag Change on Resource",
  "source": "aws.tag",
  "account": "123456789012",
  "time": "2018-09-18T20:41:38Z",
  "region": "us-east-1",
  "resources": ["arn:aws:ec2:us-east-1:123456789012:instance/i-0000000aaaaaaaaaa"],
  "detail": {
    "changed-tag-keys": ["a-new-key", "an-updated-key", "a-deleted-key"],
    "service": "ec2",
    "resource-type": "instance",
    "version": 3,
    "tags": {
      "a-new-key": "tag-value-on-new-key-just-added",
      "an-updated-key": "tag-value-was-just-changed",
      "an-unchanged-key": "tag-value-still-the-same"
    }
  }
}`
	stateChangeBody = `{
  "version": "0",
  "id": "7bf73129-1428-4cd3-a780-95db273d1602",
  "detail-type": "EC2 Instance State-change Notification",
  "source": "aws.ec2",
  "account": "123456789012",
  "time": "2021-11-11T21:29:54Z",
  "region": "us-east-1",
  "resources": ["arn:aws:ec2:us-east-1:123456789012:instance/i-1234567890abcdef0"],
  "detail": {"instance-id": "i-1234567890abcdef0", "state": "STATE"}
}`
	invalidPolicyBody = `{"version":"0","id":"e3b4c1b2-0000-1111-2222-333344445555","detail-type":"Invalid Effective Tag Policy",
  "source":"aws.tag","account":"123456789012","time":"2024-01-02T03:04:05Z","region":"us-east-1",
  "resources":["arn:aws:ec2:us-east-1:123456789012:instance/i-0000000aaaaaaaaaa"],"detail":{}}`
)

// instanceARN is the resource of stateChangeBody.
const instanceARN = "arn:aws:ec2:us-east-1:123456789012:instance/i-1234567890abcdef0"

// stateBody returns stateChangeBody with the instance in state.
func stateBody(state string) string { return strings.Replace(stateChangeBody, "STATE", state, 1) }

// stateChange is the Change of stateBody with kind.
func stateChange(kind cloudchange.Kind) cloudchange.Change {
	return cloudchange.Change{Cloud: "aws", Resource: instanceARN, Kind: kind, ID: "7bf73129-1428-4cd3-a780-95db273d1602",
		Time: time.Date(2021, 11, 11, 21, 29, 54, 0, time.UTC), Source: "sqs"}
}

func TestParse(t *testing.T) {
	tagChange := cloudchange.Change{Cloud: "aws", Resource: "arn:aws:ec2:us-east-1:123456789012:instance/i-0000000aaaaaaaaaa",
		Kind: cloudchange.KindWrite, ID: "bddcf1d6-0251-35a1-aab0-adc1fb47c11c", Time: time.Date(2018, 9, 18, 20, 41, 38, 0, time.UTC),
		Source: "sqs", Tags: tags.Set{
			"a-new-key":        "tag-value-on-new-key-just-added",
			"an-updated-key":   "tag-value-was-just-changed",
			"an-unchanged-key": "tag-value-still-the-same",
		}}
	withTags := func(c cloudchange.Change, s tags.Set) cloudchange.Change { c.Tags = s; return c }
	cases := []struct {
		name string
		body string
		want cloudchange.Change
		// wantErr is "" for a change, "ignored" for ErrNotRead, else a
		// substring of the poison error.
		wantErr string
	}{
		{name: "tag change: the whole tag set after the change", body: tagChangeBody, want: tagChange},
		{name: "tag change removing the last tag: an empty set, not nil",
			body: strings.Replace(tagChangeBody, `"tags": {`, `"tags": {}, "x": {`, 1), want: withTags(tagChange, tags.Set{})},
		{name: "tag change without tags: nil, a pass reads them",
			body: strings.Replace(tagChangeBody, `"tags": {`, `"not-tags": {`, 1), want: withTags(tagChange, nil)},
		{name: "tag change with a string version", body: strings.Replace(tagChangeBody, `"version": 3`, `"version": "3"`, 1),
			want: tagChange},
		{name: "running instance", body: stateBody("running"), want: stateChange(cloudchange.KindState)},
		{name: "stopped instance", body: stateBody("stopped"), want: stateChange(cloudchange.KindState)},
		{name: "shutting-down instance", body: stateBody("shutting-down"), want: stateChange(cloudchange.KindState)},
		{name: "terminated instance: a delete", body: stateBody("terminated"), want: stateChange(cloudchange.KindDelete)},
		{name: "state change without a state", body: stateBody(""), wantErr: "no state"},
		{name: "another aws.tag event", body: invalidPolicyBody, wantErr: "ignored"},
		{name: "another source", body: strings.Replace(stateBody("running"), `"aws.ec2"`, `"aws.autoscaling"`, 1), wantErr: "ignored"},
		{name: "another EC2 event", body: strings.Replace(stateBody("running"), "EC2 Instance State-change Notification",
			"EC2 Spot Instance Interruption Warning", 1), wantErr: "ignored"},
		{name: "not JSON", body: "hello", wantErr: "not an EventBridge event"},
		{name: "JSON but not an object", body: `["aws.tag"]`, wantErr: "not an EventBridge event"},
		{name: "no source", body: strings.Replace(tagChangeBody, `"source"`, `"src"`, 1), wantErr: `no "source"`},
		{name: "no id", body: strings.Replace(tagChangeBody, `"id"`, `"ident"`, 1), wantErr: "without an id"},
		{name: "no time", body: strings.Replace(tagChangeBody, `"time"`, `"when"`, 1), wantErr: "no time"},
		{name: "a time that is not RFC 3339", body: strings.Replace(tagChangeBody, "2018-09-18T20:41:38Z", "yesterday", 1),
			wantErr: "not an EventBridge event"},
		{name: "no resources", body: strings.Replace(stateBody("running"), `"resources"`, `"things"`, 1), wantErr: "no resource"},
		{name: "no detail", body: strings.Replace(stateBody("running"), `"detail"`, `"details"`, 1), wantErr: "no detail"},
		{name: "tags that are not strings", body: strings.Replace(tagChangeBody, `"tag-value-was-just-changed"`, `7`, 1),
			wantErr: "detail"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.body)
			switch {
			case tc.wantErr == "ignored":
				if !errors.Is(err, ErrNotRead) {
					t.Fatalf("Parse: %v, want ErrNotRead", err)
				}
			case tc.wantErr != "":
				if err == nil || errors.Is(err, ErrNotRead) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse: %v, want a poison error with %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatalf("Parse: %v", err)
			default:
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("Parse:\n got %+v\nwant %+v", got, tc.want)
				}
				if (tc.want.Tags == nil) != (got.Tags == nil) {
					t.Errorf("Parse: Tags nil = %t, want %t", got.Tags == nil, tc.want.Tags == nil)
				}
			}
		})
	}
}
