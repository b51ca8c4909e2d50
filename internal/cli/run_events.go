package cli

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/tagsync/tagsync/internal/cloud/aws"
	"github.com/tagsync/tagsync/internal/cloud/azure"
	"github.com/tagsync/tagsync/internal/cloud/clouds"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/cloudchange/eventgrid"
	"github.com/tagsync/tagsync/internal/cloudchange/sqs"
	"github.com/tagsync/tagsync/internal/operator"
)

// eventFlags are the flags of `tagsync run` that turn on cloud change
// events: the Azure Event Grid webhook and the AWS SQS queue
// (docs/events.md).
type eventFlags struct {
	webhook     eventgrid.Config
	advertise   string
	peerToken   string
	sqsQueueURL string
	sqsRegion   string
	sqsMaxHold  time.Duration
	sqsWait     time.Duration
	sqsRules    bool
	sqsRulesDue time.Duration
	silentAfter time.Duration
}

// bind binds the event flags; the hub's own settings go to op.
func (e *eventFlags) bind(fs *pflag.FlagSet, op *operator.EventsOptions) {
	fs.StringVar(&e.webhook.BindAddress, "events-webhook-bind-address", "",
		"address of the Azure Event Grid webhook, e.g. :9443 (unset: no webhook); needs --events-webhook-secret-file or the --events-webhook-entra-* flags")
	fs.StringVar(&e.webhook.CertDir, "events-webhook-cert-dir", "",
		"directory with the webhook's tls.crt and tls.key (reloaded on change); unset: plain HTTP behind an Ingress that terminates TLS")
	fs.StringVar(&e.webhook.SecretFile, "events-webhook-secret-file", "",
		"file with the shared secret deliveries carry in the "+eventgrid.KeyHeader+" header (preferred: access logs record query strings) or as ?"+
			eventgrid.KeyParameter+"=<secret> (one a line; each line is accepted, for rotation)")
	fs.StringVar(&e.webhook.TenantID, "events-webhook-entra-tenant-id", "", "Entra ID tenant whose delivery tokens the webhook accepts (with --events-webhook-entra-audience)")
	fs.StringVar(&e.webhook.Audience, "events-webhook-entra-audience", "", "application ID or URI the event subscription names for Entra ID-protected delivery")
	fs.StringVar(&e.webhook.Authority, "events-webhook-entra-authority", eventgrid.DefaultAuthority, "Entra ID authority the tenant's keys are fetched from")
	fs.StringSliceVar(&e.webhook.AllowedCallers, "events-webhook-entra-allowed-callers", nil,
		"application (client) IDs allowed to deliver with Entra ID tokens, e.g. Event Grid's "+eventgrid.EventGridAppID+
			" (Azure public cloud): a token's azp (v2) or appid (v1) must be one of them; unset: Event Grid's own application only ("+
			eventgrid.EventGridGovernmentAppID+" with Azure Government's authority, login.microsoftonline.us)")
	fs.StringVar(&e.advertise, "events-webhook-advertise-address", "",
		"host:port at which the other replicas reach this one's webhook: the leader writes it on its Lease, and followers forward the deliveries they receive there "+
			"(default: the bind address when it names a host, else $POD_IP with the bind address's port; neither: followers answer deliveries 503)")
	fs.StringVar(&e.peerToken, "events-webhook-peer-token-file", "",
		"file with this replica's service account token for the audience "+operator.PeerAudience+", bound to its Pod (a projected serviceAccountToken volume): "+
			"followers forward deliveries with it instead of the caller's credential, and only to the Pod the Lease names at that Pod's IP (unset: followers answer deliveries 503)")
	fs.StringVar(&e.webhook.PublicURL, "events-webhook-public-url", "",
		"the endpoint's address as Event Grid reaches it, e.g. https://tagsync-events.example.com/eventgrid (no key): probed every --events-webhook-probe-interval with the handshake, "+
			"and "+fmt.Sprint(eventgrid.ProbeFailures)+" failures in a row take the webhook down (Events=False, polling at the objects' intervals) even when nothing changes; unset: no probe")
	fs.DurationVar(&e.webhook.ProbeInterval, "events-webhook-probe-interval", eventgrid.DefaultProbeInterval, "how often --events-webhook-public-url is probed")
	fs.DurationVar(&e.webhook.MaxAge, "events-max-age", eventgrid.DefaultMaxAge, "events older than this are refused as replays (the safety-net poll covers what they said)")
	fs.StringVar(&e.sqsQueueURL, "events-sqs-queue-url", "", "SQS queue EventBridge sends AWS tag and EC2 state changes to (unset: no AWS events); uses the --aws-* credentials")
	fs.StringVar(&e.sqsRegion, "events-sqs-region", "", "region of --events-sqs-queue-url (default: from the URL)")
	fs.DurationVar(&e.sqsMaxHold, "events-sqs-max-hold", sqs.DefaultMaxHold,
		"how long an SQS message is kept hidden (its visibility timeout extended) while the passes it triggered run, at most 12h; then it is received again")
	fs.DurationVar(&e.sqsWait, "events-sqs-attribution-wait", 0,
		"how long an AWS tag change that removed tags waits for the CloudTrail event (AWS API Call via CloudTrail) naming who removed them, at most 10m; "+
			"a person's removal (console, root, IAM Identity Center) then reaches the labels whatever side the tag came from; needs the rule to send those events (docs/events.md); 0: no wait")
	fs.BoolVar(&e.sqsRules, "events-sqs-check-rules", true,
		"check every --events-sqs-rule-check-interval that an enabled EventBridge rule on the default event bus sends to the queue (events:ListRuleNamesByTarget, events:DescribeRule); none takes the source down (Events=False), which a quiet estate could not show otherwise")
	fs.DurationVar(&e.sqsRulesDue, "events-sqs-rule-check-interval", sqs.DefaultRuleCheckInterval, "how often the EventBridge rules that send to the queue are checked")
	fs.StringSliceVar(&op.Heartbeat, "events-heartbeat", nil,
		"resources (Azure resource IDs, ARNs of EC2 resources) on which the leader writes the tag "+operator.HeartbeatTag+" every --events-heartbeat-interval: "+
			"its event must come back within --events-silent-after, so a stream whose events stop (a deleted event subscription or rule, a filter) is noticed even when nothing changes; opt-in, one resource per subscription or account and region")
	fs.DurationVar(&op.HeartbeatInterval, "events-heartbeat-interval", operator.DefaultHeartbeatInterval, "how often the heartbeat tag is written")
	fs.DurationVar(&op.ResyncInterval, "events-resync-interval", cloudchange.DefaultResyncInterval,
		"while cloud change events are on and every event source delivers, how often NodeTagSyncs and CloudMetadata are still polled, as a safety net (never more often than they are configured to); while a source is down they poll at their own interval")
	fs.IntVar(&op.Capacity, "events-queue-size", cloudchange.DefaultCapacity,
		"cloud changes queued at most; a delivery that does not fit makes every object run one full pass instead")
	fs.DurationVar(&e.silentAfter, "events-silent-after", cloudchange.DefaultSilentAfter,
		"a cloud's events count as silent (condition Events=False EventsSilent, polling at the configured intervals) when the echo of tagsync's own write, or the event of a change a full pass found, has not arrived this long after; 0 turns the check off")
}

// silentAfter is the hub's SilentAfter for --events-silent-after (0: off).
func (e *eventFlags) hubSilentAfter() time.Duration {
	if e.silentAfter <= 0 {
		return -1
	}
	return e.silentAfter
}

// advertiseAddress is where the other replicas reach this one's webhook
// (--events-webhook-advertise-address, or its default); "" without a
// webhook or when nothing names this replica.
func (e *eventFlags) advertiseAddress() string {
	if e.webhook.BindAddress == "" {
		return ""
	}
	if e.advertise != "" {
		return e.advertise
	}
	host, port, err := net.SplitHostPort(e.webhook.BindAddress)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return e.webhook.BindAddress
	}
	if pod := os.Getenv("POD_IP"); pod != "" {
		return net.JoinHostPort(pod, port)
	}
	return ""
}

// sources returns the event sources the flags turn on: Azure's webhook,
// whose authority is reached with the trust of --azure-ca-file, and AWS's
// queue, with the AWS configuration of the --aws-* flags.
func (e *eventFlags) sources(set clouds.Set) ([]operator.EventSource, error) {
	var out []operator.EventSource
	var caFile string
	if az, ok := set.Get(azure.Kind.Name).(*azure.Settings); ok {
		caFile = az.CAFile()
	}
	var awsCfg aws.Config
	if a, ok := set.Get(aws.Kind.Name).(*aws.Settings); ok {
		awsCfg = a.Config
	}
	if e.webhook.BindAddress != "" {
		cfg := e.webhook
		if caFile != "" {
			client, err := azure.HTTPClientTrusting(caFile)
			if err != nil {
				return nil, err
			}
			cfg.AuthorityClient, cfg.ProbeClient = client, client
		}
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
		out = append(out, func(sink cloudchange.Sink) (cloudchange.Source, error) { return eventgrid.New(cfg, sink) })
	} else if e.webhook.SecretFile != "" || e.webhook.TenantID != "" || e.webhook.Audience != "" || e.webhook.CertDir != "" ||
		len(e.webhook.AllowedCallers) > 0 || e.advertise != "" || e.peerToken != "" || e.webhook.PublicURL != "" {
		return nil, errors.New("the --events-webhook-* flags need --events-webhook-bind-address")
	}
	if e.sqsQueueURL != "" {
		cfg := sqs.Config{QueueURL: e.sqsQueueURL, AWS: awsCfg, MaxHold: e.sqsMaxHold, AttributionWait: e.sqsWait, CheckRules: e.sqsRules, RuleCheckInterval: e.sqsRulesDue}
		if e.sqsRegion != "" {
			cfg.AWS.Region = e.sqsRegion
		}
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
		out = append(out, func(sink cloudchange.Sink) (cloudchange.Source, error) { return sqs.New(cfg, sink) })
	}
	return out, nil
}
