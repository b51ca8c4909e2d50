package kit

import (
	"sync"

	"github.com/tagsync/tagsync/internal/cloudchange"
)

// MaxEarly bounds the changes a Warmup keeps (the latest are kept).
const MaxEarly = 10000

// Warmup keeps the cloud changes no object of a controller took while the
// controller's index of resources may still lack some — after every start
// and leader change, until the first pass of each object whose pass began
// has indexed its resources — so that a change that arrives in that window
// is routed once the index knows its resource, instead of waiting for the
// next full pass. The node sync and the metadata controller both keep one.
// It is safe for concurrent use; its zero value is ready.
type Warmup[K comparable] struct {
	mu sync.Mutex
	// indexed are the objects whose passes began: true once one of their
	// passes indexed.
	indexed map[K]bool
	early   []cloudchange.Change
}

// Begin records that a pass of k began: until one of its passes indexes,
// the index may lack k's resources.
func (w *Warmup[K]) Begin(k K) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.indexed == nil {
		w.indexed = map[K]bool{}
	}
	if _, ok := w.indexed[k]; !ok {
		w.indexed[k] = false
	}
}

// Indexed records that a pass of k (begun) put all its resources in the
// index.
func (w *Warmup[K]) Indexed(k K) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.indexed[k]; ok {
		w.indexed[k] = true
	}
}

// Forget drops an object that is gone.
func (w *Warmup[K]) Forget(k K) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.indexed, k)
}

// Warming reports whether the index may still lack resources: no pass has
// begun, or one has whose object has not indexed yet.
func (w *Warmup[K]) Warming() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.warming()
}

func (w *Warmup[K]) warming() bool {
	if len(w.indexed) == 0 {
		return true
	}
	for _, done := range w.indexed {
		if !done {
			return true
		}
	}
	return false
}

// Hold keeps a change no object took, while the index warms (else it is
// dropped: no object owns its resource). At most MaxEarly are kept, the
// latest.
func (w *Warmup[K]) Hold(c cloudchange.Change) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.warming() {
		return
	}
	if len(w.early) >= MaxEarly {
		w.early = w.early[1:]
	}
	w.early = append(w.early, c)
}

// Replay returns the changes held and forgets them: the caller routes them
// again now that a pass has indexed (and holds again, while warming, those
// still nobody's).
func (w *Warmup[K]) Replay() []cloudchange.Change {
	w.mu.Lock()
	defer w.mu.Unlock()
	early := w.early
	w.early = nil
	return early
}
