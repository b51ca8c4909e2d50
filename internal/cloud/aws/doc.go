// Package aws is tagsync's AWS provider (cloud.ClassifiedProvider) on the
// AWS SDK for Go v2. On AWS tagsync syncs the tags of EC2 resources that it
// finds by classifier tags; it does not sync nodes with their instances (the
// provider is no cloud.NodeProvider, so a NodeTagSync naming it is refused
// as an invalid spec).
//
// Construct it with NewProvider(ctx, Config, ...Option). It keeps one EC2
// client and one Resource Groups Tagging API client per region, created on
// first use.
//
// # Discovery
//
// Discover searches each region of DiscoverOptions.Scopes (default: the
// provider's region) with the Resource Groups Tagging API: GetResources,
// 100 resources a page (the maximum), restricted to EC2 resource types
// (DefaultResourceTypes, or WithResourceTypes). It sends one request
// chain per classifier name and region: the API ANDs the tag filters of one
// request, so OR-ed classifiers need a request each, but the values of one
// name share a filter (the API ORs them). Tag keys are case-sensitive on
// AWS, and so are the filters. Results are united by ARN, so a resource
// carrying several classifiers appears once, and sorted by
// cloud.CanonicalID (lower-casing is harmless for EC2 ARNs, which are
// lower-case throughout). Classified.ID is the ARN, Type the ARN's
// "service:type" (e.g. "ec2:instance"), Scope the region, Rules
// tags.AWSRules. A region whose search fails goes to Discovery.Failed as
// "region <name>" with the typed error; Discovery.Calls counts the requests
// sent, SDK retries included. The Tagging API is eventually consistent: a
// resource tagged a moment ago may be missing from a search, a deleted one
// may linger.
//
// # Batching
//
// WriteTags groups each TagWrite's IDs (ARNs, or bare EC2 resource IDs in
// the provider's region) by region and sends one DeleteTags for the
// patch's deletions (each name with its TagWrite.Expect value where there
// is one: EC2 then deletes the tag only where it still has that value),
// then one CreateTags for its sets, each with up to 1000 resource IDs (EC2's
// limit per call). 150 resources sharing a patch cost one call per
// operation, not 150.
//
// EC2 refuses a whole call for one bad resource: a missing one
// (Invalid*ID.NotFound, which names the missing IDs), one at its 50-tag
// limit (TagLimitExceeded, which names none), one the caller may not tag
// (UnauthorizedOperation, e.g. under an ec2:ResourceTag condition). So that
// one bad resource does not fail the others, a batch call failing with one
// of these is followed by extra calls: the resources the message names fail
// and the others are sent again; when it names none, the batch is halved
// and each half sent again, down to single resources. The extra calls are
// at most Options.MaxIsolationCalls per batch call (DefaultMaxIsolationCalls:
// a named missing resource costs one extra call, one unnamed bad resource
// among 1000 about 20); resources still unresolved then fail with the
// batch's error, without its cloud kind when other resources of the batch
// were written, with it when none was (a credential lacking the permission
// costs the extra calls, then fails every resource with
// cloud.ErrForbidden). Any other error (throttling, an
// invalid tag, a transport failure) fails the whole call's resources at
// once, without extra calls.
//
// # Errors
//
// Errors read as one line (the operation and resource, then "EC2 answered
// <status> <code>: <message> (request <id>)"), unwrap to the SDK's errors
// (smithy.APIError, *smithy.OperationError) and report their kind to
// errors.Is: cloud.ErrThrottled (RequestLimitExceeded, Throttling* and the
// SDK's other throttle codes; the error then is or wraps a
// *cloud.ThrottledError with a RetryAfter), cloud.ErrForbidden
// (UnauthorizedOperation, AccessDenied*, AuthFailure, OptInRequired,
// unknown credentials), cloud.ErrNotFound (Invalid*.NotFound,
// Invalid*.Malformed, InvalidID) and cloud.ErrTooManyTags
// (TagLimitExceeded).
//
// # Throttling
//
// AWS meters API requests per account and region, and sends no
// Retry-After. The SDK's retryer retries throttled calls with back-off
// (WithRetryMaxAttempts). Besides, a throttled answer closes the gate of
// its (service, region, bucket) — buckets are reads (Describe*, Get*,
// List*) and writes — for DefaultThrottleWait, doubling while throttling
// goes on up to MaxThrottleWait. While it is closed every other attempt
// through it is not sent and fails at once with a *cloud.ThrottledError
// whose RetryAfter is the wait left, and tagsync_cloud_requests_held_total
// counts it; only the SDK's retries of the throttled call itself pass. The
// gates (ThrottleGates) are process-wide (DefaultThrottleGates) unless
// WithThrottleGates gives a Provider its own.
//
// Before AWS throttles anything, every attempt that passes the gate waits
// for the Provider's client-side budget (RateLimit, WithRateLimit): a token
// bucket per region and bucket, by default 15 reads per second (burst 50)
// and 4 writes per second (burst 40), under EC2's own buckets, so passes
// over many regions at once stay within them. An attempt whose context's
// deadline comes before its token fails at once, unsent. The bucket is
// cloud.TokenBucket, which the Azure provider's budget paces with too.
//
// # Metrics
//
// Every HTTP attempt, SDK retries included, is counted by a smithy
// middleware in tagsync_cloud_requests_total{provider="aws",operation,code}
// and timed in tagsync_cloud_request_duration_seconds{provider="aws",
// operation} — every provider's cloud.RequestMetrics, told apart by the provider
// label; operation is the IAM action ("ec2:CreateTags",
// "tag:GetResources"), code the HTTP status or "error".
// tagsync_cloud_throttled_total counts throttled answers. Provider.Calls
// returns the same counts by operation.
//
// # Credentials
//
// Config's static keys (AccessKeyID, SecretAccessKey, optionally
// SessionToken) win when given; otherwise config.LoadDefaultConfig's chain
// applies: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, the shared files
// (Config.Profile or AWS_PROFILE), web identity (IRSA: AWS_ROLE_ARN and
// AWS_WEB_IDENTITY_TOKEN_FILE, which EKS injects for an annotated service
// account), container credentials (EKS Pod Identity:
// AWS_CONTAINER_CREDENTIALS_FULL_URI and
// AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE), then the EC2 instance profile
// through IMDS. The region is Config.Region, else AWS_REGION,
// AWS_DEFAULT_REGION or the profile's. Printing a Config never shows a
// credential (Secret).
//
// # IAM
//
// The provider needs these actions, on every resource it discovers or
// writes:
//
//   - tag:GetResources (Discover)
//   - ec2:CreateTags (WriteTags)
//   - ec2:DeleteTags (WriteTags)
package aws
