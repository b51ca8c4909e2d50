package operator

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/controller/infratags"
	"github.com/tagsync/tagsync/internal/controller/labelsync"
	"github.com/tagsync/tagsync/internal/controller/metadata"
	"github.com/tagsync/tagsync/internal/controller/nodetags"
	"github.com/tagsync/tagsync/internal/controller/workloadtags"
)

// Controller is one controller `tagsync run` can start: what it is called
// (the --controllers value), what it needs, and how to build it. Every entry
// is in Controllers; `tagsync run`, the playground and the benchmark all
// start controllers from there.
type Controller struct {
	// Name is the controller's name in --controllers, logs and metrics.
	Name string
	// RBAC are the cluster-wide rules it needs (config/rbac and the chart
	// grant them; a test checks the generated role covers them).
	RBAC []rbacv1.PolicyRule
	// Cache lists the objects it reads through the manager's cache and what
	// it can do without.
	Cache []CacheNeed
	// Setup builds the controller, registers it with the manager and
	// returns it (tests inspect it through Manager.Controllers).
	Setup func(mgr ctrl.Manager, deps Deps) (any, error)
}

// CacheNeed is an object type a controller reads through the manager's
// cache, and the transform it still works with. The manager's cache is one
// per type: a type is trimmed only when every enabled controller that reads
// it names the same Trim, so one controller's trimming never hides fields
// from another.
type CacheNeed struct {
	// Object is the type, e.g. &corev1.Node{}.
	Object client.Object
	// Trim names Transform; empty means the controller needs whole objects.
	Trim string
	// Transform drops what the controller never reads.
	Transform toolscache.TransformFunc
}

// Deps is what the controllers of one process share.
type Deps struct {
	// Providers are the configured clouds, one client set and throttle
	// budget each.
	Providers cloud.Providers
	// Audit receives the metadata controller's audit records (nil: none).
	Audit *audit.Log
	// InfraTags configure the OpenShift adapter.
	InfraTags infratags.Options
	// Events, when set, sends cloud changes to the node sync and metadata
	// controllers (nil: they poll only).
	Events *cloudchange.Hub
	// Recorder, when set, gives the event recorder of the named controller
	// (tests wrap the real one to count what is emitted); nil lets each
	// controller make its own.
	Recorder func(controller string) events.EventRecorder
}

// recorderFor is d.Recorder's answer for the controller, or nil.
func (d Deps) recorderFor(controller string) events.EventRecorder {
	if d.Recorder == nil {
		return nil
	}
	return d.Recorder(controller)
}

// Controllers is the registry, in start order.
func Controllers() []Controller {
	return []Controller{{
		Name: nodetags.ControllerName,
		RBAC: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list", "watch", "patch"}},
			{APIGroups: []string{"tagsync.io"}, Resources: []string{"nodetagsyncs"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"tagsync.io"}, Resources: []string{"nodetagsyncs/status"}, Verbs: []string{"patch"}},
		},
		Cache: []CacheNeed{{Object: &corev1.Node{}, Trim: "nodetags.TrimNode", Transform: nodetags.TrimNode}},
		Setup: func(mgr ctrl.Manager, d Deps) (any, error) {
			return setupWithEvents(mgr, d, nodetags.NewReconciler(nil, d.Providers, d.recorderFor(nodetags.ControllerName), d.Audit, nil))
		},
	}, {
		Name: metadata.ControllerName,
		RBAC: []rbacv1.PolicyRule{
			{APIGroups: []string{"tagsync.io"}, Resources: []string{"cloudmetadata", "azuremetadata", "awsmetadata"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"tagsync.io"}, Resources: []string{"cloudmetadata/status", "azuremetadata/status", "awsmetadata/status"}, Verbs: []string{"patch"}},
			{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		},
		Setup: func(mgr ctrl.Manager, d Deps) (any, error) {
			return setupWithEvents(mgr, d, metadata.NewReconciler(nil, d.Providers, d.recorderFor(metadata.ControllerName), d.Audit, nil))
		},
	}, {
		Name: infratags.ControllerName,
		RBAC: []rbacv1.PolicyRule{
			{APIGroups: []string{"config.openshift.io"}, Resources: []string{"infrastructures"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"config.openshift.io"}, Resources: []string{"infrastructures/status"}, Verbs: []string{"patch"}},
			{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get"},
				ResourceNames: []string{infratags.InfrastructureCRD}},
			{APIGroups: []string{"tagsync.io"}, Resources: []string{"cloudmetadata", "azuremetadata", "awsmetadata"}, Verbs: []string{"list", "watch", "create", "update"}},
			{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		},
		Setup: func(mgr ctrl.Manager, d Deps) (any, error) {
			r := infratags.NewReconciler(nil, d.recorderFor(infratags.ControllerName), d.InfraTags)
			return r, r.SetupWithManager(mgr)
		},
	}, {
		Name: labelsync.ControllerName,
		RBAC: []rbacv1.PolicyRule{
			{APIGroups: []string{"tagsync.io"}, Resources: []string{"labelsyncprofiles"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"tagsync.io"}, Resources: []string{"labelsyncprofiles/status"}, Verbs: []string{"patch"}},
			{APIGroups: []string{"metal3.io"}, Resources: []string{"baremetalhosts"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"infrastructure.cluster.x-k8s.io"}, Resources: []string{"metal3machines", "metal3clusters"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"cluster.x-k8s.io"}, Resources: []string{"clusters", "machines"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}},
			{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		},
		Setup: func(mgr ctrl.Manager, d Deps) (any, error) {
			r := labelsync.NewReconciler(nil, d.recorderFor(labelsync.ControllerName), nil, nil)
			return r, r.SetupWithManager(mgr)
		},
	}, {
		Name: workloadtags.ControllerName,
		RBAC: []rbacv1.PolicyRule{
			{APIGroups: []string{"tagsync.io"}, Resources: []string{"workloadtagpolicies"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"tagsync.io"}, Resources: []string{"workloadtagpolicies/status"}, Verbs: []string{"patch"}},
			{APIGroups: []string{""}, Resources: []string{"namespaces", "persistentvolumes", "persistentvolumeclaims", "services"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		},
		Cache: []CacheNeed{
			{Object: &corev1.PersistentVolume{}, Trim: "workloadtags.TrimVolume", Transform: workloadtags.TrimVolume},
			{Object: &corev1.PersistentVolumeClaim{}, Trim: "workloadtags.TrimClaim", Transform: workloadtags.TrimClaim},
		},
		Setup: func(mgr ctrl.Manager, d Deps) (any, error) {
			return setupWithEvents(mgr, d, workloadtags.NewReconciler(nil, d.Providers, d.recorderFor(workloadtags.ControllerName), d.Audit, nil))
		},
	}}
}

// eventsReconciler is a controller that takes cloud changes from the hub.
type eventsReconciler interface {
	UseEvents(hub *cloudchange.Hub)
	SetupWithManager(mgr ctrl.Manager) error
}

// setupWithEvents gives r the hub's changes when events are on, and
// registers it with mgr.
func setupWithEvents(mgr ctrl.Manager, d Deps, r eventsReconciler) (any, error) {
	if d.Events != nil {
		r.UseEvents(d.Events)
	}
	return r, r.SetupWithManager(mgr)
}

// ControllerNames lists the registry's names.
func ControllerNames() []string {
	var names []string
	for _, c := range Controllers() {
		names = append(names, c.Name)
	}
	return names
}

// Select returns the registry entries named (in registry order); "all" or
// no name selects every entry. An unknown name is an error that lists the
// known ones.
func Select(names []string) ([]Controller, error) {
	all := Controllers()
	if len(names) == 0 || slices.Equal(names, []string{"all"}) {
		return all, nil
	}
	var out []Controller
	for _, c := range all {
		if slices.Contains(names, c.Name) {
			out = append(out, c)
		}
	}
	for _, n := range names {
		if !slices.ContainsFunc(all, func(c Controller) bool { return c.Name == n }) {
			return nil, fmt.Errorf("--controllers: unknown controller %q (known: all, %s)", n, strings.Join(ControllerNames(), ", "))
		}
	}
	return out, nil
}

// CacheOptions merges the cache needs of the selected controllers: every
// object loses its managedFields; a type is trimmed only when all its
// readers agree on the trim.
func CacheOptions(cs []Controller) cache.Options {
	type merged struct {
		obj   client.Object
		trim  string
		fn    toolscache.TransformFunc
		whole bool
	}
	byType := map[reflect.Type]*merged{}
	var order []reflect.Type
	for _, c := range cs {
		for _, n := range c.Cache {
			t := reflect.TypeOf(n.Object)
			m, ok := byType[t]
			if !ok {
				m = &merged{obj: n.Object, trim: n.Trim, fn: n.Transform}
				byType[t] = m
				order = append(order, t)
			}
			if n.Trim == "" || n.Trim != m.trim {
				m.whole = true
			}
		}
	}
	opts := cache.Options{DefaultTransform: cache.TransformStripManagedFields(), ByObject: map[client.Object]cache.ByObject{}}
	for _, t := range order {
		if m := byType[t]; !m.whole {
			opts.ByObject[m.obj] = cache.ByObject{Transform: m.fn}
		}
	}
	return opts
}
