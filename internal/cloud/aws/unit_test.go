package aws

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/aws/smithy-go"

	"github.com/tagsync/tagsync/internal/cloud"
)

// TestTypeOf: service:type of ARNs, lower-case.
func TestTypeOf(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"arn:aws:ec2:us-east-1:123456789012:instance/i-0abc":       "ec2:instance",
		"arn:aws:ec2:us-east-1::image/ami-0abc":                    "ec2:image",
		"arn:aws:ec2:us-east-1:123456789012:security-group/sg-0ab": "ec2:security-group",
		"arn:aws-cn:ec2:cn-north-1:123456789012:volume/vol-0abc":   "ec2:volume",
		"arn:aws:sns:us-east-1:123456789012:topic":                 "sns",
		"arn:aws:logs:us-east-1:123456789012:log-group:my-group":   "logs:log-group",
		"i-0abc": "",
	} {
		if got := typeOf(in); got != want {
			t.Errorf("typeOf(%s) = %q, want %q", in, got, want)
		}
	}
}

// TestParseRef: ARNs give their region and resource ID, bare IDs the
// provider's region; other services and malformed IDs are refused.
func TestParseRef(t *testing.T) {
	t.Parallel()
	p := &Provider{region: "eu-west-1"}
	for in, want := range map[string]resourceRef{
		"arn:aws:ec2:us-east-1:123456789012:instance/i-0abc": {region: "us-east-1", ec2ID: "i-0abc"},
		"arn:aws:ec2:us-west-2::snapshot/snap-0abc":          {region: "us-west-2", ec2ID: "snap-0abc"},
		"vol-0abc": {region: "eu-west-1", ec2ID: "vol-0abc"},
	} {
		got, err := p.parseRef(in)
		want.id = in
		if err != nil || got != want {
			t.Errorf("parseRef(%s) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "arn:aws:s3:::bucket", "arn:aws:ec2:us-east-1:123456789012:instance", "a b", "arn:aws:ec2:us-east-1:1:instance/i-1/x", "rg/vm"} {
		if got, err := p.parseRef(in); err == nil {
			t.Errorf("parseRef(%q) = %+v, want an error", in, got)
		}
	}
}

// TestTagFilters: one filter per name with its distinct values, at most 20
// values each, names exact (case-sensitive), sorted.
func TestTagFilters(t *testing.T) {
	t.Parallel()
	var cs []cloud.Classifier
	for i := range 25 {
		cs = append(cs, cloud.Classifier{Name: "team", Value: fmt.Sprint(i)})
	}
	cs = append(cs, cloud.Classifier{Name: "Team", Value: "0"}, cloud.Classifier{Name: "env", Value: "prod"}, cloud.Classifier{Name: "team", Value: "3"})
	got := tagFilters(cs)
	var summary []string
	for _, f := range got {
		summary = append(summary, fmt.Sprintf("%s:%d", f.name, len(f.values)))
	}
	if want := []string{"Team:1", "env:1", "team:20", "team:5"}; !slices.Equal(summary, want) {
		t.Fatalf("filters = %v, want %v", summary, want)
	}
	if got[0].String() != `"Team"="0"` || got[3].String() != `"team" in ("20", "21", "22", "23", "24")` {
		t.Fatalf("String: %s; %s", got[0], got[3])
	}
}

// TestNamedIDs: IDs of the batch that EC2's messages name.
func TestNamedIDs(t *testing.T) {
	t.Parallel()
	ids := []string{"i-1234567890abcdef0", "i-0fedcba987654321", "vol-0abc", "i-12345678"}
	for msg, want := range map[string][]string{
		"The instance IDs 'i-1234567890abcdef0, i-0fedcba987654321' do not exist": {"i-0fedcba987654321", "i-1234567890abcdef0"},
		"The volume 'vol-0abc' does not exist.":                                   {"vol-0abc"},
		"VpcID vpc-1 does not exist.":                                             nil,
		"The instance ID 'i-123456789' does not exist":                            nil, // not a prefix match
		"User: arn:aws:sts::1:assumed-role/r/s is not authorized to perform: ec2:CreateTags on resource: arn:aws:ec2:us-east-1:1:instance/i-12345678": {"i-12345678"},
		"The maximum number of Tags for a resource has been reached.":                                                                                 nil,
	} {
		got := slices.Sorted(maps.Keys(namedIDs(&smithy.GenericAPIError{Code: "X", Message: msg}, ids)))
		if !slices.Equal(got, want) {
			t.Errorf("namedIDs(%q) = %v, want %v", msg, got, want)
		}
	}
	if namedIDs(errors.New("i-12345678"), ids) != nil {
		t.Error("a non-API error names IDs")
	}
}

// TestErrorKinds: AWS error codes map to the cloud kinds; the message is
// one line with the context and AWS's answer.
func TestErrorKinds(t *testing.T) {
	t.Parallel()
	p := &Provider{opts: Options{}.withDefaults()}
	p.opts.Gates = NewThrottleGates()
	for code, want := range map[string]error{
		"InvalidInstanceID.NotFound":  cloud.ErrNotFound,
		"InvalidVolume.NotFound":      cloud.ErrNotFound,
		"InvalidInstanceID.Malformed": cloud.ErrNotFound,
		"InvalidID":                   cloud.ErrNotFound,
		"UnauthorizedOperation":       cloud.ErrForbidden,
		"AccessDeniedException":       cloud.ErrForbidden,
		"AuthFailure":                 cloud.ErrForbidden,
		"TagLimitExceeded":            cloud.ErrTooManyTags,
		"RequestLimitExceeded":        cloud.ErrThrottled,
		"ThrottlingException":         cloud.ErrThrottled,
		"ThrottlingSomethingNew":      cloud.ErrThrottled,
		"InvalidParameterValue":       nil,
	} {
		sdkErr := &smithy.OperationError{ServiceID: "EC2", OperationName: "CreateTags",
			Err: &smithy.GenericAPIError{Code: code, Message: "words"}}
		err := p.wrap("us-east-1", "aws: CreateTags team on i-1 in us-east-1", sdkErr)
		for _, kind := range []error{cloud.ErrNotFound, cloud.ErrForbidden, cloud.ErrTooManyTags, cloud.ErrThrottled} {
			if errors.Is(err, kind) != (kind == want) {
				t.Errorf("%s: errors.Is(%v) = %t", code, kind, !(kind == want))
			}
		}
		if want == cloud.ErrThrottled {
			if d, ok := cloud.RetryAfter(err); !ok || d != DefaultThrottleWait {
				t.Errorf("%s: RetryAfter = %s, %t", code, d, ok)
			}
		}
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != code {
			t.Errorf("%s: the SDK's error is not reachable: %v", code, err)
		}
		msg := "aws: CreateTags team on i-1 in us-east-1: EC2 answered " + code + ": words"
		if want == cloud.ErrThrottled {
			msg += " (calls held for 5s)"
		}
		if err.Error() != msg {
			t.Errorf("%s: message %q, want %q", code, err.Error(), msg)
		}
	}
}
