// Package eventstest helps tests of the controllers that take cloud
// changes: a Source whose health a test sets, and Publish, which waits
// until a delivery is done.
package eventstest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tagsync/tagsync/internal/events"
)

// Source is an event source whose health a test sets (Up until Set); the
// test publishes the changes itself. Build it with NewSource.
type Source struct {
	name   string
	health atomic.Pointer[events.Health]
}

// NewSource returns a Source named name that is up.
func NewSource(name string) *Source {
	s := &Source{name: name}
	s.Set(events.Health{Up: true})
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
func (s *Source) Health() events.Health { return *s.health.Load() }

// Set sets the source's health.
func (s *Source) Set(h events.Health) { s.health.Store(&h) }

// Publish publishes one delivery to sink and waits until it is done,
// failing the test if that takes longer than timeout; it returns the
// delivery's error.
func Publish(t testing.TB, sink events.Sink, timeout time.Duration, changes ...events.Change) error {
	t.Helper()
	done := make(chan error, 1)
	sink.Publish(changes, func(err error) { done <- err })
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
func Write(cloud, resource, id string, tags map[string]string) events.Change {
	return events.Change{Cloud: cloud, Resource: resource, Kind: events.KindWrite, Tags: tags, ID: id, Source: "test", Time: time.Now()}
}
