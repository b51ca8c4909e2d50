// Package openshift checks the user-defined tags of an OpenShift
// install-config (install-config.yaml) the way the OpenShift installer does,
// so that a tag set can be vetted before an installation is attempted. It
// does no I/O: ParseInstallConfig reads bytes the caller supplies.
//
// # Azure: platform.azure.userTags
//
// ValidateUserTags reproduces the installer's checks of
// platform.azure.userTags (openshift/installer,
// pkg/types/azure/validation/platform.go, validateUserTags, validateTag and
// findDuplicateTagKeys):
//
//   - an empty or absent map is valid;
//   - at most 10 tags (MaxAzureUserTags);
//   - keys that are equal once upper-cased the Unicode way (strings.ToTitle,
//     as the installer compares them) are refused, in one error naming every
//     such group;
//   - then each key is checked on its own and only its FIRST failing rule is
//     reported, in this order:
//     1. the key matches ^[a-zA-Z]([0-9A-Za-z_.-]{0,126}[0-9A-Za-z_])?$ : 1 to
//     128 ASCII letters, digits, '_', '.' and '-', beginning with a letter and
//     ending with a letter, digit or '_';
//     2. the value matches ^[0-9A-Za-z_.=+-@]{1,256}$ : 1 to 256 characters
//     (an empty value is refused, although Azure itself accepts one);
//     3. the key is not "name" and does not begin with "kubernetes.io",
//     "openshift.io", "microsoft", "azure" or "windows", all compared
//     case-insensitively ("Name", "AZURE-x" and "Windows_ver" are refused;
//     "names" and "my-azure" are fine).
//
// The value pattern holds a surprise. Inside the character class, "+-@" is not
// the three characters '+', '-' and '@' but the RANGE from '+' (0x2B) to '@'
// (0x40), which also admits , - . / 0-9 : ; < = > and ?. This package
// replicates the installer's pattern literally, so the value "a<b" is
// ACCEPTED, as are "x,y", "1/2", "a:b;c" and "why?". Space, '*', '#', '&',
// '%', '!', '~', quotes, brackets and every non-ASCII character are refused.
//
// # Azure cloud
//
// The installer allows userTags only on AzurePublicCloud. An empty
// platform.azure.cloudName is AzurePublicCloud (the installer's default), so
// userTags with any other cloudName (AzureUSGovernmentCloud,
// AzureChinaCloud, AzureStackCloud, ...) are an error; see
// InstallConfig.Validate.
//
// # AWS: platform.aws.userTags
//
// ValidateAWSUserTags reproduces the installer's checks of
// platform.aws.userTags (openshift/installer,
// pkg/types/aws/validation/platform.go): at most 25 tags (MaxAWSUserTags),
// no case-insensitivity check (AWS keys are case-sensitive), and per key
// the first failing rule of: the key is not "Name" in any case; key and
// value match ^[0-9A-Za-z_.:/=+-@\p{Z}]*$ (the same +-@ range, plus Unicode
// space separators); the key is not empty and at most 128 bytes; the value
// is not empty and at most 256 bytes; the key is not in the kubernetes.io or
// openshift.io namespace (^([^/]*\.)?kubernetes.io/ and the same for
// openshift.io, case-sensitive). The installer also warns, without failing,
// when there are more than 8 tags (only 8 reach the bootstrap ignition
// object in S3); this package does not report that.
//
// # Reading install-config.yaml
//
// ParseInstallConfig reads only platform.azure.cloudName,
// platform.azure.userTags and platform.aws.userTags, with the YAML library
// and the two-step approach the installer uses: a strict parse, falling back
// to a lenient one only when the strict parse fails on an unknown field. So
// duplicate YAML keys are an error, and YAML 1.1 rules apply: unquoted yes,
// no, on, off, y and n are booleans and become the strings "true" and
// "false" (as a key too: "n: x" is the tag false=x), and numbers become their
// text. Quote such keys and values.
//
// # Worked example
//
// The Azure install-config
//
//	platform:
//	  azure:
//	    region: eastus
//	    userTags:
//	      Env: prod
//	      env: dev
//	      cost-center: "a<b"
//	      owner-: team1
//	      Name: web
//	      app: ""
//
// has four problems, reported together in this order (those of the whole
// map first, then one per key, by key):
//
//	platform.azure.userTags: Forbidden: found duplicate tag keys: "ENV" matches 2 keys: "Env", "env" (...)
//	platform.azure.userTags[Name]: Invalid value: "web": key "Name" is restricted: ...
//	platform.azure.userTags[app]: Invalid value: "": value must be 1 to 256 characters long ...
//	platform.azure.userTags[owner-]: Invalid value: "team1": key must begin with a letter, ...
//
// Env and env are each valid on their own, but not together; cost-center=a<b
// is valid (the +-@ range); Name is reported as restricted because its value
// is valid, whereas Name with an empty value would be reported for the value only (a
// key's first failing rule wins).
package openshift
