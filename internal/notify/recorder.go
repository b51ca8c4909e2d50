package notify

import (
	"context"
	"errors"
	"fmt"
	"sync"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Recorder records events.k8s.io/v1 events through client-go's broadcaster
// (which aggregates repeats into series) and tells its listeners about every
// event the API server refused, which the broadcaster itself only logs.
// Start it before use; it stops when Start's context ends.
type Recorder struct {
	events.EventRecorder
	broadcaster events.EventBroadcaster

	mu        sync.Mutex
	listeners []func(uid, reason, note string)
}

// NewRecorder builds a Recorder writing events with cfg as the given
// component (the events' reporting controller).
func NewRecorder(cfg *rest.Config, scheme *runtime.Scheme, component string) (*Recorder, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	r := &Recorder{}
	r.broadcaster = events.NewBroadcaster(&observedSink{
		EventSink: &events.EventSinkImpl{Interface: cs.EventsV1()},
		refused:   r.refused,
	})
	r.EventRecorder = r.broadcaster.NewRecorder(scheme, component)
	return r, nil
}

// Start records events to the API server until ctx ends, then shuts the
// broadcaster down. Events emitted before ctx ended are still handed to the
// API server: the sink's own context ends only after the shutdown. It
// implements manager.Runnable.
func (r *Recorder) Start(ctx context.Context) error {
	sinkCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	if err := r.broadcaster.StartRecordingToSinkWithContext(sinkCtx); err != nil {
		return err
	}
	<-ctx.Done()
	r.broadcaster.Shutdown()
	return nil
}

// NeedLeaderElection is false: followers record nothing, but the recorder
// must be ready the moment a replica leads.
func (r *Recorder) NeedLeaderElection() bool { return false }

// OnRefused registers f to be told of every refused event.
func (r *Recorder) OnRefused(f func(uid, reason, note string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.listeners = append(r.listeners, f)
}

func (r *Recorder) refused(e *eventsv1.Event) {
	r.mu.Lock()
	ls := append([]func(string, string, string){}, r.listeners...)
	r.mu.Unlock()
	for _, f := range ls {
		f(string(e.Regarding.UID), e.Reason, e.Note)
	}
}

// observedSink passes events on and reports those the API server refused
// for good (any status error but AlreadyExists, which the broadcaster
// retries or ignores). Transport errors are retried by the broadcaster.
type observedSink struct {
	events.EventSink
	refused func(*eventsv1.Event)
}

// Create implements events.EventSink.
func (s *observedSink) Create(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	out, err := s.EventSink.Create(ctx, e)
	if err != nil && isRefusal(err) {
		s.refused(e)
	}
	return out, err
}

// isRefusal reports whether the API server answered and will never accept
// the event as sent.
func isRefusal(err error) bool {
	var se *apierrors.StatusError
	return errors.As(err, &se) && !apierrors.IsAlreadyExists(err)
}

// AddRecorder makes a Recorder for component (e.g. "tagsync-nodetags") on
// the manager's config and scheme and adds it to the manager, which starts
// and stops it; every controller that makes its own recorder does so here.
func AddRecorder(mgr manager.Manager, component string) (*Recorder, error) {
	rec, err := NewRecorder(mgr.GetConfig(), mgr.GetScheme(), component)
	if err != nil {
		return nil, fmt.Errorf("event recorder: %w", err)
	}
	if err := mgr.Add(rec); err != nil {
		return nil, err
	}
	return rec, nil
}
