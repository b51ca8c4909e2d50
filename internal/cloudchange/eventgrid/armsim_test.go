package eventgrid

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/resources/armresources/v4"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/cloudchange"
	"github.com/tagsync/tagsync/internal/testenv"
)

// TestSimulatorDeliversToTheWebhook runs Event Grid end to end over real
// HTTP: the ARM simulator's event subscription passes the webhook's
// handshake, and a portal edit and a delete reach the sink as changes of
// the resource, in both delivery schemas and with either credential (the
// Entra ID token the simulator signs and the webhook checks against the
// simulator's tenant keys, from Event Grid's application as the allow-list
// of callers requires, or the shared secret in the URL).
func TestSimulatorDeliversToTheWebhook(t *testing.T) {
	const audience = "api://tagsync-events"
	cases := []struct {
		schema string
		entra  bool
	}{
		{armsim.SchemaEventGrid, true},
		{armsim.SchemaCloudEvents, false},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s entra=%v", tc.schema, tc.entra), func(t *testing.T) {
			t.Parallel()
			env := armsimtest.Start(t, armsimtest.WithRetrySchedule(20*time.Millisecond))
			cfg := Config{SecretFile: writeSecret(t, testKey)}
			if tc.entra {
				// Only Event Grid may deliver: the simulator's tokens name it
				// as their caller, as Azure's do.
				cfg = Config{Authority: env.Server.URL(), TenantID: armsim.DefaultTenantID, Audience: audience, AuthorityClient: env.HTTPClient,
					AllowedCallers: []string{EventGridAppID}}
			}
			ep := serve(t, cfg)
			props := armsimtest.WebHook(ep.keyURL(testKey))
			if tc.entra {
				props = armsimtest.WebHook(ep.url)
				props.Destination.Properties.AzureActiveDirectoryApplicationIDOrURI = audience
			}
			props.EventDeliverySchema = tc.schema
			env.Subscribe(t, "tagsync", props)

			estate := armsimtest.ClusterEstate{Infra: "ev", PerType: 1}
			if err := estate.Seed(env.Server); err != nil {
				t.Fatal(err)
			}
			disk := estate.ID(env.SubscriptionID, armsim.TypeDisk, 0)
			if err := env.Server.SetTags(disk, map[string]string{"env": "edited"}); err != nil {
				t.Fatal(err)
			}
			if err := env.Server.DeleteResource(disk); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, 30*time.Second, "the edit and the delete of "+disk+" at the sink", func() string {
				kinds := kindsOf(ep.sink.published(), disk)
				if strings.Join(kinds, ",") != "Write,Delete" {
					return fmt.Sprintf("changes of the disk %v; refused so far %v", kinds, refusals(t))
				}
				return ""
			})
		})
	}
}

// kindsOf lists, in order, the kinds of the published changes of resource.
func kindsOf(calls [][]cloudchange.Change, resource string) []string {
	var kinds []string
	for _, call := range calls {
		for _, c := range call {
			if strings.EqualFold(c.Resource, resource) {
				kinds = append(kinds, string(c.Kind))
			}
		}
	}
	return kinds
}

// refusals are the webhook's refusal counts by reason, for messages.
func refusals(t *testing.T) map[string]float64 {
	out := map[string]float64{}
	for _, r := range []string{"unauthenticated", "bad_key", "bad_token", "caller_not_allowed", "auth_unavailable", "malformed", "too_old"} {
		if n := counter(t, "refused_total", "reason", r); n > 0 {
			out[r] = n
		}
	}
	return out
}

// TestTheWriterOfAWriteReachesTheSink: the events of ARM writes carry the
// caller's claims; a person signed in (the Azure CLI's password sign-in)
// reaches the sink as a person, an application (tagsync's own service
// principal) as no person.
func TestTheWriterOfAWriteReachesTheSink(t *testing.T) {
	env := armsimtest.Start(t, armsimtest.WithRetrySchedule(20*time.Millisecond))
	ep := serve(t, Config{SecretFile: writeSecret(t, testKey)})
	env.Subscribe(t, "tagsync", armsimtest.WebHook(ep.keyURL(testKey)))
	estate := armsimtest.ClusterEstate{Infra: "who", PerType: 1}
	if err := estate.Seed(env.Server); err != nil {
		t.Fatal(err)
	}
	disk := estate.ID(env.SubscriptionID, armsim.TypeDisk, 0)
	merge := armresources.TagsPatchOperationMerge
	for _, cred := range []azcore.TokenCredential{env.Server.UserCredential("ana@example.com", "secret"), env.Credential} {
		tc, err := armresources.NewTagsClient(env.SubscriptionID, cred, env.ClientOptions)
		if err != nil {
			t.Fatal(err)
		}
		patch := armresources.TagsPatchResource{Operation: &merge, Properties: &armresources.Tags{Tags: map[string]*string{"env": to.Ptr("x")}}}
		poller, err := tc.BeginUpdateAtScope(t.Context(), disk, patch, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := poller.PollUntilDone(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 30*time.Second, "both writes of "+disk+" at the sink, with their writers", func() string {
		var writers []cloudchange.Writer
		for _, call := range ep.sink.published() {
			for _, c := range call {
				if strings.EqualFold(c.Resource, disk) {
					writers = append(writers, c.Writer)
				}
			}
		}
		if len(writers) != 2 || writers[0] != (cloudchange.Writer{ID: "ana@example.com", Person: true}) ||
			writers[1].Person || writers[1].ID != armsimtest.ClientID {
			return fmt.Sprintf("writers %+v", writers)
		}
		return ""
	})
}
