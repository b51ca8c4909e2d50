// Package cloudchangetest helps tests of the controllers that take cloud
// changes: a Source whose health a test sets, Publish, which waits until a
// delivery is done, and a check of the Events condition.
package cloudchangetest

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloudchange"
)

// Source is an event source whose health a test sets (Up until Set); the
// test publishes the changes itself. Build it with NewSource.
type Source struct {
	name   string
	health atomic.Pointer[cloudchange.Health]
}

// NewSource returns a Source named name that is up.
func NewSource(name string) *Source {
	s := &Source{name: name}
	s.Set(cloudchange.Health{Up: true})
	return s
}

// Name names the source.
func (s *Source) Name() string { return s.name }

// Start waits until ctx ends.
func (s *Source) Start(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// Health is what the test last set.
func (s *Source) Health() cloudchange.Health { return *s.health.Load() }

// Set sets the source's health.
func (s *Source) Set(h cloudchange.Health) { s.health.Store(&h) }

// Publish publishes one delivery to sink and waits until it is done,
// failing the test if that takes longer than timeout; it returns the
// delivery's error (cloudchange.ErrQueueFull at once when it was not
// taken).
func Publish(t testing.TB, sink cloudchange.Sink, timeout time.Duration, changes ...cloudchange.Change) error {
	t.Helper()
	done := make(chan error, 1)
	if err := sink.Publish(changes, func(err error) { done <- err }); err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		t.Fatalf("the delivery of %d changes was not done within %s", len(changes), timeout)
		return nil
	}
}

// Write is the change a cloud reports for a write of resource (its tags
// when tags is not nil), with the event ID id.
func Write(cloud, resource, id string, tags map[string]string) cloudchange.Change {
	return cloudchange.Change{Cloud: cloud, Resource: resource, Kind: cloudchange.KindWrite, Tags: tags, ID: id, Source: "test", Time: time.Now()}
}

// CheckCondition says what is wrong with the Events condition among
// conds: "" when it has status and reason and its message holds every
// part.
func CheckCondition(conds []metav1.Condition, status metav1.ConditionStatus, reason string, parts ...string) string {
	c := meta.FindStatusCondition(conds, v1alpha1.ConditionEvents)
	if c == nil || c.Status != status || c.Reason != reason {
		return fmt.Sprintf("Events condition %+v, want %s %s", c, status, reason)
	}
	for _, part := range parts {
		if !strings.Contains(c.Message, part) {
			return fmt.Sprintf("Events message %q lacks %q", c.Message, part)
		}
	}
	return ""
}
