package sqs

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/arn"

	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/tags"
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
// by ARN), the tag keys it names, and the values it set by key. region and
// account are the event's.
func (d callDetail) written(region, account string) (resources, keys []string, values map[string]string, err error) {
	service := strings.TrimSuffix(d.EventSource, ".amazonaws.com")
	switch service {
	case "elasticloadbalancing", "tagging":
		var p struct {
			ResourceArns    []string `json:"resourceArns"`
			ResourceARNList []string `json:"resourceARNList"`
			TagKeys         []string `json:"tagKeys"`
			// Tags are the tags set: a list of {key, value} (Elastic
			// Load Balancing's AddTags), a map (the Tagging API's
			// TagResources).
			Tags json.RawMessage `json:"tags"`
		}
		if err := json.Unmarshal(d.RequestParameters, &p); err != nil {
			return nil, nil, nil, err
		}
		for _, id := range append(p.ResourceArns, p.ResourceARNList...) {
			if k := matchKey(id); k != "" {
				resources = append(resources, k)
			}
		}
		values, err := setTags(p.Tags)
		return resources, append(p.TagKeys, slices.Sorted(maps.Keys(values))...), values, err
	}
	ids, keys, values, err := d.named()
	for _, id := range ids {
		if id != "" {
			resources = append(resources, strings.Join([]string{service, region, account, id}, ":"))
		}
	}
	return resources, keys, values, err
}

// setTags are the tags a call set, from its requestParameters' "tags": a
// list of {key, value} or a map of key to value (none when absent).
func setTags(raw json.RawMessage) (map[string]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	}
	if err := json.Unmarshal(raw, &list); err == nil {
		m := make(map[string]string, len(list))
		for _, t := range list {
			m[t.Key] = t.Value
		}
		return m, nil
	}
	var m map[string]string
	err := json.Unmarshal(raw, &m)
	return m, err
}

// named are the IDs (EC2) or names (Auto Scaling groups) of the resources
// an EC2 or Auto Scaling call wrote, the tag keys it names, and the values
// it names by key.
func (d callDetail) named() (ids, keys []string, values map[string]string, err error) {
	values = map[string]string{}
	if d.EventSource == "autoscaling.amazonaws.com" {
		var p struct {
			Tags []struct {
				ResourceID string `json:"resourceId"`
				Key        string `json:"key"`
				Value      string `json:"value"`
			} `json:"tags"`
		}
		err = json.Unmarshal(d.RequestParameters, &p)
		for _, t := range p.Tags {
			ids, keys = append(ids, t.ResourceID), append(keys, t.Key)
			values[t.Key] = t.Value
		}
		return ids, keys, values, err
	}
	var p struct {
		ResourcesSet struct {
			Items []struct {
				ResourceID string `json:"resourceId"`
			} `json:"items"`
		} `json:"resourcesSet"`
		TagSet struct {
			Items []struct {
				Key   string `json:"key"`
				Value string `json:"value"`
			} `json:"items"`
		} `json:"tagSet"`
	}
	err = json.Unmarshal(d.RequestParameters, &p)
	for _, it := range p.ResourcesSet.Items {
		ids = append(ids, it.ResourceID)
	}
	for _, it := range p.TagSet.Items {
		keys = append(keys, it.Key)
		values[it.Key] = it.Value
	}
	return ids, keys, values, err
}

// call is a CloudTrail event of a tag write: who wrote, where, which tag
// keys it deleted or set, when.
type call struct {
	// id is the CloudTrail event's EventBridge id.
	id string
	// keys are the resources written, as matchKey names them.
	keys []string
	// deleted are the tag keys a DeleteTags call deleted (none for a
	// call that sets tags): only such a call can have made a removal.
	deleted map[string]bool
	// set are the tag keys a call that sets tags set (none for one that
	// deletes), values the values it set: only such a call can have made
	// a change of a value, and only one that set the value the change
	// shows.
	set    map[string]bool
	values map[string]string
	writer cloudchange.Writer
	at     time.Time
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
	resources, names, values, err := d.written(env.Region, env.Account)
	if err != nil {
		return nil, fmt.Errorf("%s %s: requestParameters: %w", env.DetailType, env.ID, err)
	}
	c := &call{id: env.ID, writer: d.writer(), at: cmp.Or(d.EventTime, env.Time), keys: resources}
	named := map[string]bool{}
	for _, n := range names {
		named[n] = true
	}
	if removes {
		c.deleted = named
	} else {
		c.set, c.values = named, values
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

// attribution pairs tag changes with the CloudTrail events of the calls
// that made them, which arrive separately and in either order. A change
// that removed tags and whose call came first takes its writer at once;
// one whose call has not come waits for it (Config.AttributionWait) and is
// then published with or without a writer. A change that set tags is
// published at once, with the writer of a call that came first; a call
// that comes after it names its writer in a change of its own (set), so
// that who changed a value is known as soon as CloudTrail tells. The calls
// tagsync made itself (self) name no other writer: they are not kept.
// Safe for concurrent use.
type attribution struct {
	mu      sync.Mutex
	self    string                 // tagsync's own identity's ARN ("": not known)
	swept   time.Time              // forget's last sweep
	calls   map[string][]call      // matchKey → the calls of the last callMemory
	waiting map[string][]*awaiting // matchKey → the changes waiting for their call
	set     map[string][]*setChange
}

// setChange is a change that set tags, published without a writer: a call
// that comes later names it.
type setChange struct {
	change cloudchange.Change
	keys   []string
	named  bool
}

// awaiting is a tag change that waits for its call.
type awaiting struct {
	msg     message
	change  cloudchange.Change
	removed []string
	timer   *time.Timer
}

// setSelf records tagsync's own identity (an ARN from
// sts:GetCallerIdentity): its calls are not kept.
func (a *attribution) setSelf(arn string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.self = arn
}

// writerOf is the writer of change, which removed the keys removed or set
// the keys set, from a call that came first (see matching).
func (a *attribution) writerOf(change cloudchange.Change, removed, set []string, now time.Time) (cloudchange.Writer, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.forget(now)
	return matching(a.calls[matchKey(change.Resource)], change.Time, removed, set, change.Tags)
}

// matching is the writer of the call that made a change: one that deleted
// every key in removed (a DeleteTags naming them) or, for a change that
// removed none, set every key in set to the value after shows, dated
// nearest at, within callSlack; none when two as near name different
// writers. A call of the other kind, or naming other keys or values, made
// another change of the resource: its writer vouches for nothing this
// change did.
func matching(calls []call, at time.Time, removed, set []string, after tags.Set) (cloudchange.Writer, bool) {
	var w cloudchange.Writer
	found, tie := false, false
	nearest := callSlack + 1
	for _, c := range calls {
		switch d := c.at.Sub(at).Abs(); {
		case !c.made(removed, set, after) || d > callSlack || d > nearest:
		case d < nearest:
			w, found, tie, nearest = c.writer, true, false, d
		case c.writer != w:
			tie = true
		}
	}
	return w, found && !tie
}

// made reports whether c can have made a change that removed the keys
// removed (it deleted all of them) or, removing none, set the keys set (it
// set all of them, to the values after shows where both say).
func (c call) made(removed, set []string, after tags.Set) bool {
	if len(removed) > 0 {
		return all(c.deleted, removed)
	}
	for _, k := range set {
		if v, ok := c.values[k]; ok && after != nil && after[k] != v {
			return false
		}
	}
	return all(c.set, set)
}

// all reports whether names holds every one of keys, and keys are some.
func all(names map[string]bool, keys []string) bool {
	for _, k := range keys {
		if !names[k] {
			return false
		}
	}
	return len(keys) > 0
}

// published keeps change, which set the keys set and was published
// without a writer, for a call that comes after it (callMemory).
func (a *attribution) published(change cloudchange.Change, set []string, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.forget(now)
	if a.set == nil {
		a.set = map[string][]*setChange{}
	}
	change.Received = now
	key := matchKey(change.Resource)
	a.set[key] = append(a.set[key], &setChange{change: change, keys: set})
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
// it attributes, their Writer set: they are to be published now, and the
// changes it made that were published without a writer: to be published
// again naming it (named). A call of tagsync's own identity is not kept.
func (a *attribution) record(c call, now time.Time) (ready []*awaiting, named []cloudchange.Change) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.forget(now)
	if sameIdentity(c.writer.ID, a.self) {
		return nil, nil
	}
	c.seen = now
	if a.calls == nil {
		a.calls = map[string][]call{}
	}
	for _, k := range c.keys {
		a.calls[k] = append(a.calls[k], c)
		named = append(named, a.nameSet(k, c)...)
		if len(a.waiting[k]) == 0 {
			continue
		}
		keep := a.waiting[k][:0]
		for _, w := range a.waiting[k] {
			if writer, ok := matching(a.calls[k], w.change.Time, w.removed, nil, nil); ok && w.timer.Stop() {
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
	return ready, named
}

// nameSet returns, as changes of their own naming c's writer, the changes
// of resource k published without a writer that c made (it set their keys,
// within callSlack, and is the nearest such call kept); each is named once.
// Its id is the call's and the resource's, so a call delivered twice names
// them once in the hub too (a.mu held).
func (a *attribution) nameSet(k string, c call) []cloudchange.Change {
	var out []cloudchange.Change
	for _, sc := range a.set[k] {
		if sc.named || c.set == nil {
			continue
		}
		w, ok := matching(a.calls[k], sc.change.Time, nil, sc.keys, sc.change.Tags)
		if !ok || w != c.writer {
			continue
		}
		sc.named = true
		ch := sc.change
		ch.ID, ch.Writer = c.id+"/"+sc.change.Resource, w
		out = append(out, ch)
	}
	return out
}

// sameIdentity reports whether a call's identity is self's: the same ARN,
// or sessions of the same role (an assumed role's session name changes
// with each credential refresh).
func sameIdentity(arn, self string) bool {
	if arn == "" || self == "" {
		return false
	}
	return arn == self || (strings.Contains(self, ":assumed-role/") && roleOf(arn) == roleOf(self))
}

// roleOf is an assumed role's session ARN without the session's name
// (arn:aws:sts::ACCOUNT:assumed-role/ROLE); other ARNs as they are.
func roleOf(arn string) string {
	if i := strings.Index(arn, ":assumed-role/"); i >= 0 {
		rest := arn[i+len(":assumed-role/"):]
		if j := strings.Index(rest, "/"); j >= 0 {
			return arn[:i+len(":assumed-role/")+j]
		}
	}
	return arn
}

// forgetEvery spaces forget's sweeps: every message calls it, and a burst
// of thousands of tag changes (tagsync's own writes' echoes among them)
// must not sweep them all for each one.
const forgetEvery = time.Second

// forget drops the calls received, and the changes published, longer than
// callMemory ago, at most once per forgetEvery (a.mu held).
func (a *attribution) forget(now time.Time) {
	if now.Sub(a.swept) < forgetEvery {
		return
	}
	a.swept = now
	for k, list := range a.set {
		list = slices.DeleteFunc(list, func(sc *setChange) bool { return now.Sub(sc.change.Received) > callMemory })
		if len(list) == 0 {
			delete(a.set, k)
		} else {
			a.set[k] = list
		}
	}
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
