package openshift

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

const azureConfig = `apiVersion: v1
baseDomain: example.com
metadata:
  name: demo
platform:
  azure:
    region: eastus
    baseDomainResourceGroupName: dns
    userTags:
      env: prod
      cost-center: "a<b"
pullSecret: '{"auths":{}}'
`

func TestParseInstallConfigAzure(t *testing.T) {
	c, err := ParseInstallConfig([]byte(azureConfig))
	if err != nil {
		t.Fatal(err)
	}
	want := InstallConfig{Platform: Platform{Azure: &AzurePlatform{UserTags: map[string]string{"env": "prod", "cost-center": "a<b"}}}}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got %+v, want %+v", c, want)
	}
	if n := c.UserTagCount(); n != 2 {
		t.Fatalf("UserTagCount = %d", n)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestParseInstallConfigJSON(t *testing.T) {
	c, err := ParseInstallConfig([]byte(`{"apiVersion":"v1","platform":{"aws":{"region":"us-east-1","userTags":{"Env":"a","env":"b"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Platform.AWS == nil || len(c.Platform.AWS.UserTags) != 2 || c.Platform.Azure != nil {
		t.Fatalf("got %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("AWS keys are case-sensitive, yet: %v", err)
	}
}

// sigs.k8s.io/yaml converts scalars to the target type, YAML 1.1 style, as
// the installer sees them.
func TestParseInstallConfigYAML11Scalars(t *testing.T) {
	c, err := ParseInstallConfig([]byte("platform:\n  azure:\n    userTags:\n      replicas: 3\n      enabled: yes\n      n: x\n      empty: ~\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"replicas": "3", "enabled": "true", "false": "x", "empty": ""}
	if !reflect.DeepEqual(c.Platform.Azure.UserTags, want) {
		t.Fatalf("userTags = %q, want %q", c.Platform.Azure.UserTags, want)
	}
}

func TestParseInstallConfigErrors(t *testing.T) {
	cases := map[string]string{
		"malformed":             "platform: [",
		"list at top":           "- a\n- b\n",
		"scalar at top":         "hello",
		"duplicate keys":        "platform:\n  azure:\n    userTags:\n      a: x\n      a: y\n",
		"duplicate platform":    "platform: {}\nplatform: {}\n",
		"userTags is a list":    "platform:\n  azure:\n    userTags:\n    - a\n",
		"userTags value a list": "platform:\n  azure:\n    userTags:\n      a: [1]\n",
		"userTags value a map":  "apiVersion: v1\nplatform:\n  azure:\n    userTags:\n      a: {b: c}\n",
		"cloudName a map":       "platform:\n  azure:\n    cloudName: {a: b}\n",
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			if c, err := ParseInstallConfig([]byte(doc)); err == nil {
				t.Fatalf("parsed %q as %+v", doc, c)
			}
		})
	}
}

func TestParseInstallConfigNoPlatform(t *testing.T) {
	for _, doc := range []string{"", "apiVersion: v1\n", "platform:\n  gcp:\n    region: x\n", "platform:\n  azure: null\n"} {
		if _, err := ParseInstallConfig([]byte(doc)); !errors.Is(err, ErrNoPlatform) {
			t.Errorf("%q: error %v, want ErrNoPlatform", doc, err)
		}
	}
}

func TestInstallConfigValidateCloudName(t *testing.T) {
	doc := func(cloud string) string {
		return "platform:\n  azure:\n    cloudName: " + cloud + "\n    userTags:\n      env: prod\n"
	}
	for _, cloud := range []string{`""`, "AzurePublicCloud"} {
		c, err := ParseInstallConfig([]byte(doc(cloud)))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("cloudName %s: %v", cloud, err)
		}
	}
	c, err := ParseInstallConfig([]byte(doc("AzureUSGovernmentCloud")))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	if g, want := problems(t, err), []got{{ReasonUnsupportedCloud, ""}}; !reflect.DeepEqual(g, want) {
		t.Fatalf("got %v, want %v", g, want)
	}
	if !strings.Contains(err.Error(), "platform.azure.userTags: Forbidden: userTags are supported on AzurePublicCloud only") {
		t.Fatalf("message %q", err)
	}
	// No userTags, no problem, whatever the cloud.
	c, err = ParseInstallConfig([]byte("platform:\n  azure:\n    cloudName: AzureChinaCloud\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestInstallConfigValidateOrder(t *testing.T) {
	c, err := ParseInstallConfig([]byte(`platform:
  azure:
    cloudName: AzureStackCloud
    userTags:
      b-: x
      Name: y
      a: ""
  aws:
    userTags:
      Name: z
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []got{
		{ReasonUnsupportedCloud, ""},
		{ReasonRestrictedKey, "Name"}, {ReasonInvalidValue, "a"}, {ReasonInvalidKey, "b-"},
		{ReasonRestrictedKey, "Name"},
	}
	if g := problems(t, c.Validate()); !reflect.DeepEqual(g, want) {
		t.Fatalf("got %v, want %v", g, want)
	}
}
