package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/tagsync/tagsync/internal/cloudchange"
)

// HandoverAnnotation on the leader-election Lease holds the cloud changes
// a stopping leader acknowledged but did not finish, as JSON; the next
// leader publishes them and removes the annotation
// (cloudchange.Handover).
const HandoverAnnotation = "tagsync.io/events-handover"

// maxHandoverBytes bounds the annotation (a Lease's annotations hold 256
// KiB together): changes beyond it are left to the next leader's first
// full pass, their tags dropped first.
const maxHandoverBytes = 128 << 10

// leaseHandover keeps the handover on the leader-election Lease, which
// the replicas may read and update already.
type leaseHandover struct {
	leases coordinationv1client.LeaseInterface
	name   string
}

var _ cloudchange.Handover = leaseHandover{}

// newLeaseHandover is the handover on o's Lease; nil without leader
// election.
func newLeaseHandover(cfg *rest.Config, o Options) (cloudchange.Handover, error) {
	if !o.LeaderElection {
		return nil, nil
	}
	client, err := coordinationv1client.NewForConfig(rest.AddUserAgent(rest.CopyConfig(cfg), "events-handover"))
	if err != nil {
		return nil, err
	}
	return leaseHandover{leases: client.Leases(o.LeaderElectionNamespace), name: o.LeaderElectionID}, nil
}

// Take implements cloudchange.Handover.
func (h leaseHandover) Take(ctx context.Context) ([]cloudchange.Change, error) {
	var changes []cloudchange.Change
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		lease, err := h.leases.Get(ctx, h.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		raw, ok := lease.Annotations[HandoverAnnotation]
		if !ok {
			changes = nil
			return nil
		}
		var left []handedChange
		changes = nil
		if err := json.Unmarshal([]byte(raw), &left); err == nil { // unreadable: dropped, the full pass covers them
			for _, c := range left {
				changes = append(changes, c.change())
			}
		}
		delete(lease.Annotations, HandoverAnnotation)
		_, err = h.leases.Update(ctx, lease, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("the Lease %s: %w", h.name, err)
	}
	return changes, nil
}

// Leave implements cloudchange.Handover.
func (h leaseHandover) Leave(ctx context.Context, changes []cloudchange.Change) error {
	value, err := encodeHandover(changes)
	if err != nil {
		return err
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		lease, err := h.leases.Get(ctx, h.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if _, had := lease.Annotations[HandoverAnnotation]; value == "" && !had {
			return nil
		}
		if lease.Annotations == nil {
			lease.Annotations = map[string]string{}
		}
		if value == "" {
			delete(lease.Annotations, HandoverAnnotation)
		} else {
			lease.Annotations[HandoverAnnotation] = value
		}
		_, err = h.leases.Update(ctx, lease, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("the Lease %s: %w", h.name, err)
	}
	return nil
}

// handedChange is a change as the annotation holds it: short names, no
// empty fields.
type handedChange struct {
	Cloud     string            `json:"c"`
	Resource  string            `json:"r"`
	Kind      cloudchange.Kind  `json:"k"`
	ID        string            `json:"id,omitempty"`
	Time      *time.Time        `json:"t,omitempty"`
	Source    string            `json:"s,omitempty"`
	Operation string            `json:"o,omitempty"`
	Writer    string            `json:"w,omitempty"`
	Person    bool              `json:"p,omitempty"`
	Tags      map[string]string `json:"tags,omitempty"`
}

func handed(c cloudchange.Change, withTags bool) handedChange {
	h := handedChange{Cloud: c.Cloud, Resource: c.Resource, Kind: c.Kind, ID: c.ID, Source: c.Source, Operation: c.Operation,
		Writer: c.Writer.ID, Person: c.Writer.Person}
	if !c.Time.IsZero() {
		h.Time = &c.Time
	}
	if withTags {
		h.Tags = c.Tags
	}
	return h
}

func (h handedChange) change() cloudchange.Change {
	c := cloudchange.Change{Cloud: h.Cloud, Resource: h.Resource, Kind: h.Kind, ID: h.ID, Source: h.Source, Operation: h.Operation,
		Writer: cloudchange.Writer{ID: h.Writer, Person: h.Person}, Tags: h.Tags}
	if h.Time != nil {
		c.Time = *h.Time
	}
	return c
}

// encodeHandover is the annotation's value for changes ("" for none),
// within maxHandoverBytes: without the changes' tags when they do not fit
// with them (the next leader's targeted pass reads them), then as many
// changes as fit.
func encodeHandover(changes []cloudchange.Change) (string, error) {
	if len(changes) == 0 {
		return "", nil
	}
	encode := func(n int, withTags bool) (string, bool, error) {
		out := make([]handedChange, n)
		for i, c := range changes[:n] {
			out[i] = handed(c, withTags)
		}
		data, err := json.Marshal(out)
		return string(data), len(data) <= maxHandoverBytes, err
	}
	if value, fits, err := encode(len(changes), true); fits || err != nil {
		return value, err
	}
	for n := len(changes); n > 0; n = n * 9 / 10 {
		if value, fits, err := encode(n, false); fits || err != nil {
			return value, err
		}
	}
	return "", nil
}
