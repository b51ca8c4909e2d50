package azure

import "testing"

func TestParseProviderID(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    ProviderID
		wantErr bool
	}{
		{
			name: "uniform scale-set instance",
			in:   "azure:///subscriptions/sub-1/resourceGroups/MC_rg_aks_westeurope/providers/Microsoft.Compute/virtualMachineScaleSets/aks-pool1-123-vmss/virtualMachines/7",
			want: ProviderID{Kind: KindScaleSetInstance, Subscription: "sub-1", ResourceGroup: "MC_rg_aks_westeurope", ScaleSet: "aks-pool1-123-vmss", InstanceID: "7"},
		},
		{
			name: "lower-cased segments as some clusters report them",
			in:   "azure:///subscriptions/sub-1/resourcegroups/mc_rg/providers/microsoft.compute/virtualmachinescalesets/pool/virtualmachines/0",
			want: ProviderID{Kind: KindScaleSetInstance, Subscription: "sub-1", ResourceGroup: "mc_rg", ScaleSet: "pool", InstanceID: "0"},
		},
		{
			name: "virtual machine",
			in:   "azure:///subscriptions/sub-1/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm-0",
			want: ProviderID{Kind: KindVirtualMachine, Subscription: "sub-1", ResourceGroup: "rg", VirtualMachine: "vm-0"},
		},
		{name: "on-prem node", in: "azure://onprem-1", want: ProviderID{Kind: KindUnmanaged}},
		{name: "not compute", in: "azure:///subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/networkInterfaces/n", want: ProviderID{Kind: KindUnmanaged}},
		{name: "truncated", in: "azure:///subscriptions/s/resourceGroups/rg", want: ProviderID{Kind: KindUnmanaged}},
		{name: "empty VM name", in: "azure:///subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/", want: ProviderID{Kind: KindUnmanaged}},
		{name: "other cloud", in: "aws:///eu-west-1a/i-123", wantErr: true},
		{name: "empty", in: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseProviderID(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseProviderID(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Fatalf("ParseProviderID(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzParseProviderID(f *testing.F) {
	f.Add("azure:///subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm")
	f.Add("azure:///subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/n/virtualMachines/1")
	f.Add("azure://x")
	f.Add("azure:////////")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseProviderID(s)
		if err != nil {
			return
		}
		switch id.Kind {
		case KindScaleSetInstance:
			if id.Subscription == "" || id.ResourceGroup == "" || id.ScaleSet == "" || id.InstanceID == "" {
				t.Fatalf("scale-set instance with empty parts: %+v", id)
			}
		case KindVirtualMachine:
			if id.Subscription == "" || id.ResourceGroup == "" || id.VirtualMachine == "" {
				t.Fatalf("VM with empty parts: %+v", id)
			}
		}
	})
}
