package workloadtags

import (
	"context"
	"errors"
	"sort"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// errNoSnapshotAPI: the cluster serves no snapshot.storage.k8s.io/v1.
var errNoSnapshotAPI = errors.New("the cluster serves no snapshot.storage.k8s.io/v1 VolumeSnapshotContent: install the CSI snapshot CRDs (and the snapshot controller), then restart tagsync so that it watches them")

// snapshotScope names the snapshots in a reading's Failed.
const snapshotScope = "VolumeSnapshotContents"

// snapshotWorkloads are the snapshots behind the cluster's
// VolumeSnapshotContents of the policy's cloud whose VolumeSnapshot's
// namespace it selects, each tagged for its VolumeSnapshot (its labels and
// annotations while it exists). A content whose snapshot is not cut yet
// (no snapshotHandle) is pending; a share's snapshot (Azure Files: part of
// a storage account many workloads share) is reported as shared. Where the cluster has no snapshot API,
// the snapshots are reported unreadable, and the rest of the policy goes
// on.
func (p *pass) snapshotWorkloads(ctx context.Context, nss map[string]*corev1.Namespace) ([]workload, []cloud.ScopeError, error) {
	if !p.cfg.snapshots {
		return nil, nil, nil
	}
	var contents snapshotv1.VolumeSnapshotContentList
	if err := p.reader.List(ctx, &contents, client.UnsafeDisableDeepCopy); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, []cloud.ScopeError{{Scope: snapshotScope, Err: errNoSnapshotAPI}}, nil
		}
		return nil, nil, err
	}
	var snaps snapshotv1.VolumeSnapshotList
	if err := p.reader.List(ctx, &snaps, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, err
	}
	byName := make(map[string]*snapshotv1.VolumeSnapshot, len(snaps.Items))
	for i := range snaps.Items {
		byName[snaps.Items[i].Namespace+"/"+snaps.Items[i].Name] = &snaps.Items[i]
	}
	sort.Slice(contents.Items, func(i, j int) bool { return contents.Items[i].Name < contents.Items[j].Name })
	provider := v1alpha1.Provider(p.cfg.provider)
	var out []workload
	for i := range contents.Items {
		c := &contents.Items[i]
		vs := c.Spec.VolumeSnapshotRef
		ns := nss[vs.Namespace]
		shared := sharedDrivers[c.Spec.Driver] == provider
		if c.DeletionTimestamp != nil || (diskDrivers[c.Spec.Driver] != provider && !shared) || ns == nil || vs.Name == "" {
			continue
		}
		w := tags.Workload{Kind: "VolumeSnapshot", Namespace: vs.Namespace, Name: vs.Name,
			NamespaceLabels: ns.Labels, NamespaceAnnotations: ns.Annotations}
		if s := byName[vs.Namespace+"/"+vs.Name]; s != nil {
			w.Labels, w.Annotations = s.Labels, s.Annotations
		}
		if !p.cfg.selects(w) {
			continue
		}
		if shared {
			// A share's snapshot (Azure Files) is part of its storage
			// account, which every share of it uses: no resource of its
			// own to tag.
			out = append(out, workload{source: "VolumeSnapshotContent " + c.Name, ref: ref{shared: c.Spec.Driver + " share snapshot " + snapshotHandle(c)}, w: w})
			continue
		}
		r := ref{notYet: true}
		if id := snapshotHandle(c); id != "" {
			if !validSnapshotID(provider, id) {
				continue
			}
			r = ref{id: id}
		}
		out = append(out, workload{source: "VolumeSnapshotContent " + c.Name, ref: r, w: w})
	}
	return out, nil, nil
}

// snapshotHandle is the cloud snapshot of a content: the one the driver
// cut (status), or the one a pre-provisioned content names (spec).
func snapshotHandle(c *snapshotv1.VolumeSnapshotContent) string {
	if c.Status != nil && c.Status.SnapshotHandle != nil {
		return *c.Status.SnapshotHandle
	}
	if c.Spec.Source.SnapshotHandle != nil {
		return *c.Spec.Source.SnapshotHandle
	}
	return ""
}

// validSnapshotID reports whether id has the shape of a snapshot of
// provider: an ARM snapshot ID (Azure Disk CSI's snapshot handle), or an
// EBS snapshot ID (the EBS CSI driver's).
func validSnapshotID(provider v1alpha1.Provider, id string) bool {
	return hasShape(provider, id, "snap-", "microsoft.compute/snapshots")
}

// snapshotChanged reports a change of a content that moves its snapshot
// between workloads or makes it: its VolumeSnapshot, its handle, or its
// deletion.
func snapshotChanged(old, cur *snapshotv1.VolumeSnapshotContent) bool {
	return old.Spec.VolumeSnapshotRef.Namespace != cur.Spec.VolumeSnapshotRef.Namespace ||
		old.Spec.VolumeSnapshotRef.Name != cur.Spec.VolumeSnapshotRef.Name ||
		snapshotHandle(old) != snapshotHandle(cur) || old.DeletionTimestamp.IsZero() != cur.DeletionTimestamp.IsZero()
}
