package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestPluginNaming: run as kubectl-tagsync (also through a path or with
// .exe), help and usage read "kubectl tagsync"; run as tagsync, "tagsync".
func TestPluginNaming(t *testing.T) {
	for argv0, want := range map[string]string{
		"/home/u/.krew/bin/kubectl-tagsync": "kubectl tagsync status",
		"kubectl-tagsync.exe":               "kubectl tagsync status",
		"/usr/local/bin/tagsync":            "tagsync status",
		"./kubectl-tagsync-old":             "tagsync status",
	} {
		root := NewRootCommand()
		root.AddCommand(NewStatusCommand())
		AdjustForInvocation(root, argv0)
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs([]string{"status", "--help"})
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		usage := out.String()[strings.Index(out.String(), "Usage:"):]
		if !strings.Contains(usage, "\n  "+want+" [flags]") {
			t.Errorf("as %s: usage does not read %q:\n%s", argv0, want, usage)
		}
		if want == "tagsync status" && strings.Contains(usage, "kubectl tagsync status [flags]") {
			t.Errorf("as %s: usage says kubectl tagsync", argv0)
		}
	}
}

// TestTagsCompletesObjects: the first argument of a tags verb completes to
// the namespace's AzureMetadata and AWSMetadata objects.
func TestTagsCompletesObjects(t *testing.T) {
	env, kc := kube(t)
	ns := newNamespace(t, env)
	estate(t, env, ns)
	out, _, err := runCLI(context.Background(), "__complete", "tags", "update", "--kubeconfig", kc, "-n", ns, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "azuremetadata/azure\n") || !strings.Contains(out, "awsmetadata/aws\n") {
		t.Errorf("completions:\n%s", out)
	}
	out, _, _ = runCLI(context.Background(), "__complete", "status", "-o", "")
	if !strings.Contains(out, "table\njson\nyaml\n") {
		t.Errorf("-o completions:\n%s", out)
	}
}
