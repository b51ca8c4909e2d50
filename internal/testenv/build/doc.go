// Package build makes the Kubernetes objects tagsync's tests create: Nodes
// and the hosts behind them, tagsync's kinds (NodeTagSync, CloudMetadata,
// AzureMetadata, AWSMetadata, LabelSyncProfile), and the Cluster API and
// Metal3 objects label sync follows (a cluster's kubeconfig Secret, Cluster,
// Machine, Metal3Cluster, Metal3Machine, BareMetalHost), and OpenShift's
// Infrastructure. A test names what matters to it and nothing else:
//
//	node := build.Node("n1",
//		build.ProviderID("azure:///subscriptions/s/.../virtualMachines/vm-a"),
//		build.Labels(map[string]string{"azure.tags/env": "prod"}),
//		build.Taints(build.NoSchedule("example.com/gpu", "true")))
//	nts := build.NodeTagSync("default", build.Provider(v1alpha1.ProviderAWS), build.SyncTaints())
//	cm := build.CloudMetadata("cluster", build.Namespace(ns),
//		build.Classifiers(map[string]string{"kubernetes.io_cluster.demo": "owned"}), build.AzureRef("tags"))
//
// Each builder takes the object's name and options and returns the object,
// not created: the test creates it with the client it means. The metadata
// options (Namespace, Labels, Label, Annotations, Annotation, UID,
// Generation, ResourceVersion, OwnedBy) apply to every kind; the others to
// the kinds their doc names, which the compiler checks. An option sets
// exactly the fields it names: a builder with no options makes the same
// object as the literal with only a name, and Labels and Annotations keep the
// map they are given (not a copy), as a literal does. NodeFunc,
// NodeTagSyncFunc and the other ...Func types turn any edit of one kind into
// an option, for the fields no option names.
//
// The Metal3 kinds and the Infrastructure are unstructured objects with
// their group, version and kind spelled here, so the package depends on no
// controller: it imports only tagsync's API, Kubernetes' and Cluster API's
// types.
package build
