package armsim

import (
	"context"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Fault makes requests of one operation fail.
type Fault struct {
	// Operation is the operation name (see Calls), e.g.
	// "VirtualMachineScaleSets.Update"; "" or "*" matches every operation.
	Operation string `json:"operation"`
	// Scope, if set, limits the fault to requests whose path is this scope
	// or lies under it, case-insensitively: e.g. "/subscriptions/{id}" (one
	// subscription) or "/subscriptions/{id}/resourceGroups/{rg}" (one
	// group's lists and resources). A Resource Graph query is under
	// "/subscriptions/{id}" when its request names that subscription: as
	// in ARG, a query over several subscriptions then fails as a whole
	// (e.g. 403 AccessDenied for one the caller may not read).
	Scope string `json:"scope,omitempty"`
	// Count is how many matching requests fail; 0 means all of them until
	// the fault is cleared.
	Count int `json:"count"`
	// Status is the HTTP status to answer (default 500).
	Status int `json:"status"`
	// Code is the ARM error code (default derived from Status and, for
	// 403, the operation: Resource Graph's AccessDenied, else ARM's
	// AuthorizationFailed).
	Code string `json:"code,omitempty"`
	// Message is the error message (default generic).
	Message string `json:"message,omitempty"`
	// RetryAfter, if set, is sent as Retry-After / retry-after-ms.
	RetryAfter time.Duration `json:"retryAfter,omitempty"`
}

// faultInjector holds the fault configuration.
type faultInjector struct {
	mu     sync.Mutex
	rate   float64
	lat    time.Duration
	rnd    *rand.Rand
	faults []*Fault
}

func newFaultInjector(o FaultOptions, seed int64) *faultInjector {
	return &faultInjector{rate: o.ErrorRate, lat: o.Latency, rnd: rand.New(rand.NewSource(seed))}
}

// delay waits the configured latency; false if the request was canceled.
func (f *faultInjector) delay(ctx context.Context) bool {
	f.mu.Lock()
	d := f.lat
	f.mu.Unlock()
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// next returns the fault to apply to a request of op, if any; scopes are
// the paths the request is under (its URL path, and for a Resource Graph
// query the subscriptions it names).
func (f *faultInjector) next(op string, scopes []string) *Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, ft := range f.faults {
		if !ft.matches(op, scopes) {
			continue
		}
		hit := *ft
		if ft.Count > 0 {
			ft.Count--
			if ft.Count == 0 {
				f.faults = append(f.faults[:i], f.faults[i+1:]...)
			}
		}
		return &hit
	}
	if f.rate > 0 && f.rnd.Float64() < f.rate {
		st := http.StatusInternalServerError
		if f.rnd.Intn(2) == 0 {
			st = http.StatusServiceUnavailable
		}
		return &Fault{Status: st}
	}
	return nil
}

// matches reports whether the fault applies to a request of op under
// any of scopes.
func (f *Fault) matches(op string, scopes []string) bool {
	if f.Operation != "" && f.Operation != "*" && !strings.EqualFold(f.Operation, op) {
		return false
	}
	for _, p := range scopes {
		if inScope(p, f.Scope) {
			return true
		}
	}
	return false
}

// inScope reports whether path is scope or lies under it (any casing); an
// empty scope holds every path.
func inScope(path, scope string) bool {
	scope = strings.ToLower(strings.TrimSuffix(scope, "/"))
	if scope == "" {
		return true
	}
	path = strings.ToLower(path)
	return path == scope || strings.HasPrefix(path, scope+"/")
}

// writeFault answers a request of op with a fault's error.
func writeFault(w http.ResponseWriter, op string, f *Fault) {
	st := f.Status
	if st == 0 {
		st = http.StatusInternalServerError
	}
	code, msg := f.Code, f.Message
	if code == "" {
		code = defaultFaultCode(op, st)
	}
	if msg == "" {
		msg = "armsim injected fault: " + http.StatusText(st) + "."
	}
	if f.RetryAfter > 0 {
		setRetryAfter(w.Header(), f.RetryAfter)
	}
	writeError(w, newError(st, code, "%s", msg))
}

func defaultFaultCode(op string, status int) string {
	switch status {
	case http.StatusForbidden:
		if op == opGraph {
			return "AccessDenied"
		}
		return "AuthorizationFailed"
	case http.StatusTooManyRequests:
		return "SubscriptionRequestsThrottled"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailable"
	case http.StatusConflict:
		return "Conflict"
	case http.StatusInternalServerError:
		return "InternalServerError"
	}
	return strings.ReplaceAll(http.StatusText(status), " ", "")
}

// AddFault installs a fault; faults are tried in the order added.
func (s *Server) AddFault(f Fault) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	c := f
	s.faults.faults = append(s.faults.faults, &c)
}

// FailNext makes the next n requests of op fail with status.
func (s *Server) FailNext(op string, n int, status int) {
	if n <= 0 {
		return
	}
	s.AddFault(Fault{Operation: op, Count: n, Status: status})
}

// Faults returns the installed faults with their remaining counts.
func (s *Server) Faults() []Fault {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	out := make([]Fault, len(s.faults.faults))
	for i, f := range s.faults.faults {
		out[i] = *f
	}
	return out
}

// ClearFaults removes every installed fault (error rate and latency stay).
func (s *Server) ClearFaults() {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.faults = nil
}

// SetErrorRate sets the probability (0..1) of a random 500/503.
func (s *Server) SetErrorRate(rate float64) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.rate = rate
}

// SetLatency sets the delay added to every request.
func (s *Server) SetLatency(d time.Duration) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.lat = d
}
