// Package eventgrid is the Azure event source: an HTTPS webhook, on a port
// of its own, that receives Azure Event Grid deliveries from a
// subscription's system topic (topic type Microsoft.Resources.Subscriptions)
// and publishes them as cloudchange.Change values to a cloudchange.Sink.
//
// # What it receives
//
// ARM emits an event for every PUT, PATCH, POST and DELETE in the
// subscription. The event names the resource (subject and data.resourceUri,
// an ARM resource ID) and the operation (data.operationName), never the
// tags, so every Change has nil Tags and a pass reads the resource:
//
//	Microsoft.Resources.ResourceWriteSuccess   KindWrite (PUT/PATCH of the resource or of its tags)
//	Microsoft.Resources.ResourceDeleteSuccess  KindDelete; KindWrite for the Tags API's DELETE
//	Microsoft.Resources.ResourceActionSuccess  ignored: a POST action never changes tags
//	...Failure, ...Cancel, other types         ignored (acknowledged, counted)
//
// A Tags API operation names {resource}/providers/Microsoft.Resources/tags/default;
// the Change names {resource}. Subscribe to the three Success types only
// (includedEventTypes) to keep the traffic down; data.operationName
// filters narrow it further.
//
// Both delivery schemas arrive on one endpoint (Config.Path, /eventgrid):
// the Event Grid schema (a JSON array, Content-Type application/json) and
// CloudEvents 1.0, parsed with the CloudEvents SDK's HTTP binding in
// structured mode (application/cloudevents+json), binary mode (ce-*
// headers) and batched (application/cloudevents-batch+json).
//
// # Handshakes
//
// Event Grid schema: the subscription's creation sends a
// Microsoft.EventGrid.SubscriptionValidationEvent; an authenticated one is
// answered 200 {"validationResponse": "<data.validationCode>"}.
// CloudEvents: an OPTIONS request with WebHook-Request-Origin is answered
// 200 with WebHook-Allowed-Origin (the same origin) and
// WebHook-Allowed-Rate: *, without a credential: it only consents to
// deliveries, each of which is authenticated.
//
// # Authentication
//
// Every POST must authenticate with one of the configured modes (New
// refuses a Config with neither):
//
//   - Shared secret (Config.SecretFile): the delivery carries it in the
//     X-Tagsync-Key header (KeyHeader), which the event subscription sets
//     as a static delivery property marked secret, or in the URL's query,
//     https://tagsync.example.com/eventgrid?key=<secret> (KeyParameter);
//     the header wins when both are there. Prefer the header: ingress and
//     load balancer access logs record query strings. The file (a
//     mounted Secret) holds one secret a line, at least 16 characters each;
//     every line is accepted, so a rotation adds the new secret, updates the
//     subscription, then removes the old one. The file is re-read when
//     it changes; comparisons are constant-time; the secret, the request
//     URL and the request headers are never logged.
//   - Entra ID (Config.TenantID and Config.Audience): the subscription
//     delivers with "Microsoft Entra authentication" and sends
//     Authorization: Bearer <JWT>. The token's signature is checked with
//     go-oidc against the tenant's keys (discovery at
//     {Authority}/{TenantID}/v2.0/.well-known/openid-configuration, keys at
//     its jwks_uri, RS256), its aud must equal Audience (the Entra
//     application ID or application ID URI the subscription names), it must
//     not have expired, and its iss must be exactly
//     {Authority}/{TenantID}/v2.0, or https://sts.windows.net/{TenantID}/
//     when Config.AcceptV1Issuer is set (an application whose manifest does
//     not ask for v2 tokens gets v1 ones). The issuer is pinned exactly, tenant
//     included, because Entra signs every tenant's tokens with the same keys.
//     Discovery happens on the first token and again after a failure; the
//     keys are cached and fetched again when a token names an unknown key.
//     Each request to the authority is bounded by Config.AuthorityTimeout
//     (10s); a token that cannot be checked because the discovery document
//     or the keys cannot be fetched is refused 503 auth_unavailable, which
//     Event Grid retries (a 403 it would not).
//     Any application of the tenant that can get a token for Audience
//     passes those checks; Config.AllowedCallers narrows it to the listed
//     application (client) IDs: the application that obtained the token,
//     its azp claim in a v2.0 token and appid in a v1.0 one (as the ver
//     claim says; without one, appid if present, else azp), must be one of
//     them (compared without regard to case), else the delivery is refused
//     403 caller_not_allowed. Left empty, it is Event Grid's own
//     application (DefaultCallers: EventGridAppID in Azure's public cloud,
//     EventGridGovernmentAppID with Azure Government's authority).
//
// A delivery passes when a credential of a configured mode verifies. None
// presented: 401. Presented and wrong (wrong key, bad signature, wrong
// issuer or audience, expired, a caller not allowed): 403. A mode that
// cannot check (unreadable secret file, authority unreachable): 503, which
// Event Grid retries.
//
// # Refusals
//
//	401 unauthenticated     no credential
//	403 bad_key             wrong shared secret
//	403 bad_token           token refused
//	403 caller_not_allowed  a valid token of an application not in Config.AllowedCallers
//	503 auth_unavailable    secret file unreadable, discovery or keys unreachable
//	413 too_large           body over Config.MaxBodyBytes (1 MiB + 64 KiB)
//	400 malformed           not a delivery of either schema; an event without id, type or time
//	400 too_old             every event older than Config.MaxAge (1h)
//	503 not_leader          this replica is not the leader (Retry-After: 10)
//	405 method              not POST or OPTIONS
//
// Event Grid does not retry 400, 401, 403 and 413 (it dead-letters the
// delivery if the subscription has a dead-letter destination); it retries
// 503 after about 10s, 30s, 1m, ... An event older than MaxAge in a delivery
// with younger ones is dropped and counted, the rest is accepted. An event
// whose ID was published recently (the last Config.DuplicateIDs IDs, 10000)
// is acknowledged and not published again.
//
// # Replicas and leader election
//
// Every replica behind the Service serves (NeedLeaderElection is false), so
// that handshakes succeed wherever they land, but only the leader runs the
// controllers that consume changes: with AwaitLeader(mgr.Elected()) a
// replica that is not the leader answers deliveries 503 and Event Grid
// redelivers them, most likely to another replica. With two replicas about
// half the deliveries take a retry (10s or more) to arrive.
//
// # Serving
//
// Start listens on Config.BindAddress with TLS from Config.CertDir (tls.crt
// and tls.key, reloaded when they change), or plain HTTP with a warning
// when no certificate directory is set (an Ingress terminates TLS). It
// serves until its context ends, then shuts down within
// Config.ShutdownTimeout (5s). Health is Up while it serves; LastDelivery
// is the last publish. Each accepted delivery's changes are published in
// one sink.Publish, and the delivery is answered 200 at once, without
// waiting for the passes: a crash before they run is covered by the
// restart's full pass.
//
// # Metrics
//
// On controller-runtime's registry:
//
//	tagsync_eventgrid_deliveries_total{result}   accepted, handshake, refused, unavailable
//	tagsync_eventgrid_events_total{type,outcome} type: ResourceWriteSuccess, ... or other;
//	                                             outcome: published, ignored, duplicate, too_old
//	tagsync_eventgrid_refused_total{reason}      the reasons above
//
// # A delivery
//
// Someone sets tag team=blue on scale set pool1 with the Tags API. Event
// Grid POSTs to https://tagsync.example.com/eventgrid with the header
// X-Tagsync-Key: ... (Event Grid schema, one event):
//
//	[{
//	  "id": "0d8c5a8e-0f0a-4a3c-9a2b-6a4c2f1e9b71",
//	  "topic": "/subscriptions/00000000-0000-0000-0000-000000000001",
//	  "subject": "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg1/providers/Microsoft.Compute/virtualMachineScaleSets/pool1/providers/Microsoft.Resources/tags/default",
//	  "eventType": "Microsoft.Resources.ResourceWriteSuccess",
//	  "eventTime": "2026-11-25T15:00:00.1234567Z",
//	  "data": {
//	    "operationName": "Microsoft.Resources/tags/write",
//	    "resourceUri": "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg1/providers/Microsoft.Compute/virtualMachineScaleSets/pool1/providers/Microsoft.Resources/tags/default",
//	    "status": "Succeeded"
//	  },
//	  "dataVersion": "2", "metadataVersion": "1"
//	}]
//
// The key matches, the event is 2 s old and its ID new, so the webhook calls
// sink.Publish once with
//
//	[]cloudchange.Change{{Cloud: "azure", Kind: cloudchange.KindWrite,
//	    Resource: "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg1/providers/Microsoft.Compute/virtualMachineScaleSets/pool1",
//	    ID: "0d8c5a8e-0f0a-4a3c-9a2b-6a4c2f1e9b71", Time: 2026-11-25T15:00:00.1234567Z, Source: "eventgrid"}}
//
// and answers 200 with an empty body. The same event delivered again is
// answered 200 and not published; delivered three hours later, 400.
//
// # Configuration
//
//	eventgrid.Config{
//	    BindAddress: ":9443",
//	    CertDir:     "/etc/tagsync/eventgrid-tls",  // tls.crt, tls.key
//	    SecretFile:  "/etc/tagsync/eventgrid/key",  // and/or:
//	    TenantID:    "72f988bf-86f1-41af-91ab-2d7cd011db47",
//	    Audience:    "api://tagsync-eventgrid",
//	    AllowedCallers: []string{eventgrid.EventGridAppID}, // the default
//	}
//
// Path (/eventgrid), Authority (https://login.microsoftonline.com),
// AcceptV1Issuer, AllowedCallers, AuthorityClient (a client trusting a private CA, for a
// simulator), AuthorityTimeout, MaxBodyBytes, MaxAge, DuplicateIDs and ShutdownTimeout are
// optional. Validate reports a configuration that cannot work without
// reading any file; New also reads the secret file.
package eventgrid
