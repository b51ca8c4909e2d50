package openshift

import (
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// AzurePublicCloud is the only Azure cloud on which the installer accepts
// userTags, and the cloudName an install-config without one gets.
const AzurePublicCloud = "AzurePublicCloud"

// ErrNoPlatform is returned (wrapped) by ParseInstallConfig when the document
// has neither platform.azure nor platform.aws.
var ErrNoPlatform = errors.New("neither platform.azure nor platform.aws is set")

// InstallConfig is the part of an OpenShift install-config this package reads.
type InstallConfig struct {
	// Platform holds the platform sections.
	Platform Platform `json:"platform"`
}

// Platform is the platform section of an install-config; at most one of its
// fields is set in a config the installer accepts.
type Platform struct {
	// Azure is platform.azure, nil when absent.
	Azure *AzurePlatform `json:"azure,omitempty"`
	// AWS is platform.aws, nil when absent.
	AWS *AWSPlatform `json:"aws,omitempty"`
}

// AzurePlatform is the part of platform.azure this package reads.
type AzurePlatform struct {
	// CloudName is platform.azure.cloudName; empty means AzurePublicCloud.
	CloudName string `json:"cloudName,omitempty"`
	// UserTags is platform.azure.userTags.
	UserTags map[string]string `json:"userTags,omitempty"`
}

// AWSPlatform is the part of platform.aws this package reads.
type AWSPlatform struct {
	// UserTags is platform.aws.userTags.
	UserTags map[string]string `json:"userTags,omitempty"`
}

// ParseInstallConfig reads an install-config (YAML or JSON) the way the
// installer does (openshift/installer
// pkg/asset/installconfig/installconfigbase.go): a strict parse first, and
// only if that fails on an unknown field -- which it nearly always does here,
// since InstallConfig models three fields -- a lenient one. Malformed YAML,
// duplicate keys and userTags that are not a map of scalars are errors. The
// result holds cloudName and the userTags; an error wrapping ErrNoPlatform is
// returned when there is neither platform.azure nor platform.aws.
func ParseInstallConfig(data []byte) (InstallConfig, error) {
	var c InstallConfig
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		if !strings.Contains(err.Error(), "unknown field") {
			return InstallConfig{}, fmt.Errorf("parse install-config: %w", err)
		}
		c = InstallConfig{}
		if err := yaml.Unmarshal(data, &c); err != nil {
			return InstallConfig{}, fmt.Errorf("parse install-config: %w", err)
		}
	}
	if c.Platform.Azure == nil && c.Platform.AWS == nil {
		return InstallConfig{}, fmt.Errorf("parse install-config: %w", ErrNoPlatform)
	}
	return c, nil
}

// UserTagCount returns the number of userTags in c, over both platforms.
func (c InstallConfig) UserTagCount() int {
	n := 0
	if c.Platform.Azure != nil {
		n += len(c.Platform.Azure.UserTags)
	}
	if c.Platform.AWS != nil {
		n += len(c.Platform.AWS.UserTags)
	}
	return n
}

// Validate checks the userTags of c as the installer does: for Azure,
// userTags on a cloud other than AzurePublicCloud (first), then
// ValidateUserTags; for AWS, ValidateAWSUserTags. It returns nil or every
// problem, each a *FieldError, joined with errors.Join.
func (c InstallConfig) Validate() error {
	var errs []error
	if az := c.Platform.Azure; az != nil {
		cloud := az.CloudName
		if cloud == "" {
			cloud = AzurePublicCloud
		}
		if cloud != AzurePublicCloud && len(az.UserTags) > 0 {
			errs = append(errs, &FieldError{
				Field:  AzureUserTagsPath,
				Reason: ReasonUnsupportedCloud,
				Detail: fmt.Sprintf("userTags are supported on %s only, and platform.azure.cloudName is %q", AzurePublicCloud, az.CloudName),
			})
		}
		errs = append(errs, unjoin(ValidateUserTags(az.UserTags))...)
	}
	if aws := c.Platform.AWS; aws != nil {
		errs = append(errs, unjoin(ValidateAWSUserTags(aws.UserTags))...)
	}
	return errors.Join(errs...)
}

// unjoin returns the errors err joins, or err alone, or nothing for nil.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
