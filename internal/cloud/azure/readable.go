package azure

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tagsync/tagsync/internal/cloud"
)

// Resource Graph answers a query with the rows the caller may read, with
// HTTP 200 and no error for the rest: an identity given Reader on some
// resource groups only, not on the subscription, finds part of the estate
// and nothing says so. So Discover checks, once per subscription every
// ReadCheckEvery, the caller's permissions at the subscription's scope
// (Microsoft.Authorization/permissions, one ARM read); when they do not
// grant readAction, the subscription's rows are used but the subscription
// is reported in Discovery.Failed as searched in part (ErrPartialRead), so
// no caller takes the search as complete.

// readAction is the action that lets Resource Graph show every resource of
// a subscription (the built-in Reader role grants it through */read).
const readAction = "Microsoft.Resources/subscriptions/resources/read"

// ReadCheckEvery is how long a subscription's checked read rights stand.
const ReadCheckEvery = 10 * time.Minute

// ErrPartialRead marks a subscription Resource Graph searched in part: the
// identity may not read all of it.
var ErrPartialRead = errors.New("the identity may not read all of the subscription, and Resource Graph leaves out what it cannot read without an error")

// readChecks are the subscriptions' read rights, as last checked.
type readChecks struct {
	mu sync.Mutex
	m  map[string]readCheck // by lower-cased subscription
}

// readCheck is one subscription's read right and when it was checked.
type readCheck struct {
	whole bool
	at    time.Time
}

// partialReads returns a ScopeError for each of scopes not in failed whose
// permissions do not grant reading all of it. A permissions read that
// fails says nothing: the subscription is not reported (and is checked
// again at the next search).
func (p *Provider) partialReads(ctx context.Context, scopes []string, failed []cloud.ScopeError) []cloud.ScopeError {
	var out []cloud.ScopeError
	for _, sub := range scopes {
		if hasScope(failed, sub) {
			continue
		}
		whole, known := p.readsWhole(ctx, sub)
		if known && !whole {
			out = append(out, cloud.ScopeError{Scope: sub, Err: fmt.Errorf("azure: search subscription %s with Resource Graph: %w "+
				"(its permissions there do not grant %s; give the identity Reader on the subscription)", sub, ErrPartialRead, readAction)})
		}
	}
	return out
}

// readsWhole reports whether the caller may read all of sub, and whether
// that is known (from a check within ReadCheckEvery, or one made now).
func (p *Provider) readsWhole(ctx context.Context, sub string) (whole, known bool) {
	key := strings.ToLower(sub)
	p.reads.mu.Lock()
	c, ok := p.reads.m[key]
	p.reads.mu.Unlock()
	if ok && p.now().Sub(c.at) < ReadCheckEvery {
		return c.whole, true
	}
	perms, err := p.permissions(ctx, sub)
	if err != nil {
		return false, false
	}
	c = readCheck{whole: perms.allows(readAction), at: p.now()}
	p.reads.mu.Lock()
	defer p.reads.mu.Unlock()
	if p.reads.m == nil {
		p.reads.m = map[string]readCheck{}
	}
	p.reads.m[key] = c
	return c.whole, true
}

// hasScope reports whether failed names sub (case-insensitively).
func hasScope(failed []cloud.ScopeError, sub string) bool {
	for _, f := range failed {
		if strings.EqualFold(f.Scope, sub) {
			return true
		}
	}
	return false
}
