package aws

import (
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// PlatformKeys are the keys the platforms running Kubernetes on AWS write
// on the instances and Auto Scaling groups behind nodes and depend on: the
// node sync leaves them alone unless a NodeTagSync opts one in
// (includePlatformTags). Treat it as read-only.
var PlatformKeys = []tags.PlatformKey{
	cloud.HeartbeatKey,
	{Pattern: "eks:*", Owner: "Amazon EKS",
		Why:    "managed node groups tag their Auto Scaling groups and instances eks:cluster-name, eks:nodegroup-name",
		Source: "docs.aws.amazon.com/eks/latest/userguide/managed-node-groups.html"},
	{Pattern: "kubernetes.io/cluster/*", Owner: "Kubernetes on AWS (EKS, the AWS cloud provider, Karpenter, kOps, Cluster API)",
		Why:    "kubernetes.io/cluster/<cluster>=owned|shared marks what belongs to a cluster; IAM policies and the cloud provider key on it",
		Source: "docs.aws.amazon.com/eks/latest/userguide/eks-using-tags.html; cloud-provider-aws"},
	{Pattern: "k8s.io/cluster-autoscaler/*", Owner: "Cluster Autoscaler",
		Why:    "group auto-discovery (k8s.io/cluster-autoscaler/enabled, k8s.io/cluster-autoscaler/<cluster>) and scale-from-zero node templates: a group without them is dropped",
		Source: "docs.aws.amazon.com/eks/latest/eksctl/autoscaling.html; kubernetes/autoscaler cluster-autoscaler/cloudprovider/aws/README.md"},
	{Pattern: "karpenter.sh/*", Owner: "Karpenter",
		Why:    "karpenter.sh/nodepool, karpenter.sh/nodeclaim: its garbage collection and reference IAM policy find its instances by them",
		Source: "karpenter.sh/docs/concepts/nodeclasses (tags), karpenter.sh/docs/reference/cloudformation"},
	{Pattern: "karpenter.k8s.aws/*", Owner: "Karpenter (AWS provider)",
		Why:    "karpenter.k8s.aws/ec2nodeclass names the EC2NodeClass an instance was launched from",
		Source: "karpenter.sh/docs/concepts/nodeclasses (tags)"},
	{Pattern: "alpha.eksctl.io/*", Owner: "eksctl",
		Why:    "alpha.eksctl.io/cluster-name, alpha.eksctl.io/nodegroup-name and the like: eksctl finds its node groups by them",
		Source: "docs.aws.amazon.com/eks/latest/eksctl"},
	{Pattern: "eksctl.*", Owner: "eksctl",
		Why:    "eksctl.cluster.k8s.io/v1alpha1/cluster-name: eksctl's older cluster tag",
		Source: "docs.aws.amazon.com/eks/latest/eksctl"},
	{Pattern: "aws-node-termination-handler/*", Owner: "AWS Node Termination Handler",
		Why:    "in queue-processor mode it handles only instances of groups tagged aws-node-termination-handler/managed",
		Source: "github.com/aws/aws-node-termination-handler README (Queue Processor)"},
	{Pattern: "sigs.k8s.io/cluster-api-provider-aws/*", Owner: "Cluster API Provider AWS",
		Why:    "sigs.k8s.io/cluster-api-provider-aws/cluster/<cluster>=owned and .../role: what CAPA owns and deletes with the cluster",
		Source: "cluster-api-aws.sigs.k8s.io (tagging)"},
	{Pattern: "KubernetesCluster", Owner: "kOps (and the legacy in-tree AWS cloud provider)",
		Why:    "the cluster's name on its instances, before kubernetes.io/cluster/<cluster>",
		Source: "kops.sigs.k8s.io; kubernetes legacy-cloud-providers/aws tags.go"},
	{Pattern: "kops.k8s.io/*", Owner: "kOps",
		Why:    "kops.k8s.io/instancegroup and the like: the instance group an instance belongs to",
		Source: "kops.sigs.k8s.io (instance groups)"},
}

// TagRules are AWS's tag rules: at most 50 tags, keys up to 128 and values
// up to 256 Unicode characters, keys and values made of letters, digits,
// spaces and + - = . _ : / @ (what every AWS service accepts), the prefix
// aws: reserved for AWS in any case (AWS:, Aws:, ...), and keys
// case-sensitive: "Env" and "env" are two tags. Treat it as read-only.
var TagRules = tags.Rules{
	MaxTags:            50,
	MaxNameLen:         128,
	MaxValueLen:        256,
	CountRunes:         true,
	AllowedPunctuation: "+-=._:/@",
	ReservedPrefixes:   []string{"aws:"},
	CaseInsensitive:    false,
}

// CreatorKeys are the keys the creators of a cluster's workload resources
// write on AWS: a WorkloadTagPolicy may not write them. Treat it as
// read-only.
var CreatorKeys = []tags.PlatformKey{
	{Pattern: "kubernetes.io/created-for/*", Owner: "the EBS CSI driver",
		Why:    "kubernetes.io/created-for/pvc/name, pvc/namespace and pv/name name the claim and volume an EBS volume was created for",
		Source: "kubernetes-sigs/aws-ebs-csi-driver docs/tagging.md, pkg/driver/constants.go"},
	{Pattern: "CSIVolumeName", Owner: "the EBS CSI driver",
		Why:    "the CSI volume name the driver finds a volume by (idempotent CreateVolume)",
		Source: "kubernetes-sigs/aws-ebs-csi-driver docs/tagging.md"},
	{Pattern: "CSIVolumeSnapshotName", Owner: "the EBS CSI driver",
		Why:    "the CSI snapshot name the driver finds a snapshot by",
		Source: "kubernetes-sigs/aws-ebs-csi-driver docs/tagging.md"},
	{Pattern: "ebs.csi.aws.com/*", Owner: "the EBS CSI driver",
		Why:    "ebs.csi.aws.com/cluster=true (and ebs.csi.aws.com/cluster-name) mark volumes the driver created; its IAM policy keys on them",
		Source: "kubernetes-sigs/aws-ebs-csi-driver docs/tagging.md, docs/example-iam-policy.json"},
	{Pattern: "kubernetes.io/cluster/*", Owner: "Kubernetes on AWS (the cloud provider, the CSI driver with --k8s-tag-cluster-id)",
		Why:    "kubernetes.io/cluster/<cluster>=owned marks what belongs to a cluster",
		Source: "kubernetes-sigs/aws-ebs-csi-driver docs/tagging.md; cloud-provider-aws"},
	{Pattern: "KubernetesCluster", Owner: "Kubernetes on AWS (legacy cluster tag)",
		Why:    "the legacy cluster-ownership tag the cloud provider and the CSI driver write",
		Source: "kubernetes-sigs/aws-ebs-csi-driver docs/tagging.md"},
	{Pattern: ServiceNameTag, Owner: "the AWS cloud provider (cloud-provider-aws)",
		Why:    "names the Service (namespace/name) a Classic or Network Load Balancer was made for; the cloud provider finds its load balancers by it",
		Source: "kubernetes/cloud-provider-aws pkg/providers/v1 (TagNameKubernetesService)"},
	{Pattern: "service.k8s.aws/*", Owner: "the AWS Load Balancer Controller",
		Why:    "service.k8s.aws/stack (namespace/name) and service.k8s.aws/resource identify the Service's load balancer and target groups to the controller",
		Source: "kubernetes-sigs/aws-load-balancer-controller pkg/deploy/tracking (StackTags)"},
	{Pattern: "ingress.k8s.aws/*", Owner: "the AWS Load Balancer Controller",
		Why:    "ingress.k8s.aws/stack and ingress.k8s.aws/resource identify an Ingress's load balancer to the controller",
		Source: "kubernetes-sigs/aws-load-balancer-controller pkg/deploy/tracking"},
	{Pattern: "elbv2.k8s.aws/*", Owner: "the AWS Load Balancer Controller",
		Why:    "elbv2.k8s.aws/cluster names the cluster whose controller owns the load balancer",
		Source: "kubernetes-sigs/aws-load-balancer-controller pkg/deploy/tracking"},
}

// CreatorKeys returns CreatorKeys.
func (p *Provider) CreatorKeys() []tags.PlatformKey { return CreatorKeys }
