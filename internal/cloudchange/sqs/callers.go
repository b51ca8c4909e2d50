package sqs

import (
	"cmp"
	"encoding/json"
	"fmt"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"strings"
	"sync"
	"time"

	"github.com/tagsync/tagsync/internal/cloudchange"
)

// The CloudTrail events that name who wrote tags: EventBridge delivers
// every CloudTrail management event as detail-type "AWS API Call via
// CloudTrail", with the CloudTrail record as its detail
// (https://docs.aws.amazon.com/eventbridge/latest/ref/events-ref-cloudtrail.html).
const (
	detailTypeCall  = "AWS API Call via CloudTrail"
	sourceAutoscale = "aws.autoscaling"
	sourceELB       = "aws.elasticloadbalancing"
	// sourceTagging is the Resource Groups Tagging API's calls' source
	// ("Resource Groups Tagging API events": source aws.tagging,
	// eventSource tagging.amazonaws.com; aws.tag is the source of the
	// tag change events, not of the calls).
	sourceTagging = "aws.tagging"
)

// callSources are the EventBridge sources of the CloudTrail events tagsync
// reads: EC2's, Auto Scaling's, Elastic Load Balancing's and the Resource
// Groups Tagging API's.
var callSources = map[string]bool{sourceEC2: true, sourceAutoscale: true, sourceELB: true, sourceTagging: true}

// tagCalls are the API calls that write tags, by the service's event
// source, and whether they remove tags: EC2's (instances and their
// volumes, snapshots, network interfaces and the like), EC2 Auto
// Scaling's (groups), Elastic Load Balancing's (load balancers, target
// groups) and the Tagging API's (any taggable resource).
var tagCalls = map[string]map[string]bool{
	"ec2.amazonaws.com":                  {"CreateTags": false, "DeleteTags": true},
	"autoscaling.amazonaws.com":          {"CreateOrUpdateTags": false, "DeleteTags": true},
	"elasticloadbalancing.amazonaws.com": {"AddTags": false, "RemoveTags": true},
	"tagging.amazonaws.com":              {"TagResources": false, "UntagResources": true},
}

// callDetail is the part of a CloudTrail record tagsync reads
// ("CloudTrail record contents":
// https://docs.aws.amazon.com/awscloudtrail/latest/userguide/cloudtrail-event-reference-record-contents.html).
type callDetail struct {
	EventSource string    `json:"eventSource"`
	EventName   string    `json:"eventName"`
	EventTime   time.Time `json:"eventTime"`
	// ErrorCode is set when the call failed: it wrote nothing.
	ErrorCode string `json:"errorCode"`
	// SessionCredentialFromConsole is "true" for a call made from the AWS
	// Management Console.
	SessionCredentialFromConsole string          `json:"sessionCredentialFromConsole"`
	UserIdentity                 userIdentity    `json:"userIdentity"`
	RequestParameters            json.RawMessage `json:"requestParameters"`
}

// userIdentity is who made a call ("CloudTrail userIdentity element":
// https://docs.aws.amazon.com/awscloudtrail/latest/userguide/cloudtrail-event-reference-user-identity.html).
type userIdentity struct {
	// Type is Root, IAMUser, AssumedRole, FederatedUser, AWSService,
	// IdentityCenterUser, ...
	Type        string `json:"type"`
	ARN         string `json:"arn"`
	PrincipalID string `json:"principalId"`
	// InvokedBy names the AWS service that made the call for the
	// identity (autoscaling.amazonaws.com).
	InvokedBy      string `json:"invokedBy"`
	SessionContext struct {
		SessionIssuer struct {
			// UserName is the role's name for an AssumedRole.
			UserName string `json:"userName"`
		} `json:"sessionIssuer"`
	} `json:"sessionContext"`
	OnBehalfOf struct {
		UserID string `json:"userId"`
	} `json:"onBehalfOf"`
}

// identityCenterRole starts the names of the roles IAM Identity Center
// makes for its permission sets: a session of one is a person's.
const identityCenterRole = "AWSReservedSSO_"

// writer is who made the call: a person when the call came from the
// console, from the account's root user, from an IAM Identity Center user
// (directly or through a permission set's role); not when an AWS service
// made it (invokedBy, AWSService), nor for any other role or user (access
// keys and roles are how automation calls: Terraform, controllers, CI).
func (d callDetail) writer() cloudchange.Writer {
	u := d.UserIdentity
	if u.InvokedBy != "" || u.Type == "AWSService" {
		return cloudchange.Writer{ID: cmp.Or(u.InvokedBy, u.ARN, u.PrincipalID)}
	}
	person := u.Type == "Root" || u.Type == "IdentityCenterUser" || d.SessionCredentialFromConsole == "true" ||
		(u.Type == "AssumedRole" && strings.HasPrefix(u.SessionContext.SessionIssuer.UserName, identityCenterRole))
	return cloudchange.Writer{ID: cmp.Or(u.ARN, u.OnBehalfOf.UserID, u.PrincipalID), Person: person}
}

// written are the resources the call wrote, as matchKey names them (the
// calls name EC2 resources by ID, Auto Scaling groups by name, the others
// by ARN), and the tag keys it names. region and account are the event's.
func (d callDetail) written(region, account string) (resources, keys []string, err error) {
	service := strings.TrimSuffix(d.EventSource, ".amazonaws.com")
	switch service {
	case "elasticloadbalancing", "tagging":
		var p struct {
			ResourceArns    []string `json:"resourceArns"`
			ResourceARNList []string `json:"resourceARNList"`
			TagKeys         []string `json:"tagKeys"`
		}
		if err := json.Unmarshal(d.RequestParameters, &p); err != nil {
			return nil, nil, err
		}
		for _, id := range append(p.ResourceArns, p.ResourceARNList...) {
			if k := matchKey(id); k != "" {
				resources = append(resources, k)
			}
		}
		return resources, p.TagKeys, nil
	}
	ids, keys, err := d.named()
	for _, id := range ids {
		if id != "" {
			resources = append(resources, strings.Join([]string{service, region, account, id}, ":"))
		}
	}
	return resources, keys, err
}

// named are the IDs (EC2) or names (Auto Scaling groups) of the resources
// an EC2 or Auto Scaling call wrote, and the tag keys it names.
func (d callDetail) named() (ids, keys []string, err error) {
	if d.EventSource == "autoscaling.amazonaws.com" {
		var p struct {
			Tags []struct {
				ResourceID string `json:"resourceId"`
				Key        string `json:"key"`
			} `json:"tags"`
		}
		err = json.Unmarshal(d.RequestParameters, &p)
		for _, t := range p.Tags {
			ids, keys = append(ids, t.ResourceID), append(keys, t.Key)
		}
		return ids, keys, err
	}
	var p struct {
		ResourcesSet struct {
			Items []struct {
				ResourceID string `json:"resourceId"`
			} `json:"items"`
		} `json:"resourcesSet"`
		TagSet struct {
			Items []struct {
				Key string `json:"key"`
			} `json:"items"`
		} `json:"tagSet"`
	}
	err = json.Unmarshal(d.RequestParameters, &p)
	for _, it := range p.ResourcesSet.Items {
		ids = append(ids, it.ResourceID)
	}
	for _, it := range p.TagSet.Items {
		keys = append(keys, it.Key)
	}
	return ids, keys, err
}

// call is a CloudTrail event of a tag write: who wrote, where, which tag
// keys it deleted, when.
type call struct {
	// keys are the resources written, as matchKey names them.
	keys []string
	// deleted are the tag keys a DeleteTags call deleted (none for a
	// call that sets tags): only such a call can have made a removal.
	deleted map[string]bool
	writer  cloudchange.Writer
	at      time.Time
	// seen is when the source received it.
	seen time.Time
}

// parseCall reads an "AWS API Call via CloudTrail" event of a tag write
// that succeeded; ErrNotRead for any other call.
func parseCall(env envelope) (*call, error) {
	if env.ID == "" || len(env.Detail) == 0 {
		return nil, fmt.Errorf("%s event without an id or detail", env.DetailType)
	}
	var d callDetail
	if err := json.Unmarshal(env.Detail, &d); err != nil {
		return nil, fmt.Errorf("%s %s: detail: %w", env.DetailType, env.ID, err)
	}
	removes, known := tagCalls[d.EventSource][d.EventName]
	if !known || d.ErrorCode != "" {
		return nil, fmt.Errorf("%w: CloudTrail call %s %s", ErrNotRead, d.EventSource, d.EventName)
	}
	resources, names, err := d.written(env.Region, env.Account)
	if err != nil {
		return nil, fmt.Errorf("%s %s: requestParameters: %w", env.DetailType, env.ID, err)
	}
	c := &call{writer: d.writer(), at: cmp.Or(d.EventTime, env.Time), keys: resources}
	if removes {
		c.deleted = map[string]bool{}
		for _, n := range names {
			c.deleted[n] = true
		}
	}
	return c, nil
}

// matchKey names the resource of an ARN as a call does: service, region,
// account and the resource's ID or name (the ARN's last path segment), so
// that an Auto Scaling group's ARN, which carries a UUID the call does not,
// matches the call's group name ("" for what is no ARN).
func matchKey(id string) string {
	a, err := arn.Parse(id)
	if err != nil {
		return ""
	}
	res := a.Resource[strings.LastIndexAny(a.Resource, "/:")+1:]
	return strings.Join([]string{a.Service, a.Region, a.AccountID, res}, ":")
}

// callSlack is how far apart a tag change and the CloudTrail event of its
// call may be dated: both are dated by the call, to the second.
const callSlack = 5 * time.Second

// callMemory is how long a call is kept to attribute a tag change that
// arrives after it.
const callMemory = 5 * time.Minute

// attribution pairs the tag changes that remove tags with the CloudTrail
// events of the calls that made them, which arrive separately and in
// either order: a change whose call came first takes its writer at once;
// one whose call has not come waits for it (Config.AttributionWait) and
// is then published with or without a writer. Safe for concurrent use.
type attribution struct {
	mu      sync.Mutex
	calls   map[string][]call      // matchKey → the calls of the last callMemory
	waiting map[string][]*awaiting // matchKey → the changes waiting for their call
}

// awaiting is a tag change that waits for its call.
type awaiting struct {
	msg     message
	change  cloudchange.Change
	removed []string
	timer   *time.Timer
}

// writerOf is the writer of change, which removed the keys removed, from a
// call that came first (see matching).
func (a *attribution) writerOf(change cloudchange.Change, removed []string, now time.Time) (cloudchange.Writer, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.forget(now)
	return matching(a.calls[matchKey(change.Resource)], change.Time, removed)
}

// matching is the writer of the call that removed the keys removed (a
// DeleteTags naming every one of them) dated nearest at, within
// callSlack; none when two as near name different writers. A call that
// set tags, or deleted others, made another change of the resource: its
// writer vouches for nothing this change removed.
func matching(calls []call, at time.Time, removed []string) (cloudchange.Writer, bool) {
	var w cloudchange.Writer
	found, tie := false, false
	nearest := callSlack + 1
	for _, c := range calls {
		switch d := c.at.Sub(at).Abs(); {
		case !c.deletedAll(removed) || d > callSlack || d > nearest:
		case d < nearest:
			w, found, tie, nearest = c.writer, true, false, d
		case c.writer != w:
			tie = true
		}
	}
	return w, found && !tie
}

// deletedAll reports whether c deleted every one of keys.
func (c call) deletedAll(keys []string) bool {
	for _, k := range keys {
		if !c.deleted[k] {
			return false
		}
	}
	return len(keys) > 0
}

// await parks a change that removed the keys removed until its call comes
// or wait passes; publish is called once, from another goroutine, with
// the change (its Writer set when the call came).
func (a *attribution) await(msg message, change cloudchange.Change, removed []string, wait time.Duration, publish func(message, cloudchange.Change)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	key := matchKey(change.Resource)
	w := &awaiting{msg: msg, change: change, removed: removed}
	w.timer = time.AfterFunc(wait, func() {
		if a.unpark(key, w) {
			publish(w.msg, w.change)
		}
	})
	if a.waiting == nil {
		a.waiting = map[string][]*awaiting{}
	}
	a.waiting[key] = append(a.waiting[key], w)
}

// unpark takes w out of the waiting changes; false when it was taken
// already.
func (a *attribution) unpark(key string, w *awaiting) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, x := range a.waiting[key] {
		if x == w {
			a.waiting[key] = append(a.waiting[key][:i], a.waiting[key][i+1:]...)
			if len(a.waiting[key]) == 0 {
				delete(a.waiting, key)
			}
			return true
		}
	}
	return false
}

// record keeps c for the changes to come and returns the waiting changes
// it attributes, their Writer set: they are to be published now.
func (a *attribution) record(c call, now time.Time) []*awaiting {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.forget(now)
	c.seen = now
	if a.calls == nil {
		a.calls = map[string][]call{}
	}
	var ready []*awaiting
	for _, k := range c.keys {
		a.calls[k] = append(a.calls[k], c)
		if len(a.waiting[k]) == 0 {
			continue
		}
		keep := a.waiting[k][:0]
		for _, w := range a.waiting[k] {
			if writer, ok := matching(a.calls[k], w.change.Time, w.removed); ok && w.timer.Stop() {
				w.change.Writer = writer
				ready = append(ready, w)
				continue
			}
			keep = append(keep, w)
		}
		if a.waiting[k] = keep; len(keep) == 0 {
			delete(a.waiting, k)
		}
	}
	return ready
}

// forget drops the calls received longer than callMemory ago (a.mu held).
func (a *attribution) forget(now time.Time) {
	for k, calls := range a.calls {
		keep := calls[:0]
		for _, c := range calls {
			if now.Sub(c.seen) <= callMemory {
				keep = append(keep, c)
			}
		}
		if len(keep) == 0 {
			delete(a.calls, k)
		} else {
			a.calls[k] = keep
		}
	}
}
