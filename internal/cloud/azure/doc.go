// Package azure is tagsync's Azure Resource Manager provider (cloud.Provider)
// on the Azure SDK for Go. It owns:
//
//   - node resolution: a Node's providerID (Uniform instance, Flexible member,
//     availability-set or standalone VM; ParseProviderID) or, without one, the
//     kubernetes.azure.com/resource-group label and the node name, to the VM
//     or scale set that carries its tags; on-prem and foreign nodes are
//     unmanaged and cost no call;
//   - bulk reads: per (subscription, resource group) at most one scale-set
//     list and one VM list per Snapshot, all pages, shared for a short TTL;
//   - writes by key: the Tags API (Merge / Delete, role Tag Contributor) or a
//     VM / scale-set PATCH guarded by If-Match, never a wholesale replace;
//   - cost discipline: a client-side token-bucket budget and request metrics
//     (tagsync_cloud_requests_total and friends) as azcore per-retry
//     policies, and azcore retries honouring Retry-After;
//   - credentials (NewCredential): workload identity, managed identity,
//     client secret, client certificate or azidentity's default chain, with
//     configurable authority host and ARM endpoint (sovereign clouds, armsim).
//
// Construct it with NewProvider(ctx, Config, ...Option).
package azure
