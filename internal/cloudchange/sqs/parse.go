package sqs

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/tags"
)

// The events tagsync reads: their EventBridge source and detail-type.
const (
	sourceTag          = "aws.tag"
	detailTypeTag      = "Tag Change on Resource"
	sourceEC2          = "aws.ec2"
	detailTypeEC2State = "EC2 Instance State-change Notification"
	// stateTerminated is the EC2 state after which an instance is gone.
	stateTerminated = "terminated"
)

// cloudName is the cloudchange.Change.Cloud of every change this source reads.
const cloudName = "aws"

// ErrNotRead is the error of Parse for a well-formed EventBridge event
// that tagsync does not read (another source or detail-type, such as
// aws.tag's "Invalid Effective Tag Policy"): the source acknowledges and
// ignores it.
var ErrNotRead = errors.New("an EventBridge event tagsync does not read")

// envelope is the part of an EventBridge event common to every source.
type envelope struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Account    string          `json:"account"`
	Time       time.Time       `json:"time"`
	Region     string          `json:"region"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`
}

// tagChangeDetail is the detail of aws.tag "Tag Change on Resource".
type tagChangeDetail struct {
	// ChangedTagKeys are the keys added, changed or deleted.
	ChangedTagKeys []string `json:"changed-tag-keys"`
	// Service and ResourceType name the resource's kind ("ec2",
	// "instance").
	Service      string `json:"service"`
	ResourceType string `json:"resource-type"`
	// Version counts the resource's tag changes (a number).
	Version json.Number `json:"version"`
	// Tags are all the resource's tags after the change; absent when
	// AWS did not say.
	Tags map[string]string `json:"tags"`
}

// stateChangeDetail is the detail of aws.ec2 "EC2 Instance State-change
// Notification".
type stateChangeDetail struct {
	InstanceID string `json:"instance-id"`
	State      string `json:"state"`
}

// Parse turns the body of one SQS message, an EventBridge event, into the
// change it reports. It returns an error wrapping ErrNotRead for a
// well-formed event of another kind, and any other error for a body that
// is not a well-formed event tagsync reads (a poison message: not JSON,
// no source or detail-type, no id, time or resource, a detail of the
// wrong shape).
//
// A CloudTrail event of a tag write (see parseCall) is not a change: Parse
// returns ErrNotRead for it, and the source reads it for who made the
// change its tag change event reports.
func Parse(body string) (cloudchange.Change, error) {
	ev, err := parse(body)
	if err == nil && ev.call != nil {
		err = fmt.Errorf("%w: a CloudTrail call names who wrote, not what changed", ErrNotRead)
	}
	return ev.change, err
}

// event is what one message says: a change (and whether it removed
// tags), or a call that names who wrote tags.
type event struct {
	change cloudchange.Change
	// removed are the keys a tag change removed, set those it set (none
	// when it carries no tags: which keys changed is then unknown, and a
	// pass reads them).
	removed, set []string
	call         *call
}

// parse reads a message's body (see Parse).
func parse(body string) (event, error) {
	var env envelope
	if err := json.Unmarshal([]byte(body), &env); err != nil {
		return event{}, fmt.Errorf("not an EventBridge event: %w", err)
	}
	if env.Source == "" || env.DetailType == "" {
		return event{}, errors.New(`not an EventBridge event: no "source" or no "detail-type"`)
	}
	switch {
	case env.Source == sourceTag && env.DetailType == detailTypeTag:
		return parseTagChange(env)
	case env.Source == sourceEC2 && env.DetailType == detailTypeEC2State:
		c, err := parseStateChange(env)
		return event{change: c}, err
	case callSources[env.Source] && env.DetailType == detailTypeCall:
		c, err := parseCall(env)
		return event{call: c}, err
	}
	return event{}, fmt.Errorf("%w: source %q, detail-type %q", ErrNotRead, env.Source, env.DetailType)
}

// parseTagChange reads a "Tag Change on Resource" event: a write whose
// Tags are the resource's whole tag set after the change (nil when the
// detail has no "tags", so that a pass reads them).
func parseTagChange(env envelope) (event, error) {
	c, d, err := changeWithDetail[tagChangeDetail](env)
	if err != nil {
		return event{change: c}, err
	}
	c.Kind = cloudchange.KindWrite
	ev := event{change: c}
	if d.Tags != nil {
		ev.change.Tags = tags.Set(d.Tags)
		for _, k := range d.ChangedTagKeys {
			if _, ok := d.Tags[k]; !ok {
				ev.removed = append(ev.removed, k)
			} else {
				ev.set = append(ev.set, k)
			}
		}
	}
	return ev, nil
}

// parseStateChange reads an "EC2 Instance State-change Notification": a
// state change, or a delete when the instance is terminated. It carries no
// tags.
func parseStateChange(env envelope) (cloudchange.Change, error) {
	c, d, err := changeWithDetail[stateChangeDetail](env)
	if err != nil {
		return c, err
	}
	if d.State == "" {
		return c, fmt.Errorf("%s %s: the detail has no state", env.DetailType, env.ID)
	}
	c.Kind = cloudchange.KindState
	if d.State == stateTerminated {
		c.Kind = cloudchange.KindDelete
	}
	return c, nil
}

// changeWithDetail returns the Change of env (see change) and its detail
// read as a D.
func changeWithDetail[D any](env envelope) (cloudchange.Change, D, error) {
	var d D
	c, err := change(env)
	if err != nil {
		return c, d, err
	}
	if err := json.Unmarshal(env.Detail, &d); err != nil {
		return c, d, fmt.Errorf("%s %s: detail: %w", env.DetailType, env.ID, err)
	}
	return c, d, nil
}

// change returns the Change of env's fields every event tagsync reads has:
// its id, time and first resource (an ARN). The caller sets Kind and Tags.
func change(env envelope) (cloudchange.Change, error) {
	switch {
	case env.ID == "":
		return cloudchange.Change{}, fmt.Errorf("%s event without an id", env.DetailType)
	case env.Time.IsZero():
		return cloudchange.Change{}, fmt.Errorf("%s %s: no time", env.DetailType, env.ID)
	case len(env.Resources) == 0 || env.Resources[0] == "":
		return cloudchange.Change{}, fmt.Errorf("%s %s: no resource", env.DetailType, env.ID)
	case len(env.Detail) == 0:
		return cloudchange.Change{}, fmt.Errorf("%s %s: no detail", env.DetailType, env.ID)
	}
	return cloudchange.Change{Cloud: cloudName, Resource: env.Resources[0], ID: env.ID, Time: env.Time, Source: Name}, nil
}
