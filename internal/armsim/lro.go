package armsim

import (
	"math"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// Operation status values.
const (
	statusInProgress = "InProgress"
	statusSucceeded  = "Succeeded"
)

// lroOp is a long-running operation in flight. The write it stands for is
// applied when it starts (so the resource shows the new tags and an
// "Updating" provisioning state); it completes after LROPolls polls.
type lroOp struct {
	id        string
	pollsLeft int
	status    string
	started   time.Time
	ended     time.Time
	onDone    func()                           // runs once, when the operation completes
	result    func(r *http.Request) (int, any) // final answer of the Location URL
}

// lroTable holds operations by ID.
type lroTable struct {
	mu sync.Mutex
	m  map[string]*lroOp
}

func newLROTable() *lroTable { return &lroTable{m: map[string]*lroOp{}} }

// startLRO registers an operation for a write that needs polling and sets
// the Azure-AsyncOperation, Location and Retry-After headers.
func (s *Server) startLRO(w http.ResponseWriter, r *http.Request, sub, ns, loc string, onDone func(), result func(*http.Request) (int, any)) {
	op := &lroOp{
		id: newUUID(), pollsLeft: s.opts.LROPolls, status: statusInProgress,
		started: s.opts.Clock.Now(), onDone: onDone, result: result,
	}
	s.ops.mu.Lock()
	s.ops.m[op.id] = op
	s.ops.mu.Unlock()
	if loc == "" {
		loc = "global"
	}
	base := baseURL(r) + "/subscriptions/" + url.PathEscape(sub) + "/providers/" + ns + "/locations/" + url.PathEscape(loc)
	q := "?api-version=" + url.QueryEscape(r.URL.Query().Get("api-version"))
	h := w.Header()
	h.Set("Azure-AsyncOperation", base+"/operations/"+op.id+q)
	h.Set("Location", base+"/operationResults/"+op.id+q)
	setPollAfter(h, s.opts.LRORetryAfter)
}

// poll advances an operation by one poll and returns its state.
func (s *Server) poll(id string) (lroOp, bool) {
	s.ops.mu.Lock()
	op, ok := s.ops.m[id]
	if !ok {
		s.ops.mu.Unlock()
		return lroOp{}, false
	}
	var done func()
	if op.status == statusInProgress {
		op.pollsLeft--
		if op.pollsLeft <= 0 {
			op.status, op.ended, done = statusSucceeded, s.opts.Clock.Now(), op.onDone
		}
	}
	snap := *op
	s.ops.mu.Unlock()
	if done != nil {
		done()
	}
	return snap, true
}

func opNotFound(id string) *Error {
	return newError(http.StatusNotFound, "OperationNotFound", "The operation '%s' could not be found.", id)
}

// pollRoute polls the operation the route names, answering 404 when there
// is none.
func (s *Server) pollRoute(w http.ResponseWriter, rt *route) (op lroOp, ok bool) {
	id := rt.segs[len(rt.segs)-1]
	if op, ok = s.poll(id); !ok {
		writeError(w, opNotFound(id))
	}
	return op, ok
}

// handleOperationStatus answers an Azure-AsyncOperation poll.
func (s *Server) handleOperationStatus(w http.ResponseWriter, r *http.Request, rt *route) {
	op, ok := s.pollRoute(w, rt)
	if !ok {
		return
	}
	body := map[string]any{"name": op.id, "status": op.status, "startTime": op.started.UTC().Format(time.RFC3339Nano)}
	if op.status == statusInProgress {
		setPollAfter(w.Header(), s.opts.LRORetryAfter)
	} else {
		body["endTime"] = op.ended.UTC().Format(time.RFC3339Nano)
	}
	writeJSON(w, http.StatusOK, body)
}

// handleOperationResult answers a Location poll: 202 while running, then
// the operation's result.
func (s *Server) handleOperationResult(w http.ResponseWriter, r *http.Request, rt *route) {
	op, ok := s.pollRoute(w, rt)
	if !ok {
		return
	}
	if op.status == statusInProgress {
		w.Header().Set("Location", baseURL(r)+r.URL.RequestURI())
		setPollAfter(w.Header(), s.opts.LRORetryAfter)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	status, body := http.StatusNoContent, any(nil)
	if op.result != nil {
		status, body = op.result(r)
	}
	if body == nil {
		w.WriteHeader(status)
		return
	}
	writeJSON(w, status, body)
}

// PendingOperations returns the number of long-running operations that
// have not completed yet.
func (s *Server) PendingOperations() int {
	s.ops.mu.Lock()
	defer s.ops.mu.Unlock()
	n := 0
	for _, op := range s.ops.m {
		if op.status == statusInProgress {
			n++
		}
	}
	return n
}

// setPollAfter announces when to poll a long-running operation again:
// Retry-After in whole seconds, as Azure, and retry-after-ms with the exact
// delay, so that tests may shorten polling (Options.LRORetryAfter) below
// the second Azure would ask for. Throttling answers send only Retry-After
// (setRetryAfter).
func setPollAfter(h http.Header, d time.Duration) {
	h.Set("Retry-After", strconv.Itoa(int(math.Ceil(d.Seconds()))))
	h.Set("retry-after-ms", strconv.FormatInt(max(d.Milliseconds(), 1), 10))
}
