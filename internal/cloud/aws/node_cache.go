package aws

import (
	"maps"
	"sync"
	"time"
)

// nodeCache is the provider's short-lived read cache of instances and
// groups (Options.CacheTTL), keyed by region and instance ID or group name.
// Every Snapshot first sweeps out the reads older than the TTL, and reads
// afresh (and so caches again) those its nodes still name: the cache holds
// only what was read within the TTL, the instances and groups of current
// Nodes, not every instance and group ever read.
type nodeCache struct {
	mu        sync.Mutex
	instances map[regionalID]cachedAt[*ec2Instance]
	groups    map[regionalID]cachedAt[*asGroup]
	now       func() time.Time // time.Now; tests set it
}

// clock returns the cache's time.
func (c *nodeCache) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// sweep forgets the reads that are ttl old or older.
func (c *nodeCache) sweep(ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock()
	maps.DeleteFunc(c.instances, func(_ regionalID, e cachedAt[*ec2Instance]) bool { return now.Sub(e.at) >= ttl })
	maps.DeleteFunc(c.groups, func(_ regionalID, e cachedAt[*asGroup]) bool { return now.Sub(e.at) >= ttl })
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
	if !ok || c.clock().Sub(e.at) >= ttl {
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
	(*m)[k] = cachedAt[T]{at: c.clock(), v: v}
}

// cacheDrop forgets k.
func cacheDrop[T any](c *nodeCache, m *map[regionalID]cachedAt[T], k regionalID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(*m, k)
}
