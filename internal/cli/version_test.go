package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestVersionCommandPrintsVersion(t *testing.T) {
	root := NewRootCommand()
	root.AddCommand(NewVersionCommand())
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "tagsync ") {
		t.Fatalf("version output %q does not start with %q", out.String(), "tagsync ")
	}
}

func TestVersionCommandRejectsArguments(t *testing.T) {
	root := NewRootCommand()
	root.AddCommand(NewVersionCommand())
	root.SetArgs([]string{"version", "extra"})
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	if err := root.Execute(); err == nil {
		t.Fatal("version accepted an unexpected argument")
	}
}
