package azure

import (
	"fmt"
	"strings"
)

// ProviderIDKind is the shape of an Azure node providerID.
type ProviderIDKind int

const (
	// KindUnmanaged is a providerID that names no ARM resource, such as the
	// azure://<node-name> of on-prem nodes.
	KindUnmanaged ProviderIDKind = iota
	// KindScaleSetInstance is an instance of a Uniform scale set.
	KindScaleSetInstance
	// KindVirtualMachine is a standalone, availability-set or Flexible
	// scale-set VM; only the VM's properties tell which.
	KindVirtualMachine
)

// ProviderID is a parsed Azure providerID.
type ProviderID struct {
	Kind           ProviderIDKind
	Subscription   string
	ResourceGroup  string
	ScaleSet       string // Uniform scale set name (KindScaleSetInstance)
	InstanceID     string // Uniform instance ID (KindScaleSetInstance)
	VirtualMachine string // VM name (KindVirtualMachine)
}

const providerIDScheme = "azure://"

// ParseProviderID parses a node's spec.providerID. Uniform scale-set
// instances look like
// azure:///subscriptions/S/resourceGroups/G/providers/Microsoft.Compute/virtualMachineScaleSets/N/virtualMachines/I
// and VMs like azure:///subscriptions/S/resourceGroups/G/providers/Microsoft.Compute/virtualMachines/N.
// Segment names are matched case-insensitively, as ARM does. Anything that
// starts with azure:// but names no compute resource is KindUnmanaged; a
// providerID of another cloud, or an empty one, is an error.
func ParseProviderID(s string) (ProviderID, error) {
	if !strings.HasPrefix(strings.ToLower(s), providerIDScheme) {
		return ProviderID{}, fmt.Errorf("providerID %q is not an Azure providerID (want prefix %q)", s, providerIDScheme)
	}
	rest := s[len(providerIDScheme):]
	if !strings.HasPrefix(rest, "/") {
		return ProviderID{Kind: KindUnmanaged}, nil
	}
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	if !matchesPrefix(parts) {
		return ProviderID{Kind: KindUnmanaged}, nil
	}
	id := ProviderID{Subscription: parts[1], ResourceGroup: parts[3]}
	switch {
	case len(parts) == 8 && strings.EqualFold(parts[6], "virtualMachines") && parts[7] != "":
		id.Kind, id.VirtualMachine = KindVirtualMachine, parts[7]
	case len(parts) == 10 && strings.EqualFold(parts[6], "virtualMachineScaleSets") &&
		strings.EqualFold(parts[8], "virtualMachines") && parts[7] != "" && parts[9] != "":
		id.Kind, id.ScaleSet, id.InstanceID = KindScaleSetInstance, parts[7], parts[9]
	default:
		return ProviderID{Kind: KindUnmanaged}, nil
	}
	return id, nil
}

// matchesPrefix reports whether parts start with
// subscriptions/S/resourceGroups/G/providers/Microsoft.Compute.
func matchesPrefix(parts []string) bool {
	return len(parts) >= 8 &&
		strings.EqualFold(parts[0], "subscriptions") && parts[1] != "" &&
		strings.EqualFold(parts[2], "resourceGroups") && parts[3] != "" &&
		strings.EqualFold(parts[4], "providers") &&
		strings.EqualFold(parts[5], "Microsoft.Compute")
}

// ScaleSetID returns the ARM ID of the Uniform scale set of an instance.
func (p ProviderID) ScaleSetID() string {
	return ScaleSetResourceID(p.Subscription, p.ResourceGroup, p.ScaleSet)
}

// VirtualMachineID returns the ARM ID of a VM.
func (p ProviderID) VirtualMachineID() string {
	return VirtualMachineResourceID(p.Subscription, p.ResourceGroup, p.VirtualMachine)
}

// ScaleSetResourceID builds a scale set's ARM ID.
func ScaleSetResourceID(sub, rg, name string) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/virtualMachineScaleSets/%s", sub, rg, name)
}

// VirtualMachineResourceID builds a VM's ARM ID.
func VirtualMachineResourceID(sub, rg, name string) string {
	return fmt.Sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/virtualMachines/%s", sub, rg, name)
}
