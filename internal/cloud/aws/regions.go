package aws

import "fmt"

// knownRegions are the regions of the AWS SDK's partition data (every
// partition) when this list was written. It only classifies failures: a
// region missing here that answers works as any other.
var knownRegions = map[string]bool{
	"af-south-1": true, "ap-east-1": true, "ap-east-2": true, "ap-northeast-1": true, "ap-northeast-2": true,
	"ap-northeast-3": true, "ap-south-1": true, "ap-south-2": true, "ap-southeast-1": true, "ap-southeast-2": true,
	"ap-southeast-3": true, "ap-southeast-4": true, "ap-southeast-5": true, "ap-southeast-6": true, "ap-southeast-7": true,
	"ca-central-1": true, "ca-west-1": true, "cn-north-1": true, "cn-northwest-1": true, "eu-central-1": true,
	"eu-central-2": true, "eu-north-1": true, "eu-south-1": true, "eu-south-2": true, "eu-west-1": true,
	"eu-west-2": true, "eu-west-3": true, "eu-isoe-west-1": true, "eusc-de-east-1": true, "il-central-1": true,
	"me-central-1": true, "me-south-1": true, "mx-central-1": true, "sa-east-1": true, "us-east-1": true,
	"us-east-2": true, "us-west-1": true, "us-west-2": true, "us-gov-east-1": true, "us-gov-west-1": true,
	"us-iso-east-1": true, "us-iso-west-1": true, "us-isob-east-1": true, "us-isob-west-1": true,
	"us-isof-east-1": true, "us-isof-south-1": true,
}

// unknownRegionNote explains a failed call in a region AWS does not have
// (a mistyped one such as us-esat-1), or "" for a known region.
func unknownRegionNote(region string) string {
	if region == "" || knownRegions[region] {
		return ""
	}
	return fmt.Sprintf(" (%q is not an AWS region: check the region names for a typo)", region)
}
