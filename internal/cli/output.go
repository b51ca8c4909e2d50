package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"
)

// The -o names every verb accepts: table is the verb's readable form (the
// default), json and yaml its structured output.
const (
	outputTable = "table"
	outputJSON  = "json"
	outputYAML  = "yaml"
)

// outputFormats are the -o names, in the order help and errors list them.
var outputFormats = []string{outputTable, outputJSON, outputYAML}

// outputFlag is the value of a verb's -o/--output. Set refuses a name
// outside outputFormats, naming the allowed ones, so that a wrong -o is a
// usage error (exit code 2) before the verb runs.
type outputFlag struct {
	format *string
	// aliases are older names of table that the docs promise.
	aliases []string
}

// String implements pflag.Value.
func (o *outputFlag) String() string { return *o.format }

// Type implements pflag.Value.
func (o *outputFlag) Type() string { return "format" }

// Set implements pflag.Value.
func (o *outputFlag) Set(name string) error {
	for _, a := range o.aliases {
		if name == a {
			name = outputTable
		}
	}
	for _, f := range outputFormats {
		if name == f {
			*o.format = name
			return nil
		}
	}
	return fmt.Errorf("unknown output format %q: use %s", name, strings.Join(outputFormats, ", "))
}

// addOutputFlag registers -o/--output on cmd, bound to format (default
// table), with its completion; structured says what json and yaml print.
// aliases are older names of table that still work.
func addOutputFlag(cmd *cobra.Command, format *string, structured string, aliases ...string) {
	*format = outputTable
	cmd.Flags().VarP(&outputFlag{format: format, aliases: aliases}, "output", "o",
		"output format: "+strings.Join(outputFormats, ", ")+" ("+structured+")")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(outputFormats, cobra.ShellCompDirectiveNoFileComp))
}

// printData prints v, a verb's own report (not an API object), as indented
// JSON or as YAML.
func printData(w io.Writer, format string, v any) error {
	if format == outputYAML {
		data, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// printObjects prints objs as one v1 List in format json or yaml, as
// `kubectl get -o json|yaml` prints several objects: with apiVersion and
// kind, without managedFields.
func printObjects(w io.Writer, format string, objs []client.Object) error {
	list := &metav1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}, Items: []runtime.RawExtension{}}
	for _, o := range objs {
		raw, err := objectJSON(o)
		if err != nil {
			return err
		}
		list.Items = append(list.Items, runtime.RawExtension{Raw: raw})
	}
	return printerFor(format).PrintObj(list, w)
}

// printObject prints one object in format json or yaml.
func printObject(w io.Writer, format string, o client.Object) error {
	o = o.DeepCopyObject().(client.Object)
	if err := setKind(o); err != nil {
		return err
	}
	o.SetManagedFields(nil)
	return printerFor(format).PrintObj(o, w)
}

// printerFor returns cli-runtime's printer for json or yaml.
func printerFor(format string) printers.ResourcePrinter {
	if format == outputJSON {
		return &printers.JSONPrinter{}
	}
	return &printers.YAMLPrinter{}
}

// objectJSON is o as JSON with its apiVersion and kind, without
// managedFields.
func objectJSON(o client.Object) ([]byte, error) {
	o = o.DeepCopyObject().(client.Object)
	if err := setKind(o); err != nil {
		return nil, err
	}
	o.SetManagedFields(nil)
	return json.Marshal(o)
}

// setKind sets o's apiVersion and kind from the scheme (typed lists leave
// them empty on their items).
func setKind(o client.Object) error {
	gvk, err := apiutil.GVKForObject(o, kubeScheme())
	if err != nil {
		return fmt.Errorf("the kind of %T: %w", o, err)
	}
	o.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}
