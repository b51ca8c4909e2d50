package cli

import (
	"regexp"
	"strings"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/cloud/aws/awstest"
	"github.com/tagsync/tagsync/internal/testenv"
)

// jwtPattern matches anything shaped like a bearer token.
var jwtPattern = regexp.MustCompile(`eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.`)

// assertNoSecret fails when the output shows a secret or a token.
func assertNoSecret(t *testing.T, output string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(output, s) {
			t.Errorf("login printed the secret %q:\n%s", s, output)
		}
	}
	if m := jwtPattern.FindString(output); m != "" {
		t.Errorf("login printed a token (%s...):\n%s", m, output)
	}
}

// armsimCloudFlags are the cloud flags that reach armsim through tagsync run's
// client-secret chain, with the secret in a file.
func armsimCloudFlags(t *testing.T, sim *armsimtest.Env, secret string) []string {
	t.Helper()
	file := writeFile(t, "secret", secret)
	url := sim.Server.URL()
	return []string{"--azure-arm-endpoint=" + url, "--azure-arm-audience=" + url, "--azure-authority-host=" + url,
		"--azure-ca-file=" + sim.Server.CAFile(), "--azure-auth-mode=client-secret", "--azure-tenant-id=" + sim.Server.TenantID(),
		"--azure-client-id=" + armsimtest.ClientID, "--azure-client-secret-file=" + file, "--azure-subscription=" + armsimtest.SubscriptionID}
}

// runLoginCLI runs `tagsync login args...`.
func runLoginCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, errOut, err := runVerb(t.Context(), NewLoginCommand(), append([]string{"login"}, args...)...)
	return out + errOut, err
}

// TestLoginAzure: against armsim with the real Azure SDK, login names the
// tenant and client from the token, passes every check for an owner (exit
// 0), names the missing write permission of a reader (exit 3), fails
// without identity for a wrong secret (exit 1), and never shows the secret
// or a token.
func TestLoginAzure(t *testing.T) {
	sim := armsimtest.Start(t, armsimtest.WithOptions(func(o *armsim.Options) {
		o.ClientSecrets = map[string]string{armsimtest.ClientID: armsimtest.ClientSecret}
	}))
	out, err := runLoginCLI(t, append(armsimCloudFlags(t, sim, armsimtest.ClientSecret), "azure")...)
	if err != nil {
		t.Fatalf("login: %v\n%s", err, out)
	}
	for _, want := range []string{"Azure (credential: client-secret)", "tenant:    " + sim.Server.TenantID(), "client ID: " + armsimtest.ClientID,
		"ok      Microsoft.Resources/tags/write", "ok      Resource Graph query"} {
		if !strings.Contains(out, want) {
			t.Errorf("login does not say %q:\n%s", want, out)
		}
	}
	assertNoSecret(t, out, armsimtest.ClientSecret)

	sim.Server.SetPermissions(armsimtest.ClientID, "*/read")
	out, err = runLoginCLI(t, append(armsimCloudFlags(t, sim, armsimtest.ClientSecret), "azure")...)
	if ExitCode(err) != ExitLoginMissing || !strings.Contains(out, "MISSING Microsoft.Resources/tags/write") ||
		!strings.Contains(out, "ok      Microsoft.Resources/tags/read") {
		t.Errorf("a reader: exit %d (%v), want %d naming tags/write missing:\n%s", ExitCode(err), err, ExitLoginMissing, out)
	}
	assertNoSecret(t, out, armsimtest.ClientSecret)

	out, err = runLoginCLI(t, append(armsimCloudFlags(t, sim, "not-the-secret-42"), "azure")...)
	if ExitCode(err) != 1 || !strings.Contains(out, "no identity") {
		t.Errorf("a wrong secret: exit %d (%v), want 1 saying there is no identity:\n%s", ExitCode(err), err, out)
	}
	assertNoSecret(t, out, armsimtest.ClientSecret, "not-the-secret-42")
}

// TestLoginAzureUnknownSubscription: a subscription armsim does not know
// is one clear line (not the SDK's error block), and the Resource Graph
// check fails with it instead of passing on an empty answer (exit 3).
func TestLoginAzureUnknownSubscription(t *testing.T) {
	sim := armsimtest.Start(t)
	const unknown = "99999999-0000-4000-8000-000000000099"
	out, err := runLoginCLI(t, append(armsimCloudFlags(t, sim, armsimtest.ClientSecret), "azure", "--subscription", unknown)...)
	if ExitCode(err) != ExitLoginMissing {
		t.Errorf("exit %d (%v), want %d:\n%s", ExitCode(err), err, ExitLoginMissing, out)
	}
	for _, want := range []string{"MISSING subscription " + unknown + ": not found, or not visible to this identity", "MISSING Resource Graph query"} {
		if !strings.Contains(out, want) {
			t.Errorf("login does not say %q:\n%s", want, out)
		}
	}
	for _, raw := range []string{"RESPONSE", "ERROR CODE", "-----", "ok      Resource Graph"} {
		if strings.Contains(out, raw) {
			t.Errorf("login prints %q:\n%s", raw, out)
		}
	}
}

// TestLoginAWS: against moto, login names moto's account and caller ARN
// (sts:GetCallerIdentity), and checks tag:GetResources and the tag writes
// as dry runs on a classified instance without writing a tag, and the
// node sync's reads of instances and Auto Scaling groups, and the event
// source's read of its SQS queue.
func TestLoginAWS(t *testing.T) {
	moto := testenv.StartMoto(t)
	id := awstest.RunInstances(t, moto, 1, map[string]string{"kubernetes.io/cluster/login": "owned"})[0]
	const secret = "moto-secret-never-printed-7f3a"
	queue, err := sqs.NewFromConfig(moto.Config).CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: sdkaws.String("tagsync-login")})
	if err != nil {
		t.Fatal(err)
	}
	args := append(awsFlagsWith(t, moto, secret), "aws", "--classifier=kubernetes.io/cluster/login=owned", "--events-sqs-queue-url="+*queue.QueueUrl)
	// No EventBridge rule sends to the queue yet: it would receive nothing.
	out, err := runLoginCLI(t, args...)
	if ExitCode(err) != ExitLoginMissing || !strings.Contains(out, "MISSING events:ListRuleNamesByTarget: allowed, but no EventBridge rule") {
		t.Fatalf("login with no rule sending to the queue: exit %d (%v), want %d naming the missing rule:\n%s", ExitCode(err), err, ExitLoginMissing, out)
	}
	arn := "arn:aws:sqs:" + testenv.MotoRegion + ":" + testenv.MotoAccountID + ":tagsync-login"
	eb := eventbridge.NewFromConfig(moto.Config)
	if _, err := eb.PutRule(t.Context(), &eventbridge.PutRuleInput{Name: sdkaws.String("tagsync-login"),
		EventPattern: sdkaws.String(`{"source":["aws.tag"]}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := eb.PutTargets(t.Context(), &eventbridge.PutTargetsInput{Rule: sdkaws.String("tagsync-login"),
		Targets: []ebtypes.Target{{Id: sdkaws.String("queue"), Arn: &arn}}}); err != nil {
		t.Fatal(err)
	}
	out, err = runLoginCLI(t, args...)
	if err != nil {
		t.Fatalf("login: %v\n%s", err, out)
	}
	for _, want := range []string{"AWS (region " + testenv.MotoRegion + ")", "account: " + testenv.MotoAccountID, "ARN:     arn:aws:",
		"ok      tag:GetResources", "ok      ec2:CreateTags: allowed on " + id, "ok      ec2:DeleteTags: allowed on " + id,
		"ok      ec2:DescribeInstances", "ok      autoscaling:DescribeAutoScalingGroups",
		"unknown autoscaling:CreateOrUpdateTags, autoscaling:DeleteTags: not checked",
		"ok      sqs:GetQueueAttributes: read " + *queue.QueueUrl, "ok      events:ListRuleNamesByTarget: 1 EventBridge rule(s) send to " + arn,
		"ok      events:DescribeRule: read the rule tagsync-login (ENABLED)", "unknown sqs:ReceiveMessage, sqs:DeleteMessage: not checked"} {
		if !strings.Contains(out, want) {
			t.Errorf("login does not say %q:\n%s", want, out)
		}
	}
	assertNoSecret(t, out, secret)
	if tags := awstest.Tags(t, moto, id); len(tags) != 1 {
		t.Errorf("the dry runs wrote tags: %v", tags)
	}
}
