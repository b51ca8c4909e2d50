package benchkit

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AKSNode builds a Node as a kubelet on an AKS node registers it (name,
// providerID, its pool; i numbers it for addresses and IDs):
// the usual labels and annotations, capacity, conditions, addresses, node
// info and the cached images (the bulk of a real Node object's size).
func AKSNode(name, providerID, pool string, i int, images []corev1.ContainerImage, withStatus bool) *corev1.Node {
	zone := strconv.Itoa(i%3 + 1)
	labels := map[string]string{
		"agentpool":                                               pool,
		"beta.kubernetes.io/arch":                                 "amd64",
		"beta.kubernetes.io/instance-type":                        "Standard_D4s_v5",
		"beta.kubernetes.io/os":                                   "linux",
		"failure-domain.beta.kubernetes.io/region":                "westeurope",
		"failure-domain.beta.kubernetes.io/zone":                  "westeurope-" + zone,
		"kubernetes.azure.com/agentpool":                          pool,
		"kubernetes.azure.com/cluster":                            "MC_bench_bench_westeurope",
		"kubernetes.azure.com/consolidated-additional-properties": "a1b2c3d4-0000-4000-8000-000000000000",
		"kubernetes.azure.com/kubelet-identity-client-id":         "22222222-0000-4000-8000-000000000002",
		"kubernetes.azure.com/mode":                               "user",
		"kubernetes.azure.com/node-image-version":                 "AKSUbuntu-2204gen2containerd-202607.01.0",
		"kubernetes.azure.com/nodepool-type":                      "VirtualMachineScaleSets",
		"kubernetes.azure.com/os-sku":                             "Ubuntu",
		"kubernetes.azure.com/role":                               "agent",
		"kubernetes.azure.com/storageprofile":                     "managed",
		"kubernetes.azure.com/storagetier":                        "Premium_LRS",
		"kubernetes.io/arch":                                      "amd64",
		"kubernetes.io/hostname":                                  name,
		"kubernetes.io/os":                                        "linux",
		"kubernetes.io/role":                                      "agent",
		"node-role.kubernetes.io/agent":                           "",
		"node.kubernetes.io/instance-type":                        "Standard_D4s_v5",
		"storageprofile":                                          "managed",
		"storagetier":                                             "Premium_LRS",
		"topology.disk.csi.azure.com/zone":                        "westeurope-" + zone,
		"topology.kubernetes.io/region":                           "westeurope",
		"topology.kubernetes.io/zone":                             "westeurope-" + zone,
	}
	ip := fmt.Sprintf("10.%d.%d.%d", 224+i/65536%16, i/256%256, i%256)
	q := resource.MustParse
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	cond := func(t corev1.NodeConditionType, status corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: status, LastHeartbeatTime: now, LastTransitionTime: now, Reason: reason, Message: msg}
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: labels,
			Annotations: map[string]string{
				"csi.volume.kubernetes.io/nodeid":                        fmt.Sprintf(`{"disk.csi.azure.com":%q,"file.csi.azure.com":%q}`, name, name),
				"node.alpha.kubernetes.io/ttl":                           "0",
				"volumes.kubernetes.io/controller-managed-attach-detach": "true",
			},
		},
		Spec: corev1.NodeSpec{
			ProviderID: providerID,
			PodCIDR:    fmt.Sprintf("10.244.%d.0/24", i%256),
			PodCIDRs:   []string{fmt.Sprintf("10.244.%d.0/24", i%256)},
		},
		Status: corev1.NodeStatus{
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU: q("4"), corev1.ResourceMemory: q("16393356Ki"), corev1.ResourceEphemeralStorage: q("129886128Ki"),
				corev1.ResourcePods: q("110"), "hugepages-1Gi": q("0"), "hugepages-2Mi": q("0"),
			},
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU: q("3860m"), corev1.ResourceMemory: q("12880524Ki"), corev1.ResourceEphemeralStorage: q("119703055367"),
				corev1.ResourcePods: q("110"), "hugepages-1Gi": q("0"), "hugepages-2Mi": q("0"),
			},
			Conditions: []corev1.NodeCondition{
				cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
				cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
				cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
				cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
				cond("KernelDeadlock", corev1.ConditionFalse, "KernelHasNoDeadlock", "kernel has no deadlock"),
				cond("FilesystemCorruptionProblem", corev1.ConditionFalse, "FilesystemIsOK", "Filesystem is healthy"),
				cond("ContainerRuntimeProblem", corev1.ConditionFalse, "ContainerRuntimeIsUp", "container runtime service is up"),
				cond("FrequentKubeletRestart", corev1.ConditionFalse, "NoFrequentKubeletRestart", "kubelet is functioning properly"),
			},
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: name}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo: corev1.NodeSystemInfo{
				MachineID:               fmt.Sprintf("%032x", i+1),
				SystemUUID:              fmt.Sprintf("%08x-0000-4000-8000-%012x", i+1, i+1),
				BootID:                  fmt.Sprintf("%08x-1111-4000-8000-%012x", i+1, i+1),
				KernelVersion:           "5.15.0-1089-azure",
				OSImage:                 "Ubuntu 22.04.5 LTS",
				ContainerRuntimeVersion: "containerd://1.7.27-1",
				KubeletVersion:          "v1.37.0",
				OperatingSystem:         "linux",
				Architecture:            "amd64",
			},
			Images: images,
		},
	}
	if !withStatus {
		n.Status = corev1.NodeStatus{}
	}
	return n
}

// NodeImages lists n container images as a kubelet reports them.
func NodeImages(n int) []corev1.ContainerImage {
	if n <= 0 {
		return nil
	}
	repos := []string{
		"mcr.microsoft.com/oss/kubernetes/kube-proxy", "mcr.microsoft.com/oss/kubernetes-csi/azuredisk-csi",
		"mcr.microsoft.com/oss/kubernetes-csi/azurefile-csi", "mcr.microsoft.com/oss/calico/node",
		"mcr.microsoft.com/oss/cilium/cilium", "mcr.microsoft.com/containernetworking/azure-cns",
		"mcr.microsoft.com/oss/kubernetes/coredns", "mcr.microsoft.com/azuremonitor/containerinsights/ciprod",
		"mcr.microsoft.com/oss/kubernetes-csi/livenessprobe", "mcr.microsoft.com/oss/kubernetes-csi/csi-node-driver-registrar",
		"docker.io/library/nginx", "ghcr.io/example/payments-api", "ghcr.io/example/frontend", "quay.io/prometheus/node-exporter",
	}
	out := make([]corev1.ContainerImage, n)
	for i := range out {
		repo := repos[i%len(repos)]
		tag := fmt.Sprintf("v1.%d.%d", i/len(repos)+28, i%7)
		out[i] = corev1.ContainerImage{
			Names:     []string{fmt.Sprintf("%s@sha256:%064x", repo, uint64(i+1)*0x9e3779b97f4a7c15), repo + ":" + tag},
			SizeBytes: int64(20_000_000 + i*3_000_000),
		}
	}
	return out
}

// PoolTags are ~5 tags of the i-th scale set (named name).
func PoolTags(i int, name string) map[string]string {
	teams := []string{"payments", "search", "platform", "data", "frontend"}
	return map[string]string{
		"env": "prod", "costcenter": fmt.Sprintf("cc-%04d", 1000+i), "team": teams[i%len(teams)],
		"owner": teams[i%len(teams)] + "-oncall", "nodepool": name,
	}
}
