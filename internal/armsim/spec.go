package armsim

// Scale-set orchestration modes.
const (
	// Uniform scale sets own identical instances that carry no tags.
	Uniform = "Uniform"
	// Flexible scale sets group ordinary VMs that carry their own tags.
	Flexible = "Flexible"
)

// Well-known resource types, spelled as ARM returns them in resource IDs
// and GETs (Resource Graph lower-cases them).
const (
	TypeVirtualMachine       = "Microsoft.Compute/virtualMachines"
	TypeScaleSet             = "Microsoft.Compute/virtualMachineScaleSets"
	TypeScaleSetVM           = "Microsoft.Compute/virtualMachineScaleSets/virtualMachines"
	TypeAvailabilitySet      = "Microsoft.Compute/availabilitySets"
	TypeDisk                 = "Microsoft.Compute/disks"
	TypeSubscription         = "Microsoft.Resources/subscriptions"
	TypeResourceGroup        = "Microsoft.Resources/resourceGroups"
	TypeStorageAccount       = "Microsoft.Storage/storageAccounts"
	TypeNetworkInterface     = "Microsoft.Network/networkInterfaces"
	TypeLoadBalancer         = "Microsoft.Network/loadBalancers"
	TypePublicIP             = "Microsoft.Network/publicIPAddresses"
	TypeNetworkSecurityGroup = "Microsoft.Network/networkSecurityGroups"
	TypeRouteTable           = "Microsoft.Network/routeTables"
	TypeVirtualNetwork       = "Microsoft.Network/virtualNetworks"
	// TypeDNSZone is a public DNS zone (at most 15 tags).
	TypeDNSZone = "Microsoft.Network/dnszones"
	// TypePrivateDNSZone is a private DNS zone (at most 15 tags).
	TypePrivateDNSZone = "Microsoft.Network/privateDnsZones"
	// TypePrivateDNSZoneLink is a private DNS zone's virtual network link
	// (at most 15 tags; name "zone/link").
	TypePrivateDNSZoneLink = "Microsoft.Network/privateDnsZones/virtualNetworkLinks"
)

// State is the whole simulated estate; it is what LoadYAML reads and
// SaveYAML writes (see docs/armsim.md for an example file).
type State struct {
	// Subscriptions in the tenant.
	Subscriptions []Subscription `json:"subscriptions"`
}

// Subscription is one subscription and what it contains.
type Subscription struct {
	// ID is the subscription GUID.
	ID string `json:"id"`
	// Tags are the subscription's own tags (Tags API at subscription scope).
	Tags map[string]string `json:"tags,omitempty"`
	// ResourceGroups in the subscription.
	ResourceGroups []ResourceGroup `json:"resourceGroups,omitempty"`
}

// ResourceGroup is a resource group and the resources in it.
type ResourceGroup struct {
	// Name of the group; its casing is kept in responses.
	Name string `json:"name"`
	// Location, e.g. "eastus" (default "eastus").
	Location string `json:"location,omitempty"`
	// Tags of the group itself.
	Tags map[string]string `json:"tags,omitempty"`
	// ScaleSets in the group (created before VirtualMachines, so Flexible
	// members can refer to them by name).
	ScaleSets []ScaleSet `json:"scaleSets,omitempty"`
	// VirtualMachines in the group.
	VirtualMachines []VirtualMachine `json:"virtualMachines,omitempty"`
	// Resources of any other type (availability sets, disks, NICs, ...),
	// created before ScaleSets and VirtualMachines.
	Resources []Resource `json:"resources,omitempty"`
}

// ScaleSet describes a virtual machine scale set.
type ScaleSet struct {
	// Name of the scale set.
	Name string `json:"name"`
	// Location (default: the group's).
	Location string `json:"location,omitempty"`
	// Mode is Uniform (default) or Flexible.
	Mode string `json:"mode,omitempty"`
	// SKU is the VM size (default "Standard_D2s_v3").
	SKU string `json:"sku,omitempty"`
	// Tags of the scale set.
	Tags map[string]string `json:"tags,omitempty"`
	// Zones, optional.
	Zones []string `json:"zones,omitempty"`
	// Instances are the instance IDs ("0", "1", ...) of a Uniform set.
	Instances []string `json:"instances,omitempty"`
	// ETag is read-only: SaveYAML records it, LoadYAML restores it.
	ETag int64 `json:"etag,omitempty"`
}

// VirtualMachine describes a VM: standalone, in an availability set, or a
// member of a Flexible scale set.
type VirtualMachine struct {
	// Name of the VM.
	Name string `json:"name"`
	// Location (default: the group's).
	Location string `json:"location,omitempty"`
	// Size is the VM size (default "Standard_D2s_v3").
	Size string `json:"size,omitempty"`
	// ComputerName is the OS host name (default: Name).
	ComputerName string `json:"computerName,omitempty"`
	// AvailabilitySet is the name (same group) or ARM ID of an availability
	// set; it is created if it does not exist.
	AvailabilitySet string `json:"availabilitySet,omitempty"`
	// ScaleSet is the name (same group) or ARM ID of the Flexible scale set
	// this VM belongs to (properties.virtualMachineScaleSet.id).
	ScaleSet string `json:"scaleSet,omitempty"`
	// Tags of the VM.
	Tags map[string]string `json:"tags,omitempty"`
	// Zones, optional.
	Zones []string `json:"zones,omitempty"`
	// ETag is read-only: SaveYAML records it, LoadYAML restores it.
	ETag int64 `json:"etag,omitempty"`
}

// Resource is a resource of any type, e.g. a disk, NIC, load balancer,
// public IP, storage account, DNS zone or availability set.
type Resource struct {
	// Type is the full type, e.g. "Microsoft.Network/networkInterfaces".
	Type string `json:"type"`
	// Name of the resource.
	Name string `json:"name"`
	// Location (default: the group's; public and private DNS zones and
	// their links default to "global").
	Location string `json:"location,omitempty"`
	// Kind, optional (e.g. "StorageV2").
	Kind string `json:"kind,omitempty"`
	// Tags of the resource.
	Tags map[string]string `json:"tags,omitempty"`
	// Properties are returned verbatim in the resource's "properties".
	Properties map[string]any `json:"properties,omitempty"`
	// ETag is read-only: SaveYAML records it, LoadYAML restores it.
	ETag int64 `json:"etag,omitempty"`
}
