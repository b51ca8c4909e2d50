package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/armsim/armsimtest"
	"github.com/tagsync/tagsync/internal/audit"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// TestAuditSurvivesKill9 applies a tag to a few hundred classified
// resources in armsim through the real `tagsync run` (metadata controller,
// audit log in a file) with ARM slowed down, kills the process with
// SIGKILL while the writes are under way (some resources carry the tag,
// not all), and then counts: every resource whose tag changed in the cloud
// has a line in the audit file. A line is the pending record written
// before the request or the result written after it; resources changed
// with only a pending line are those whose answer the kill cut off (or
// whose result line it did), and are reported.
func TestAuditSurvivesKill9(t *testing.T) {
	ctx := context.Background()
	const ns = "audit-kill"
	ensureNamespace(ctx, t, ns)
	arm := armsimtest.Start(t)
	estate := armsimtest.ClusterEstate{Infra: "killed", PerType: 30, Tags: map[string]string{"kubernetes.io_cluster.killed": "owned"}}
	must(t, estate.Seed(arm.Server))
	ids := append(estate.ResourceIDs(), estate.GroupIDs()...)
	arm.Server.SetLatency(50 * time.Millisecond)

	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	args := []string{"--kubeconfig=" + writeKubeconfig(t, ""), "--controllers=metadata", "--leader-elect=false",
		"--audit-log=" + auditFile, "--azure-write-qps=20"}
	p := startTagsync(t, "tagsync", append(args, armsimFlags(t, arm)...)...)

	addTagsToEstate(ctx, t, ns, "killed", arm.SubscriptionID, map[string]string{"audited": "yes"}, estate.Tags)

	var changed map[string]bool
	eventuallyWithin(t, 2*time.Minute, "some but not all resources tagged", func() string {
		changed = taggedIn(t, arm, ids)
		if len(changed) < 30 || len(changed) >= len(ids)/2 {
			return fmt.Sprintf("tagged %d of %d", len(changed), len(ids))
		}
		return ""
	})
	p.kill()
	changed = taggedIn(t, arm, ids) // what the cloud holds after the kill
	if len(changed) == len(ids) {
		t.Fatalf("every resource was tagged before the kill landed: the test did not interrupt writes in flight")
	}

	lines := auditLines(t, auditFile)
	var missing, pendingOnly []string
	for id := range changed {
		switch results := lines[cloud.CanonicalID(id)]; {
		case len(results) == 0:
			missing = append(missing, id)
		case !slices.Contains(results, audit.ResultOK):
			pendingOnly = append(pendingOnly, id)
		}
	}
	t.Logf("killed after %d of %d resources were tagged: %d have no audit line, %d only their pending record; %d resources have lines in all",
		len(changed), len(ids), len(missing), len(pendingOnly), len(lines))
	if len(missing) > 0 {
		t.Errorf("%d of %d tags changed in the cloud have no audit line, e.g. %s", len(missing), len(changed), missing[0])
	}
}

// addTagsToEstate creates the AzureMetadata <name>-azure that adds tags in
// subscription and the CloudMetadata name that applies it to the resources
// classifiers match, in namespace ns, and deletes both when the test ends.
func addTagsToEstate(ctx context.Context, t *testing.T, ns, name, subscription string, tags, classifiers map[string]string) {
	t.Helper()
	ref := &v1alpha1.LocalObjectRef{Name: name + "-azure"}
	az := build.AzureMetadata(ref.Name, build.Namespace(ns), build.Opcode(v1alpha1.OpcodeAdd), build.ResourceTags(tags), build.Subscriptions(subscription))
	cm := build.CloudMetadata(name, build.Namespace(ns), build.Classifiers(classifiers), build.AzureRef(ref.Name))
	must(t, kube.Client.Create(ctx, az))
	must(t, kube.Client.Create(ctx, cm))
	t.Cleanup(func() {
		_ = kube.Client.Delete(context.Background(), cm)
		_ = kube.Client.Delete(context.Background(), az)
	})
}

// taggedIn returns the resources among ids that carry audited=yes.
func taggedIn(t *testing.T, arm *armsimtest.Env, ids []string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, id := range ids {
		tg, err := arm.Server.Tags(id)
		must(t, err)
		if tg["audited"] == "yes" {
			out[id] = true
		}
	}
	return out
}

// auditLines reads an audit file: per canonical resource ID, the results
// of its lines, in order.
func auditLines(t *testing.T, path string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return out
	}
	must(t, err)
	defer f.Close()
	recs, err := audit.Read(f)
	if err != nil {
		// The kill may cut the last line short; that line is not a record.
		t.Logf("%v", err)
	}
	for _, r := range recs {
		id := cloud.CanonicalID(r.Resource)
		out[id] = append(out[id], r.Result)
	}
	return out
}
