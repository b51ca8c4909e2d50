// Package armsim is an Azure Resource Manager simulator: an HTTP(S) server
// that the real Azure SDK for Go clients (azcore pipelines, azidentity
// credentials, armcompute, armresources and armresourcegraph) talk to as if
// it were management.azure.com and login.microsoftonline.com.
//
// It owns an in-memory model of subscriptions, resource groups, virtual
// machines (standalone, availability set, Flexible scale-set members), scale
// sets (Uniform with their instances, and Flexible) and generic resources;
// the ARM operations tagsync needs on them (GET, LIST with nextLink paging,
// long-running PATCH with ETags, the Tags API at any scope, Resources - List
// with $filter, a subset of Resource Graph); ARM's tag rules and error
// shapes; per-subscription token-bucket throttling on an injectable clock;
// fault injection; per-operation call counters; an admin API under /_admin
// for out-of-band edits; and YAML load/save of the whole state.
//
// It also plays Azure Event Grid for the subscription scope: event
// subscriptions (Microsoft.EventGrid/eventSubscriptions) with the
// validation handshakes, and a Microsoft.Resources.ResourceWriteSuccess,
// ResourceDeleteSuccess or ResourceActionSuccess event for every write it
// serves or makes out of band, delivered to webhooks in batches, at least
// once, with Event Grid's retries, Entra ID bearer tokens (RS256, keys at
// the tenant's jwks_uri) and injectable duplicates, reordering and latency.
//
// Tests in other packages start it with the armsimtest package; the
// `tagsync armsim` command runs it stand-alone. docs/armsim.md describes the
// HTTP surface and how to point any Azure SDK for Go client at it.
package armsim
