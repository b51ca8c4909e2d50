package notify

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/reference"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Recorder records events.k8s.io/v1 events through client-go's broadcaster
// (which aggregates repeats into series; an event whose note differs from
// its series' first is written on its own, see Eventf) and tells its listeners about every
// event the API server refused, which the broadcaster itself only logs.
// Start it before use; it stops when Start's context ends.
type Recorder struct {
	events.EventRecorder
	broadcaster events.EventBroadcaster
	sink        events.EventSink
	scheme      *runtime.Scheme
	component   string
	instance    string

	mu        sync.Mutex
	listeners []func(uid, reason, note string)
	// series are the notes the broadcaster's series began with, by the
	// key it folds events under (see Eventf).
	series  map[seriesKey]seriesNote
	swept   time.Time
	sinkCtx context.Context
	now     func() time.Time
}

// seriesKey is what client-go's broadcaster folds events under: every
// field of an event but its note and times.
type seriesKey struct {
	eventType, action, reason string
	regarding, related        corev1.ObjectReference
}

// seriesNote is the note a series began with and when the broadcaster last
// had an event of it.
type seriesNote struct {
	note string
	last time.Time
}

// seriesMemory is how long a series key is remembered after the broadcaster
// last had an event of it: longer than the broadcaster keeps one (its
// series end 6 minutes after their last event, checked every 6 minutes).
const seriesMemory = 15 * time.Minute

// NewRecorder builds a Recorder writing events with cfg as the given
// component (the events' reporting controller).
func NewRecorder(cfg *rest.Config, scheme *runtime.Scheme, component string) (*Recorder, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	hostname, _ := os.Hostname()
	r := &Recorder{scheme: scheme, component: component, instance: component + "-" + hostname,
		series: map[seriesKey]seriesNote{}, now: time.Now}
	r.sink = &observedSink{EventSink: &events.EventSinkImpl{Interface: cs.EventsV1()}, refused: r.refused}
	r.broadcaster = events.NewBroadcaster(r.sink)
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
	r.mu.Lock()
	r.sinkCtx = sinkCtx
	r.mu.Unlock()
	<-ctx.Done()
	r.broadcaster.Shutdown()
	return nil
}

// Eventf records an event. client-go's broadcaster folds an event into the
// series of an earlier one of the same type, action, reason, regarding
// object (at the same resourceVersion) and related object, and keeps the
// earlier one's note: a pass that read its object before its last status
// write showed in the cache would see its note replaced by the last pass's.
// An event whose note differs from the one its series began with is
// written as an event of its own; repeats of one note still fold.
func (r *Recorder) Eventf(regarding, related runtime.Object, eventType, reason, action, note string, args ...any) {
	note = fmt.Sprintf(note, args...)
	if e, ok := r.ownEvent(regarding, related, eventType, reason, action, note); ok {
		go r.create(e)
		return
	}
	r.EventRecorder.Eventf(regarding, related, eventType, reason, action, "%s", note)
}

// ownEvent returns the event to write past the broadcaster when the series
// its key would fold it into began with another note; else it remembers
// that the broadcaster has an event of the series now.
func (r *Recorder) ownEvent(regarding, related runtime.Object, eventType, reason, action, note string) (*eventsv1.Event, bool) {
	k := seriesKey{eventType: eventType, action: action, reason: reason}
	ref, err := reference.GetReference(r.scheme, regarding)
	if err != nil {
		return nil, false // the broadcaster logs it
	}
	k.regarding = *ref
	var rel *corev1.ObjectReference
	if related != nil {
		if rel, err = reference.GetReference(r.scheme, related); err == nil {
			k.related = *rel
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	r.sweep(now)
	if s, ok := r.series[k]; ok && s.note != note && r.sinkCtx != nil {
		return r.event(ref, rel, eventType, reason, action, note, now), true
	}
	s := r.series[k]
	if s.note == "" {
		s.note = note
	}
	s.last = now
	r.series[k] = s
	return nil, false
}

// sweep forgets, once a minute, the series the broadcaster no longer has.
func (r *Recorder) sweep(now time.Time) {
	if now.Sub(r.swept) < time.Minute {
		return
	}
	r.swept = now
	maps.DeleteFunc(r.series, func(_ seriesKey, s seriesNote) bool { return now.Sub(s.last) > seriesMemory })
}

// event builds an event as the broadcaster's recorder does.
func (r *Recorder) event(regarding, related *corev1.ObjectReference, eventType, reason, action, note string, now time.Time) *eventsv1.Event {
	ns := regarding.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%v.%x", regarding.Name, now.UnixNano()), Namespace: ns},
		EventTime:           metav1.MicroTime{Time: now},
		ReportingController: r.component,
		ReportingInstance:   r.instance,
		Action:              action,
		Reason:              reason,
		Regarding:           *regarding,
		Related:             related,
		Note:                note,
		Type:                eventType,
	}
}

// create writes e to the API server (a refusal is reported as for the
// broadcaster's events).
func (r *Recorder) create(e *eventsv1.Event) {
	r.mu.Lock()
	ctx := r.sinkCtx
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, _ = r.sink.Create(ctx, e)
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
