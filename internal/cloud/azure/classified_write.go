package azure

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// WriteTags applies each write's patch to each of its resources through
// the Tags API at the resource's scope, without reading them: per
// resource, one PATCH Delete for Patch.Delete, then one PATCH Merge for
// Patch.Set (each only when not empty), so at most two requests. ARM
// merges key by key and keeps every other tag; names are case-insensitive
// and a merged name keeps its existing spelling. The Delete carries, for
// each name, its value in Expect (matched case-insensitively), so ARM
// removes the tag only while it still has that value and leaves it
// unchanged (without an error) when someone changed it; names absent from
// Expect, or expected empty, are sent with an empty value, which ARM reads
// as "whatever the value". A name that Patch.Set sets in any spelling is
// not deleted: the set wins, as in tags.Patch.Apply.
//
// Delete goes first, as in PatchTags and for the same reason: ARM checks a
// type's tag limit (50, 15 on DNS zones and the other SmallTagLimitTypes)
// against what each request leaves, so a patch that swaps tags on a
// resource at its limit must shrink before it grows. The price is a
// half-applied patch when the Delete succeeds and the Merge fails (e.g.
// ErrTooManyTags because the deleted names were absent): the error says
// so, and writing the same patch again finishes it, as both operations
// are idempotent.
//
// Resources are written concurrently (Options.WriteConcurrency, default
// 8), every request through the provider's throttle gates and budget, and
// subscriptions in parallel: each subscription has its own queue, in the
// order given, and a worker that is free takes the next resource of the
// next subscription in turn that has fewer than its share of the workers
// busy (the workers divided among the subscriptions with writes left,
// rounded up). So a subscription whose budget or ARM is slow holds at most
// its share of the workers, and the others' writes go on meanwhile; as
// ARM's quota is per subscription, n subscriptions are written about n
// times as fast as one.
// Once a request to a subscription is throttled, the resources of that
// subscription not yet started are not sent: they fail at once with an
// error wrapping that *cloud.ThrottledError (and the closed gate holds
// the retries of those in flight). The cached listing of a written VM's or
// scale set's resource group is dropped, so the next Snapshot reads it
// afresh.
//
// Each resource is reported to each (see cloud.ClassifiedProvider) as pending before
// its first request and with its result as soon as its worker has it;
// once each returns an error, the workers send nothing more and the
// resources left fail with an error wrapping it.
//
// A Fresh write (the node sync's) is written as PatchTags writes one
// resource, one resource at a time in the order given, after the other
// writes.
//
// It returns one result per ID, in the order given; errors report their
// kind to errors.Is: cloud.ErrTooManyTags, cloud.ErrForbidden (403),
// cloud.ErrNotFound (404), cloud.ErrThrottled (a *cloud.ThrottledError).
func (p *Provider) WriteTags(ctx context.Context, writes []cloud.TagWrite, each func(cloud.WriteResult) error) []cloud.WriteResult {
	stream := cloud.NewResultStream(each)
	var blind []cloud.TagWrite
	for _, w := range writes {
		if !w.Fresh {
			blind = append(blind, w)
		}
	}
	done := p.writeBlind(ctx, blind, stream)
	var out []cloud.WriteResult
	for _, w := range writes {
		if w.Fresh {
			out = append(out, cloud.WriteFresh(ctx, w, stream, p.patchBatch)...)
			continue
		}
		out, done = append(out, done[:len(w.IDs)]...), done[len(w.IDs):]
	}
	return out
}

// writeBlind writes the writes that are not Fresh, concurrently, and
// returns their results in order.
func (p *Provider) writeBlind(ctx context.Context, writes []cloud.TagWrite, stream *cloud.ResultStream) []cloud.WriteResult {
	type job struct {
		id string
		w  *cloud.TagWrite
	}
	var jobs []job
	var subs []string // each job's subscription, lower-cased ("" when the ID is not ARM's)
	for i := range writes {
		for _, id := range writes[i].IDs {
			jobs = append(jobs, job{id: id, w: &writes[i]})
			sub := ""
			if ref, err := parseRef(id); err == nil {
				sub = strings.ToLower(ref.sub)
			}
			subs = append(subs, sub)
		}
	}
	out := make([]cloud.WriteResult, len(jobs))
	if len(jobs) == 0 {
		return out
	}
	memo := &throttleMemo{subs: map[string]error{}}
	workers := min(p.opts.WriteConcurrency, len(jobs))
	q := newWriteQueue(subs, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i, s, ok := q.take()
				if !ok {
					return
				}
				out[i] = p.writeStreamed(ctx, jobs[i].id, jobs[i].w, memo, stream)
				q.done(s)
			}
		}()
	}
	wg.Wait()
	return out
}

// writeQueue hands WriteTags' jobs to its workers: one FIFO queue per
// subscription, served in turn, each subscription holding at most its
// share of the workers.
type writeQueue struct {
	mu      sync.Mutex
	cond    *sync.Cond
	subs    []*subQueue // in order of first appearance
	next    int         // the subscription whose turn it is
	workers int
	live    int // subscriptions with jobs queued or running
	queued  int // jobs not yet taken
}

// subQueue is one subscription's jobs.
type subQueue struct {
	jobs   []int // indexes, in order
	active int   // jobs taken and not done
}

// newWriteQueue queues job i under subscription subs[i].
func newWriteQueue(subs []string, workers int) *writeQueue {
	q := &writeQueue{workers: workers, queued: len(subs)}
	q.cond = sync.NewCond(&q.mu)
	index := map[string]*subQueue{}
	for i, sub := range subs {
		s := index[sub]
		if s == nil {
			s = &subQueue{}
			index[sub] = s
			q.subs = append(q.subs, s)
		}
		s.jobs = append(s.jobs, i)
	}
	q.live = len(q.subs)
	return q
}

// share is how many workers one subscription may hold.
func (q *writeQueue) share() int {
	return max(1, (q.workers+q.live-1)/max(q.live, 1))
}

// take returns the next job and its subscription, waiting while every
// subscription with jobs queued holds its share of the workers; ok is
// false when no job is left.
func (q *writeQueue) take() (job int, s *subQueue, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.queued > 0 {
		share := q.share()
		for k := range len(q.subs) {
			n := (q.next + k) % len(q.subs)
			s := q.subs[n]
			if len(s.jobs) == 0 || s.active >= share {
				continue
			}
			job, s.jobs = s.jobs[0], s.jobs[1:]
			s.active++
			q.queued--
			q.next = (n + 1) % len(q.subs)
			return job, s, true
		}
		q.cond.Wait() // every subscription with jobs holds its share: one will finish a job
	}
	return 0, nil, false
}

// done ends a job of s.
func (q *writeQueue) done(s *subQueue) {
	q.mu.Lock()
	defer q.mu.Unlock()
	s.active--
	if s.active == 0 && len(s.jobs) == 0 {
		q.live--
	}
	q.cond.Broadcast()
}

// throttleMemo remembers, for one WriteTags, the subscriptions whose
// writes were throttled.
type throttleMemo struct {
	mu   sync.Mutex
	subs map[string]error // by lower-cased subscription: the first throttled error
}

// get returns the throttled error of sub, or nil.
func (m *throttleMemo) get(sub string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.subs[strings.ToLower(sub)]
}

// note remembers err for sub when it is a throttling of the whole
// subscription (a busy resource's own limit holds only that resource).
func (m *throttleMemo) note(sub string, err error) {
	if !subscriptionWide(err) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.subs[strings.ToLower(sub)]; !ok {
		m.subs[strings.ToLower(sub)] = err
	}
}

// writeStreamed writes one resource and reports its result to stream,
// unless stream stopped before it started.
func (p *Provider) writeStreamed(ctx context.Context, id string, w *cloud.TagWrite, memo *throttleMemo, stream *cloud.ResultStream) cloud.WriteResult {
	if err := stream.Stopped(); err != nil {
		return cloud.WriteResult{ID: id, Err: cloud.NotStarted(id, err)}
	}
	res := cloud.WriteResult{ID: id}
	res.Overridden, res.Err = p.writeTags(ctx, id, w, memo, stream)
	_ = stream.Done(res)
	return res
}

// writeTags applies w to one resource: Delete, then Merge, after
// reporting it pending to stream. It returns the names whose value the
// answer carried changed (see cloud.WriteResult.Overridden).
func (p *Provider) writeTags(ctx context.Context, id string, w *cloud.TagWrite, memo *throttleMemo, stream *cloud.ResultStream) (tags.Set, error) {
	ref, err := parseRef(id)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("azure: write tags on %s: %w", id, err)
	}
	if t := memo.get(ref.sub); t != nil {
		return nil, fmt.Errorf("azure: write tags on %s not sent: an earlier write to subscription %s in this batch was throttled: %w", id, ref.sub, t)
	}
	nc := p.Rules().NameCase()
	del, merge := tagsAPIWriteOps(nc, w)
	if len(del) == 0 && len(merge) == 0 {
		return nil, nil
	}
	c, err := p.clientsFor(ref.sub)
	if err != nil {
		return nil, err
	}
	if err := stream.Start(id); err != nil {
		return nil, cloud.NotStarted(id, err)
	}
	defer p.forget(ref)
	defer p.dropSharedRead(ref)
	result, err := p.deleteThenMerge(ctx, c, ref.id, del, merge)
	if err != nil {
		memo.note(ref.sub, err)
		return nil, err
	}
	return overridden(nc, merge, result), nil
}

// overridden returns the names of set that result carries with another
// value (or without), with result's value; nil when result is nil (the
// answer carried no tags) or agrees.
func overridden(nc tags.NameCase, set, result tags.Set) tags.Set {
	if result == nil {
		return nil
	}
	var out tags.Set
	for name, v := range set {
		if got, _ := result.Get(nc, name); got != v {
			if out == nil {
				out = tags.Set{}
			}
			out[name] = got
		}
	}
	return out
}

// tagsAPIWriteOps splits a TagWrite into the Tags API payloads: del holds the
// names of Patch.Delete that Patch.Set does not set in any spelling (as
// nc matches names), each with its value in Expect or "" (any value), one
// entry per name; merge is Patch.Set.
func tagsAPIWriteOps(nc tags.NameCase, w *cloud.TagWrite) (del, merge tags.Set) {
	del = tags.Set{}
	for _, name := range w.Patch.Delete {
		if w.Patch.Set.Has(nc, name) || del.Has(nc, name) {
			continue
		}
		v, _ := w.Expect.Get(nc, name)
		del[name] = v
	}
	return del, w.Patch.Set
}
