package cli

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/tagsync/tagsync/internal/cloud/clouds"
	"github.com/tagsync/tagsync/internal/cloudchange/eventgrid"
	"github.com/tagsync/tagsync/internal/cloudchange/sqs"
	"github.com/tagsync/tagsync/internal/operator"
)

// parseEventFlags parses args as the --events-* flags of `tagsync run`.
func parseEventFlags(t *testing.T, args ...string) *eventFlags {
	t.Helper()
	var e eventFlags
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	e.bind(fs, &operator.EventsOptions{})
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return &e
}

// TestEventsFlagsCallerAllowListAndMaxHold: the webhook's caller allow-list
// and the SQS source's longest hold reach their configurations, default to
// none and 15 min, and are refused where they cannot work.
func TestEventsFlagsCallerAllowListAndMaxHold(t *testing.T) {
	const queue = "--events-sqs-queue-url=https://sqs.us-east-1.amazonaws.com/123456789012/tagsync-events"
	const other = "0b5f3c1e-7d2a-4e69-8c41-9a6d2f0e1b37"
	e := parseEventFlags(t, "--events-webhook-bind-address=:9443", "--events-webhook-entra-tenant-id=t", "--events-webhook-entra-audience=a",
		"--events-webhook-entra-allowed-callers="+eventgrid.EventGridAppID+","+other, queue, "--events-sqs-max-hold=30m")
	if !slices.Equal(e.webhook.AllowedCallers, []string{eventgrid.EventGridAppID, other}) || e.sqsMaxHold != 30*time.Minute {
		t.Errorf("allowed callers %v, max hold %s; want both IDs and 30m", e.webhook.AllowedCallers, e.sqsMaxHold)
	}
	if sources, err := e.sources(clouds.Set{}); err != nil || len(sources) != 2 {
		t.Errorf("sources: %d, %v; want the webhook and the queue", len(sources), err)
	}
	if d := parseEventFlags(t); d.webhook.AllowedCallers != nil || d.sqsMaxHold != sqs.DefaultMaxHold {
		t.Errorf("defaults: allowed callers %v, max hold %s; want none and %s", d.webhook.AllowedCallers, d.sqsMaxHold, sqs.DefaultMaxHold)
	}

	refused := []struct {
		name string
		args []string
		want string
	}{
		{"callers without the webhook", []string{"--events-webhook-entra-allowed-callers=" + eventgrid.EventGridAppID}, "need --events-webhook-bind-address"},
		{"callers without Entra", []string{"--events-webhook-bind-address=:9443", "--events-webhook-secret-file=/k",
			"--events-webhook-entra-allowed-callers=" + eventgrid.EventGridAppID}, "need Entra ID bearer tokens"},
		{"a caller that is no application ID", []string{"--events-webhook-bind-address=:9443", "--events-webhook-entra-tenant-id=t",
			"--events-webhook-entra-audience=a", "--events-webhook-entra-allowed-callers=api://eventgrid"}, "not an application (client) ID"},
		{"a hold over 12 h", []string{queue, "--events-sqs-max-hold=13h"}, "longest hold"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := parseEventFlags(t, tc.args...).sources(clouds.Set{}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("sources() = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestWebhookAdvertiseAddress: the address followers forward deliveries to
// is the flag's, else the bind address when it names a host, else the Pod
// IP (the chart's POD_IP) with the bind address's port; nothing without a
// webhook or anything naming the replica.
func TestWebhookAdvertiseAddress(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		podIP string
		want  string
	}{
		{[]string{"--events-webhook-bind-address=:9443"}, "10.244.1.7", "10.244.1.7:9443"},
		{[]string{"--events-webhook-bind-address=0.0.0.0:9443"}, "fd00::7", "[fd00::7]:9443"},
		{[]string{"--events-webhook-bind-address=127.0.0.1:8000"}, "10.244.1.7", "127.0.0.1:8000"},
		{[]string{"--events-webhook-bind-address=:9443", "--events-webhook-advertise-address=tagsync-0.tagsync:9443"}, "10.244.1.7", "tagsync-0.tagsync:9443"},
		{[]string{"--events-webhook-bind-address=:9443"}, "", ""},
		{nil, "10.244.1.7", ""},
	} {
		t.Setenv("POD_IP", tc.podIP)
		if got := parseEventFlags(t, tc.args...).advertiseAddress(); got != tc.want {
			t.Errorf("%v with POD_IP=%q: %q, want %q", tc.args, tc.podIP, got, tc.want)
		}
	}
}
