package aws

import (
	"errors"
	"maps"
	"net/http"
	"slices"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// ids returns the IDs of a discovery's resources.
func ids(d cloud.Discovery) []string {
	var out []string
	for _, r := range d.Resources {
		out = append(out, r.ID)
	}
	return out
}

// TestDiscoverAcrossRegions: two classifiers OR-ed find exactly the
// resources carrying either, in two regions, once each (one carries both);
// a third region holds nothing classified; every resource comes with all
// its tags, its type, region and rules; one request per classifier and
// region.
func TestDiscoverAcrossRegions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const east, west, south = "us-east-1", "eu-west-1", "ap-southeast-2"
	a := e.instances(east, 1, map[string]string{"team": "a", "owner": "ana"})[0]
	b := e.volumes(east, 1, map[string]string{"env": "prod"})[0]
	both := e.instances(east, 1, map[string]string{"team": "a", "env": "prod"})[0]
	e.instances(east, 1, map[string]string{"team": "b"}) // another value
	e.instances(east, 1, map[string]string{"Team": "a"}) // another key: AWS keys are case-sensitive
	e.volumes(east, 1, nil)                              // untagged
	f := e.volumes(west, 1, map[string]string{"env": "prod"})[0]
	e.volumes(south, 2, map[string]string{"env": "staging"}) // region without a match
	e.instances(south, 1, map[string]string{"team": "z"})

	d, err := e.p.Discover(e.ctx, []cloud.Classifier{{Name: "team", Value: "a"}, {Name: "env", Value: "prod"}},
		cloud.DiscoverOptions{Scopes: []string{east, west, south}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{a, b, both, f}
	slices.SortFunc(want, func(x, y string) int { return compare(cloud.CanonicalID(x), cloud.CanonicalID(y)) })
	if got := ids(d); !slices.Equal(got, want) {
		t.Fatalf("Discover found\n  %v\nwant\n  %v", got, want)
	}
	if len(d.Failed) != 0 {
		t.Fatalf("Failed = %v", d.Failed)
	}
	// 2 classifier names x 3 regions, one page each.
	if d.Calls != 6 || e.p.Calls()["tag:GetResources"] != 6 {
		t.Fatalf("Calls = %d, provider counted %v; want 6 GetResources", d.Calls, e.p.Calls())
	}
	byID := map[string]cloud.Classified{}
	for _, r := range d.Resources {
		byID[r.ID] = r
	}
	checks := []struct {
		id, typ, scope string
		tags           tags.Set
	}{
		{a, "ec2:instance", east, tags.Set{"team": "a", "owner": "ana"}},
		{b, "ec2:volume", east, tags.Set{"env": "prod"}},
		{both, "ec2:instance", east, tags.Set{"team": "a", "env": "prod"}},
		{f, "ec2:volume", west, tags.Set{"env": "prod"}},
	}
	for _, c := range checks {
		r := byID[c.id]
		if r.Type != c.typ || r.Scope != c.scope || !maps.Equal(r.Tags, c.tags) || r.Rules.MaxTags != TagRules.MaxTags || r.Rules.CaseInsensitive {
			t.Errorf("%s = %+v; want type %s, scope %s, tags %v, AWS rules", c.id, r, c.typ, c.scope, c.tags)
		}
	}

	// Without scopes: the provider's region only.
	d, err = e.p.Discover(e.ctx, []cloud.Classifier{{Name: "env", Value: "prod"}}, cloud.DiscoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want = sorted([]string{b, both})
	if got := sorted(ids(d)); !slices.Equal(got, want) || d.Calls != 1 {
		t.Fatalf("Discover in the default region = %v in %d calls, want %v in 1", got, d.Calls, want)
	}
}

// compare orders strings.
func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestDiscoverValuesOfOneName: classifiers sharing a tag name share one
// request per region (their values OR-ed in one filter).
func TestDiscoverValuesOfOneName(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.instances("us-east-1", 1, map[string]string{"team": "a"})[0]
	b := e.instances("us-east-1", 1, map[string]string{"team": "b"})[0]
	e.instances("us-east-1", 1, map[string]string{"team": "c"})
	d, err := e.p.Discover(e.ctx, []cloud.Classifier{{Name: "team", Value: "a"}, {Name: "team", Value: "b"}, {Name: "team", Value: "a"}}, cloud.DiscoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sorted(ids(d)), sorted([]string{a, b}); !slices.Equal(got, want) || d.Calls != 1 {
		t.Fatalf("Discover = %v in %d calls, want %v in 1", got, d.Calls, want)
	}
}

// TestDiscoverPagesAndTypes: 150 classified resources come back whole over
// several pages, and a classified resource of a type outside the EC2 types
// searched (moto's "ec2:managed-prefix-lists") is not returned.
func TestDiscoverPagesAndTypes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	want := e.instances("us-east-1", 150, map[string]string{"team": "a", "x": "1"})
	if _, err := e.ec2("us-east-1").CreateManagedPrefixList(e.ctx, &ec2.CreateManagedPrefixListInput{
		PrefixListName: sdkaws.String("pl"), AddressFamily: sdkaws.String("IPv4"), MaxEntries: sdkaws.Int32(5),
		TagSpecifications: tagSpec(ec2types.ResourceTypePrefixList, map[string]string{"team": "a"}),
	}); err != nil {
		t.Fatal(err)
	}
	d, err := e.p.Discover(e.ctx, []cloud.Classifier{{Name: "team", Value: "a"}}, cloud.DiscoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := sorted(ids(d)); !slices.Equal(got, sorted(want)) {
		t.Fatalf("Discover found %d resources, want the %d instances", len(got), len(want))
	}
	if d.Calls < 2 {
		t.Fatalf("Discover took %d calls for 150 resources, want several pages", d.Calls)
	}
	// Without the type filter, moto returns the prefix list: the filter is
	// what keeps it out.
	p := e.newProvider(motoConfig(), WithResourceTypes("ec2"))
	d, err = p.Discover(e.ctx, []cloud.Classifier{{Name: "team", Value: "a"}}, cloud.DiscoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Resources) != len(want)+1 {
		t.Fatalf("Discover of all EC2 types found %d resources, want %d", len(d.Resources), len(want)+1)
	}
}

// TestDiscoverFailedRegion: a region that cannot be searched is reported
// with its typed error; the other regions' resources are complete.
func TestDiscoverFailedRegion(t *testing.T) {
	t.Parallel()
	e := newEnv(t, WithRetryMaxAttempts(1))
	a := e.instances("us-east-1", 1, map[string]string{"team": "a"})[0]
	e.instances("eu-west-1", 1, map[string]string{"team": "a"})
	e.tr.setInject(func(_ *http.Request, op, region string) *http.Response {
		if op == "GetResources" && region == "eu-west-1" {
			return taggingError(http.StatusBadRequest, "AccessDeniedException", "User is not authorized to perform: tag:GetResources")
		}
		return nil
	})
	d, err := e.p.Discover(e.ctx, []cloud.Classifier{{Name: "team", Value: "a"}}, cloud.DiscoverOptions{Scopes: []string{"us-east-1", "eu-west-1"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(d); !slices.Equal(got, []string{a}) {
		t.Fatalf("Discover = %v, want %v", got, []string{a})
	}
	if len(d.Failed) != 1 || d.Failed[0].Scope != "region eu-west-1" || !errors.Is(d.Failed[0].Err, cloud.ErrForbidden) {
		t.Fatalf("Failed = %v, want region eu-west-1 forbidden", d.Failed)
	}
	t.Logf("failed region: %v", d.Failed[0].Err)
}

// TestDiscoverInvalid: an empty classifier name fails the search; no
// classifier finds nothing without a call.
func TestDiscoverInvalid(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if _, err := e.p.Discover(e.ctx, []cloud.Classifier{{Name: "", Value: "a"}}, cloud.DiscoverOptions{}); err == nil {
		t.Fatal("Discover with an empty classifier name succeeded")
	}
	d, err := e.p.Discover(e.ctx, nil, cloud.DiscoverOptions{})
	if err != nil || len(d.Resources) != 0 || d.Calls != 0 {
		t.Fatalf("Discover without classifiers = %+v, %v", d, err)
	}
}
