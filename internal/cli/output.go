package cli

import (
	"encoding/json"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

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
	if format == "json" {
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
