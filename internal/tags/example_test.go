package tags_test

import (
	"fmt"

	"github.com/tagsync/tagsync/internal/tags"
)

func ExampleCodec() {
	c := tags.Codec{Prefix: tags.DefaultPrefix, Rules: &tags.AzureRules}
	labels, skipped := c.ToLabels(tags.Set{"env": "prod", "Cost Center": "CC 1234", "azure-x": "reserved"})
	fmt.Println(labels)
	fmt.Println(skipped[0].Name, "skipped")
	back, _ := c.FromLabels(labels)
	fmt.Println(back)
	// Output:
	// map[azure.tags/Costx_20Center:CCx_201234 azure.tags/env:prod]
	// azure-x skipped
	// map[Cost Center:CC 1234 env:prod]
}

func ExampleMerge() {
	res := tags.Merge(tags.CaseInsensitive, tags.MergeInput{
		Base:  tags.Set{"env": "prod", "team": "a", "old": "x"},
		Cloud: tags.Set{"env": "staging", "team": "a", "old": "x"}, // env changed in the cloud
		Node:  tags.Set{"env": "prod", "team": "b"},                // team changed, old deleted on the node
	})
	fmt.Println("cloud:", res.CloudPatch.Set, res.CloudPatch.Delete)
	fmt.Println("node:", res.NodePatch.Set, res.NodePatch.Delete)
	fmt.Println("base:", res.NewBase)
	// Output:
	// cloud: map[team:b] [old]
	// node: map[env:staging] []
	// base: map[env:staging team:b]
}

// Under Azure's rules Env and env are one tag; under AWS's they are two.
func ExampleMerge_nameCase() {
	in := tags.MergeInput{
		Base:  tags.Set{"Env": "prod"},
		Cloud: tags.Set{"env": "prod"}, // re-created in lower case
		Node:  tags.Set{"Env": "prod"},
		From:  tags.Sources{"Env": tags.SideCloud}, // the tag came from the cloud
	}
	for _, rules := range []tags.Rules{tags.AzureRules, tags.AWSRules} {
		res := tags.Merge(rules.NameCase(), in)
		fmt.Println(rules.NameCase(), "node:", res.NodePatch.Set, res.NodePatch.Delete, "base:", res.NewBase)
	}
	// Output:
	// CaseInsensitive node: map[env:prod] [] base: map[env:prod]
	// CaseSensitive node: map[env:prod] [Env] base: map[env:prod]
}

// Two patches that make the same change have one key, so one write can
// carry both; a different value is a different key.
func ExamplePatch_Key() {
	a := tags.Patch{Set: tags.Set{"env": "prod"}, Delete: []string{"b", "a"}}
	b := tags.Patch{Set: tags.Set{"env": "prod"}, Delete: []string{"a", "b"}}
	c := tags.Patch{Set: tags.Set{"env": "dev"}, Delete: []string{"a", "b"}}
	fmt.Println(a.Key())
	fmt.Println(a.Key() == b.Key(), a.Key() == c.Key())
	// Output:
	// map["env":"prod"] ["a" "b"]
	// true false
}
