package e2e_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/controller/metadata"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// federatedToken is a JWT-shaped service account token, as the workload
// identity webhook projects into the pod (armsim does not check its
// signature).
const federatedToken = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6dGFnc3luYy1zeXN0ZW06dGFnc3luYyJ9.c2ln"

// TestEachAuthModeOfTheChartGetsTokensAndSyncs runs `tagsync run` with the
// arguments the chart's Deployment renders for each auth mode's values file,
// plus what the platform would provide in a cluster -- the workload identity
// webhook's federated token file, the managed identity endpoint, the Secret
// mounted where the chart points --azure-client-secret-file -- with the
// endpoints aimed at armsim (HTTPS). Each mode must get a token and sync a
// tag to a label.
func TestEachAuthModeOfTheChartGetsTokensAndSyncs(t *testing.T) {
	ctx := context.Background()
	cloud := armsimtest.Start(t)
	s := cloud.Server
	_, err := s.CreateResourceGroup(cloud.SubscriptionID, armsim.ResourceGroup{Name: "MC_auth", Location: "westeurope"})
	must(t, err)
	kubeconfig := writeKubeconfig(t, "")
	for mode, file := range authModes {
		t.Run(mode, func(t *testing.T) {
			cleanupSyncObjects(t)
			objs := renderChart(t, "tagsync-system", "--values", filepath.Join(kube.RootDir, file))
			args := deploymentArgs(t, objs)
			var env []string
			switch mode {
			case "workloadIdentity":
				env = []string{"AZURE_FEDERATED_TOKEN_FILE=" + tempFile(t, "azure-identity-token", federatedToken)}
			case "managedIdentity":
				for k, v := range s.ManagedIdentityEnv() {
					env = append(env, k+"="+v)
				}
			case "servicePrincipal":
				i := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "--azure-client-secret-file=") })
				if i < 0 {
					t.Fatalf("the chart's args %v do not read a client secret file", args)
				}
				// The Secret's key, mounted as a file of the same name.
				name := filepath.Base(strings.TrimPrefix(args[i], "--azure-client-secret-file="))
				args[i] = "--azure-client-secret-file=" + tempFile(t, name, armsimtest.ClientSecret)
			}
			args = append(args, "--kubeconfig="+kubeconfig, "--leader-elect=false",
				"--azure-authority-host="+s.URL(), "--azure-arm-endpoint="+s.URL(), "--azure-arm-audience="+s.URL(),
				"--azure-ca-file="+s.CAFile(), "--azure-tenant-id="+s.TenantID(), "--azure-subscription="+cloud.SubscriptionID)

			vm, err := s.CreateVM(cloud.SubscriptionID, "MC_auth", armsim.VirtualMachine{Name: "vm-" + strings.ToLower(mode), Tags: map[string]string{"mode": mode}})
			must(t, err)
			node := "auth-" + strings.ToLower(mode)
			must(t, kube.Client.Create(ctx, build.Node(node, build.ProviderID("azure://"+vm))))
			must(t, kube.Client.Create(ctx, build.NodeTagSync("auth")))

			p := startTagsyncEnv(t, "tagsync ("+mode+")", env, args...)
			eventually(t, "the tag mode="+mode+" as a label on "+node, func() string {
				if got := nodeLabels(ctx, t, node)["azure.tags/mode"]; got != mode {
					return fmt.Sprintf("label is %q", got)
				}
				return ""
			})
			p.stop(t)
		})
	}
}

// TestAWSOnlyValuesStartTheMetadataController runs `tagsync run` with the
// arguments the chart renders for ci/aws-irsa-values.yaml: no Azure
// identity at all (azure.authMode default), the metadata controller alone,
// two namespaces, an AWS region. The process must start (no Azure setting
// is required of it) and serve an AWSMetadata of a served namespace with
// its AWS provider configured: without AWS credentials here (no IRSA token,
// instance metadata off) the pass reports why it could not discover, and
// not ProviderNotConfigured.
func TestAWSOnlyValuesStartTheMetadataController(t *testing.T) {
	ctx := context.Background()
	objs := renderChart(t, "tagsync-system", "--values", filepath.Join(kube.RootDir, awsModes["awsIRSA"]))
	args := deploymentArgs(t, objs)
	wantArgs(t, append([]string{"run"}, args...), "--azure-auth-mode=default", "--controllers=metadata", "--aws-region=us-east-1")
	for _, ns := range []string{"platform", "team-a"} {
		ensureNamespace(ctx, t, ns)
	}
	args = append(args, "--kubeconfig="+writeKubeconfig(t, ""), "--leader-elect=false")
	p := startTagsyncEnv(t, "tagsync (aws-irsa values)", []string{"AWS_EC2_METADATA_DISABLED=true"}, args...)

	req := build.AWSMetadata("irsa-aws", build.Namespace("platform"), build.Opcode(v1alpha1.OpcodeAdd), build.ResourceTags(map[string]string{"env": "prod"}))
	cm := build.CloudMetadata("irsa", build.Namespace("platform"), build.Classifiers(map[string]string{"kubernetes.io/cluster/irsa": "owned"}),
		build.AWSRef(req.Name))
	create := createDeletedAtEnd(t, ctx, kube.Client)
	create(req)
	create(cm)
	c := waitAWSRequest(ctx, t, req.Namespace, req.Name, "served with the AWS provider configured", func(c *metav1.Condition) bool {
		return c.Reason != metadata.ReasonProviderNotConfigured
	})
	t.Logf("served: Request=%s %s: %s", c.Status, c.Reason, c.Message)
	if !p.running() {
		t.Fatalf("the process exited:\n%s", tail(p.logs(), 40))
	}
	p.stop(t)
}
