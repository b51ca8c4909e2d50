package cli

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"
)

func TestRolledOut(t *testing.T) {
	deploy := func(generation, observed int64, replicas int32, st appsv1.DeploymentStatus) *appsv1.Deployment {
		d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas)}, Status: st}
		d.Generation, d.Status.ObservedGeneration = generation, observed
		return d
	}
	for _, c := range []struct {
		name  string
		d     *appsv1.Deployment
		done  bool
		state string
		err   bool
	}{
		{"a new spec not seen yet", deploy(3, 2, 2, appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}), false, "waiting for the rollout to start", false},
		{"one of two updated", deploy(3, 3, 2, appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 1, AvailableReplicas: 2}), false, "1 of 2 replicas updated", false},
		{"an old replica left", deploy(3, 3, 2, appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 2, AvailableReplicas: 2}), false, "1 old replicas left", false},
		{"an updated replica not available", deploy(3, 3, 2, appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 1}), false, "1 of 2 updated replicas available", false},
		{"rolled out", deploy(3, 3, 2, appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}), true, "rolled out", false},
		{"past its deadline", deploy(3, 3, 2, appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 1, Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentProgressing, Reason: "ProgressDeadlineExceeded", Message: "ReplicaSet has timed out progressing."}}}), false, "progress deadline exceeded", true},
	} {
		done, state, err := rolledOut(c.d)
		if done != c.done || state != c.state || (err != nil) != c.err {
			t.Errorf("%s: rolledOut = %v, %q, %v; want %v, %q, error %v", c.name, done, state, err, c.done, c.state, c.err)
		}
	}
}

func TestParseChartObjects(t *testing.T) {
	objs, err := parseChartObjects([]string{`{"apiVersion":"tagsync.io/v1alpha1","kind":"NodeTagSync","metadata":{"name":"default"},"spec":{}}`})
	if err != nil || len(objs) != 1 || objs[0].GetName() != "default" {
		t.Fatalf("parseChartObjects = %v, %v", objs, err)
	}
	for flags, want := range map[string]string{
		"":                       "name at least one --object",
		"{":                      "--object 1 is not a JSON object",
		`{"kind":"NodeTagSync"}`: "--object 1 needs apiVersion, kind and metadata.name",
	} {
		var args []string
		if flags != "" {
			args = []string{flags}
		}
		if _, err := parseChartObjects(args); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseChartObjects(%q) = %v, want %q", flags, err, want)
		}
	}
	for _, bad := range []string{"tagsync", "/tagsync", "ns/", "a/b/c"} {
		if _, err := parseRollout(bad); err == nil {
			t.Errorf("parseRollout(%q) accepted it", bad)
		}
	}
	if key, err := parseRollout("tagsync-system/tagsync"); err != nil || key.Namespace != "tagsync-system" || key.Name != "tagsync" {
		t.Errorf("parseRollout = %v, %v", key, err)
	}
}
