package kit

import (
	"fmt"

	"github.com/blang/semver/v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tagsync/tagsync/api/v1alpha1"
)

// RequiredVersion returns an error when obj (of kind, for the message)'s RequiresVersionAnnotation
// names a tagsync release newer than running, the controller's own version
// (internal/version.Get): during a rolling upgrade the old leader must not
// act on a spec written for the new code. An unreleased build (a version
// that is not SemVer, or 0.0.0-…) serves every object; so does a
// controller whose version is at least the one named. A malformed
// annotation is an error too: nothing tells which code the spec needs.
func RequiredVersion(kind string, obj metav1.Object, running string) error {
	want, ok := obj.GetAnnotations()[v1alpha1.RequiresVersionAnnotation]
	if !ok {
		return nil
	}
	need, err := semver.ParseTolerant(want)
	if err != nil {
		return fmt.Errorf("annotation %s=%q is not a version such as 0.3.0: fix or remove it", v1alpha1.RequiresVersionAnnotation, want)
	}
	have, err := semver.ParseTolerant(running)
	if err != nil || (have.Major == 0 && have.Minor == 0 && have.Patch == 0) {
		return nil // an unreleased build
	}
	have.Pre, have.Build = nil, nil
	if have.LT(need) {
		return fmt.Errorf("%s %q needs tagsync %s or later (annotation %s) and this controller is %s: it writes nothing for it "+
			"until a controller of %s or later takes over (upgrade tagsync, or remove the annotation)",
			kind, obj.GetName(), need, v1alpha1.RequiresVersionAnnotation, running, need)
	}
	return nil
}
