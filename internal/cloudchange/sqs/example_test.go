package sqs_test

import (
	"errors"
	"fmt"

	"github.com/tagsync/tagsync/internal/cloudchange/sqs"
)

// A tag change carries the resource's whole tag set after the change: the
// deleted key "owner" is among the changed keys but not among the tags.
func ExampleParse_tagChange() {
	c, err := sqs.Parse(`{"version": "0", "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
  "detail-type": "Tag Change on Resource", "source": "aws.tag", "account": "123456789012",
  "time": "2026-11-25T10:00:00Z", "region": "eu-west-1",
  "resources": ["arn:aws:ec2:eu-west-1:123456789012:instance/i-0abc"],
  "detail": {"changed-tag-keys": ["team", "owner"], "service": "ec2", "resource-type": "instance",
    "version": 7, "tags": {"team": "blue", "env": "prod"}}}`)
	fmt.Println(err)
	fmt.Println(c.Kind, c.Resource)
	fmt.Println(c.Tags)
	// Output:
	// <nil>
	// Write arn:aws:ec2:eu-west-1:123456789012:instance/i-0abc
	// map[env:prod team:blue]
}

// A terminated instance is a delete; other states are state changes.
// Neither carries tags.
func ExampleParse_instanceState() {
	for _, state := range []string{"stopped", "terminated"} {
		c, _ := sqs.Parse(`{"version": "0", "id": "7bf73129-1428-4cd3-a780-95db273d1602",
  "detail-type": "EC2 Instance State-change Notification", "source": "aws.ec2", "account": "123456789012",
  "time": "2026-11-25T10:00:00Z", "region": "eu-west-1",
  "resources": ["arn:aws:ec2:eu-west-1:123456789012:instance/i-0abc"],
  "detail": {"instance-id": "i-0abc", "state": "` + state + `"}}`)
		fmt.Println(state, c.Kind, c.Tags == nil)
	}
	// Output:
	// stopped State true
	// terminated Delete true
}

// Events of other kinds are acknowledged and ignored; a body that is not
// an EventBridge event is poison.
func ExampleParse_notRead() {
	_, err := sqs.Parse(`{"version": "0", "id": "1", "detail-type": "Invalid Effective Tag Policy", "source": "aws.tag",
  "time": "2026-11-25T10:00:00Z", "resources": [], "detail": {}}`)
	fmt.Println(errors.Is(err, sqs.ErrNotRead))
	_, err = sqs.Parse(`hello`)
	fmt.Println(errors.Is(err, sqs.ErrNotRead), err != nil)
	// Output:
	// true
	// false true
}
