package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// tagsResult is what an edit did: the object before and after.
type tagsResult struct {
	before, after client.Object
}

// runTags checks the flags, edits the object and reports the change.
func runTags(cmd *cobra.Command, f *tagsFlags, verb string, args []string) error {
	if f.dryRun != "none" && f.dryRun != "client" && f.dryRun != "server" {
		return usageError(fmt.Errorf("--dry-run %q: must be none, client or server", f.dryRun))
	}
	ns, err := f.kube.namespace()
	if err != nil {
		return err
	}
	ref, err := parseObjectRef(args[0], ns)
	if err != nil {
		return usageError(err)
	}
	edit, err := parseEdit(verb, args[1:], f.replace)
	if err != nil {
		return usageError(err)
	}
	c, err := f.kube.client()
	if err != nil {
		return err
	}
	p := startProgress(cmd.ErrOrStderr(), "editing "+ref.String())
	res, err := editObject(cmd.Context(), c, ref, edit, f)
	p.stop()
	if err != nil {
		return err
	}
	return reportEdit(cmd.OutOrStdout(), ref, res, f)
}

// editObject reads the object, applies the edit, checks the result and
// patches it with the read resourceVersion, again from a fresh read when a
// concurrent edit came first.
func editObject(ctx context.Context, c client.Client, ref objectRef, edit tagEdit, f *tagsFlags) (tagsResult, error) {
	var res tagsResult
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj := ref.kind.newObject()
		if err := c.Get(ctx, ref.key(), obj); err != nil {
			return readError(ctx, c, ref, err)
		}
		res = tagsResult{before: obj.DeepCopyObject().(client.Object), after: obj}
		if err := edit.apply(ref.kind.view(obj)); err != nil {
			return refused(fmt.Errorf("%s: %w", ref, err))
		}
		if problems := checkSpec(ref.kind, ref.kind.view(obj)); len(problems) > 0 {
			return refused(fmt.Errorf("%s: the result breaks the tag rules; nothing was sent:\n  %s", ref, strings.Join(problems, "\n  ")))
		}
		if f.dryRun == "client" || equality.Semantic.DeepEqual(res.before, obj) {
			return nil
		}
		if beforeTagsPatch != nil {
			beforeTagsPatch()
		}
		return patchObject(ctx, c, ref, res.before, obj, f.dryRun == "server")
	})
	return res, err
}

// patchObject sends the change as a JSON merge patch guarded by the
// resourceVersion read (a concurrent edit makes it a Conflict).
func patchObject(ctx context.Context, c client.Client, ref objectRef, before, after client.Object, serverDryRun bool) error {
	var opts []client.PatchOption
	if serverDryRun {
		opts = append(opts, client.DryRunAll)
	}
	err := c.Patch(ctx, after, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}), opts...)
	switch {
	case err == nil, apierrors.IsConflict(err):
		return err
	case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsBadRequest(err):
		return refused(fmt.Errorf("%s: the API server refused the change: %w", ref, err))
	}
	return fmt.Errorf("%s: %w", ref, err)
}

// readError explains a failed read; for a missing object it lists the
// objects of that kind the namespace has.
func readError(ctx context.Context, c client.Client, ref objectRef, err error) error {
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading %s: %w", ref, err)
	}
	msg := fmt.Sprintf("%s not found", ref)
	list := ref.kind.newList()
	if lerr := c.List(ctx, list, client.InNamespace(ref.namespace)); lerr == nil {
		names := listNames(list)
		if len(names) == 0 {
			msg += fmt.Sprintf(" (namespace %s has no %s; -n selects another)", ref.namespace, ref.kind.kind)
		} else {
			msg += fmt.Sprintf(" (%s in namespace %s: %s)", ref.kind.kind, ref.namespace, strings.Join(names, ", "))
		}
	}
	return errors.New(msg)
}

// refused marks err as a refusal (exit code 3).
func refused(err error) error { return &ExitError{Code: ExitRefused, Err: err} }

// reportEdit prints the resulting object (-o) or the change.
func reportEdit(w io.Writer, ref objectRef, res tagsResult, f *tagsFlags) error {
	if f.output != outputTable {
		return printObject(w, f.output, res.after)
	}
	lines := specDiff(ref.kind.view(res.before), ref.kind.view(res.after))
	what := "edited"
	if len(lines) == 0 {
		what = "unchanged"
	}
	for _, l := range lines {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	suffix := map[string]string{"none": "", "client": " (dry run)", "server": " (server dry run)"}[f.dryRun]
	_, err := fmt.Fprintf(w, "%s.tagsync.io/%s %s%s\n", ref.kind.resource, ref.name, what, suffix)
	return err
}
