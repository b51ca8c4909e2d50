package workloadtags

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/notify"
)

// ControllerName names the controller in --controllers, logs, metrics and
// events.
const ControllerName = "workloadtags"

// Reconciler applies WorkloadTagPolicy objects. Build it with
// NewReconciler.
type Reconciler struct {
	kit.Base
	providers cloud.Providers
	audit     *audit.Log

	once   sync.Once
	states *kit.States[string, *state]
	// changeEvents turns cloud changes into passes (changes.go).
	changeEvents
}

// state is what the controller remembers about one policy between passes.
type state struct {
	notes *notify.Notifier
	// backoff spaces passes that meet errors only a person can fix.
	backoff kit.Backoff
	// pendingSince is when each resource (canonical ID) was first found
	// missing: it is looked for again soon until pendingPatience has
	// passed, then at the policy's interval.
	pendingSince map[string]time.Time
	// written are the pass's recent writes, per resource (canonical ID):
	// the search index may show a resource as it was before them
	// (read.go, freshen).
	written map[string]written
	// writes are when the passes wrote each key on each resource, within
	// kit.RecentWindow (fights.go), those written more than once kept in
	// the status (loaded: read from it once); acked is the last
	// acknowledge-fights annotation seen.
	writes kit.Restores
	loaded bool
	acked  string
	// writers are who last changed the resources, where the changes
	// said (a stopped fight names them).
	writers kit.Writers
	// overridden are the keys whose write came back with another value
	// (fights.go).
	overridden kit.Overridden
}

// Waits while a created resource does not show in the cloud yet.
const (
	// pendingRetry is the wait before looking again.
	pendingRetry = 5 * time.Second
	// pendingPatience is how long a missing resource is looked for every
	// pendingRetry before the policy's interval takes over.
	pendingPatience = 5 * time.Minute
)

// NewReconciler builds a Reconciler. c reads the cluster and writes the
// policies' status (nil: the manager's client); providers are the
// configured clouds; recorder emits events (nil: the controller's own,
// made at SetupWithManager); log receives an audit record per cloud
// mutation (nil: none); clk is the clock (nil: the real one).
func NewReconciler(c client.Client, providers cloud.Providers, recorder events.EventRecorder, log *audit.Log, clk clock.PassiveClock) *Reconciler {
	if log == nil {
		log = audit.Discard()
	}
	return &Reconciler{Base: kit.NewBase(c, recorder, clk), providers: providers, audit: log}
}

// The controller reads policies, namespaces, claims and volumes through
// its cache and writes status with patches.
// +kubebuilder:rbac:groups=tagsync.io,resources=workloadtagpolicies,verbs=list;watch
// +kubebuilder:rbac:groups=tagsync.io,resources=workloadtagpolicies/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=namespaces;persistentvolumes;persistentvolumeclaims;services,verbs=list;watch
// +kubebuilder:rbac:groups=snapshot.storage.k8s.io,resources=volumesnapshotcontents;volumesnapshots,verbs=list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses;ingressclasses,verbs=list;watch
// +kubebuilder:rbac:groups=elbv2.k8s.aws,resources=ingressclassparams,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile runs one pass for a policy; when it ends, the cloud changes
// routed to the policy before it started are done.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.init()
	return r.subscriber.Serve(ctx, req.Name, func(ctx context.Context) (reconcile.Result, error) { return r.reconcile(ctx, req) })
}

// reconcile is one pass.
func (r *Reconciler) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var obj v1alpha1.WorkloadTagPolicy
	if err := r.Client.Get(ctx, req.NamespacedName, &obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.states.Forget(req.Name)
			r.forgetRead(req.Name)
			forgetMetrics(req.Name)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	p := &pass{r: r, reader: r.Client, obj: &obj, before: obj.DeepCopy(), st: r.states.For(req.Name, obj.UID), started: r.Now()}
	var carried map[string]kit.Carried
	p.changed, carried, _ = r.index.Pending.TakeCarried(req.Name)
	p.st.writers.Note(carried)
	p.loadWrites()
	return p.run(ctx)
}

func (r *Reconciler) init() {
	r.once.Do(func() {
		r.index.Name = func(name string) string { return name }
		r.states = kit.NewStates[string](r.Events(), "Tag", func(n *notify.Notifier) *state {
			return &state{notes: n, pendingSince: map[string]time.Time{}, written: map[string]written{}}
		})
	})
}

// pass is one reconcile of a policy.
type pass struct {
	r *Reconciler
	// reader reads the cluster (the manager's cache; tagsync plan's
	// client).
	reader  client.Reader
	obj     *v1alpha1.WorkloadTagPolicy
	before  *v1alpha1.WorkloadTagPolicy
	st      *state
	started time.Time
	cfg     config
	// provider is the policy's cloud; services the same when the policy
	// tags Services' resources.
	provider cloud.WorkloadProvider
	services cloud.ServiceFinder
	// ingresses finds Ingresses' load balancers (nil: not asked for).
	ingresses cloud.IngressFinder
	// gatewayIngresses: Ingresses were asked for on Azure, where the
	// Application Gateway Ingress Controller's are reported as shared.
	gatewayIngresses bool
	// changed are the resources cloud changes named since the last pass:
	// read fresh.
	changed []string
	// every is the polling interval (the events resync interval while the
	// event sources are up), health their health (nil: events off).
	every  time.Duration
	health *cloudchange.Health
}

// run is one pass, in stages: the spec checked (config), the workloads
// and their resources' tags read (read), what each lacks decided (plan),
// written (write), and the outcome reported in status, events and
// metrics, with when to run again (report).
func (p *pass) run(ctx context.Context) (reconcile.Result, error) {
	if err := p.configure(); err != nil {
		return p.refused(ctx, err)
	}
	rd, err := p.read(ctx)
	if err != nil {
		return p.failed(ctx, err)
	}
	plans := plan(p.cfg, rd.rivals, rd.workloads, rd.cloud)
	fights := p.stopFights(plans)
	results := p.write(ctx, plans)
	if !p.cfg.suspend {
		p.recordWrites(plans, results, p.r.Now())
	}
	return p.report(ctx, plans, rd, results, fights)
}

// configure finds the policy's cloud and checks its spec.
func (p *pass) configure() error {
	name := string(p.obj.Spec.Provider)
	if name == "" {
		name = string(v1alpha1.ProviderAzure)
	}
	wp, err := p.r.providers.WorkloadProvider(name)
	if err != nil {
		return &providerError{err}
	}
	p.provider = wp
	p.cfg, err = newConfig(p.obj, wp.Rules(), wp.CreatorKeys())
	if err != nil {
		return err
	}
	p.every, p.health = p.r.subscriber.Interval(p.cfg.every)
	if p.cfg.services {
		f, ok := wp.(cloud.ServiceFinder)
		if !ok {
			return fmt.Errorf("%w: resources: Service: tagsync does not tag the resources of Services on %s yet", errInvalidSpec, name)
		}
		p.services = f
	}
	if p.cfg.ingresses {
		f, ok := wp.(cloud.IngressFinder)
		switch {
		case ok:
			p.ingresses = f
		case p.cfg.provider == string(v1alpha1.ProviderAzure):
			p.gatewayIngresses = true
		default:
			return fmt.Errorf("%w: resources: Ingress: tagsync finds the Application Load Balancers of the AWS Load Balancer Controller and the Application Gateway of Azure's ingress controller only, not Ingresses on %s", errInvalidSpec, name)
		}
	}
	return nil
}

// providerError: the policy's cloud is not configured or cannot tag
// workloads' resources.
type providerError struct{ err error }

func (e *providerError) Error() string { return e.err.Error() }
func (e *providerError) Unwrap() error { return e.err }
