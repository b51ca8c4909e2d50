package openshift_test

import (
	"fmt"

	"github.com/tagsync/tagsync/internal/openshift"
)

func ExampleValidateUserTags() {
	err := openshift.ValidateUserTags(map[string]string{
		"Env":         "prod",
		"env":         "dev",
		"cost-center": "a<b", // valid: '<' lies in the +-@ range of the value pattern
		"owner-":      "team1",
		"Name":        "web",
		"app":         "",
	})
	fmt.Println(err)
	// Output:
	// platform.azure.userTags: Forbidden: found duplicate tag keys: "ENV" matches 2 keys: "Env", "env" (tag keys are case-insensitive; keep one spelling)
	// platform.azure.userTags[Name]: Invalid value: "web": key "Name" is restricted: the key name and keys beginning with kubernetes.io, openshift.io, microsoft, azure or windows, in any case, are kept for the platform
	// platform.azure.userTags[app]: Invalid value: "": value must be 1 to 256 characters long and contain only letters, digits and _ + , - . / : ; < = > ? @
	// platform.azure.userTags[owner-]: Invalid value: "team1": key must begin with a letter, end with a letter, digit or '_', be at most 128 characters long and contain only letters, digits, '_', '.' and '-'
}

func ExampleParseInstallConfig() {
	c, err := openshift.ParseInstallConfig([]byte(`
apiVersion: v1
platform:
  azure:
    region: eastus
    cloudName: AzureUSGovernmentCloud
    userTags:
      env: prod
`))
	if err != nil {
		fmt.Println("unreadable:", err)
		return
	}
	fmt.Println(c.UserTagCount(), "userTags")
	fmt.Println(c.Validate())
	// Output:
	// 1 userTags
	// platform.azure.userTags: Forbidden: userTags are supported on AzurePublicCloud only, and platform.azure.cloudName is "AzureUSGovernmentCloud"
}
