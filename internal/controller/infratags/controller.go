// Package infratags is the OpenShift adapter (docs/openshift.md): it reads
// the user tags of the cluster's Infrastructure (config.openshift.io/v1,
// named cluster) and drives the metadata engine with them — a CloudMetadata
// classifying every resource that carries the cluster's owned tag (plus,
// on Azure, the resources of the cluster's resource group named after the
// cluster, for clusters installed before their resources were tagged), and
// an AzureMetadata / AWSMetadata with opcode update. The engine applies,
// reverts outside edits and reports; the adapter validates the tags the
// way the OpenShift installer does (an invalid set applies nothing), and
// reports the engine's outcome back as events on the Infrastructure and,
// when the installed CRD has the proposal's status schema, as {name, error}
// entries in status.platformStatus.azure.resourceTags.
//
// Both Infrastructure schemas are served: the proposal's, where the desired
// tags are spec.platformSpec.<cloud>.resourceTags (editable on Day 2), and
// OpenShift's as shipped, where they are status.platformStatus.<cloud>.
// resourceTags (set by the installer, immutable). The controller starts
// only when the Infrastructure CRD exists, and picks it up if it appears
// later.
package infratags

import (
	"context"
	"errors"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/tagsync/tagsync/internal/controller/kit"
	"github.com/tagsync/tagsync/internal/notify"
)

// ControllerName names the controller in --controllers, logs, metrics and
// events.
const ControllerName = "infratags"

// Options configure the adapter (`tagsync run --openshift-*` flags).
type Options struct {
	// Namespace holds the engine objects the adapter writes (default
	// DefaultNamespace).
	Namespace string
	// AzureOwnedTag and AWSOwnedTag name the cluster's owned tag, with
	// {infraID} for status.infrastructureName (defaults DefaultAzureOwnedTag,
	// DefaultAWSOwnedTag).
	AzureOwnedTag, AWSOwnedTag string
	// SyncEvery is the engine's resync interval (default 10m).
	SyncEvery time.Duration
	// CRDPollInterval is how often the adapter looks for the
	// Infrastructure CRD while it is absent (default 30s).
	CRDPollInterval time.Duration
}

// Defaults of Options.
const (
	DefaultNamespace     = "tagsync-system"
	DefaultAzureOwnedTag = "kubernetes.io_cluster.{infraID}"
	DefaultAWSOwnedTag   = "kubernetes.io/cluster/{infraID}"
)

func (o Options) withDefaults() Options {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.AzureOwnedTag == "" {
		o.AzureOwnedTag = DefaultAzureOwnedTag
	}
	if o.AWSOwnedTag == "" {
		o.AWSOwnedTag = DefaultAWSOwnedTag
	}
	if o.SyncEvery <= 0 {
		o.SyncEvery = 10 * time.Minute
	}
	if o.CRDPollInterval <= 0 {
		o.CRDPollInterval = 30 * time.Second
	}
	return o
}

// Reconciler keeps the engine objects in line with the Infrastructure.
// Build it with NewReconciler.
type Reconciler struct {
	kit.Base
	opts Options

	once  sync.Once
	notes *notify.Notifier
	// seedShape caches whether the installed CRD has the proposal's status
	// schema (nil: not checked yet).
	mu        sync.Mutex
	seedShape *bool
}

// NewReconciler builds a Reconciler; nil c and recorder are filled in at
// SetupWithManager.
func NewReconciler(c client.Client, recorder events.EventRecorder, opts Options) *Reconciler {
	return &Reconciler{Base: kit.NewBase(c, recorder, nil), opts: opts.withDefaults()}
}

// The adapter reads the Infrastructure and its CRD, writes the engine's
// objects in its namespace and, for the proposal's schema, the
// Infrastructure's status.
// +kubebuilder:rbac:groups=config.openshift.io,resources=infrastructures,verbs=get;list;watch
// +kubebuilder:rbac:groups=config.openshift.io,resources=infrastructures/status,verbs=patch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get
// +kubebuilder:rbac:groups=tagsync.io,resources=cloudmetadata;azuremetadata;awsmetadata,verbs=list;watch;create;update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings the engine objects in line with the Infrastructure and
// reports the engine's outcome on it.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.init()
	infra := &unstructured.Unstructured{}
	infra.SetGroupVersionKind(InfrastructureGVK)
	if err := r.Client.Get(ctx, req.NamespacedName, infra); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	in, err := readInfrastructure(infra)
	if err != nil {
		r.notes.Once(infra, "read/"+err.Error(), ReasonInvalidInfrastructure, err.Error())
		return reconcile.Result{}, nil
	}
	applied, writeErr := r.applyClouds(ctx, infra, in)
	if err := r.report(ctx, infra, applied); err != nil {
		return reconcile.Result{}, errors.Join(writeErr, err)
	}
	// A failed write keeps the pass open: its retries do not repeat the
	// events already sent.
	r.notes.EndPass(writeErr == nil)
	return reconcile.Result{}, writeErr
}

func (r *Reconciler) init() {
	r.once.Do(func() { r.notes = notify.NewNotifier(r.Recorder, "Apply") })
}
