package nodetags

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/notify"
)

// pass is one sync pass over a NodeTagSync's nodes. Everything that belongs
// to one pass (its notifier, counters, outcome) lives here, never on the
// Reconciler, so passes of different NodeTagSyncs cannot mix.
type pass struct {
	r     *Reconciler
	nts   *v1alpha1.NodeTagSync
	cfg   syncConfig
	st    *syncState
	notes *notify.Notifier
	out   *outcome
	start time.Time
	// nextSteady are the steady marks this pass found (see steadyMark).
	nextSteady map[string]string
	// placed are the managed nodes this pass found, by canonical resource
	// ID, for the change index (changes.go).
	placed map[string][]string
	// placeNotes are the placement notes of the managed nodes that have one.
	placeNotes map[string]string
	// health is the event sources' health (nil: events off), reported in
	// the status; changesPending makes a full pass read fresh because
	// cloud changes are waiting for it.
	health         *cloudchange.Health
	changesPending bool
	// complete is set when the pass read the cloud and synced every node
	// it could.
	complete bool
	// targeted is set for a pass over the nodes of changed resources only
	// (targeted.go).
	targeted bool
}

func (r *Reconciler) newPass(nts *v1alpha1.NodeTagSync, cfg syncConfig, st *syncState) *pass {
	return &pass{r: r, nts: nts, cfg: cfg, st: st, notes: st.notes, out: &outcome{}, start: r.Now(),
		nextSteady: map[string]string{}, placed: map[string][]string{}, placeNotes: map[string]string{}}
}

// run is one full pass, as its stages: read the nodes and the cloud
// (read.go), sync them (plan, hold, write, report: sync), keep what the
// next passes need, report the pass and write the status (status.go), and
// schedule the next pass.
func (p *pass) run(ctx context.Context) (reconcile.Result, error) {
	sel, err := p.selectNodes(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	p.warnAboutSpec()
	snap, fresh, err := p.readCloud(ctx, sel.items)
	if err != nil {
		return p.readFailed(ctx, fresh, err)
	}
	p.sync(ctx, sel.items, snap)
	p.complete = len(snap.Failed) == 0
	p.reportFull(ctx, sel, fresh, snap.Failed)
	if err := p.writePassStatus(ctx, fresh, snap.Failed); err != nil {
		return reconcile.Result{}, err
	}
	return p.next()
}

// sync is the work of a pass, full or targeted, on its nodes and their
// cloud read, in stages: the planner places the nodes on their resources
// and decides every resource's plan (planPass, pure); what the pass must
// not write is held back across all of them (holdWrites: suspend,
// deletionPolicy Retain, a mass deletion); the applier makes the cloud
// writes, then copies the shared resources' synced tags to their members
// where the cloud needs it (planMemberWrites, writeMembers: an Auto
// Scaling group's instances), then the Node writes (writeAll, writeNodes);
// and the reporter,
// once every write is made, turns the settled plans into counts, events
// and metrics (report).
func (p *pass) sync(ctx context.Context, nodes []*cachedNode, snap cloud.Snapshot) {
	p.reportReadFailures(snap.Failed)
	pl := planPass(planInput{cfg: p.cfg, generation: p.nts.Generation, steady: p.st.steady, inFlight: p.r.writes.Replaced}, nodes, snap)
	h := holdWrites(p.cfg, pl.plans, approval(p.nts, p.heldBefore(), p.r.Now()))
	p.writeAll(ctx, pl.plans)
	p.writeMembers(ctx, planMemberWrites(p.cfg, pl, snap))
	p.writeNodes(ctx, pl.plans)
	p.report(ctx, pl, h)
}

// heldBefore is the mass deletion the last pass held (nil: none): the
// same set keeps its approval token.
func (p *pass) heldBefore() *v1alpha1.HeldDeletions {
	if p.st.held != nil {
		return p.st.held
	}
	return p.nts.Status.DeletionsHeld
}

// next schedules the next pass: after the cloud's Retry-After when it
// throttled us, with the workqueue's backoff after other errors (what
// succeeded is not redone), soon while our own writes are in flight or a
// new node's resource is not shown by the cloud yet, else at the next
// resync.
func (p *pass) next() (reconcile.Result, error) {
	o := p.out
	if wait, ok := cloud.RetryAfter(o.err()); ok {
		return reconcile.Result{RequeueAfter: max(wait, time.Second)}, nil
	}
	p.st.backoff.Reset()
	if o.errors > 0 {
		return reconcile.Result{}, fmt.Errorf("%d nodes could not be synced; first error: %s", o.errors, o.firstError)
	}
	if o.memberErrors > 0 {
		return reconcile.Result{}, fmt.Errorf("%d instances could not be given their group's tags; first error: %s", o.memberErrors, o.firstError)
	}
	if o.inFlight > 0 {
		// Our own writes have not reached the cache yet; their watch events
		// normally trigger the next pass, this is the safety net.
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	if o.notYet > 0 {
		// A new node's resource the cloud does not show yet: look again
		// soon, not at the next resync.
		return reconcile.Result{RequeueAfter: min(NotYetRequeue, p.r.nextPass(p.st, p.cfg.resync))}, nil
	}
	return reconcile.Result{RequeueAfter: p.r.nextPass(p.st, p.cfg.resync)}, nil
}

// NotYetRequeue is how soon a pass is retried while a node's resource is
// not shown by the cloud yet (cloud.Placement.NotYet).
const NotYetRequeue = 5 * time.Second

// readFailed ends a pass whose cloud read could not run at all: nothing was
// written, the status says why, and the pass is retried (after the cloud's
// Retry-After when it throttled us).
func (p *pass) readFailed(ctx context.Context, fresh bool, err error) (reconcile.Result, error) {
	passesTotal.WithLabelValues(p.nts.Name, fmt.Sprint(fresh), "error").Inc()
	p.notes.Once(p.nts, "read", ReasonCloudReadFailed, "reading the cloud failed, nothing was written: "+err.Error())
	p.notes.EndPass(false)
	if serr := p.r.writeStatus(ctx, p.nts, readFailedStatus(p.nts, err), p.st); serr != nil {
		log.FromContext(ctx).Error(serr, "writing status")
	}
	if wait, ok := cloud.RetryAfter(err); ok {
		return reconcile.Result{RequeueAfter: max(wait, time.Second)}, nil
	}
	if kit.NeedsPerson(err) {
		// Reported above; retried when the spec changes, or after the
		// resync interval doubling up to kit.MaxPersonBackoff.
		return reconcile.Result{RequeueAfter: p.st.backoff.Failed(fmt.Sprint(p.nts.Generation), p.cfg.resync)}, nil
	}
	return reconcile.Result{}, fmt.Errorf("reading the cloud: %w", err)
}
