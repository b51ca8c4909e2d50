package cli

import (
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// PluginName is the executable name under which kubectl runs tagsync as
// its plugin `kubectl tagsync`.
const PluginName = "kubectl-tagsync"

// AdjustForInvocation makes root read as the command the user typed: run as
// kubectl-tagsync (the plugin's name, also through a symlink or krew's
// shim), usage, help and completion say "kubectl tagsync". argv0 is
// os.Args[0].
func AdjustForInvocation(root *cobra.Command, argv0 string) {
	name := strings.TrimSuffix(filepath.Base(argv0), ".exe")
	if name != PluginName {
		return
	}
	if root.Annotations == nil {
		root.Annotations = map[string]string{}
	}
	root.Annotations[cobra.CommandDisplayNameAnnotation] = "kubectl tagsync"
}
