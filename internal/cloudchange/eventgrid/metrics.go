package eventgrid

import tagmetrics "github.com/tagsync/tagsync/internal/metrics"

const metrics = tagmetrics.Subsystem("eventgrid")

var (
	deliveriesTotal = metrics.Counter("deliveries_total",
		"Deliveries (HTTP requests to the endpoint) by result: accepted, handshake, forwarded (by a follower, to the leader), refused, unavailable.", "result")
	eventsTotal = metrics.Counter("events_total",
		"Events received in accepted deliveries, by type (ResourceWriteSuccess, ..., other) and outcome (published, ignored, duplicate, too_old).",
		"type", "outcome")
	refusedTotal = metrics.Counter("refused_total",
		"Deliveries refused, by reason: unauthenticated, bad_key, bad_token, caller_not_allowed, bad_peer (a forwarded delivery without a replica's proof), auth_unavailable, too_large, malformed, too_old, not_leader, no_leader, queue_full (retried by Event Grid), method.",
		"reason")
	publicUp = metrics.Gauge("public_endpoint_up",
		"1 while the public endpoint (--events-webhook-public-url) answers the webhook's probe, 0 after 2 failed probes in a row.")
	probeFailuresTotal = metrics.Counter("probe_failures_total",
		"Probes of the public endpoint that did not reach the webhook (an error, another status than 200, or an answer that is not this webhook's).")
	fetchesLimitedTotal = metrics.Counter("key_fetches_limited_total",
		"Fetches of the tenant's signing keys declined by the rate limit (3, then one every 10 s): tokens naming keys not in the cache, answered 503.")
	untrustedTotal = metrics.Counter("untrusted_leader_total",
		"Times a follower did not forward a delivery to the leader the Lease names, or relay its answer, because it could not verify it (the Lease names a Pod that is gone or elsewhere, an answer without the leader's proof).")
)

// Delivery results.
const (
	resultAccepted    = "accepted"
	resultHandshake   = "handshake"
	resultRefused     = "refused"
	resultUnavailable = "unavailable"
	resultForwarded   = "forwarded"
)

// Event outcomes.
const (
	outcomePublished = "published"
	outcomeIgnored   = "ignored"
	outcomeDuplicate = "duplicate"
	outcomeTooOld    = "too_old"
)

// Refusal reasons.
const (
	reasonUnauthenticated  = "unauthenticated"
	reasonBadKey           = "bad_key"
	reasonBadToken         = "bad_token"
	reasonCallerNotAllowed = "caller_not_allowed"
	reasonBadPeer          = "bad_peer"
	reasonAuthUnavailable  = "auth_unavailable"
	reasonTooLarge         = "too_large"
	reasonMalformed        = "malformed"
	reasonTooOld           = "too_old"
	reasonNotLeader        = "not_leader"
	reasonNoLeader         = "no_leader"
	reasonQueueFull        = "queue_full"
	reasonMethod           = "method"
)

// The series alerts compare exist from the start, at zero.
func init() {
	untrustedTotal.WithLabelValues()
	probeFailuresTotal.WithLabelValues()
	fetchesLimitedTotal.WithLabelValues()
	for _, r := range []string{resultAccepted, resultHandshake, resultRefused, resultUnavailable, resultForwarded} {
		deliveriesTotal.WithLabelValues(r)
	}
	for _, r := range []string{reasonUnauthenticated, reasonBadKey, reasonBadToken, reasonCallerNotAllowed, reasonBadPeer, reasonAuthUnavailable,
		reasonTooLarge, reasonMalformed, reasonTooOld, reasonNotLeader, reasonNoLeader, reasonQueueFull, reasonMethod} {
		refusedTotal.WithLabelValues(r)
	}
}
