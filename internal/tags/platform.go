package tags

import "slices"

// PlatformKey is a tag key, or a family of keys, that the platform running
// the nodes (the managed Kubernetes service, its autoscalers, the tools that
// built the cluster) writes on the cloud resources behind nodes and depends
// on. Such a tag is not the user's: deleting or rewriting it breaks the
// platform (an instance Karpenter no longer recognises as its own leaks, a
// group without k8s.io/cluster-autoscaler/enabled is dropped by the
// autoscaler), and copying it into labels invites exactly that.
type PlatformKey struct {
	// Pattern matches the keys, in Filter syntax ("eks:*", or one exact
	// key), compared as the provider compares tag names.
	Pattern string
	// Owner is who writes the keys.
	Owner string
	// Why says what the owner uses them for.
	Why string
	// Source is where that is documented.
	Source string
}

// platformKeys are the platform keys by provider name.
var platformKeys = map[string][]PlatformKey{
	"aws": {
		{"tagsync-heartbeat", "tagsync's event heartbeat (--events-heartbeat)",
			"the leader rewrites it every few minutes and awaits its event: copied into labels it would rewrite Nodes each time",
			"docs/events.md (the heartbeat)"},
		{"eks:*", "Amazon EKS",
			"managed node groups tag their Auto Scaling groups and instances eks:cluster-name, eks:nodegroup-name",
			"docs.aws.amazon.com/eks/latest/userguide/managed-node-groups.html"},
		{"kubernetes.io/cluster/*", "Kubernetes on AWS (EKS, the AWS cloud provider, Karpenter, kOps, Cluster API)",
			"kubernetes.io/cluster/<cluster>=owned|shared marks what belongs to a cluster; IAM policies and the cloud provider key on it",
			"docs.aws.amazon.com/eks/latest/userguide/eks-using-tags.html; cloud-provider-aws"},
		{"k8s.io/cluster-autoscaler/*", "Cluster Autoscaler",
			"group auto-discovery (k8s.io/cluster-autoscaler/enabled, k8s.io/cluster-autoscaler/<cluster>) and scale-from-zero node templates: a group without them is dropped",
			"docs.aws.amazon.com/eks/latest/eksctl/autoscaling.html; kubernetes/autoscaler cluster-autoscaler/cloudprovider/aws/README.md"},
		{"karpenter.sh/*", "Karpenter",
			"karpenter.sh/nodepool, karpenter.sh/nodeclaim: its garbage collection and reference IAM policy find its instances by them",
			"karpenter.sh/docs/concepts/nodeclasses (tags), karpenter.sh/docs/reference/cloudformation"},
		{"karpenter.k8s.aws/*", "Karpenter (AWS provider)",
			"karpenter.k8s.aws/ec2nodeclass names the EC2NodeClass an instance was launched from",
			"karpenter.sh/docs/concepts/nodeclasses (tags)"},
		{"alpha.eksctl.io/*", "eksctl",
			"alpha.eksctl.io/cluster-name, alpha.eksctl.io/nodegroup-name and the like: eksctl finds its node groups by them",
			"docs.aws.amazon.com/eks/latest/eksctl"},
		{"eksctl.*", "eksctl",
			"eksctl.cluster.k8s.io/v1alpha1/cluster-name: eksctl's older cluster tag",
			"docs.aws.amazon.com/eks/latest/eksctl"},
		{"aws-node-termination-handler/*", "AWS Node Termination Handler",
			"in queue-processor mode it handles only instances of groups tagged aws-node-termination-handler/managed",
			"github.com/aws/aws-node-termination-handler README (Queue Processor)"},
		{"sigs.k8s.io/cluster-api-provider-aws/*", "Cluster API Provider AWS",
			"sigs.k8s.io/cluster-api-provider-aws/cluster/<cluster>=owned and .../role: what CAPA owns and deletes with the cluster",
			"cluster-api-aws.sigs.k8s.io (tagging)"},
		{"KubernetesCluster", "kOps (and the legacy in-tree AWS cloud provider)",
			"the cluster's name on its instances, before kubernetes.io/cluster/<cluster>",
			"kops.sigs.k8s.io; kubernetes legacy-cloud-providers/aws tags.go"},
		{"kops.k8s.io/*", "kOps",
			"kops.k8s.io/instancegroup and the like: the instance group an instance belongs to",
			"kops.sigs.k8s.io (instance groups)"},
	},
	"azure": {
		{"tagsync-heartbeat", "tagsync's event heartbeat (--events-heartbeat)",
			"the leader rewrites it every few minutes and awaits its event: copied into labels it would rewrite Nodes each time",
			"docs/events.md (the heartbeat)"},
		{"aks-managed-*", "Azure Kubernetes Service",
			"AKS writes aks-managed-* tags (aks-managed-poolName, ...) on node-pool scale sets and VMs; the node pool is their source of truth and AKS rewrites them",
			"learn.microsoft.com/azure/aks/faq (node resource group: do not modify or delete Azure-created tags)"},
	},
}

// PlatformKeys lists the keys the platform owns on node resources of a
// provider ("aws" or "azure"; none for another name).
func PlatformKeys(provider string) []PlatformKey {
	return slices.Clone(platformKeys[provider])
}

// PlatformPatterns are the patterns of PlatformKeys(provider), for
// Filter.Platform.
func PlatformPatterns(provider string) []string {
	keys := platformKeys[provider]
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.Pattern
	}
	return out
}

// IsPlatformKey reports whether name is a key the platform owns on the
// provider's node resources, compared as nc says.
func IsPlatformKey(provider string, nc NameCase, name string) bool {
	return anyMatch(nc, PlatformPatterns(provider), nc.Key(name), false)
}

// OverlapsPlatform reports whether pattern may match some key the
// provider's platform owns: it errs towards true (a pattern it rejects
// provably matches none of them). It tells an includePlatformTags entry that
// opts nothing in.
func OverlapsPlatform(provider string, nc NameCase, pattern string) bool {
	p := nc.Key(pattern)
	lit := p
	if i := indexMeta(p); i >= 0 {
		lit = p[:i]
	}
	exact := len(lit) == len(p)
	for _, k := range platformKeys[provider] {
		q := nc.Key(k.Pattern)
		prefix, star := cutStar(q)
		switch {
		case !star && exact:
			if p == q {
				return true
			}
		case !star: // an exact platform key, a pattern with wildcards
			if ok, err := globMatch(p, q); ok || err != nil {
				return true
			}
		case exact: // a prefix family, an exact name
			if len(p) >= len(prefix) && p[:len(prefix)] == prefix {
				return true
			}
		default: // both open: they overlap unless their literal prefixes diverge
			n := min(len(lit), len(prefix))
			if lit[:n] == prefix[:n] {
				return true
			}
		}
	}
	return false
}

// cutStar returns q without its final '*' and whether it had one that is
// its only wildcard.
func cutStar(q string) (string, bool) {
	if len(q) > 0 && q[len(q)-1] == '*' && indexMeta(q[:len(q)-1]) < 0 {
		return q[:len(q)-1], true
	}
	return q, false
}

// indexMeta is the index of the first glob metacharacter in p, or -1.
func indexMeta(p string) int {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '*', '?', '[', '\\':
			return i
		}
	}
	return -1
}
