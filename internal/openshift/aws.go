package openshift

import (
	"regexp"
	"strings"
)

// AWSUserTagsPath is the install-config field ValidateAWSUserTags checks.
const AWSUserTagsPath = "platform.aws.userTags"

// MaxAWSUserTags is the most userTags an AWS install-config may hold.
const MaxAWSUserTags = 25

// The installer's patterns for AWS userTags, copied literally from
// openshift/installer pkg/types/aws/validation/platform.go (tagRegex,
// kubernetesNamespaceRegex, openshiftNamespaceRegex).
var (
	// Same "+-@" range as the Azure value pattern (so , ; < > ? are allowed
	// too), plus \p{Z}: Unicode space separators. '*' admits the empty
	// string; emptiness is checked after it.
	awsTagPattern = regexp.MustCompile(`^[0-9A-Za-z_.:/=+-@\p{Z}]*$`)
	// The dot before "io" is unescaped in the installer, so any character
	// matches there; both patterns are case-sensitive.
	awsKubernetesPattern = regexp.MustCompile(`^([^/]*\.)?kubernetes.io/`)
	awsOpenShiftPattern  = regexp.MustCompile(`^([^/]*\.)?openshift.io/`)
)

// ValidateAWSUserTags checks tags as the OpenShift installer checks
// platform.aws.userTags (see the package documentation for the rules). Like
// ValidateUserTags it returns nil or every problem, each a *FieldError,
// joined: too many tags first, then at most one per key, by key. Keys are
// case-sensitive on AWS, so "Env" and "env" are two valid tags.
func ValidateAWSUserTags(tags map[string]string) error {
	return validateTags(tags, AWSUserTagsPath, MaxAWSUserTags, nil, validateAWSTag)
}

// validateAWSTag returns the first rule key=value breaks, in the installer's
// order. Lengths are in bytes, as the installer counts them.
func validateAWSTag(key, value string) error {
	const chars = "letters, digits, Unicode spaces and _ . : / = + , - ; < > ? @"
	fail := func(reason Reason, format string, args ...any) error {
		return keyError(AWSUserTagsPath, reason, key, value, format, args...)
	}
	switch {
	case strings.EqualFold(key, "Name"):
		return fail(ReasonRestrictedKey, "key %q is not allowed for user-defined tags (the installer sets Name itself)", key)
	case !awsTagPattern.MatchString(key):
		return fail(ReasonInvalidKey, "key may contain only "+chars)
	case !awsTagPattern.MatchString(value):
		return fail(ReasonInvalidValue, "value may contain only "+chars)
	case key == "":
		return fail(ReasonInvalidKey, "key must not be empty")
	case len(key) > 128:
		return fail(ReasonInvalidKey, "key is %d bytes long; the limit is 128", len(key))
	case value == "":
		return fail(ReasonInvalidValue, "value must not be empty")
	case len(value) > 256:
		return fail(ReasonInvalidValue, "value is %d bytes long; the limit is 256", len(value))
	case awsKubernetesPattern.MatchString(key):
		return fail(ReasonRestrictedKey, "key is in the kubernetes.io namespace")
	case awsOpenShiftPattern.MatchString(key):
		return fail(ReasonRestrictedKey, "key is in the openshift.io namespace")
	}
	return nil
}
