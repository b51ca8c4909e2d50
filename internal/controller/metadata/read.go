package metadata

import (
	"context"
	"errors"
	"fmt"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/kit"
)

// The reader: a pass's read stage. A full pass reads every target
// (discovery by classifier tags, then a fresh read of what the search
// index may show late: fresh.go); a targeted pass reads only the changed
// resources its last discovery matched, or takes their tags from the
// change that named them. Either way the stage ends with targetWork: per
// target, its provider, request and resources, for the plan stage
// (plan.go).

// read is the read stage of a full pass: each target's resources read
// (readTarget), unless a reference is broken. It returns every target's
// outcome, and the work of those that got as far as a read.
func (p *pass) read(ctx context.Context, res resolved) ([]*outcome, []targetWork) {
	outcomes := make([]*outcome, 0, len(res.targets))
	var work []targetWork
	for _, t := range res.targets {
		if len(res.problems) > 0 {
			o := notReady(t, p.cm, res.problems)
			o.suspended = p.suspendedBy(t)
			outcomes = append(outcomes, o)
			continue
		}
		o, w, ok := p.readTarget(ctx, t)
		outcomes = append(outcomes, o)
		if ok {
			work = append(work, w)
		}
	}
	return outcomes, work
}

// readTarget reads one target: its provider, its request checked against
// the cloud's rules, the resources its classifiers find (discovered, then
// re-read where the search index may lag: freshen), and what it found told
// to the change index and the event subscriber. ok is false when it stopped
// before a read completed: then the outcome says why.
func (p *pass) readTarget(ctx context.Context, t *target) (o *outcome, w targetWork, ok bool) {
	o = &outcome{t: t, started: p.r.Now(), suspended: p.suspendedBy(t)}
	provider, err := p.r.providers.ClassifiedProvider(t.cloud)
	if err != nil {
		o.request = &condition{ReasonProviderNotConfigured,
			fmt.Sprintf("%v: start tagsync with the %s flags (docs/metadata.md) to apply %s objects", err, t.cloud, t.kind)}
		return o, w, false
	}
	req := t.request(p.cm)
	if err := req.Validate(provider.Rules()); err != nil {
		o.invalid = err
		return o, w, false
	}
	o.approved = true
	disc, err := provider.Discover(ctx, req.Classifiers, req.Discover)
	o.discoveryCalls = disc.Calls
	if err != nil {
		p.claimed[p.claimantOf(t)] = true // its last claim stands
		o.readFailed(err)
		return o, w, false
	}
	o.scopesFailed(disc.Failed)
	disc.Resources = p.freshen(ctx, t, provider, req, disc.Resources)
	p.r.index.saw(p.key(), t.key(), disc.Resources, len(disc.Failed) == 0)
	for _, r := range disc.Resources {
		p.r.subscriber.Saw(t.cloud, r.ID, r.Tags, o.started) // a change no event announced: events are silent
	}
	return o, targetWork{t: t, o: o, provider: provider, req: req, resources: disc.Resources, complete: len(disc.Failed) == 0}, true
}

// targetWork is one target as a pass read it, full or targeted: its
// provider, its request and the resources read.
type targetWork struct {
	t *target
	// o is the target's outcome in a full pass (nil in a targeted one).
	o         *outcome
	provider  cloud.ClassifiedProvider
	req       Request
	resources []cloud.Classified
	// complete says the discovery searched every scope (never in a
	// targeted pass): then the held-tags record forgets the resources
	// not found.
	complete bool
}

// readChanged reads each changed resource once, unless its latest change
// carried its tags (see usableCarried), and returns, per target, the ones its
// last discovery matched; errFullPass when a full pass costs fewer
// requests.
func (p *pass) readChanged(ctx context.Context, targets []*target, ids []string) ([]targetWork, error) {
	if n := p.readsNeeded(targets, ids); n > max(p.st.full.calls, alwaysTargetedReads) {
		targetedFallbacksTotal.WithLabelValues(p.cm.Namespace, p.cm.Name).Inc()
		p.log.V(1).Info("many changed resources: a full pass reads them for less", "reads", n, "fullPassCalls", p.st.full.calls)
		return nil, errFullPass
	}
	read := map[string]cloud.Classified{}
	var work []targetWork
	for _, t := range targets {
		mine := p.r.index.matchedBy(p.key(), t.key(), ids)
		if len(mine) == 0 {
			continue
		}
		provider, err := p.r.providers.ClassifiedProvider(t.cloud)
		if err != nil {
			return nil, errFullPass
		}
		w := targetWork{t: t, provider: provider, req: t.request(p.cm)}
		for _, found := range mine {
			c, done := read[cloud.CanonicalID(found.ID)]
			if !done {
				if c, err = p.readOne(ctx, provider, found); err != nil {
					return nil, err
				}
				read[cloud.CanonicalID(found.ID)] = c
			}
			if !cloud.Classifies(provider.Rules().NameCase(), c.Tags, w.req.Classifiers) {
				return nil, errFullPass // it left the object's scope
			}
			w.resources = append(w.resources, c)
		}
		work = append(work, w)
	}
	return work, nil
}

// readsNeeded is how many of the changed resources ids the targets' last
// discoveries matched and a targeted pass would read: those whose latest
// change carried no tags it may use.
func (p *pass) readsNeeded(targets []*target, ids []string) int {
	toRead := map[string]bool{}
	for _, t := range targets {
		for _, found := range p.r.index.matchedBy(p.key(), t.key(), ids) {
			if _, ok := p.usableCarried(found.ID); !ok {
				toRead[cloud.CanonicalID(found.ID)] = true
			}
		}
	}
	return len(toRead)
}

// readOne is a changed resource as its latest change carried it
// (usableCarried), or else as the cloud reads it now (or as another
// reader read it since the change was received: cloud.WithReadAfter);
// errFullPass when it cannot be read by ID (AWS).
func (p *pass) readOne(ctx context.Context, provider cloud.ClassifiedProvider, found cloud.Classified) (cloud.Classified, error) {
	if c, ok := p.usableCarried(found.ID); ok {
		found.Tags = c.Tags
		return found, nil
	}
	reader, ok := provider.(cloud.ClassifiedReader)
	if !ok {
		return cloud.Classified{}, errFullPass
	}
	if c, ok := p.carried[cloud.CanonicalID(found.ID)]; ok && !c.Received.IsZero() {
		// Another controller's read of the resource for the same change
		// (the node sync's, of a VM or scale set) serves this pass too.
		ctx = cloud.WithReadAfter(ctx, c.Received)
	}
	c, err := reader.ReadClassified(ctx, found.ID)
	if err != nil {
		return cloud.Classified{}, readErr(err)
	}
	return c, nil
}

// usableCarried is what the latest change of the resource id carried,
// when it is its whole tag set from a change made after the object's last
// full pass and last write (an older one may predate them).
func (p *pass) usableCarried(id string) (kit.Carried, bool) {
	c, ok := p.carried[cloud.CanonicalID(id)]
	return c, ok && (c.Usable(p.st.full.at) && c.Usable(p.st.wrote) || p.echoOfWrite(cloud.CanonicalID(id), c))
}

// readErr is a failed read's error: a resource that is gone needs a full
// pass (its held tags are forgotten there).
func readErr(err error) error {
	if errors.Is(err, cloud.ErrNotFound) {
		return errFullPass
	}
	return fmt.Errorf("reading a changed resource: %w", err)
}
