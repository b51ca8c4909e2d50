// Package azure is tagsync's Azure Resource Manager provider
// (cloud.NodeProvider and cloud.ClassifiedProvider) on the Azure SDK for Go.
// It owns:
//
//   - node resolution: a Node's providerID (Uniform instance, Flexible member,
//     availability-set or standalone VM; ParseProviderID) or, without one, the
//     kubernetes.azure.com/resource-group label and the node name, to the VM
//     or scale set that carries its tags; on-prem and foreign nodes are
//     unmanaged and cost no call;
//   - bulk reads: per (subscription, resource group) at most one scale-set
//     list and one VM list per Snapshot, all pages, shared for a short TTL;
//     a write that fails drops its group's listing so the retry reads afresh;
//   - writes by key: the Tags API (Delete, then Merge; role Tag Contributor)
//     or a VM / scale-set PATCH guarded by If-Match, never a wholesale
//     replace;
//   - classified resources: Discover finds every resource and resource
//     group carrying a classifier tag with one Resource Graph query over
//     the subscriptions (pages of 1000 rows), and WriteTags patches many
//     resources through the Tags API without reading them, subscriptions
//     in parallel (a queue per subscription, served in turn, none holding
//     more than its share of the workers, so one subscription's wait for
//     its quota does not hold up another's writes; RulesFor gives a type's
//     tag limits);
//   - cost discipline: azcore per-retry policies that count every HTTP
//     attempt (tagsync_cloud_requests_total and friends), hold attempts
//     ARM asked to wait (throttle gates, below), and spend a client-side
//     budget per subscription and ARM bucket that follows the quota ARM
//     reports left (Budget, below); azcore retries honour Retry-After;
//   - credentials (NewCredential): workload identity, managed identity,
//     client secret, client certificate or azidentity's default chain, with
//     configurable authority host and ARM endpoint (sovereign clouds, armsim).
//
// Construct it with NewProvider(ctx, Config, ...Option).
//
// # Throttling
//
// ARM throttles per subscription and principal, with separate buckets for
// reads (GET, HEAD) and writes, and says how long to wait in Retry-After.
// When an answer is 429 Too Many Requests, or 503 Service Unavailable with
// a Retry-After, the gate of the limit it names closes until then: ARM's
// own quota closes the gate of its (ARM endpoint, subscription, bucket); a
// resource provider's policy (the answer reports one at 0 in
// x-ms-ratelimit-remaining-resource, as Compute's budget of one VM does)
// closes that resource's gate only, and the provider's gate in that
// subscription once a second of its resources is refused while the first
// waits (a budget they share); a 429 RetryableErrorDueToAnotherOperation
// (another operation holds the resource) closes none: azcore retries it
// and nothing else waits. While it is closed, every HTTP attempt through it
// (first try, azcore retry, long-running-operation poll) is not sent: the
// call fails at once with an error for which errors.Is(err,
// cloud.ErrThrottled) holds and cloud.RetryAfter(err) returns the wait
// left, and tagsync_cloud_requests_held_total{operation,bucket} counts it.
// azcore does not retry such an error. A 429 whose Retry-After exceeds
// Retry.MaxRetryDelay (azcore gives up on it at once) or that outlasts the
// retries is returned as a *cloud.ThrottledError too, its RetryAfter the
// wait left at its gate. The gates (ThrottleGates) are process-wide: every
// Provider shares DefaultThrottleGates, so controllers with their own
// Providers still stop together; WithThrottleGates gives a Provider its
// own, for another principal or a test that must not share.
//
// # Budget
//
// ARM keeps a token bucket per subscription (and principal) for reads,
// writes and deletes (on Azure today 250 reads refilled at 25/s, 200
// writes and 200 deletes at 10/s) and reports on every answer the tokens
// left after that request in x-ms-ratelimit-remaining-subscription-reads,
// -writes or -deletes. The provider's budget follows those reports, per
// subscription and bucket:
//
//   - Before ARM has reported a bucket, it is the conservative budget:
//     reads 10/s with a burst of 50, writes and deletes 4/s with a burst of
//     20 (RateLimit's fields where set).
//   - Once ARM has reported R left, requests may spend ARM's bucket down
//     to a reserve kept for the subscription's other clients (AKS itself,
//     users, pipelines): 10% of ARM's bucket, at least one token (20 writes,
//     25 reads), ARM's bucket being the largest count it has reported plus
//     one. Each answer resets the budget's estimate of what ARM holds above
//     the reserve to R - reserve - U, U counting the requests ARM may not
//     have charged yet (those in flight when that request left and those
//     sent since); between answers the estimate grows at the adaptive rate
//     and never past ARM's bucket less the reserve.
//   - The pace is the adaptive rate: ARM's documented refill less 5%
//     (reads 23.75/s, writes and deletes 9.5/s), or RateLimit's rate where
//     set and lower; a RateLimit burst where set caps how many requests
//     leave at once.
//   - While ARM reports less than the reserve left, the pace falls back to
//     the conservative rate and burst until ARM reports more.
//
// In a subscription the provider is the only client of, this cannot cause
// a 429: ARM held R after charging the reporting request, has charged at
// most U requests since and refilled at least nothing, so it holds at least
// R - U, the estimate plus the reserve; the estimate refills no faster than
// ARM's documented refill and each request takes a token from it, so a
// request leaves only while ARM holds the reserve plus one token or more
// (provided ARM refills as fast as documented less 5%; set a lower
// RateLimit rate for an endpoint that does not). When another client
// spends the same quota, the remaining ARM reports drops by what it spent,
// the next answer lowers the estimate, and the budget waits until ARM's
// refill covers its requests again, slowing to the conservative rate once
// the reports fall below the reserve. Only the requests already in flight
// when the other client spends cannot see it, so a 429 is then possible
// but unlikely, and the throttle gates hold the subscription as ARM asks.
// Requests outside any subscription and Resource Graph queries (whose
// quota is per tenant) use the conservative write budget only.
//
// # Errors
//
// Errors read as one line (the operation and resource, then "ARM answered
// <status> <code>: <message>"), unwrap to *azcore.ResponseError when ARM
// answered, and report their kind to errors.Is: cloud.ErrThrottled (see
// above; the error is or wraps a *cloud.ThrottledError), cloud.ErrForbidden
// (403), cloud.ErrNotFound (404) and cloud.ErrTooManyTags (ARM's
// TooManyTags refusal of a write past the tag limit).
//
// A Snapshot fails only for a read that could not run at all (its context
// ended). A resource group whose listing fails is reported in
// Snapshot.Failed as a cloud.ScopeError ("resource group <rg> in
// subscription <id>" and the typed error), and each node that needed it
// gets a Placement with Managed false, Err set and a Reason such as `the
// virtual machines of resource group "rg-a" (subscription 0000…) could not
// be read, so the node is not synced in this pass: ARM answered 403
// AuthorizationFailed: …`. Every other node and resource is complete. As
// ARM throttles whole subscriptions, a throttled group's gate also holds
// the other groups of its subscription that a Snapshot had not listed yet.
package azure
