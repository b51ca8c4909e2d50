package kit

import (
	"errors"
	"net"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/tagsync/tagsync/internal/cloud"
)

// NeedsPerson reports errors a retry does not cure: the identity may not
// read or write (forbidden), the thing does not exist (not found, or a
// name that resolves to no endpoint, such as a mistyped region), or the
// request is invalid. Such an error is reported once and waits for a spec
// change or a Backoff, rather than being retried every few seconds.
func NeedsPerson(err error) bool {
	if err == nil {
		return false
	}
	var dns *net.DNSError
	return errors.Is(err, cloud.ErrForbidden) || errors.Is(err, cloud.ErrNotFound) ||
		(errors.As(err, &dns) && dns.IsNotFound) ||
		apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsInvalid(err)
}

// MaxPersonBackoff is the longest wait between passes that meet the same
// errors only a person can fix (unless the object's own interval is longer).
const MaxPersonBackoff = 30 * time.Minute

// Backoff counts the passes in a row of one object that met errors only a
// person can fix, for one version of its spec. Its zero value is ready.
type Backoff struct {
	mu       sync.Mutex
	spec     string
	failures int
}

// Failed counts a pass that met such errors for the spec version spec (for
// example the generations it served) and returns the wait before the next
// one: every, doubling with each pass in a row, up to MaxPersonBackoff; a
// new spec version starts again at every.
func (b *Backoff) Failed(spec string, every time.Duration) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if spec != b.spec {
		b.spec, b.failures = spec, 0
	}
	b.failures++
	d := every
	for i := 1; i < b.failures && d < MaxPersonBackoff; i++ {
		d *= 2
	}
	return max(every, min(d, MaxPersonBackoff))
}

// Reset forgets the failures after a pass without such errors.
func (b *Backoff) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.spec, b.failures = "", 0
}
