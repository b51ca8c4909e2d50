// Package metadata is the metadata controller: it keeps the tags an
// AzureMetadata or AWSMetadata asks for on every cloud resource that carries
// one of a CloudMetadata's classifier tags (docs/metadata.md), and reverts
// outside edits of the tags an object holds there.
//
// A pass over a CloudMetadata reads its references and discovers the
// classified resources in bulk, plans each resource with the pure planner
// (tags.Lifecycle, through Request: `tagsync plan` shows the same plans),
// holds back what the safety controls keep (spec.suspend, deletionPolicy
// Retain, the mass-deletion guard with its approval annotation), writes the
// rest with the resources that need the same change grouped into shared
// cloud requests and every mutation audited, and reports the pass in
// metrics, events and one status patch per object that changed. Nothing is
// written when nothing changed, and nothing at all by an object whose
// references or tags are invalid. A cloud change of a resource a pass
// matched runs a targeted pass over the changed resources alone, planned
// and written as a full pass would.
package metadata

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/notify"
)

// ControllerName names the controller in --controllers, logs, metrics and
// events.
const ControllerName = "metadata"

// Reconciler applies the requests of CloudMetadata objects. Build it with
// NewReconciler.
type Reconciler struct {
	kit.Base
	providers cloud.Providers
	audit     *audit.Log

	once   sync.Once
	states *kit.States[types.NamespacedName, *state] // by CloudMetadata
	claims *claimBook
	// wakeContests enqueues CloudMetadata objects whose contests changed,
	// without blocking the pass that changed them (kit.Wake).
	wakeContests kit.Wake
	// changeEvents turns cloud changes into passes (changes.go).
	changeEvents
}

// state is what the controller remembers about one CloudMetadata between
// passes; it is dropped when the CloudMetadata is deleted.
type state struct {
	notes *notify.Notifier
	// held are, per target (kind/name), the tags each resource was seen
	// or made to carry with the requested value: under opcode add these are
	// the object's own there, so an outside edit of one is reverted.
	held map[string]*heldTags
	// backoff spaces passes that meet errors only a person can fix.
	backoff kit.Backoff
	// full is what the last full pass served (targeted.go); wrote is
	// when a pass last wrote tags.
	full  fullPass
	wrote time.Time
}

// NewReconciler builds a Reconciler. c reads and writes the metadata objects
// (nil: the manager's client); providers are the configured clouds; recorder
// emits events (nil: the controller's own, made at SetupWithManager); log
// receives an audit record per cloud mutation (nil: none); clk is the clock
// (nil: the real one).
func NewReconciler(c client.Client, providers cloud.Providers, recorder events.EventRecorder, log *audit.Log, clk clock.PassiveClock) *Reconciler {
	if log == nil {
		log = audit.Discard()
	}
	return &Reconciler{Base: kit.NewBase(c, recorder, clk), providers: providers, audit: log}
}

// The controller reads through its cache and writes status with patches;
// events go to the namespace of the object concerned.
// +kubebuilder:rbac:groups=tagsync.io,resources=cloudmetadata;azuremetadata;awsmetadata,verbs=list;watch
// +kubebuilder:rbac:groups=tagsync.io,resources=cloudmetadata/status;azuremetadata/status;awsmetadata/status,verbs=patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile runs one pass for a CloudMetadata; when it ends, the cloud
// changes routed to the object before it started are done.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.init()
	return r.subscriber.Serve(ctx, req.String(), func(ctx context.Context) (reconcile.Result, error) { return r.reconcile(ctx, req) })
}

// reconcile is one pass.
func (r *Reconciler) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var cm v1alpha1.CloudMetadata
	if err := r.Client.Get(ctx, req.NamespacedName, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(ctx, req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	st := r.states.For(req.NamespacedName, cm.UID)
	p := r.newPass(&cm, st)
	p.changed, p.carried, p.fullNeeded = r.index.take(req.NamespacedName)
	return p.run(ctx)
}

func (r *Reconciler) init() {
	r.once.Do(func() {
		r.states = kit.NewStates[types.NamespacedName](r.Recorder, "Sync", func(n *notify.Notifier) *state {
			return &state{notes: n, held: map[string]*heldTags{}}
		})
		r.claims = newClaimBook()
		r.index = newResourceIndex()
	})
}

// forget drops a deleted CloudMetadata's state, metrics and claims, and
// passes its rivals again at once.
func (r *Reconciler) forget(ctx context.Context, key types.NamespacedName) {
	r.states.Forget(key)
	r.index.forget(key)
	forgetMetrics(key)
	r.wakeUp(ctx, r.claims.withdraw(func(c claimant) bool { return c.cm == key }))
}
