package playground

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/cloud/azure"
)

// The seeded estate: an AKS cluster's node resource group and a second
// resource group for a "bring your own" VM.
const (
	subscriptionID = "5f3b8c2e-1d4a-4e6b-9c7d-0a1b2c3d4e5f"
	nodeRG         = "MC_demo_demo_westeurope"
	extraRG        = "rg-demo-byo-westeurope"
	location       = "westeurope"
	vmSize         = "Standard_D4s_v5"
	syncName       = "default"
)

// Labels the AKS-like Nodes carry.
const (
	labelAgentPool       = "kubernetes.azure.com/agentpool"
	labelExcludeBalancer = "alpha.service-controller.kubernetes.io/exclude-balancer"
	labelHostname        = "kubernetes.io/hostname"
	labelRegion          = "topology.kubernetes.io/region"
	labelInstanceType    = "node.kubernetes.io/instance-type"
)

// resource is a seeded VM or scale set whose tags nodes sync with.
type resource struct {
	// Name is the resource's name; Kind says what it is, for the tables.
	Name, Kind string
	// ID is its ARM ID, set when seeded.
	ID string
	// Tags are the tags it is seeded with.
	Tags map[string]string
}

// node is a seeded Node and the resource it syncs with (nil: on-prem).
type node struct {
	Name       string
	ProviderID string
	Labels     map[string]string
	Resource   *resource
}

// layout is the seeded estate and cluster.
type layout struct {
	Pool1, Pool2, Flex, AvSet, BYO *resource
	// Nodes are all Nodes, OnPrem the one that runs outside Azure.
	Nodes  []*node
	OnPrem *node
}

// resources returns the resources in display order.
func (l *layout) resources() []*resource {
	return []*resource{l.Pool1, l.Pool2, l.Flex, l.AvSet, l.BYO}
}

// nodesOf returns the Nodes that sync with r.
func (l *layout) nodesOf(r *resource) []*node {
	var out []*node
	for _, n := range l.Nodes {
		if n.Resource == r {
			out = append(out, n)
		}
	}
	return out
}

// managed returns the Nodes that sync with a cloud resource.
func (l *layout) managed() []*node {
	var out []*node
	for _, n := range l.Nodes {
		if n.Resource != nil {
			out = append(out, n)
		}
	}
	return out
}

// newLayout describes the estate: two Uniform scale sets with three
// instances each, a Flexible scale set with two VMs, an availability-set VM,
// a VM in another resource group and an on-prem node.
func newLayout() *layout {
	return &layout{
		Pool1: &resource{Name: "aks-nodepool1-38290713-vmss", Kind: "Uniform VMSS",
			Tags: map[string]string{"costcenter": "cc-1001", "env": "prod"}},
		Pool2: &resource{Name: "aks-batch-38290713-vmss", Kind: "Uniform VMSS",
			Tags: map[string]string{"costcenter": "cc-2002", "env": "dev"}},
		Flex: &resource{Name: "aks-flex-38290713-vmss", Kind: "Flexible VMSS",
			Tags: map[string]string{"costcenter": "cc-1001", "env": "prod"}},
		AvSet: &resource{Name: "aks-legacy-38290713-0", Kind: "VM (availability set)",
			Tags: map[string]string{"costcenter": "cc-3003", "env": "prod"}},
		BYO: &resource{Name: "byo-vm-0", Kind: "VM (" + extraRG + ")",
			Tags: map[string]string{"costcenter": "cc-4004", "team": "data"}},
	}
}

// seedCloud creates the estate in armsim and records the Nodes it implies.
func (l *layout) seedCloud(s *armsim.Server) error {
	if err := s.CreateSubscription(subscriptionID, nil); err != nil {
		return err
	}
	for _, rg := range []string{nodeRG, extraRG} {
		if _, err := s.CreateResourceGroup(subscriptionID, armsim.ResourceGroup{Name: rg, Location: location}); err != nil {
			return err
		}
	}
	for _, p := range []*resource{l.Pool1, l.Pool2} {
		if err := l.seedUniform(s, p, "0", "1", "2"); err != nil {
			return err
		}
	}
	var err error
	if l.Flex.ID, err = s.CreateScaleSet(subscriptionID, nodeRG,
		armsim.ScaleSet{Name: l.Flex.Name, Mode: armsim.Flexible, SKU: vmSize, Tags: l.Flex.Tags}); err != nil {
		return err
	}
	for _, vm := range []string{"aks-flex-38290713-vms1", "aks-flex-38290713-vms2"} {
		if err := l.seedVM(s, nodeRG, armsim.VirtualMachine{Name: vm, ScaleSet: l.Flex.Name}, l.Flex, "flex"); err != nil {
			return err
		}
	}
	avset := armsim.VirtualMachine{Name: l.AvSet.Name, AvailabilitySet: "aks-legacy-availabilitySet-38290713", Tags: l.AvSet.Tags}
	if err := l.seedVM(s, nodeRG, avset, l.AvSet, "legacy"); err != nil {
		return err
	}
	if err := l.seedVM(s, extraRG, armsim.VirtualMachine{Name: l.BYO.Name, Tags: l.BYO.Tags}, l.BYO, ""); err != nil {
		return err
	}
	byo := l.Nodes[len(l.Nodes)-1]
	byo.Labels[azure.LabelResourceGroup] = extraRG
	byo.Labels[labelExcludeBalancer] = "true"
	l.OnPrem = &node{Name: "onprem-0", ProviderID: "azure://onprem-0", Labels: map[string]string{
		labelHostname: "onprem-0", azure.LabelManaged: "false", labelExcludeBalancer: "true",
	}}
	l.Nodes = append(l.Nodes, l.OnPrem)
	return nil
}

// seedUniform creates a Uniform scale set and one Node per instance, named
// like AKS names them (scale set name + base-36 instance ID on 6 digits).
func (l *layout) seedUniform(s *armsim.Server, r *resource, instances ...string) error {
	var err error
	r.ID, err = s.CreateScaleSet(subscriptionID, nodeRG,
		armsim.ScaleSet{Name: r.Name, SKU: vmSize, Tags: r.Tags, Instances: instances})
	if err != nil {
		return err
	}
	pool := poolName(r.Name)
	for _, id := range instances {
		n, _ := strconv.ParseInt(id, 10, 64)
		name := fmt.Sprintf("%s%06s", r.Name, strconv.FormatInt(n, 36))
		l.Nodes = append(l.Nodes, &node{
			Name:       name,
			ProviderID: "azure://" + r.ID + "/virtualMachines/" + id,
			Labels:     nodeLabels(name, pool),
			Resource:   r,
		})
	}
	return nil
}

// seedVM creates a VM and its Node; owner is the resource the Node syncs
// with (the VM itself, or its Flexible scale set).
func (l *layout) seedVM(s *armsim.Server, rg string, vm armsim.VirtualMachine, owner *resource, pool string) error {
	vm.Size = vmSize
	id, err := s.CreateVM(subscriptionID, rg, vm)
	if err != nil {
		return err
	}
	if owner.Name == vm.Name {
		owner.ID = id
	}
	l.Nodes = append(l.Nodes, &node{Name: vm.Name, ProviderID: "azure://" + id, Labels: nodeLabels(vm.Name, pool), Resource: owner})
	return nil
}

// poolName turns "aks-nodepool1-38290713-vmss" into "nodepool1".
func poolName(scaleSet string) string {
	if parts := strings.Split(scaleSet, "-"); len(parts) > 1 {
		return parts[1]
	}
	return scaleSet
}

func nodeLabels(name, pool string) map[string]string {
	l := map[string]string{labelHostname: name, labelRegion: location, labelInstanceType: vmSize}
	if pool != "" {
		l[labelAgentPool] = pool
	}
	return l
}

// seedCluster creates the Nodes and the default NodeTagSync.
func (l *layout) seedCluster(ctx context.Context, c client.Client) error {
	for _, n := range l.Nodes {
		obj := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels},
			Spec:       corev1.NodeSpec{ProviderID: n.ProviderID},
		}
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating Node %s: %w", n.Name, err)
		}
	}
	nts := &v1alpha1.NodeTagSync{ObjectMeta: metav1.ObjectMeta{Name: syncName}}
	if err := c.Create(ctx, nts); err != nil {
		return fmt.Errorf("creating NodeTagSync %s: %w", syncName, err)
	}
	return nil
}
