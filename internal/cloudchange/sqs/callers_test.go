package sqs

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/tags"
)

// callBody is an EventBridge "AWS API Call via CloudTrail" event of an
// EC2 DeleteTags made from the console by a person signed in through IAM
// Identity Center (the record's shape as CloudTrail documents it).
const callBody = `{
  "version": "0",
  "id": "6f2c8a1e-0000-4000-8000-00000000c7a1",
  "detail-type": "AWS API Call via CloudTrail",
  "source": "aws.ec2",
  "account": "123456789012",
  "time": "2018-09-18T20:41:38Z",
  "region": "us-east-1",
  "resources": [],
  "detail": {
    "eventVersion": "1.09",
    "userIdentity": {
      "type": "AssumedRole",
      "principalId": "AROAEXAMPLE:alice@example.com",
      "arn": "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Admin_0123456789abcdef/alice@example.com",
      "accountId": "123456789012",
      "sessionContext": {"sessionIssuer": {"type": "Role", "userName": "AWSReservedSSO_Admin_0123456789abcdef"}}
    },
    "eventTime": "2018-09-18T20:41:37Z",
    "eventSource": "ec2.amazonaws.com",
    "eventName": "DeleteTags",
    "awsRegion": "us-east-1",
    "sessionCredentialFromConsole": "true",
    "requestParameters": {
      "resourcesSet": {"items": [{"resourceId": "i-0000000aaaaaaaaaa"}]},
      "tagSet": {"items": [{"key": "a-deleted-key"}]}
    },
    "responseElements": {"_return": true},
    "recipientAccountId": "123456789012"
  }
}`

// TestParseCall: a CloudTrail event of a tag write is no change (Parse:
// ErrNotRead) but names who wrote, on which resources; other calls and
// failed calls are ignored.
func TestParseCall(t *testing.T) {
	if _, err := Parse(callBody); !errors.Is(err, ErrNotRead) {
		t.Fatalf("Parse of a CloudTrail call: %v, want ErrNotRead", err)
	}
	ev, err := parse(callBody)
	if err != nil || ev.call == nil {
		t.Fatalf("parse: %+v, %v", ev, err)
	}
	c := ev.call
	wantWriter := cloudchange.Writer{ID: "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Admin_0123456789abcdef/alice@example.com", Person: true}
	if c.writer != wantWriter || len(c.keys) != 1 || c.keys[0] != matchKey("arn:aws:ec2:us-east-1:123456789012:instance/i-0000000aaaaaaaaaa") || !c.deleted["a-deleted-key"] {
		t.Fatalf("call = %+v, want %+v on the instance", c, wantWriter)
	}
	asg := `{"version":"0","id":"1","detail-type":"AWS API Call via CloudTrail","source":"aws.autoscaling","account":"123456789012",
	  "time":"2024-01-02T03:04:05Z","region":"eu-west-1","resources":[],"detail":{"eventSource":"autoscaling.amazonaws.com",
	  "eventName":"DeleteTags","eventTime":"2024-01-02T03:04:05Z","userIdentity":{"type":"AssumedRole","arn":"arn:aws:sts::123456789012:assumed-role/terraform/ci"},
	  "requestParameters":{"tags":[{"resourceId":"pool-a","resourceType":"auto-scaling-group","key":"team","propagateAtLaunch":true}]}}}`
	ev, err = parse(asg)
	groupARN := "arn:aws:autoscaling:eu-west-1:123456789012:autoScalingGroup:6d6b2f0c-1111-2222-3333-444455556666:autoScalingGroupName/pool-a"
	if err != nil || ev.call == nil || ev.call.keys[0] != matchKey(groupARN) || ev.call.writer.Person {
		t.Fatalf("a role's DeleteTags on a group: %+v, %v; want a key matching %s and no person", ev.call, err, groupARN)
	}
	lb := "arn:aws:elasticloadbalancing:eu-west-1:123456789012:loadbalancer/net/k8s-shop-web/50dc6c495c0c9188"
	for name, body := range map[string]string{
		"Elastic Load Balancing's RemoveTags": `{"version":"0","id":"2","detail-type":"AWS API Call via CloudTrail","source":"aws.elasticloadbalancing",
		  "account":"123456789012","time":"2024-01-02T03:04:05Z","region":"eu-west-1","resources":[],"detail":{"eventSource":"elasticloadbalancing.amazonaws.com",
		  "eventName":"RemoveTags","eventTime":"2024-01-02T03:04:05Z","userIdentity":{"type":"AssumedRole","arn":"arn:aws:sts::123456789012:assumed-role/lbc/s"},
		  "requestParameters":{"resourceArns":["` + lb + `"],"tagKeys":["team"]}}}`,
		"the Tagging API's UntagResources": `{"version":"0","id":"3","detail-type":"AWS API Call via CloudTrail","source":"aws.tagging",
		  "account":"123456789012","time":"2024-01-02T03:04:05Z","region":"eu-west-1","resources":[],"detail":{"eventSource":"tagging.amazonaws.com",
		  "eventName":"UntagResources","eventTime":"2024-01-02T03:04:05Z","userIdentity":{"type":"AssumedRole","arn":"arn:aws:sts::123456789012:assumed-role/lbc/s"},
		  "requestParameters":{"resourceARNList":["` + lb + `"],"tagKeys":["team"]}}}`,
	} {
		ev, err := parse(body)
		if err != nil || ev.call == nil || len(ev.call.keys) != 1 || ev.call.keys[0] != matchKey(lb) || !ev.call.deleted["team"] {
			t.Errorf("%s: %+v, %v; want a removal of team from %s", name, ev.call, err, lb)
		}
	}
	for name, body := range map[string]string{
		"another call":  strings.Replace(callBody, `"DeleteTags"`, `"DescribeTags"`, 1),
		"a failed call": strings.Replace(callBody, `"eventName"`, `"errorCode": "Client.UnauthorizedOperation", "eventName"`, 1),
	} {
		if _, err := parse(body); !errors.Is(err, ErrNotRead) {
			t.Errorf("%s: %v, want ErrNotRead", name, err)
		}
	}
}

// TestCallWriter: who counts as a person.
func TestCallWriter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		d      callDetail
		person bool
	}{
		{name: "console", d: callDetail{SessionCredentialFromConsole: "true", UserIdentity: userIdentity{Type: "IAMUser", ARN: "arn:aws:iam::1:user/bob"}}, person: true},
		{name: "root", d: callDetail{UserIdentity: userIdentity{Type: "Root", ARN: "arn:aws:iam::1:root"}}, person: true},
		{name: "identity center user", d: callDetail{UserIdentity: userIdentity{Type: "IdentityCenterUser"}}, person: true},
		{name: "IAM user with access keys (automation)", d: callDetail{UserIdentity: userIdentity{Type: "IAMUser", ARN: "arn:aws:iam::1:user/ci"}}},
		{name: "a controller's role", d: callDetail{UserIdentity: userIdentity{Type: "AssumedRole", ARN: "arn:aws:sts::1:assumed-role/karpenter/x"}}},
		{name: "a service for a console user", d: callDetail{SessionCredentialFromConsole: "true",
			UserIdentity: userIdentity{Type: "AssumedRole", InvokedBy: "autoscaling.amazonaws.com"}}},
		{name: "a service", d: callDetail{UserIdentity: userIdentity{Type: "AWSService", InvokedBy: "autoscaling.amazonaws.com"}}},
	} {
		if w := tc.d.writer(); w.Person != tc.person || w.ID == "" && tc.d.UserIdentity.ARN != "" {
			t.Errorf("%s: %+v, want person %t", tc.name, w, tc.person)
		}
	}
}

// TestAttribution: a removal takes the writer of its call whichever comes
// first; two calls naming different writers leave it unattributed; a
// removal whose call never comes is published without a writer after the
// wait.
func TestAttribution(t *testing.T) {
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	arn := "arn:aws:ec2:us-east-1:123456789012:instance/i-1"
	key := matchKey(arn)
	alice := cloudchange.Writer{ID: "alice", Person: true}
	team := []string{"team"}
	deletes := func(w cloudchange.Writer, when time.Time, keys ...string) call {
		c := call{keys: []string{key}, writer: w, at: when, deleted: map[string]bool{}}
		for _, k := range keys {
			c.deleted[k] = true
		}
		return c
	}
	change := cloudchange.Change{Resource: arn, Time: at}
	published := make(chan cloudchange.Change, 4)
	publish := func(_ message, c cloudchange.Change) { published <- c }

	var a attribution
	a.record(deletes(alice, at.Add(-time.Second), "team"), at)
	if w, ok := a.writerOf(change, team, nil, at); !ok || w != alice {
		t.Fatalf("call first: %+v %t, want alice", w, ok)
	}

	var b attribution
	b.await(message{id: "m"}, change, team, time.Hour, publish)
	ready, _ := b.record(deletes(alice, at, "team"), at)
	if len(ready) != 1 || ready[0].change.Writer != alice {
		t.Fatalf("change first: %+v, want it published naming alice", ready)
	}

	var c attribution
	c.record(deletes(alice, at, "team"), at)
	c.record(deletes(cloudchange.Writer{ID: "policy"}, at, "team"), at)
	if w, ok := c.writerOf(change, team, nil, at); ok {
		t.Fatalf("two writers at once: %+v, want none", w)
	}
	if w, ok := c.writerOf(cloudchange.Change{Resource: arn, Time: at.Add(time.Minute)}, team, nil, at); ok {
		t.Fatalf("a call a minute off: %+v, want none", w)
	}
	c.record(deletes(alice, at.Add(3*time.Second), "team"), at)
	if w, ok := c.writerOf(cloudchange.Change{Resource: arn, Time: at.Add(3 * time.Second)}, team, nil, at); !ok || w != alice {
		t.Fatalf("the nearest call names alice: %+v %t", w, ok)
	}

	// A person's call that set or deleted other tags of the resource in
	// the same seconds vouches for nothing this removal took: a
	// platform's removal whose own call has not come stays unattributed.
	var e attribution
	e.record(call{keys: []string{key}, writer: alice, at: at}, at) // CreateTags
	e.record(deletes(alice, at, "env"), at)
	if w, ok := e.writerOf(change, team, nil, at); ok {
		t.Fatalf("a person's other writes named as the removal's writer: %+v", w)
	}

	var d attribution
	d.await(message{id: "m"}, change, team, 10*time.Millisecond, publish)
	select {
	case got := <-published:
		if got.Writer != (cloudchange.Writer{}) {
			t.Fatalf("published after the wait with writer %+v", got.Writer)
		}
	case <-time.After(time.Minute):
		t.Fatal("a removal whose call never came was never published")
	}
}

// TestAttributionOfValues: a change that set a value takes the writer of a
// call that set that key and came first; a call that comes after names the
// change once, in a change of its own (the call's id and the resource),
// even when delivered twice; a call that set other keys, or deleted the
// key, names nothing; tagsync's own calls (any session of its role) are
// not kept, so they name nothing either.
func TestAttributionOfValues(t *testing.T) {
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	lb := "arn:aws:elasticloadbalancing:eu-west-1:123456789012:loadbalancer/net/web/1"
	key := matchKey(lb)
	pipeline := cloudchange.Writer{ID: "arn:aws:sts::123456789012:assumed-role/terraform/run-7"}
	self := "arn:aws:sts::123456789012:assumed-role/tagsync/aws-go-sdk-1"
	sets := func(id string, w cloudchange.Writer, when time.Time, keys ...string) call {
		c := call{id: id, keys: []string{key}, writer: w, at: when, set: map[string]bool{}}
		for _, k := range keys {
			c.set[k] = true
		}
		return c
	}
	change := cloudchange.Change{Resource: lb, Time: at, ID: "tag-change-1"}
	costs := []string{"cost-center"}

	var a attribution
	a.record(sets("c1", pipeline, at, "cost-center", "env"), at)
	if w, ok := a.writerOf(change, nil, costs, at); !ok || w != pipeline {
		t.Fatalf("call first: %+v %t, want the pipeline", w, ok)
	}

	var b attribution
	b.setSelf(self)
	b.published(change, costs, at)
	if _, named := b.record(sets("mine", cloudchange.Writer{ID: "arn:aws:sts::123456789012:assumed-role/tagsync/aws-go-sdk-2"}, at, "cost-center"), at); len(named) != 0 {
		t.Fatalf("tagsync's own call (another session of its role) named %+v", named)
	}
	if _, named := b.record(sets("other", pipeline, at, "env"), at); len(named) != 0 {
		t.Fatalf("a call that set another key named %+v", named)
	}
	if _, named := b.record(call{id: "del", keys: []string{key}, writer: pipeline, at: at, deleted: map[string]bool{"cost-center": true}}, at); len(named) != 0 {
		t.Fatalf("a call that deleted the key named %+v", named)
	}
	_, named := b.record(sets("c2", pipeline, at.Add(time.Second), "cost-center"), at.Add(2*time.Second))
	if len(named) != 1 || named[0].Writer != pipeline || named[0].ID != "c2/"+lb || named[0].Resource != lb || !named[0].Time.Equal(at) {
		t.Fatalf("call after: %+v, want the change again naming the pipeline, id c2/%s", named, lb)
	}
	if _, again := b.record(sets("c2", pipeline, at.Add(time.Second), "cost-center"), at.Add(3*time.Second)); len(again) != 0 {
		t.Fatalf("the call delivered twice named the change again: %+v", again)
	}
	// tagsync's own change (its value, its call not kept) is not named by
	// another writer's call that set the key to another value in the
	// same seconds; that writer's own change is.
	var e attribution
	e.setSelf(self)
	mine := cloudchange.Change{Resource: lb, Time: at, ID: "echo", Tags: tags.Set{"cost-center": "cc-1"}}
	theirs := cloudchange.Change{Resource: lb, Time: at, ID: "theirs", Tags: tags.Set{"cost-center": "cc-legacy"}}
	e.published(mine, costs, at)
	e.published(theirs, costs, at)
	legacy := sets("c3", pipeline, at, "cost-center")
	legacy.values = map[string]string{"cost-center": "cc-legacy"}
	if _, named := e.record(legacy, at); len(named) != 1 || named[0].ID != "c3/"+lb || named[0].Tags["cost-center"] != "cc-legacy" {
		t.Fatalf("a call setting cc-legacy named %+v, want only the change to cc-legacy", named)
	}
	if !sameIdentity(self, self) || sameIdentity("arn:aws:iam::123456789012:user/tagsync", self) || sameIdentity(pipeline.ID, self) {
		t.Error("sameIdentity")
	}
}
