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
	// missed are the instances Nodes name that EC2's reads did not
	// return: when first and last looked for (NewInstanceGrace).
	missed map[regionalID]missedAt
}

// missedAt is when an instance was first and last looked for in vain.
type missedAt struct{ first, last time.Time }

// NewInstanceGrace is how long after its Node's creation (cloud.Node.Created;
// when unknown, after the node sync first looks for the instance in vain)
// the node sync takes an instance EC2 does not return for one EC2 does not
// show yet rather than one that is gone. EC2's API is eventually consistent ("the
// result of an API command you run might not be immediately visible to all
// subsequent commands", EC2 API reference, "Eventual consistency in the
// Amazon EC2 API") and documents no bound; a kubelet registers its Node
// only after the instance booted, and the lag EC2's users report is
// seconds, so two minutes covers it with room. Within it the node is not
// synced yet, its placement is NotYet and says why, and the miss is not
// cached: every pass looks again.
const NewInstanceGrace = 2 * time.Minute

// missRetention is how long a miss no Node asked about again is kept: long
// past any resync interval, so a gone instance's Node does not get a new
// grace at every pass, yet bounded by the Nodes of the last hour.
const missRetention = time.Hour

// miss records that k was looked for in vain and returns since when.
func (c *nodeCache) miss(k regionalID) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock()
	if c.missed == nil {
		c.missed = map[regionalID]missedAt{}
	}
	m, ok := c.missed[k]
	if !ok {
		m.first = now
	}
	m.last = now
	c.missed[k] = m
	return now.Sub(m.first)
}

// found forgets that k was missed.
func (c *nodeCache) found(k regionalID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.missed, k)
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
	maps.DeleteFunc(c.missed, func(_ regionalID, m missedAt) bool { return now.Sub(m.last) >= missRetention })
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

// cacheGetAt is cacheGet that also returns when the read was made.
func cacheGetAt[T any](c *nodeCache, m *map[regionalID]cachedAt[T], k regionalID, ttl time.Duration) (T, time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := (*m)[k]
	if !ok || c.clock().Sub(e.at) >= ttl {
		var zero T
		return zero, time.Time{}, false
	}
	return e.v, e.at, true
}

// cachePutAt stores v at k as read at at (a write based on an older read
// keeps that read's age).
func cachePutAt[T any](c *nodeCache, m *map[regionalID]cachedAt[T], k regionalID, v T, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if *m == nil {
		*m = map[regionalID]cachedAt[T]{}
	}
	(*m)[k] = cachedAt[T]{at: at, v: v}
}
