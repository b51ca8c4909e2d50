// Package aws is tagsync's AWS provider (cloud.ClassifiedProvider and
// cloud.NodeProvider) on the AWS SDK for Go v2. On AWS tagsync syncs the
// tags of EC2 resources that it finds by classifier tags, and syncs nodes
// (NodeTagSync, provider aws) with their EC2 instances or Auto Scaling
// groups.
//
// Construct it with NewProvider(ctx, Config, ...Option). It keeps one EC2,
// one Resource Groups Tagging API and one Auto Scaling client per region,
// created on first use.
//
// # Node sync
//
// A node's spec.providerID, aws:///<zone>/<instance-id>, names its EC2
// instance and, through the zone, its region: an Availability Zone is its
// region and a letter (us-east-1a), a Local Zone (us-west-2-lax-1a) or
// Wavelength Zone (us-east-1-wl1-bos-wlz-1) its parent region and a suffix,
// and the instance is an EC2 instance of that region. aws:////<instance-id>
// (no zone) is in the provider's region. Nodes without a providerID, with
// another cloud's, or of Fargate (a providerID containing "fargate":
// Fargate pods' nodes carry no EC2 tags) are unmanaged, with a reason, and
// cost no call.
//
// The Auto Scaling group plays Azure's scale set. An instance's group is
// its tag aws:autoscaling:groupName. Under cloud.TargetScaleSet a node
// syncs with its group (Placement.Shared: the group's nodes aggregate), and
// its instance is the placement's Member (its tags in Snapshot.Resources),
// which the node sync keeps carrying the group's synced tags; the group's
// tags whose PropagateAtLaunch is false are its Resource.OwnOnly;
// under cloud.TargetInstance with its own instance. An instance in no group
// (Karpenter's, a standalone one) syncs with itself under both targets,
// with a Placement.Note saying so under TargetScaleSet. Resource IDs are
// ARNs: arn:aws:ec2:<region>:<account>:instance/<id> for instances, the
// group's own ARN
// (arn:aws:autoscaling:<region>:<account>:autoScalingGroup:<uuid>:autoScalingGroupName/<name>)
// for groups; cloud.CanonicalID lower-cases them without collisions, since
// the group ARN's UUID tells apart names that differ only in case.
//
// Snapshot reads in bulk, per region: one DescribeInstances per
// MaxFilterValues instances, by the instance-id filter (not InstanceIds, with
// which one unknown ID fails the whole call; an unknown or terminated
// instance is simply missing, and its node unmanaged), and, under
// TargetScaleSet only, one DescribeAutoScalingGroups per GroupsPerRead
// groups. So a pass over N instances in G groups costs
// ceil(N/200) + ceil(G/100) reads, or none while its reads are younger
// than Options.CacheTTL (ReadOptions.Fresh bypasses the cache).
// ReadOptions.Scopes are region names: nodes of other regions are
// unmanaged. A failed read fails its region's nodes that needed it
// (Snapshot.Failed, scope "region <name>"), no other. Resource tags never
// include AWS's own aws: tags (tagsync can neither write nor delete them,
// and they do not count against the limit of 50).
//
// After a change event, ReadOptions.Resources (canonical ARNs) makes the
// read targeted: the changed instances are read fresh in one
// DescribeInstances, the changed groups in one DescribeAutoScalingGroups
// by name, and everything else the nodes need (a changed group's
// instances, for their group) comes from the cache while it holds it.
// TakeTags (cloud.CarriedTagsTaker) takes the tags an aws.tag event
// carried for an instance or a group into the cache, when the cache's read
// is older than the change, so a pass that synced from the event is not
// undone by a later pass reading the cache.
//
// PatchTags reads the resource afresh and writes only what changes. An
// instance costs DescribeInstances, DeleteTags (conditional on the values
// read) and CreateTags. A group costs DescribeAutoScalingGroups, Auto
// Scaling's DeleteTags and CreateOrUpdateTags (a new tag with
// PropagateAtLaunch, so instances launched later carry it; a changed one
// keeps the flag it had), then one EC2 DeleteTags and one CreateTags for
// all its current instances (not of tags that do not propagate). Patches naming aws: tags are
// refused, and so are patches that would leave more than 50 tags
// (cloud.ErrTooManyTags), before any call. Tag keys are case-sensitive:
// "Env" and "env" are two tags.
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
// TagRules. A region whose search fails goes to Discovery.Failed as
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
// through it waits for it to open when that is at most MaxThrottleHold
// away and the attempt's context lasts that long, so throttling slows a
// pass down instead of failing it; a gate closed for longer fails the
// attempt at once, unsent, with a *cloud.ThrottledError whose RetryAfter
// is the wait left, and tagsync_cloud_requests_held_total counts it (the
// caller retries after RetryAfter). Only the SDK's retries of the
// throttled call itself pass at once. The
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
//   - ec2:CreateTags (WriteTags, PatchTags)
//   - ec2:DeleteTags (WriteTags, PatchTags)
//   - ec2:DescribeInstances (Snapshot, PatchTags)
//   - autoscaling:DescribeAutoScalingGroups (Snapshot, PatchTags)
//   - autoscaling:CreateOrUpdateTags (PatchTags of a group)
//   - autoscaling:DeleteTags (PatchTags of a group)
package aws
