package playground

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
)

// The metadata act: a platform team's tag request on the resources the
// cluster owns, found by the cluster's owned tag.
const (
	metadataNS    = "platform"
	metadataName  = "demo-cluster"
	metadataInfra = "demo-7lpkm"
	ownedTag      = "kubernetes.io_cluster." + metadataInfra
	clusterRG     = "rg-" + metadataInfra
)

// clusterResources are the classified resources the act seeds: one of each
// kind a cluster owns, a DNS zone (15-tag limit) and a storage account among
// them, plus one resource that is not the cluster's.
var clusterResources = []armsim.Resource{
	{Type: armsim.TypeDisk, Name: metadataInfra + "-os-disk-0"},
	{Type: armsim.TypeNetworkInterface, Name: metadataInfra + "-nic-0"},
	{Type: armsim.TypePublicIP, Name: metadataInfra + "-pip"},
	{Type: armsim.TypeLoadBalancer, Name: metadataInfra + "-lb"},
	{Type: armsim.TypeNetworkSecurityGroup, Name: metadataInfra + "-nsg"},
	{Type: armsim.TypeVirtualNetwork, Name: metadataInfra + "-vnet"},
	{Type: armsim.TypeStorageAccount, Name: "stdemo7lpkm", Kind: "StorageV2"},
	{Type: armsim.TypeDNSZone, Name: "apps.demo.example.com"},
}

// seedClusterResources creates the act's resource group and resources and
// returns the classified IDs (the group's included) and the stray one.
func (pg *playground) seedClusterResources() (ids []string, stray string, err error) {
	owned := map[string]string{ownedTag: "owned"}
	rg, err := pg.sim.CreateResourceGroup(subscriptionID, armsim.ResourceGroup{Name: clusterRG, Location: location, Tags: owned})
	if err != nil {
		return nil, "", err
	}
	ids = append(ids, rg)
	for _, r := range clusterResources {
		r.Tags = owned
		id, err := pg.sim.CreateResource(subscriptionID, clusterRG, r)
		if err != nil {
			return nil, "", err
		}
		ids = append(ids, id)
	}
	stray, err = pg.sim.CreateResource(subscriptionID, clusterRG, armsim.Resource{Type: armsim.TypeDisk, Name: "someone-elses-disk"})
	return ids, stray, err
}

// metadataApply classifies the cluster's resources and asks for two tags on
// all of them: every classified resource gets them, the stray disk nothing.
func (pg *playground) metadataApply() Step {
	var ids []string
	var stray string
	want := map[string]string{"env": "demo", "cost-center": "eng-42"}
	return Step{
		Name: "metadata: tags on every resource the cluster owns",
		Action: func(ctx context.Context) error {
			var err error
			if ids, stray, err = pg.seedClusterResources(); err != nil {
				return err
			}
			c := pg.cp.client
			if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metadataNS}}); err != nil {
				return err
			}
			az := &v1alpha1.AzureMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: metadataNS, Name: metadataName},
				Spec: v1alpha1.AzureMetadataSpec{Opcode: v1alpha1.OpcodeAdd, ResourceTags: want}}
			if err := c.Create(ctx, az); err != nil {
				return err
			}
			return c.Create(ctx, &v1alpha1.CloudMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: metadataNS, Name: metadataName},
				Spec: v1alpha1.CloudMetadataSpec{Classifiers: map[string]string{ownedTag: "owned"},
					CloudProvider: v1alpha1.CloudProviderRefs{AzureRef: &v1alpha1.LocalObjectRef{Name: metadataName}}}})
		},
		Check: func(ctx context.Context) (string, error) {
			for _, id := range ids {
				if err := pg.tagsInclude(id, want); err != nil {
					return "", err
				}
			}
			if t, _ := pg.sim.Tags(stray); t["env"] != "" {
				return "", permanent(fmt.Errorf("a disk without the cluster's tag was tagged: %s", show(t)))
			}
			if err := pg.metadataReady(ctx); err != nil {
				return "", err
			}
			return fmt.Sprintf("AzureMetadata add %s → %d resources carrying %s=owned (disk, NIC, IP, LB, NSG, VNet, storage, DNS zone, group); an unowned disk untouched",
				show(want), len(ids), ownedTag), nil
		},
	}
}

// metadataRevert edits an owned tag in the portal: the next pass puts it back.
func (pg *playground) metadataRevert() Step {
	var disk string
	return Step{
		Name: "metadata: outside edit reverted",
		Action: func(ctx context.Context) error {
			id, err := pg.clusterResourceID(armsim.TypeDisk, metadataInfra+"-os-disk-0")
			if err != nil {
				return err
			}
			disk = id
			if err := pg.sim.SetTags(disk, map[string]string{"env": "oops"}); err != nil {
				return err
			}
			// No event announces the edit: a pass sees it once Resource
			// Graph does (armsim.DefaultGraphIndexDelay), as a poll would.
			if err := pg.waitIndexed(ctx, disk); err != nil {
				return err
			}
			return pg.requestMetadataPass(ctx)
		},
		Check: func(ctx context.Context) (string, error) {
			if err := pg.tagsInclude(disk, map[string]string{"env": "demo"}); err != nil {
				return "", err
			}
			return "portal sets env=oops on " + metadataInfra + "-os-disk-0 → the next pass writes env=demo back (one Tags API call)", nil
		},
	}
}

// metadataDelete asks to delete env from every resource the cluster owns:
// one tag leaving nine resources at once is held for a person (the
// CloudMetadata's DeletionsHeld, with its approval token), and nothing is
// deleted yet.
func (pg *playground) metadataDelete() Step {
	return Step{
		Name: "metadata: a delete everywhere waits for approval",
		Action: func(ctx context.Context) error {
			patch, err := json.Marshal(map[string]any{"spec": map[string]any{"opcode": "delete", "resourceTags": map[string]any{"env": "", "cost-center": nil}}})
			if err != nil {
				return err
			}
			az := &v1alpha1.AzureMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: metadataNS, Name: metadataName}}
			return pg.cp.client.Patch(ctx, az, client.RawPatch(types.MergePatchType, patch))
		},
		Check: func(ctx context.Context) (string, error) {
			held, err := pg.metadataHeld(ctx)
			if err != nil {
				return "", err
			}
			n, err := pg.eachClusterResource(func(name string, t map[string]string) error {
				if t["env"] != "demo" {
					return permanent(fmt.Errorf("%s lost env before approval: %s", name, show(t)))
				}
				return nil
			})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("opcode delete env → held: %d deletions on %d resources wait (DeletionsHeld, token %s); env stays on all %d",
				held.Count, len(held.Resources), held.Token, n), nil
		},
	}
}

// metadataApproved approves the held deletion with its token: env leaves
// every resource, cost-center (released, not deleted) stays.
func (pg *playground) metadataApproved() Step {
	return Step{
		Name: "metadata: approved → deleted everywhere",
		Action: func(ctx context.Context) error {
			held, err := pg.metadataHeld(ctx)
			if err != nil {
				return err
			}
			patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{v1alpha1.ApproveDeletionsAnnotation: held.Token}}})
			if err != nil {
				return err
			}
			cm := &v1alpha1.CloudMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: metadataNS, Name: metadataName}}
			return pg.cp.client.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch))
		},
		Check: func(ctx context.Context) (string, error) {
			n, err := pg.eachClusterResource(func(name string, t map[string]string) error {
				if v, ok := t["env"]; ok {
					return fmt.Errorf("%s still has env=%s", name, v)
				}
				if t["cost-center"] != "eng-42" {
					return permanent(fmt.Errorf("%s lost cost-center: %s", name, show(t)))
				}
				return nil
			})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("kubectl annotate cloudmetadata %s %s=<token> → env removed from %d resources; cost-center (released, not deleted) stays",
				metadataName, v1alpha1.ApproveDeletionsAnnotation, n), nil
		},
	}
}

// metadataHeld is the deletion set the CloudMetadata holds (an error while
// none is).
func (pg *playground) metadataHeld(ctx context.Context) (*v1alpha1.HeldDeletions, error) {
	cm := &v1alpha1.CloudMetadata{}
	if err := pg.cp.client.Get(ctx, client.ObjectKey{Namespace: metadataNS, Name: metadataName}, cm); err != nil {
		return nil, err
	}
	if cm.Status.DeletionsHeld == nil {
		return nil, fmt.Errorf("CloudMetadata %s holds no deletion yet", metadataName)
	}
	return cm.Status.DeletionsHeld, nil
}

// eachClusterResource runs check on the tags of the group and every
// resource of the act, and counts them.
func (pg *playground) eachClusterResource(check func(name string, tags map[string]string) error) (int, error) {
	n := 0
	for _, r := range append([]armsim.Resource{{Type: armsim.TypeResourceGroup, Name: clusterRG}}, clusterResources...) {
		id, err := pg.clusterResourceID(r.Type, r.Name)
		if err != nil {
			return n, err
		}
		t, _ := pg.sim.Tags(id)
		if err := check(r.Name, t); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// clusterResourceID is the ARM ID of one of the act's resources (the group
// for TypeResourceGroup).
func (pg *playground) clusterResourceID(typ, name string) (string, error) {
	rg := "/subscriptions/" + subscriptionID + "/resourceGroups/" + clusterRG
	if typ == armsim.TypeResourceGroup {
		return rg, nil
	}
	id := rg + "/providers/" + typ + "/" + name
	if !pg.sim.Exists(id) {
		return "", fmt.Errorf("no resource %s", id)
	}
	return id, nil
}

// tagsInclude checks that a resource carries the tags want.
func (pg *playground) tagsInclude(id string, want map[string]string) error {
	t, err := pg.sim.Tags(id)
	if err != nil {
		return err
	}
	for k, v := range want {
		if t[k] != v {
			return fmt.Errorf("%s has %s, want %s=%s", id, show(t), k, v)
		}
	}
	return nil
}

// metadataReady checks that the CloudMetadata is Ready.
func (pg *playground) metadataReady(ctx context.Context) error {
	cm := &v1alpha1.CloudMetadata{}
	if err := pg.cp.client.Get(ctx, client.ObjectKey{Namespace: metadataNS, Name: metadataName}, cm); err != nil {
		return err
	}
	if c := meta.FindStatusCondition(cm.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		return fmt.Errorf("CloudMetadata %s is not Ready: %+v", metadataName, c)
	}
	return nil
}

// waitIndexed waits until Resource Graph shows the latest tags of id.
func (pg *playground) waitIndexed(ctx context.Context, id string) error {
	for {
		ok, err := pg.sim.GraphShows(id)
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// requestMetadataPass asks the metadata controller for a pass now.
func (pg *playground) requestMetadataPass(ctx context.Context) error {
	pg.syncRequests++
	value := strconv.Itoa(pg.syncRequests) + "-" + time.Now().UTC().Format(time.RFC3339Nano)
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{v1alpha1.SyncRequestAnnotation: value}}})
	if err != nil {
		return err
	}
	cm := &v1alpha1.CloudMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: metadataNS, Name: metadataName}}
	return pg.cp.client.Patch(ctx, cm, client.RawPatch(types.MergePatchType, body))
}

// metadataStatus summarises the CloudMetadata's status for the report.
func (pg *playground) metadataStatus(ctx context.Context) (string, error) {
	cm := &v1alpha1.CloudMetadata{}
	if err := pg.cp.client.Get(ctx, client.ObjectKey{Namespace: metadataNS, Name: metadataName}, cm); err != nil {
		return "", err
	}
	ready := "Unknown"
	if c := meta.FindStatusCondition(cm.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		ready = string(c.Status)
	}
	return fmt.Sprintf("%d resources matched, %d in sync, %d failed, Ready=%s", cm.Status.Matched, cm.Status.InSync, cm.Status.Failed, ready), nil
}
