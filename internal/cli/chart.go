package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// chartFieldManager is the field manager `tagsync chart apply` applies the
// chart's objects as.
const chartFieldManager = "tagsync-chart"

// resourcePolicyAnnotation is the annotation by which Helm leaves an object
// in place when it leaves a release (helm.sh/resource-policy: keep).
const resourcePolicyAnnotation = "helm.sh/resource-policy"

// chartPoll is how often `tagsync chart apply` reads the rollout and retries
// an apply the API server cannot take yet.
const chartPoll = 2 * time.Second

// NewChartCommand returns `tagsync chart`: the steps the Helm chart's hook
// Jobs run so that tagsync's own objects (the chart's NodeTagSync) change
// only after the controller that reads them has rolled out
// (docs/install.md#upgrade).
func NewChartCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "chart",
		Short: "The steps the Helm chart runs around an install or upgrade",
		Long: `The steps the Helm chart's hook Jobs run: 'chart apply' applies the chart's
own objects once the new controller has rolled out, 'chart keep' marks them
for Helm to leave in place (once, when upgrading from a chart that made them
part of the release).`,
		Args: cobra.ArbitraryArgs,
		RunE: runGroup,
	}
	kube := addKubeFlags(cmd)
	cmd.AddCommand(newChartApplyCommand(kube), newChartKeepCommand(kube))
	return cmd
}

func newChartApplyCommand(kube *kubeFlags) *cobra.Command {
	var objects []string
	var rollout string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "apply --object JSON... [--after-rollout NAMESPACE/DEPLOYMENT]",
		Short: "Apply objects (server-side) once a Deployment has rolled out",
		Long: `Waits until the Deployment named by --after-rollout has rolled out (every
replica updated and available, no old one left), then applies each --object
server-side as field manager tagsync-chart. An object whose kind the API
server does not serve yet (its CRD just created) is retried until --timeout.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			deploy, err := parseRollout(rollout)
			if err != nil {
				return usageError(err)
			}
			objs, c, err := chartObjects(kube, objects)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			out := cmd.OutOrStdout()
			if deploy.Name != "" {
				if err := waitRollout(ctx, c, deploy, out); err != nil {
					return err
				}
			}
			for _, o := range objs {
				if err := applyChartObject(ctx, c, o); err != nil {
					return err
				}
				fmt.Fprintf(out, "applied %s %s\n", o.GetKind(), o.GetName())
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&objects, "object", nil, "an object to apply, as JSON (repeatable)")
	cmd.Flags().StringVar(&rollout, "after-rollout", "", "NAMESPACE/NAME of the Deployment to wait for first")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Minute, "how long to wait for the rollout and the API server")
	return cmd
}

func newChartKeepCommand(kube *kubeFlags) *cobra.Command {
	var objects []string
	cmd := &cobra.Command{
		Use:   "keep --object JSON...",
		Short: "Mark objects helm.sh/resource-policy: keep",
		Long: `Marks each existing --object (found by kind, namespace and name) with
helm.sh/resource-policy: keep, so that Helm leaves it in place when the
upgraded chart no longer holds it in the release. A missing object is skipped.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			objs, c, err := chartObjects(kube, objects)
			if err != nil {
				return err
			}
			for _, o := range objs {
				msg, err := keepChartObject(cmd.Context(), c, o)
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), msg)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&objects, "object", nil, "an object to keep, as JSON (repeatable; only its kind and name are read)")
	return cmd
}

// chartObjects decodes the --object flags (a usage error when they are
// wrong) and connects to the cluster the kubectl flags select.
func chartObjects(kube *kubeFlags, flags []string) ([]*unstructured.Unstructured, client.Client, error) {
	objs, err := parseChartObjects(flags)
	if err != nil {
		return nil, nil, usageError(err)
	}
	c, err := kube.client()
	return objs, c, err
}

// parseChartObjects decodes the --object flags: each a JSON object with an
// apiVersion, a kind and a name.
func parseChartObjects(flags []string) ([]*unstructured.Unstructured, error) {
	if len(flags) == 0 {
		return nil, fmt.Errorf("name at least one --object")
	}
	var objs []*unstructured.Unstructured
	for i, text := range flags {
		o := &unstructured.Unstructured{}
		if err := json.Unmarshal([]byte(text), &o.Object); err != nil {
			return nil, fmt.Errorf("--object %d is not a JSON object: %w", i+1, err)
		}
		if o.GetAPIVersion() == "" || o.GetKind() == "" || o.GetName() == "" {
			return nil, fmt.Errorf("--object %d needs apiVersion, kind and metadata.name", i+1)
		}
		objs = append(objs, o)
	}
	return objs, nil
}

// parseRollout reads NAMESPACE/NAME ("" is no wait).
func parseRollout(s string) (types.NamespacedName, error) {
	if s == "" {
		return types.NamespacedName{}, nil
	}
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return types.NamespacedName{}, fmt.Errorf("--after-rollout %q: want NAMESPACE/NAME", s)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

// waitRollout polls the Deployment until rolledOut says it is done, printing
// each new state.
func waitRollout(ctx context.Context, c client.Client, key types.NamespacedName, out io.Writer) error {
	last := ""
	err := wait.PollUntilContextCancel(ctx, chartPoll, true, func(ctx context.Context) (bool, error) {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, key, d); err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
				return false, fmt.Errorf("reading Deployment %s: %w", key, err)
			}
			return false, nil // the API server may be busy: ask again
		}
		done, state, err := rolledOut(d)
		if state != last {
			fmt.Fprintf(out, "Deployment %s: %s\n", key, state)
			last = state
		}
		return done, err
	})
	if err != nil {
		return fmt.Errorf("waiting for Deployment %s to roll out (last: %s): %w", key, last, err)
	}
	return nil
}

// rolledOut judges a Deployment's rollout as `kubectl rollout status` does:
// done when its controller has seen the latest spec, every replica is
// updated and available and no old replica is left; an error when the
// rollout exceeded its progress deadline.
func rolledOut(d *appsv1.Deployment) (bool, string, error) {
	st := d.Status
	if d.Generation > st.ObservedGeneration {
		return false, "waiting for the rollout to start", nil
	}
	for _, c := range st.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
			return false, "progress deadline exceeded", fmt.Errorf("the rollout exceeded its progress deadline: %s", c.Message)
		}
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	switch {
	case st.UpdatedReplicas < want:
		return false, fmt.Sprintf("%d of %d replicas updated", st.UpdatedReplicas, want), nil
	case st.Replicas > st.UpdatedReplicas:
		return false, fmt.Sprintf("%d old replicas left", st.Replicas-st.UpdatedReplicas), nil
	case st.AvailableReplicas < st.UpdatedReplicas:
		return false, fmt.Sprintf("%d of %d updated replicas available", st.AvailableReplicas, st.UpdatedReplicas), nil
	}
	return true, "rolled out", nil
}

// applyChartObject applies o server-side, retrying while its kind is not
// served yet (a CRD the same release has just created) or the API server is
// busy; a refusal (invalid, forbidden) ends it.
func applyChartObject(ctx context.Context, c client.Client, o *unstructured.Unstructured) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, chartPoll, true, func(ctx context.Context) (bool, error) {
		last = c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.FieldOwner(chartFieldManager), client.ForceOwnership)
		switch {
		case last == nil:
			return true, nil
		case meta.IsNoMatchError(last), apierrors.IsNotFound(last), apierrors.IsServerTimeout(last),
			apierrors.IsTooManyRequests(last), apierrors.IsServiceUnavailable(last), apierrors.IsInternalError(last):
			return false, nil
		}
		return false, last
	})
	if err != nil {
		if last != nil && last != err {
			err = fmt.Errorf("%w (last answer: %v)", err, last)
		}
		return fmt.Errorf("applying %s %s: %w", o.GetKind(), o.GetName(), err)
	}
	return nil
}

// keepChartObject marks the object o names helm.sh/resource-policy: keep and
// says what it did.
func keepChartObject(ctx context.Context, c client.Client, o *unstructured.Unstructured) (string, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(o.GroupVersionKind())
	key := client.ObjectKey{Namespace: o.GetNamespace(), Name: o.GetName()}
	if err := c.Get(ctx, key, live); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return fmt.Sprintf("%s %s: not there, nothing to keep", o.GetKind(), o.GetName()), nil
		}
		return "", fmt.Errorf("reading %s %s: %w", o.GetKind(), o.GetName(), err)
	}
	if live.GetAnnotations()[resourcePolicyAnnotation] == "keep" {
		return fmt.Sprintf("%s %s: already kept", o.GetKind(), o.GetName()), nil
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"keep"}}}`, resourcePolicyAnnotation)
	if err := c.Patch(ctx, live, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return "", fmt.Errorf("marking %s %s %s=keep: %w", o.GetKind(), o.GetName(), resourcePolicyAnnotation, err)
	}
	return fmt.Sprintf("%s %s: marked %s=keep", o.GetKind(), o.GetName(), resourcePolicyAnnotation), nil
}
