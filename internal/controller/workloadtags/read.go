package workloadtags

import (
	"context"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// workload is one cloud resource a selected workload causes, and what the
// templates may read about the workload.
type workload struct {
	// source names what names the resource ("PersistentVolume pv-1",
	// "Service shop/web").
	source string
	ref
	w tags.Workload
}

// reading is what the read stage found: the selected workloads' resources
// (one workload per resource), the other policies of the cloud, and the
// resources' tags.
type reading struct {
	workloads []workload
	rivals    []config
	cloud     cloud.Reading
}

// read lists the selected workloads and the other valid policies of the
// cloud from the cache, finds the Services' resources with their tags in
// one search, then reads the tags of every disk in one bulk read (nothing
// is read when there is none).
func (p *pass) read(ctx context.Context) (reading, error) {
	var rd reading
	nss, err := p.namespaces(ctx)
	if err != nil {
		return rd, err
	}
	ws, err := p.workloads(ctx, nss)
	if err != nil {
		return rd, err
	}
	svcs, found, err := p.serviceWorkloads(ctx, nss)
	if err != nil {
		return rd, err
	}
	ings, ingFound, err := p.ingressWorkloads(ctx, nss)
	if err != nil {
		return rd, err
	}
	snaps, unserved, err := p.snapshotWorkloads(ctx, nss)
	if err != nil {
		return rd, err
	}
	ws = append(ws, snaps...)
	rd.workloads = append(append(ws, svcs...), ings...)
	if rd.rivals, err = p.rivals(ctx); err != nil {
		return rd, err
	}
	// The disks and snapshots are read in bulk; the Services' and
	// Ingresses' load balancers were read by their searches, and only those a change named are read
	// again, fresh.
	fresh := idSet(p.changed)
	var ids []string
	for _, w := range ws {
		if w.id != "" {
			ids = append(ids, w.id)
		}
	}
	var searched []cloud.Classified
	for _, search := range []cloud.ServiceResources{found, ingFound} {
		for _, list := range search.Own {
			for _, c := range list {
				if fresh[cloud.CanonicalID(c.ID)] {
					ids = append(ids, c.ID)
				} else {
					searched = append(searched, c)
				}
			}
		}
	}
	if len(ids) > 0 {
		if rd.cloud, err = p.provider.ReadTags(ctx, ids, p.changed); err != nil {
			return rd, err
		}
	}
	rd.cloud.Resources = append(rd.cloud.Resources, searched...)
	rd.cloud.Failed = slices.Concat(rd.cloud.Failed, found.Failed, ingFound.Failed, unserved)
	rd.cloud.Calls += found.Calls + ingFound.Calls
	readCallsTotal.WithLabelValues(p.cfg.provider).Add(float64(rd.cloud.Calls))
	p.r.indexRead(p.obj.Name, rd.cloud.Resources)
	p.freshen(rd.cloud.Resources, p.changed)
	return rd, nil
}

// searchLag is how long after a write a bulk read may still show a
// resource as it was before it: Resource Graph's index lags the writes
// (95% of changes within 30 s, no upper bound).
const searchLag = 2 * time.Minute

// written is one resource's last write: the values its keys had before
// (absent: the key was absent) and the values written.
type written struct {
	before, after tags.Set
	at            time.Time
}

// freshen takes the pass's own recent writes as done where the read still
// shows a key as it was before the write (the search index lags): a key
// that shows a third value was edited by someone else, and is planned from
// what the read shows, as is every resource read fresh (changed). Writes
// older than searchLag are forgotten.
func (p *pass) freshen(found []cloud.Classified, changed []string) {
	now := p.r.Now()
	for key, w := range p.st.written {
		if now.Sub(w.at) > searchLag {
			delete(p.st.written, key)
		}
	}
	fresh := idSet(changed)
	for i := range found {
		key := cloud.CanonicalID(found[i].ID)
		w, ok := p.st.written[key]
		if fresh[key] {
			// Read past the index: what it shows is the truth, and later
			// bulk reads need not be second-guessed for this write.
			delete(p.st.written, key)
			continue
		}
		if !ok {
			continue
		}
		nc := found[i].Rules.NameCase()
		var t tags.Set
		for k, v := range w.after {
			shown, has := found[i].Tags.Get(nc, k)
			old, had := w.before.Get(nc, k)
			if has == had && shown == old {
				if t == nil {
					t = found[i].Tags.Clone()
				}
				t.Put(nc, k, v)
			}
		}
		if t != nil {
			found[i].Tags = t
		}
	}
}

// The lists below read the cache's own objects (UnsafeDisableDeepCopy):
// a pass only reads them, and copying every volume, claim, namespace and
// Service on each pass would cost more than the pass.

// workloads are the resources of the workloads the policy selects: every
// bound PersistentVolume of its cloud whose claim's namespace it selects,
// one per resource ID (the first volume by name when several name one),
// sorted by PersistentVolume.
func (p *pass) workloads(ctx context.Context, byName map[string]*corev1.Namespace) ([]workload, error) {
	if !p.cfg.volumes {
		return nil, nil
	}
	var pvs corev1.PersistentVolumeList
	if err := p.reader.List(ctx, &pvs, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	claims, err := p.claims(ctx)
	if err != nil {
		return nil, err
	}
	sort.Slice(pvs.Items, func(i, j int) bool { return pvs.Items[i].Name < pvs.Items[j].Name })
	seen := map[string]bool{}
	var out []workload
	for i := range pvs.Items {
		pv := &pvs.Items[i]
		ref := pv.Spec.ClaimRef
		if ref == nil || pv.DeletionTimestamp != nil {
			continue
		}
		vol, ok := volumeOf(pv, v1alpha1.Provider(p.cfg.provider))
		ns := byName[ref.Namespace]
		if !ok || ns == nil {
			continue
		}
		w := workload{source: "PersistentVolume " + pv.Name, ref: vol, w: claimWorkload(ref.Namespace, ref.Name, ns, claims)}
		if !p.cfg.selects(w.w) {
			continue
		}
		if key := cloud.CanonicalID(vol.id); vol.id != "" {
			if seen[key] {
				continue
			}
			seen[key] = true
		}
		out = append(out, w)
	}
	return out, nil
}

// namespaces are the cluster's namespaces by name.
func (p *pass) namespaces(ctx context.Context) (map[string]*corev1.Namespace, error) {
	var nss corev1.NamespaceList
	if err := p.reader.List(ctx, &nss, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	byName := make(map[string]*corev1.Namespace, len(nss.Items))
	for i := range nss.Items {
		byName[nss.Items[i].Name] = &nss.Items[i]
	}
	return byName, nil
}

// serviceWorkloads are the resources of the Services of type LoadBalancer
// in the selected namespaces, found by the cloud (cloud.ServiceFinder) in
// one search: each of a Service's own resources, one shared entry per
// resource it shares, and a pending entry for a Service none was found for
// yet (unless the search failed somewhere: then it is unknown). searched
// says what the search cost and could not read.
func (p *pass) serviceWorkloads(ctx context.Context, nss map[string]*corev1.Namespace) ([]workload, cloud.ServiceResources, error) {
	if p.services == nil {
		return nil, cloud.ServiceResources{}, nil
	}
	var list corev1.ServiceList
	if err := p.reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, cloud.ServiceResources{}, err
	}
	sort.Slice(list.Items, func(i, j int) bool {
		return list.Items[i].Namespace+"/"+list.Items[i].Name < list.Items[j].Namespace+"/"+list.Items[j].Name
	})
	var keys []string
	var selected []tags.Workload
	for i := range list.Items {
		svc := &list.Items[i]
		ns := nss[svc.Namespace]
		if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || ns == nil || svc.DeletionTimestamp != nil {
			continue
		}
		w := tags.Workload{Kind: "Service", Namespace: svc.Namespace, Name: svc.Name, Labels: svc.Labels, Annotations: svc.Annotations,
			NamespaceLabels: ns.Labels, NamespaceAnnotations: ns.Annotations}
		if p.cfg.selects(w) {
			keys = append(keys, svc.Namespace+"/"+svc.Name)
			selected = append(selected, w)
		}
	}
	if len(keys) == 0 {
		return nil, cloud.ServiceResources{}, nil
	}
	found, err := p.services.ServiceResources(ctx, keys)
	if err != nil {
		return nil, found, err
	}
	var out []workload
	for i, key := range keys {
		source := "Service " + key
		for _, c := range found.Own[key] {
			out = append(out, workload{source: source, ref: ref{id: c.ID}, w: selected[i]})
		}
		for _, id := range found.Shared[key] {
			out = append(out, workload{source: source, ref: ref{shared: "a resource several Services share: " + id}, w: selected[i]})
		}
		if len(found.Own[key])+len(found.Shared[key]) == 0 && len(found.Failed) == 0 {
			out = append(out, workload{source: source, ref: ref{notYet: true}, w: selected[i]})
		}
	}
	return out, found, nil
}

// claims are the cluster's claims by namespace/name, listed once a pass
// (read only: the cache's own objects, not copies).
func (p *pass) claims(ctx context.Context) (map[string]*corev1.PersistentVolumeClaim, error) {
	var list corev1.PersistentVolumeClaimList
	if err := p.reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make(map[string]*corev1.PersistentVolumeClaim, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Namespace+"/"+list.Items[i].Name] = &list.Items[i]
	}
	return out, nil
}

// claimWorkload is what templates read about a claim: its own labels and
// annotations when it still exists (a released volume's claim may be gone:
// then only its names), and its namespace's.
func claimWorkload(namespace, name string, ns *corev1.Namespace, claims map[string]*corev1.PersistentVolumeClaim) tags.Workload {
	w := tags.Workload{Kind: "PersistentVolumeClaim", Namespace: namespace, Name: name,
		NamespaceLabels: ns.Labels, NamespaceAnnotations: ns.Annotations}
	if pvc := claims[namespace+"/"+name]; pvc != nil {
		w.Labels, w.Annotations = pvc.Labels, pvc.Annotations
	}
	return w
}

// rivals are the other policies of the same cloud whose spec is valid:
// a key they want with another value on a resource is contested.
func (p *pass) rivals(ctx context.Context) ([]config, error) {
	var list v1alpha1.WorkloadTagPolicyList
	if err := p.reader.List(ctx, &list); err != nil {
		return nil, err
	}
	var out []config
	for i := range list.Items {
		o := &list.Items[i]
		if o.Name == p.obj.Name || o.DeletionTimestamp != nil {
			continue
		}
		c, err := newConfig(o, p.provider.Rules(), p.provider.CreatorKeys())
		if err != nil || c.provider != p.cfg.provider {
			continue
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}
