package aws

import (
	"sync"
	"time"
)

// nodeCache is the provider's short-lived read cache of instances and
// groups (Options.CacheTTL), keyed by region and instance ID or group name.
type nodeCache struct {
	mu        sync.Mutex
	instances map[regionalID]cachedAt[*ec2Instance]
	groups    map[regionalID]cachedAt[*asGroup]
}

// cachedAt is a cached read and when it was made.
type cachedAt[T any] struct {
	at time.Time
	v  T
}

// cacheGet returns (*m)[k] when it is younger than ttl.
func cacheGet[T any](c *nodeCache, m *map[regionalID]cachedAt[T], k regionalID, ttl time.Duration) (T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := (*m)[k]
	if !ok || time.Since(e.at) >= ttl {
		var zero T
		return zero, false
	}
	return e.v, true
}

// cachePut stores v at k, creating the map on first use.
func cachePut[T any](c *nodeCache, m *map[regionalID]cachedAt[T], k regionalID, v T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if *m == nil {
		*m = map[regionalID]cachedAt[T]{}
	}
	(*m)[k] = cachedAt[T]{at: time.Now(), v: v}
}

// cacheDrop forgets k.
func cacheDrop[T any](c *nodeCache, m *map[regionalID]cachedAt[T], k regionalID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(*m, k)
}
