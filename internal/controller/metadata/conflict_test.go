package metadata_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/testenv/build"
)

// TestConflictingObjectsWriteNeither: two objects whose classifiers match
// the same resources and that want different values for env do not
// rewrite each other pass after pass: both report the Conflict condition
// and a Warning naming the other, neither writes env (their other keys
// are written, and a key both want with the same value is no conflict),
// and when one gives env up, or its CloudMetadata is deleted, the other
// is passed again at once and writes.
func TestConflictingObjectsWriteNeither(t *testing.T) {
	h, _, ids := newEstateHarness(t, "dup", 1)
	classifiers := map[string]string{classifierOf("dup"): "owned"}
	h.azureMetadata("a", v1alpha1.OpcodeUpdate, map[string]string{"env": "a", "team": "x"})
	h.cloudMetadata("cm-a", "a", "", classifiers)
	h.waitReady("cm-a", metav1.ConditionTrue)
	b := h.azureMetadata("b", v1alpha1.OpcodeUpdate, map[string]string{"env": "b", "team": "x", "owner": "y"})
	h.cloudMetadata("cm-b", "b", "", classifiers)

	h.waitConflict("a", true, `AzureMetadata `+h.ns+`/b`)
	h.waitConflict("b", true, `AzureMetadata `+h.ns+`/a`)
	for _, name := range []string{"a", "b"} {
		c := meta.FindStatusCondition(h.azureStatus(name).Status.Conditions, v1alpha1.ConditionConflict)
		if c.Reason != v1alpha1.ReasonContestedKeys || !strings.Contains(c.Message, "env") || strings.Contains(c.Message, "team") {
			t.Errorf("%s: Conflict = %+v: want env contested, not team (both want x)", name, c)
		}
	}
	h.waitEvent(v1alpha1.ReasonContestedKeys, "a", "AzureMetadata "+h.ns+"/b")
	h.waitEvent(v1alpha1.ReasonContestedKeys, "b", "AzureMetadata "+h.ns+"/a")
	h.pass("cm-b")
	for _, id := range ids {
		if tg := h.tags(id); tg["owner"] != "y" || tg["team"] != "x" {
			t.Errorf("%s has %v: the uncontested keys were not written", id, tg)
		}
	}

	// Passes of both write nothing more.
	const rounds = 5
	before := h.writes()
	for range rounds {
		h.pass("cm-a")
		h.pass("cm-b")
	}
	written := h.writes() - before
	t.Logf("%d tag writes over %d passes of each object on %d resources", written, rounds, len(ids))
	if written != 0 {
		t.Errorf("the contested objects wrote %d times in %d rounds of passes", written, rounds)
	}

	// b gives env up: a writes it at once, without a pass being asked.
	h.update(b, func() { b.Spec.ResourceTags = map[string]string{"team": "x", "owner": "y"} })
	h.waitConflict("a", false, "")
	eventually(t, "env=a everywhere", func() string { return h.missing(ids, "env", "a") })

	// b wants env again, then its CloudMetadata goes: a writes again at once.
	h.update(b, func() { b.Spec.ResourceTags = map[string]string{"env": "c"} })
	h.waitConflict("a", true, `AzureMetadata `+h.ns+`/b`)
	if err := h.c.Delete(h.ctx, &v1alpha1.CloudMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "cm-b"}}); err != nil {
		t.Fatal(err)
	}
	h.waitConflict("a", false, "")
	eventually(t, "env=a everywhere after cm-b went", func() string {
		if m := h.missing(ids, "env", "a"); m != "" {
			return fmt.Sprintf("%s; a's status: %+v", m, h.azureStatus("a").Status)
		}
		return ""
	})
}

// waitConflict waits until the AzureMetadata's Conflict condition has
// status want and its message contains naming.
func (h *harness) waitConflict(name string, want bool, naming string) {
	h.t.Helper()
	eventually(h.t, fmt.Sprintf("AzureMetadata %s Conflict=%v", name, want), func() string {
		c := meta.FindStatusCondition(h.azureStatus(name).Status.Conditions, v1alpha1.ConditionConflict)
		if c == nil || (c.Status == metav1.ConditionTrue) != want || !strings.Contains(c.Message, naming) {
			return fmt.Sprintf("Conflict = %+v", c)
		}
		return ""
	})
}

// waitEvent waits for an event with reason about the named object whose
// note contains naming.
func (h *harness) waitEvent(reason, objectName, naming string) {
	h.t.Helper()
	eventually(h.t, fmt.Sprintf("a %s event about %s naming %s", reason, objectName, naming), func() string {
		var list eventsv1.EventList
		if err := h.c.List(h.ctx, &list, client.InNamespace(h.ns)); err != nil {
			return err.Error()
		}
		for _, e := range list.Items {
			if e.Reason == reason && e.Regarding.Name == objectName && strings.Contains(e.Note, naming) {
				return ""
			}
		}
		return fmt.Sprintf("%d events, none matching", len(list.Items))
	})
}

// missing lists the resources that do not carry name=value, with what
// they carry instead, and the writes so far ("" when all do).
func (h *harness) missing(ids []string, name, value string) string {
	var out []string
	for _, id := range ids {
		if v, ok := h.tags(id)[name]; v != value {
			out = append(out, fmt.Sprintf("%s (%s=%q, present %v)", id, name, v, ok))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return fmt.Sprintf("%s; %d tag writes so far", strings.Join(out, ", "), h.writes())
}

// TestConflictAcrossNamespaces: objects of two namespaces that classify the
// same resources and want different values for env are in conflict too,
// each naming the other with its namespace.
func TestConflictAcrossNamespaces(t *testing.T) {
	h := newHarness(t)
	other := h.ns + "-b"
	if err := h.c.Create(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}); err != nil {
		t.Fatal(err)
	}
	h.stop()
	h.other = other
	h.startController()
	h.estate("xns", 1)
	classifiers := map[string]string{classifierOf("xns"): "owned"}
	h.azureMetadata("a", v1alpha1.OpcodeUpdate, map[string]string{"env": "a"})
	h.cloudMetadata("cm", "a", "", classifiers)
	h.waitReady("cm", metav1.ConditionTrue)
	b := build.AzureMetadata("a", build.Namespace(other), build.Opcode(v1alpha1.OpcodeUpdate), build.ResourceTags(map[string]string{"env": "b"}))
	cm := build.CloudMetadata("cm", build.Namespace(other), build.Classifiers(classifiers), build.AzureRef("a"))
	for _, o := range []client.Object{b, cm} {
		if err := h.c.Create(h.ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	h.waitConflict("a", true, "AzureMetadata "+other+"/a")
	eventually(t, "Conflict on the other namespace's object", func() string {
		if err := h.c.Get(h.ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return err.Error()
		}
		c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionConflict)
		if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "AzureMetadata "+h.ns+"/a") {
			return fmt.Sprintf("Conflict = %+v", c)
		}
		return ""
	})
}
