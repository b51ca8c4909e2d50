package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/uuid"
)

// EventDelivery is how the rules deliver the events of tag writes to an
// SQS queue, as an EventBridge rule with the queue as its target would
// (moto emits no EventBridge events of its own). For every tag write that
// succeeds through the rules (EC2 CreateTags and DeleteTags, the Tagging
// API's TagResources and UntagResources, Elastic Load Balancing through
// them) and every write of an actor (AddStripper), the queue receives:
//
//   - per resource whose tags changed, a "Tag Change on Resource" event
//     (source aws.tag) with the keys changed and the whole tag set after
//     the change ("Tags events",
//     https://docs.aws.amazon.com/eventbridge/latest/ref/events-ref-tag.html);
//   - per call, an "AWS API Call via CloudTrail" event (source aws.ec2,
//     aws.elasticloadbalancing, or aws.tagging for the Tagging API:
//     "Resource Groups Tagging API events") whose detail
//     is the CloudTrail record: eventSource, eventName, eventTime,
//     userIdentity (SetIdentity), requestParameters in the service's own
//     shape ("CloudTrail record contents",
//     https://docs.aws.amazon.com/awscloudtrail/latest/userguide/cloudtrail-event-reference-record-contents.html).
//
// Delivery is as AWS documents it, not as a test would like it: AWS
// services send their events "best effort" or "at least once" ("Event
// delivery from AWS services",
// https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-service-event-delivery-level.html),
// and an SQS standard queue delivers "at least once" with "best-effort
// ordering" ("Amazon SQS standard queues",
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/standard-queues.html):
// an event may come twice with the same id, and events come out of order.
type EventDelivery struct {
	// QueueURL is the queue's URL on this moto.
	QueueURL string
	// Duplicates is the share of events (0 to 1) delivered twice, the
	// copy with the same id and its own delay.
	Duplicates float64
	// MaxDelay delays each event by a random time up to it, so that
	// events of writes closer than it arrive in any order. AWS gives no
	// figure; tests choose one.
	MaxDelay time.Duration
	// CallDelay is added to the CloudTrail events' delay: they come
	// through CloudTrail, later than the service's own events.
	CallDelay time.Duration
	// Seed makes the random draws repeatable (0: a fixed seed).
	Seed uint64
}

// AWSIdentity is who CloudTrail says made a call: its userIdentity
// ("CloudTrail userIdentity element",
// https://docs.aws.amazon.com/awscloudtrail/latest/userguide/cloudtrail-event-reference-user-identity.html).
type AWSIdentity struct {
	// Type is IAMUser, AssumedRole, Root, AWSService...
	Type string
	// ARN is the identity's ARN (an assumed role's session ARN).
	ARN string
	// Role is the role's name of an AssumedRole (sessionIssuer.userName).
	Role string
	// Console marks a call made from the AWS Management Console
	// (sessionCredentialFromConsole).
	Console bool
}

// RoleIdentity is the identity of a session of role in moto's account,
// as CloudTrail names a controller's calls (IRSA, EKS Pod Identity).
func RoleIdentity(role string) AWSIdentity {
	return AWSIdentity{Type: "AssumedRole", Role: role,
		ARN: fmt.Sprintf("arn:aws:sts::%s:assumed-role/%s/%s-session", MotoAccountID, role, role)}
}

// SetIdentity makes CloudTrail name the caller with accessKey as id. A
// caller without one is the IAM user named by its access key.
func (a *AWSRules) SetIdentity(accessKey string, id AWSIdentity) {
	a.events.mu.Lock()
	defer a.events.mu.Unlock()
	if a.events.identities == nil {
		a.events.identities = map[string]AWSIdentity{}
	}
	a.events.identities[accessKey] = id
}

// DeliverEvents starts delivering the events of tag writes to d.QueueURL
// (see EventDelivery) until the returned function is called, which drops
// the events not delivered yet.
func (a *AWSRules) DeliverEvents(d EventDelivery) (stop func()) {
	a.events.mu.Lock()
	defer a.events.mu.Unlock()
	q := &eventQueue{d: d, rnd: rand.New(rand.NewPCG(d.Seed, 1)), client: sqs.NewFromConfig(motoConfig(a.direct))}
	a.events.queues = append(a.events.queues, q)
	return func() {
		a.events.mu.Lock()
		a.events.queues = slices.DeleteFunc(a.events.queues, func(x *eventQueue) bool { return x == q })
		a.events.mu.Unlock()
		q.stop()
	}
}

// EventsDelivered returns how many events the rules have sent to queues,
// how many of them were duplicates, and how many copies still wait for
// their delay (a test that counts what arrived waits for 0).
func (a *AWSRules) EventsDelivered() (events, duplicates, pending int) {
	a.events.mu.Lock()
	defer a.events.mu.Unlock()
	for _, q := range a.events.queues {
		q.mu.Lock()
		events, duplicates, pending = events+q.sent, duplicates+q.dups, pending+q.due-q.sent-q.dropped
		q.mu.Unlock()
	}
	return events, duplicates, pending
}

// awsEvents is the rules' event state: the identities CloudTrail names,
// the queues events go to, each resource's tag change count.
type awsEvents struct {
	mu         sync.Mutex
	identities map[string]AWSIdentity
	queues     []*eventQueue
	versions   map[string]int
	strippers  []*stripper
}

// eventQueue is one queue events go to.
type eventQueue struct {
	d      EventDelivery
	client *sqs.Client

	mu      sync.Mutex
	rnd     *rand.Rand
	timers  []*time.Timer
	stopped bool
	// due are the copies scheduled, sent those delivered, dropped those
	// SQS refused.
	due, sent, dropped int
	dups               int
}

// tagCall is a tag write that succeeded: who made it, which API call, and
// each resource's tags before and after it.
type tagCall struct {
	caller awsCaller
	// service is the API's service ("ec2", "elasticloadbalancing",
	// "tagging"), action its call (CreateTags, RemoveTags,
	// TagResources...).
	service, action string
	// set are the tags the call set; removed the keys it removed.
	set     map[string]string
	removed []string
	// ids are the resources as the call named them (EC2 IDs, or ARNs).
	ids       []string
	resources []resourceChange
	at        time.Time
}

// resourceChange is one resource's tags before and after a call.
type resourceChange struct {
	arn           string
	before, after map[string]string
}

// observed reports whether a tag write must be followed (events are
// delivered, or an actor acts on writes).
func (a *AWSRules) observed() bool {
	a.events.mu.Lock()
	defer a.events.mu.Unlock()
	return len(a.events.queues) > 0 || len(a.events.strippers) > 0
}

// wrote follows a tag write: it sends its events and lets the actors act
// on it, before the write's answer leaves.
func (a *AWSRules) wrote(ctx context.Context, c tagCall) {
	a.publish(c)
	a.strip(ctx, c)
}

// publish sends the events of c to every queue.
func (a *AWSRules) publish(c tagCall) {
	a.events.mu.Lock()
	queues := slices.Clone(a.events.queues)
	var bodies [][]byte
	var calls []bool
	for _, r := range c.resources {
		if maps.Equal(r.before, r.after) {
			continue
		}
		if a.events.versions == nil {
			a.events.versions = map[string]int{}
		}
		a.events.versions[r.arn]++
		bodies, calls = append(bodies, tagChangeEvent(c, r, a.events.versions[r.arn])), append(calls, false)
	}
	bodies, calls = append(bodies, callEvent(c, a.identityOf(c.caller))), append(calls, true)
	a.events.mu.Unlock()
	for _, q := range queues {
		for i, b := range bodies {
			q.send(b, calls[i])
		}
	}
}

// identityOf is who CloudTrail names for caller (a.events.mu held).
func (a *AWSRules) identityOf(caller awsCaller) AWSIdentity {
	if id, ok := a.events.identities[caller.accessKey]; ok {
		return id
	}
	return AWSIdentity{Type: "IAMUser", ARN: fmt.Sprintf("arn:aws:iam::%s:user/%s", accountOf(caller), caller.accessKey)}
}

// answerIdentity answers STS's GetCallerIdentity as the identity
// CloudTrail names the caller by (SetIdentity; an IAM user named by the
// access key otherwise), so that a client learns the identity its own
// calls' events carry ("GetCallerIdentity", STS API reference).
func (a *AWSRules) answerIdentity(w http.ResponseWriter, caller awsCaller) {
	a.events.mu.Lock()
	id := a.identityOf(caller)
	a.events.mu.Unlock()
	w.Header().Set("Content-Type", "text/xml")
	fmt.Fprintf(w, `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>`+
		`<Arn>%s</Arn><UserId>%s</UserId><Account>%s</Account></GetCallerIdentityResult>`+
		`<ResponseMetadata><RequestId>testenv-aws-rules</RequestId></ResponseMetadata></GetCallerIdentityResponse>`,
		xmlEscape(id.ARN), xmlEscape(caller.accessKey), accountOf(caller))
}

// accountOf is the caller's account: moto's default unless it named one.
func accountOf(c awsCaller) string {
	if c.account != "" {
		return c.account
	}
	return MotoAccountID
}

// event is an EventBridge event as it reaches an SQS queue.
type event struct {
	Version    string   `json:"version"`
	ID         string   `json:"id"`
	DetailType string   `json:"detail-type"`
	Source     string   `json:"source"`
	Account    string   `json:"account"`
	Time       string   `json:"time"`
	Region     string   `json:"region"`
	Resources  []string `json:"resources"`
	Detail     any      `json:"detail"`
}

// tagChangeEvent is the "Tag Change on Resource" event of r's change by c,
// the resource's version-th.
func tagChangeEvent(c tagCall, r resourceChange, version int) []byte {
	var changed []string
	for k, v := range r.after {
		if old, ok := r.before[k]; !ok || old != v {
			changed = append(changed, k)
		}
	}
	for k := range r.before {
		if _, ok := r.after[k]; !ok {
			changed = append(changed, k)
		}
	}
	slices.Sort(changed)
	service, typ := "", ""
	if p, err := arn.Parse(r.arn); err == nil {
		service, typ = p.Service, strings.SplitN(p.Resource, "/", 2)[0]
	}
	return marshal(event{Version: "0", ID: uuid.NewString(), DetailType: "Tag Change on Resource", Source: "aws.tag",
		Account: accountOf(c.caller), Time: c.at.UTC().Format(time.RFC3339), Region: c.caller.region, Resources: []string{r.arn},
		Detail: map[string]any{"changed-tag-keys": changed, "service": service, "resource-type": typ, "version": version, "tags": r.after}})
}

// callEvent is the "AWS API Call via CloudTrail" event of c, made by id.
func callEvent(c tagCall, id AWSIdentity) []byte {
	identity := map[string]any{"type": id.Type, "arn": id.ARN, "accountId": accountOf(c.caller), "accessKeyId": c.caller.accessKey}
	if id.Role != "" {
		identity["sessionContext"] = map[string]any{"sessionIssuer": map[string]any{"type": "Role", "userName": id.Role,
			"arn": fmt.Sprintf("arn:aws:iam::%s:role/%s", accountOf(c.caller), id.Role)}}
	}
	detail := map[string]any{"eventVersion": "1.09", "userIdentity": identity, "eventTime": c.at.UTC().Format(time.RFC3339),
		"eventSource": c.service + ".amazonaws.com", "eventName": c.action, "awsRegion": c.caller.region,
		"requestParameters": requestParameters(c), "eventID": uuid.NewString(), "eventType": "AwsApiCall",
		"recipientAccountId": accountOf(c.caller)}
	if id.Console {
		detail["sessionCredentialFromConsole"] = "true"
	}
	return marshal(event{Version: "0", ID: uuid.NewString(), DetailType: "AWS API Call via CloudTrail", Source: "aws." + c.service,
		Account: accountOf(c.caller), Time: c.at.UTC().Format(time.RFC3339), Region: c.caller.region, Resources: []string{}, Detail: detail})
}

// requestParameters is c's request as CloudTrail records it: the service
// API's parameters, named as its API reference names them.
func requestParameters(c tagCall) any {
	keys := slices.Sorted(maps.Keys(c.set))
	if len(c.removed) > 0 {
		keys = c.removed
	}
	switch c.service {
	case "ec2":
		var res, tags []map[string]string
		for _, id := range c.ids {
			res = append(res, map[string]string{"resourceId": id})
		}
		for _, k := range keys {
			t := map[string]string{"key": k}
			if v, ok := c.set[k]; ok {
				t["value"] = v
			}
			tags = append(tags, t)
		}
		return map[string]any{"resourcesSet": map[string]any{"items": res}, "tagSet": map[string]any{"items": tags}}
	case "elasticloadbalancing":
		if len(c.removed) > 0 {
			return map[string]any{"resourceArns": c.ids, "tagKeys": keys}
		}
		var tags []map[string]string
		for _, k := range keys {
			tags = append(tags, map[string]string{"key": k, "value": c.set[k]})
		}
		return map[string]any{"resourceArns": c.ids, "tags": tags}
	default: // the Tagging API
		if len(c.removed) > 0 {
			return map[string]any{"resourceARNList": c.ids, "tagKeys": keys}
		}
		return map[string]any{"resourceARNList": c.ids, "tags": c.set}
	}
}

// marshal encodes an event (whose fields always encode).
func marshal(e event) []byte {
	b, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	return b
}

// send delivers body once or twice, each copy after its own delay.
func (q *eventQueue) send(body []byte, call bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stopped {
		return
	}
	copies := 1
	if q.rnd.Float64() < q.d.Duplicates {
		copies = 2
	}
	for i := range copies {
		delay := time.Duration(0)
		if q.d.MaxDelay > 0 {
			delay = time.Duration(q.rnd.Int64N(int64(q.d.MaxDelay) + 1))
		}
		if call {
			delay += q.d.CallDelay
		}
		dup := i > 0
		q.due++
		q.timers = append(q.timers, time.AfterFunc(delay, func() { q.deliver(body, dup) }))
	}
}

// deliver sends one copy of an event to the queue.
func (q *eventQueue) deliver(body []byte, dup bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := q.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.d.QueueURL), MessageBody: aws.String(string(body))})
	q.mu.Lock()
	defer q.mu.Unlock()
	if err != nil {
		q.dropped++ // moto stopped, or the queue is gone: as EventBridge, the rules drop the event
		return
	}
	q.sent++
	if dup {
		q.dups++
	}
}

// stop drops the events not delivered yet.
func (q *eventQueue) stop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.stopped = true
	for _, t := range q.timers {
		t.Stop()
	}
}
