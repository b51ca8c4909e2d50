package tags

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// awsKeys are legal AWS tag keys: every punctuation AWS allows, spaces,
// Unicode letters and digits, both cases of one key, the longest
// representable and the longest legal key.
var awsKeys = []string{
	"Env", "env", "ENV", "cost center", "a+b-c=d.e_f:g/h@i", "kubernetes.io/cluster/demo", "team@example.com",
	"Ünïcödé", "日本語キー", "x_20", "-lead", "trail.", "_", "@", "k", strings.Repeat("K", 63), strings.Repeat("k", 128),
	"Name", "taint:example.com:gpu",
}

// awsValues are legal AWS tag values.
var awsValues = []string{"", "prod", "Prod", "a b", "1+1=2", "https://example.com/x", "ü", strings.Repeat("v", 63), strings.Repeat("v", 256)}

// checkAWSRoundTrip asserts that a legal AWS tag either round-trips
// through labels exactly (case and all) or is reported unrepresentable,
// as on Azure: nothing is truncated or guessed.
func checkAWSRoundTrip(t *testing.T, name, value string) {
	t.Helper()
	if AWSRules.ValidateName(name) != nil || AWSRules.ValidateValue(name, value) != nil {
		return // not a tag tagsync syncs on AWS
	}
	c := Codec{Prefix: "aws.tags", Rules: &AWSRules}
	in := Set{name: value}
	labels, skipped := c.ToLabels(in)
	if err := c.Check(name, value); err != nil {
		if !errors.Is(err, ErrUnrepresentable) || len(skipped) != 1 || !errors.Is(skipped[0].Err, ErrUnrepresentable) || len(labels) != 0 {
			t.Errorf("%q=%q: Check %v, skipped %v, labels %v; want it reported unrepresentable", name, value, err, skipped, labels)
		}
		return
	}
	back, skipped := c.FromLabels(labels)
	if len(skipped) != 0 || !reflect.DeepEqual(back, in) {
		t.Errorf("%q=%q: labels %v decode to %v (skipped %v)", name, value, labels, back, skipped)
	}
}

// TestCodecAWSRoundTrip: every legal AWS key and value in the tables
// round-trips or is reported; "Env" and "env" are two labels; 63 ASCII
// characters fit a label name, 128 do not.
func TestCodecAWSRoundTrip(t *testing.T) {
	for _, k := range awsKeys {
		for _, v := range awsValues {
			checkAWSRoundTrip(t, k, v)
		}
	}
	c := Codec{Prefix: "aws.tags", Rules: &AWSRules}
	labels, skipped := c.ToLabels(Set{"Env": "a", "env": "b", "ENV": "c"})
	if len(labels) != 3 || len(skipped) != 0 {
		t.Errorf("three spellings of one key: labels %v, skipped %v; want three labels", labels, skipped)
	}
	if err := c.Check(strings.Repeat("K", 63), "v"); err != nil {
		t.Errorf("63-character key: %v", err)
	}
	if err := c.Check(strings.Repeat("k", 128), "v"); !errors.Is(err, ErrUnrepresentable) {
		t.Errorf("128-character key: %v, want ErrUnrepresentable", err)
	}
}

// FuzzCodecAWSRoundTrip: any legal AWS tag round-trips or is reported.
func FuzzCodecAWSRoundTrip(f *testing.F) {
	for i, k := range awsKeys {
		f.Add(k, awsValues[i%len(awsValues)])
	}
	f.Fuzz(checkAWSRoundTrip)
}
