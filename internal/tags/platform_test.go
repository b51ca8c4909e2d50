package tags

import (
	"strings"
	"testing"
)

func TestPlatformKeys(t *testing.T) {
	tests := []struct {
		provider string
		nc       NameCase
		name     string
		want     bool
	}{
		{"aws", CaseSensitive, "eks:cluster-name", true},
		{"aws", CaseSensitive, "eks:nodegroup-name", true},
		{"aws", CaseSensitive, "kubernetes.io/cluster/prod", true},
		{"aws", CaseSensitive, "k8s.io/cluster-autoscaler/enabled", true},
		{"aws", CaseSensitive, "k8s.io/cluster-autoscaler/node-template/label/team", true},
		{"aws", CaseSensitive, "karpenter.sh/nodepool", true},
		{"aws", CaseSensitive, "karpenter.sh/nodeclaim", true},
		{"aws", CaseSensitive, "karpenter.k8s.aws/ec2nodeclass", true},
		{"aws", CaseSensitive, "alpha.eksctl.io/nodegroup-name", true},
		{"aws", CaseSensitive, "eksctl.cluster.k8s.io/v1alpha1/cluster-name", true},
		{"aws", CaseSensitive, "aws-node-termination-handler/managed", true},
		{"aws", CaseSensitive, "sigs.k8s.io/cluster-api-provider-aws/cluster/prod", true},
		{"aws", CaseSensitive, "KubernetesCluster", true},
		{"aws", CaseSensitive, "kops.k8s.io/instancegroup", true},
		// AWS keys are case-sensitive: another spelling is another key, not the platform's.
		{"aws", CaseSensitive, "Karpenter.sh/nodepool", false},
		{"aws", CaseSensitive, "kubernetescluster", false},
		{"aws", CaseSensitive, "EKS:cluster-name", false},
		// Near misses.
		{"aws", CaseSensitive, "eks", false},
		{"aws", CaseSensitive, "kubernetes.io/role", false},
		{"aws", CaseSensitive, "KubernetesCluster2", false},
		{"aws", CaseSensitive, "team", false},
		{"aws", CaseSensitive, "aks-managed-poolName", false},
		// Azure compares names case-insensitively.
		{"azure", CaseInsensitive, "aks-managed-poolName", true},
		{"azure", CaseInsensitive, "AKS-Managed-orchestrator", true},
		{"azure", CaseInsensitive, "aks-managed", false},
		{"azure", CaseInsensitive, "karpenter.sh/nodepool", false},
		{"azure", CaseInsensitive, "env", false},
		{"gcp", CaseSensitive, "eks:cluster-name", false},
	}
	for _, tt := range tests {
		if got := IsPlatformKey(testPlatformKeys[tt.provider], tt.nc, tt.name); got != tt.want {
			t.Errorf("IsPlatformKey(%s, %q) = %v, want %v", tt.provider, tt.name, got, tt.want)
		}
		f := Filter{Platform: PlatformPatterns(testPlatformKeys[tt.provider])}
		if got := f.Match(tt.nc, tt.name); got == tt.want {
			t.Errorf("%s: Filter{Platform}.Match(%q) = %v, want %v", tt.provider, tt.name, got, !tt.want)
		}
	}
}

func TestFilterPlatformOptIn(t *testing.T) {
	aws := PlatformPatterns(testPlatformKeys["aws"])
	tests := []struct {
		name   string
		filter Filter
		tag    string
		want   bool
	}{
		{"platform key out by default", Filter{Platform: aws}, "karpenter.sh/nodepool", false},
		{"other keys in", Filter{Platform: aws}, "team", true},
		{"include does not opt in", Filter{Include: []string{"karpenter.sh/*"}, Platform: aws}, "karpenter.sh/nodepool", false},
		{"opted in", Filter{Platform: aws, PlatformOptIn: []string{"karpenter.sh/nodepool"}}, "karpenter.sh/nodepool", true},
		{"opt-in is per key", Filter{Platform: aws, PlatformOptIn: []string{"karpenter.sh/nodepool"}}, "karpenter.sh/nodeclaim", false},
		{"opt-in by pattern", Filter{Platform: aws, PlatformOptIn: []string{"k8s.io/cluster-autoscaler/node-template/*"}},
			"k8s.io/cluster-autoscaler/node-template/label/team", true},
		{"opt-in matched case-sensitively", Filter{Platform: aws, PlatformOptIn: []string{"Karpenter.sh/nodepool"}}, "karpenter.sh/nodepool", false},
		{"exclude wins over opt-in", Filter{Exclude: []string{"karpenter.sh/*"}, Platform: aws, PlatformOptIn: []string{"*"}}, "karpenter.sh/nodepool", false},
		{"include still applies", Filter{Include: []string{"env"}, Platform: aws, PlatformOptIn: []string{"*"}}, "karpenter.sh/nodepool", false},
		{"malformed platform pattern excludes", Filter{Platform: []string{"["}}, "team", false},
		{"malformed opt-in opts nothing in", Filter{Platform: aws, PlatformOptIn: []string{"["}}, "eks:cluster-name", false},
	}
	for _, tt := range tests {
		if got := tt.filter.Match(CaseSensitive, tt.tag); got != tt.want {
			t.Errorf("%s: Match(%q) = %v, want %v", tt.name, tt.tag, got, tt.want)
		}
	}
	azure := Filter{Platform: PlatformPatterns(testPlatformKeys["azure"]), PlatformOptIn: []string{"AKS-MANAGED-POOLNAME"}}
	if !azure.Match(CaseInsensitive, "aks-managed-poolName") || azure.Match(CaseInsensitive, "aks-managed-orchestrator") {
		t.Error("on Azure an opt-in is matched case-insensitively, and only the key it names comes in")
	}
	err := Filter{Platform: aws, PlatformOptIn: []string{"ok", "["}}.Validate()
	if err == nil || !strings.Contains(err.Error(), `includePlatform[1] "["`) {
		t.Errorf("Validate = %v", err)
	}
}

func TestFilterExcludesEverythingPlatform(t *testing.T) {
	aws := PlatformPatterns(testPlatformKeys["aws"])
	if !(Filter{Include: []string{"karpenter.sh/*", "eks:cluster-name"}, Platform: aws}).ExcludesEverything(CaseSensitive) {
		t.Error("an include of platform keys only lets nothing through")
	}
	if (Filter{Include: []string{"karpenter.sh/*"}, Platform: aws, PlatformOptIn: []string{"karpenter.sh/nodepool"}}).ExcludesEverything(CaseSensitive) {
		t.Error("with an opt-in the include may let it through")
	}
	if (Filter{Include: []string{"karpenter*"}, Platform: aws}).ExcludesEverything(CaseSensitive) {
		t.Error("karpenter* also matches keys the platform does not own")
	}
}

func TestOverlapsPlatform(t *testing.T) {
	tests := []struct {
		provider, pattern string
		nc                NameCase
		want              bool
	}{
		{"aws", "karpenter.sh/nodepool", CaseSensitive, true},
		{"aws", "karpenter.sh/*", CaseSensitive, true},
		{"aws", "karpenter*", CaseSensitive, true},
		{"aws", "*", CaseSensitive, true},
		{"aws", "*/nodepool", CaseSensitive, true},
		{"aws", "KubernetesCluster", CaseSensitive, true},
		{"aws", "Kubernetes*", CaseSensitive, true},
		{"aws", "k8s.io/cluster-autoscaler/node-template/label/*", CaseSensitive, true},
		{"aws", "team", CaseSensitive, false},
		{"aws", "Karpenter.sh/nodepool", CaseSensitive, false},
		{"aws", "aks-managed-*", CaseSensitive, false},
		{"aws", "x*", CaseSensitive, false},
		{"azure", "aks-managed-poolName", CaseInsensitive, true},
		{"azure", "AKS-MANAGED-*", CaseInsensitive, true},
		{"azure", "aks*", CaseInsensitive, true},
		{"azure", "karpenter.sh/nodepool", CaseInsensitive, false},
	}
	for _, tt := range tests {
		if got := OverlapsPlatform(testPlatformKeys[tt.provider], tt.nc, tt.pattern); got != tt.want {
			t.Errorf("OverlapsPlatform(%s, %q) = %v, want %v", tt.provider, tt.pattern, got, tt.want)
		}
	}
}
