package labelsync

import (
	"context"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	crsource "sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

const (
	// firstCRDPoll and maxCRDPoll space the looks for missing CRDs: 1s,
	// 2s, 4s, ... after the start (CRDs installed together with tagsync
	// are found at once), then every 30s.
	firstCRDPoll = time.Second
	maxCRDPoll   = 30 * time.Second
)

// neededResource is a kind label sync reads and its resource name.
type neededResource struct {
	gvk      schema.GroupVersionKind
	resource string
}

// neededResources are the Metal3 and Cluster API kinds label sync needs.
var neededResources = []neededResource{
	{HostGVK, "baremetalhosts"},
	{Metal3MachineGVK, "metal3machines"},
	{Metal3ClusterGVK, "metal3clusters"},
	{clusterv1.GroupVersion.WithKind("Machine"), "machines"},
	{clusterv1.GroupVersion.WithKind("Cluster"), "clusters"},
}

// missingKinds asks the API server's discovery (never a cache) which of
// the Metal3 and Cluster API kinds it does not serve, and names them; ""
// when all are there.
func missingKinds(dc discovery.DiscoveryInterface) string {
	served := map[string]map[string]bool{}
	var missing []string
	for _, n := range neededResources {
		gv := n.gvk.GroupVersion().String()
		if _, ok := served[gv]; !ok {
			served[gv] = map[string]bool{}
			if list, err := dc.ServerResourcesForGroupVersion(gv); err == nil {
				for _, res := range list.APIResources {
					served[gv][res.Name] = true
				}
			}
		}
		if !served[gv][n.resource] {
			missing = append(missing, n.gvk.Kind+" ("+gv+")")
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return "this cluster does not serve " + strings.Join(missing, ", ") + ": label sync needs Metal3 (baremetal-operator, CAPM3) and Cluster API"
}

// awaitCRDs looks for the missing CRDs (firstCRDPoll, doubling up to
// maxCRDPoll) until they are served, then starts label sync: the watches,
// clustercache, and a pass for every profile (they said CRDsMissing).
func (r *Reconciler) awaitCRDs(ctx context.Context, mgr manager.Manager, ctl controller.Controller, dc discovery.DiscoveryInterface) error {
	t := time.NewTimer(firstCRDPoll)
	defer t.Stop()
	for wait := firstCRDPoll; ; wait = min(2*wait, maxCRDPoll) {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		missing := missingKinds(dc)
		if missing == "" {
			break
		}
		r.setMissing(missing)
		t.Reset(wait)
	}
	mgr.GetLogger().WithName(ControllerName).Info("the Metal3 and Cluster API CRDs are served now: label sync starts")
	if err := r.watchAll(mgr, ctl); err != nil {
		return err
	}
	r.setMissing("")
	return ctl.Watch(crsource.Kind(mgr.GetCache(), client.Object(&v1alpha1.LabelSyncProfile{}), &handler.EnqueueRequestForObject{}, onlyExisting()))
}

// onlyExisting lets through creation events only: a new watch delivers one
// for every object that exists, so each profile gets a pass.
func onlyExisting() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// setMissing records which CRDs are missing ("" once all are served).
func (r *Reconciler) setMissing(missing string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.missing = missing
}

// crdsMissing says which CRDs are missing, "" when none.
func (r *Reconciler) crdsMissing() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.missing
}
