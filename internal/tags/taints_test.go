package tags

import "testing"

func TestTaintTags(t *testing.T) {
	got := TaintTags([]Taint{
		{Key: "kubernetes.azure.com/scalesetpriority", Value: "spot", Effect: "NoSchedule"},
		{Key: "gpu", Value: "", Effect: "NoExecute"},
		{Key: "gpu", Value: "", Effect: "NoSchedule"},
	})
	want := Set{"taint:kubernetes.azure.com:scalesetpriority": "spot:NoSchedule", "taint:gpu": ":NoExecute,:NoSchedule"}
	if !got.Equal(CaseInsensitive, want) {
		t.Fatalf("TaintTags = %v, want %v", got, want)
	}
	for name := range got {
		if err := AzureRules.ValidateName(name); err != nil {
			t.Fatalf("taint tag name %q is not a valid Azure tag name: %v", name, err)
		}
	}
	if TaintTags(nil) != nil {
		t.Fatal("no taints must give no tags")
	}
}

func TestSplitTaintTags(t *testing.T) {
	rest, taints := SplitTaintTags(CaseInsensitive, Set{"env": "prod", "Taint:gpu": ":NoSchedule"})
	if !rest.Equal(CaseInsensitive, Set{"env": "prod"}) || !taints.Equal(CaseInsensitive, Set{"Taint:gpu": ":NoSchedule"}) {
		t.Fatalf("split = %v / %v", rest, taints)
	}
	if IsTaintTag(CaseInsensitive, "tain") || !IsTaintTag(CaseInsensitive, "TAINT:x") {
		t.Fatal("IsTaintTag is wrong about the prefix")
	}
}
