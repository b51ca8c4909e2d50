package aws

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
	"github.com/tagsync/tagsync/internal/tags/tagstest"
	"github.com/tagsync/tagsync/internal/testenv"
)

// checkResults fails unless results name ids in order and fail exactly
// where want says (an error kind, or errAny for any error).
func checkResults(t *testing.T, res []cloud.WriteResult, ids []string, want map[string]error) {
	t.Helper()
	if len(res) != len(ids) {
		t.Fatalf("%d results for %d IDs", len(res), len(ids))
	}
	for i, r := range res {
		if r.ID != ids[i] {
			t.Fatalf("result %d is for %s, want %s", i, r.ID, ids[i])
		}
		kind, bad := want[r.ID]
		switch {
		case !bad && r.Err != nil:
			t.Errorf("%s: unexpected error %v", r.ID, r.Err)
		case bad && r.Err == nil:
			t.Errorf("%s: no error, want one", r.ID)
		case bad && kind != errAny && !errors.Is(r.Err, kind):
			t.Errorf("%s: error %v is not %v", r.ID, r.Err, kind)
		}
	}
}

// errAny stands for any error in checkResults.
var errAny = errors.New("any error")

// TestWriteTagsOneCall: one patch to 150 resources (instances and volumes)
// is one CreateTags call, and every resource gets the tags, keeping its own.
func TestWriteTagsOneCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := append(e.instances("us-east-1", 100, map[string]string{"keep": "me"}), e.volumes("us-east-1", 50, nil)...)
	res := e.p.WriteTags(e.ctx, []cloud.TagWrite{{IDs: ids, Patch: tags.Patch{Set: tags.Set{"team": "a", "cost": "42"}}}}, nil)
	checkResults(t, res, ids, nil)
	if got := e.p.Calls(); !maps.Equal(got, map[string]int{"ec2:CreateTags": 1}) {
		t.Fatalf("calls = %v, want one ec2:CreateTags", got)
	}
	for _, id := range []string{ids[0], ids[99], ids[100], ids[149]} {
		want := map[string]string{"team": "a", "cost": "42"}
		if strings.Contains(id, ":instance/") {
			want["keep"] = "me"
		}
		if got := e.tagsOf(id); !maps.Equal(got, want) {
			t.Errorf("%s tags = %v, want %v", id, got, want)
		}
	}
}

// TestWriteTagsChunks: more IDs than a call takes are sent in chunks; bare
// EC2 IDs are in the provider's region; writes to several regions are
// grouped by region; results keep the input order across writes.
func TestWriteTagsChunks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.maxIDsPerCall = 40 })
	east := e.instances("us-east-1", 100, nil)
	west := e.instances("eu-west-1", 3, nil)
	first := append([]string{west[0]}, east...)
	first = append(first, west[1:]...)
	bare := []string{ec2ID(east[0]), ec2ID(east[1])}
	res := e.p.WriteTags(e.ctx, []cloud.TagWrite{
		{IDs: first, Patch: tags.Patch{Set: tags.Set{"team": "a"}}},
		{IDs: bare, Patch: tags.Patch{Set: tags.Set{"bare": "yes"}}},
	}, nil)
	checkResults(t, res, append(append([]string(nil), first...), bare...), nil)
	// us-east-1: 100 IDs in 3 calls; eu-west-1: 1 call; the bare IDs: 1.
	if got := e.p.Calls()["ec2:CreateTags"]; got != 5 {
		t.Fatalf("CreateTags calls = %d, want 5", got)
	}
	if got := e.tagsOf(east[0]); !maps.Equal(got, map[string]string{"team": "a", "bare": "yes"}) {
		t.Fatalf("%s tags = %v", east[0], got)
	}
	if got := e.tagsOf(west[2]); !maps.Equal(got, map[string]string{"team": "a"}) {
		t.Fatalf("%s tags = %v", west[2], got)
	}
}

// TestWriteTagsDeleteExpect: deletions go in one DeleteTags call; a name
// with an expected value is deleted only where the value matches (moto, like
// EC2, honours the value in DeleteTags), a name without one whatever its
// value; sets of the same patch go in one CreateTags call.
func TestWriteTagsDeleteExpect(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.instances("us-east-1", 3, nil)
	e.setTags(map[string]string{"owner": "old", "tmp": "x"}, ids[0])
	e.setTags(map[string]string{"owner": "new", "tmp": "y"}, ids[1])
	e.setTags(map[string]string{"tmp": "z"}, ids[2])
	res := e.p.WriteTags(e.ctx, []cloud.TagWrite{{
		IDs:    ids,
		Patch:  tags.Patch{Set: tags.Set{"team": "a"}, Delete: []string{"owner", "tmp"}},
		Expect: tags.Set{"owner": "old"},
	}}, nil)
	checkResults(t, res, ids, nil)
	if got := e.p.Calls(); !maps.Equal(got, map[string]int{"ec2:DeleteTags": 1, "ec2:CreateTags": 1}) {
		t.Fatalf("calls = %v, want one DeleteTags and one CreateTags", got)
	}
	want := []map[string]string{{"team": "a"}, {"owner": "new", "team": "a"}, {"team": "a"}}
	for i, id := range ids {
		if got := e.tagsOf(id); !maps.Equal(got, want[i]) {
			t.Errorf("%s tags = %v, want %v", id, got, want[i])
		}
	}

	// An expected empty value deletes only an empty value.
	e.setTags(map[string]string{"flag": ""}, ids[0])
	e.setTags(map[string]string{"flag": "set"}, ids[1])
	res = e.p.WriteTags(e.ctx, []cloud.TagWrite{{IDs: ids[:2], Patch: tags.Patch{Delete: []string{"flag"}}, Expect: tags.Set{"flag": ""}}}, nil)
	checkResults(t, res, ids[:2], nil)
	if got := e.tagsOf(ids[0]); got["flag"] != "" || len(got) != 1 {
		t.Errorf("%s tags = %v, want flag deleted", ids[0], got)
	}
	if got := e.tagsOf(ids[1]); got["flag"] != "set" {
		t.Errorf("%s tags = %v, want flag=set kept", ids[1], got)
	}
}

// TestWriteTagsMissingResource: missing and malformed resources among
// many fail with ErrNotFound and the others are written. EC2 (and moto)
// name the bad ID in the error, so each costs one extra call. An ID that is
// not an EC2 resource fails on its own without a call.
func TestWriteTagsMissingResource(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.instances("us-east-1", 20, nil)
	gone1 := e.arn("us-east-1", "volume", "vol-0000000000000dead")
	gone2 := e.arn("us-east-1", "subnet", "subnet-0000000000000beef")
	malformed := e.arn("us-east-1", "volume", "vol-nothex")
	foreign := "arn:aws:s3:::bucket"
	all := append([]string{gone1}, ids[:10]...)
	all = append(all, gone2, foreign, malformed)
	all = append(all, ids[10:]...)
	res := e.p.WriteTags(e.ctx, []cloud.TagWrite{{IDs: all, Patch: tags.Patch{Set: tags.Set{"team": "a"}}}}, nil)
	checkResults(t, res, all, map[string]error{gone1: cloud.ErrNotFound, gone2: cloud.ErrNotFound, malformed: cloud.ErrNotFound, foreign: errAny})
	// moto names one bad ID per answer: the batch, then without the
	// malformed ID (checked first), without gone1, without gone2.
	if got := e.p.Calls()["ec2:CreateTags"]; got != 4 {
		t.Fatalf("CreateTags calls = %d, want 4", got)
	}
	for _, id := range ids {
		if got := e.tagsOf(id); got["team"] != "a" {
			t.Fatalf("%s tags = %v, want team=a", id, got)
		}
	}
	for _, r := range res {
		if r.ID == gone1 || r.ID == foreign {
			t.Logf("%v", r.Err)
		}
	}
}

// TestWriteTagsMissingInstance: moto 5.2.1's CreateTags does not check
// that instances exist (it does for volumes, subnets, VPCs and more); the
// AWS rules in front of it (testenv) answer InvalidInstanceID.NotFound as
// EC2 does, so a missing instance among live ones fails with ErrNotFound
// and the others are written.
func TestWriteTagsMissingInstance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.instances("us-east-1", 3, nil)
	gone := e.arn("us-east-1", "instance", "i-0000000000000dead")
	all := append([]string{ids[0], gone}, ids[1:]...)
	res := e.p.WriteTags(e.ctx, []cloud.TagWrite{{IDs: all, Patch: tags.Patch{Set: tags.Set{"team": "a"}}}}, nil)
	checkResults(t, res, all, map[string]error{gone: cloud.ErrNotFound})
	for _, id := range ids {
		if got := e.tagsOf(id); got["team"] != "a" {
			t.Fatalf("%s tags = %v, want team=a", id, got)
		}
	}
}

// fullTags returns the 50 tags k00 ... k49, as many as an EC2 resource
// may carry.
func fullTags() map[string]string { return tagstest.Numbered("k", 50) }

// TestWriteTagsTooManyTags: moto, like EC2, refuses CreateTags when a
// resource would carry more than 50 tags, for the whole call and without
// naming the resource; WriteTags halves the batch until it finds it, and
// the others are written.
func TestWriteTagsTooManyTags(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.volumes("us-east-1", 7, nil)
	e.setTags(fullTags(), ids[4])
	res := e.p.WriteTags(e.ctx, []cloud.TagWrite{{IDs: ids, Patch: tags.Patch{Set: tags.Set{"team": "a"}}}}, nil)
	checkResults(t, res, ids, map[string]error{ids[4]: cloud.ErrTooManyTags})
	// The batch; [0 1 2] succeeds, so [3 4 5 6] holds the bad one and is
	// halved unsent; [3 4] fails; [3] succeeds, so 4 is the bad one; [5 6].
	if calls := e.p.Calls()["ec2:CreateTags"]; calls != 5 {
		t.Fatalf("CreateTags calls = %d, want 5", calls)
	}
	t.Logf("%v", res[4].Err)
	for i, id := range ids {
		if got := e.tagsOf(id); (got["team"] == "a") == (i == 4) {
			t.Errorf("%s tags = %v", id, got)
		}
	}
	// A patch replacing a tag of the full resource fits: DeleteTags goes
	// first.
	res = e.p.WriteTags(e.ctx, []cloud.TagWrite{{IDs: ids[4:5], Patch: tags.Patch{Set: tags.Set{"team": "a"}, Delete: []string{"k00"}}}}, nil)
	checkResults(t, res, ids[4:5], nil)
}

// TestWriteTagsIsolationBudget: when the extra calls allowed are spent,
// resources not yet told apart fail without a cloud kind; with none
// allowed, a failed batch fails all its resources.
func TestWriteTagsIsolationBudget(t *testing.T) {
	t.Parallel()
	e := newEnv(t, WithMaxIsolationCalls(2))
	ids := e.volumes("us-east-1", 8, nil)
	e.setTags(fullTags(), ids[7])
	res := e.p.WriteTags(e.ctx, []cloud.TagWrite{{IDs: ids, Patch: tags.Patch{Set: tags.Set{"team": "a"}}}}, nil)
	// The batch fails; [0-3] succeeds (1 extra call), so [4-7] holds the bad
	// one and is halved unsent; [4 5] succeeds (2); [6] is unresolved (the
	// budget is spent), so [7] is too.
	if got := e.p.Calls()["ec2:CreateTags"]; got != 3 {
		t.Fatalf("CreateTags calls = %d, want 3", got)
	}
	checkResults(t, res, ids, map[string]error{ids[6]: errAny, ids[7]: errAny})
	for _, r := range res[6:] {
		if errors.Is(r.Err, cloud.ErrTooManyTags) {
			t.Fatalf("%s: unresolved error %v reports ErrTooManyTags", r.ID, r.Err)
		}
	}
	t.Logf("unresolved: %v", res[6].Err)

	// Every resource at its limit: no call succeeds, so the refusal is
	// taken to be about all and the unresolved ones keep its kind.
	fullIDs := e.volumes("us-east-1", 8, nil)
	e.setTags(fullTags(), fullIDs...)
	res = e.p.WriteTags(e.ctx, []cloud.TagWrite{{IDs: fullIDs, Patch: tags.Patch{Set: tags.Set{"more": "c"}}}}, nil)
	all := map[string]error{}
	for _, id := range fullIDs {
		all[id] = cloud.ErrTooManyTags
	}
	checkResults(t, res, fullIDs, all)
	if got := e.p.Calls()["ec2:CreateTags"]; got != 3+3 {
		t.Fatalf("CreateTags calls = %d, want 3 more", got-3)
	}
	t.Logf("none written: %v", res[7].Err)

	p := e.newProvider(motoConfig(), WithMaxIsolationCalls(-1))
	res = p.WriteTags(e.ctx, []cloud.TagWrite{{IDs: fullIDs, Patch: tags.Patch{Set: tags.Set{"other": "b"}}}}, nil)
	checkResults(t, res, fullIDs, all)
	if got := p.Calls()["ec2:CreateTags"]; got != 1 {
		t.Fatalf("CreateTags calls without isolation = %d, want 1", got)
	}
}

// TestWriteTagsEmpty: an empty patch, or no IDs, sends nothing.
func TestWriteTagsEmpty(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := []string{e.arn("us-east-1", "instance", "i-0123456789abcdef0")}
	res := e.p.WriteTags(e.ctx, []cloud.TagWrite{{IDs: ids}, {Patch: tags.Patch{Set: tags.Set{"a": "b"}}}}, nil)
	checkResults(t, res, ids, nil)
	if got := e.p.Calls(); len(got) != 0 {
		t.Fatalf("calls = %v, want none", got)
	}
}

// namesResource reports whether an EC2 query request lists resource ID id
// (and restores its body).
func namesResource(t *testing.T, r *http.Request, id string) bool {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Error(err)
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	v, _ := url.ParseQuery(string(b))
	for k, vs := range v {
		if strings.HasPrefix(k, "ResourceId.") && slices.Contains(vs, id) {
			return true
		}
	}
	return false
}

// TestWriteTagsForbidden: a resource the credential may not tag (an IAM
// condition on its tags) fails alone with ErrForbidden when EC2 names it,
// as it does ("... on resource: <ARN>"); a credential that may tag nothing
// fails every resource with ErrForbidden after the bounded extra calls.
func TestWriteTagsForbidden(t *testing.T) {
	t.Parallel()
	e := newEnv(t, WithMaxIsolationCalls(4))
	ids := e.instances("us-east-1", 10, nil)
	denied := ids[6]
	e.tr.setInject(func(r *http.Request, op, _ string) *http.Response {
		if op == "CreateTags" && namesResource(t, r, ec2ID(denied)) {
			return ec2Error(http.StatusForbidden, "UnauthorizedOperation", "You are not authorized to perform this operation. User: arn:aws:sts::"+
				e.account+":assumed-role/tagsync/x is not authorized to perform: ec2:CreateTags on resource: "+denied+" because no identity-based policy allows the ec2:CreateTags action.")
		}
		return nil
	})
	res := e.p.WriteTags(e.ctx, []cloud.TagWrite{{IDs: ids, Patch: tags.Patch{Set: tags.Set{"team": "a"}}}}, nil)
	checkResults(t, res, ids, map[string]error{denied: cloud.ErrForbidden})
	if got := e.p.Calls()["ec2:CreateTags"]; got != 2 {
		t.Fatalf("CreateTags calls = %d, want 2", got)
	}

	e.tr.setInject(func(_ *http.Request, op, _ string) *http.Response {
		if op == "CreateTags" {
			return ec2Error(http.StatusForbidden, "UnauthorizedOperation", "You are not authorized to perform this operation. Encoded authorization failure message: AbC")
		}
		return nil
	})
	res = e.p.WriteTags(e.ctx, []cloud.TagWrite{{IDs: ids, Patch: tags.Patch{Set: tags.Set{"team": "b"}}}}, nil)
	all := map[string]error{}
	for _, id := range ids {
		all[id] = cloud.ErrForbidden
	}
	checkResults(t, res, ids, all)
	if got := e.p.Calls()["ec2:CreateTags"]; got != 2+1+4 {
		t.Fatalf("CreateTags calls = %d, want the batch and 4 extra", got-2)
	}
}

// TestWriteTagsStreamsPerBatchAndStops: a batch call's resources are
// reported pending before the call and done together after it, before the
// next batch is sent; an error from a report stops the writes: no further
// call is sent, and the resources left fail wrapping it.
func TestWriteTagsStreamsPerBatchAndStops(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *Options) { o.maxIDsPerCall = 2 })
	ids := e.instances(testenv.MotoRegion, 6, nil)
	stop := errors.New("audit sink full")
	var reports []string
	each := func(r cloud.WriteResult) error {
		written := e.tagsOf(r.ID)["team"] == "a"
		reports = append(reports, fmt.Sprintf("%s:%v:%v", ec2ID(r.ID), r.Pending, written))
		if !r.Pending && ec2ID(r.ID) == ec2ID(ids[3]) {
			return stop
		}
		return nil
	}
	res := e.p.WriteTags(e.ctx, []cloud.TagWrite{{IDs: ids, Patch: tags.Patch{Set: tags.Set{"team": "a"}}}}, each)
	var want []string
	for b := range 2 {
		for _, pending := range []bool{true, false} {
			for _, id := range ids[2*b : 2*b+2] {
				want = append(want, fmt.Sprintf("%s:%v:%v", ec2ID(id), pending, !pending))
			}
		}
	}
	if !slices.Equal(reports, want) {
		t.Errorf("reports (id:pending:written)\n%v\nwant\n%v", reports, want)
	}
	for i, r := range res {
		if written := e.tagsOf(ids[i])["team"] == "a"; (i < 4) != (r.Err == nil && written) || (i >= 4 && !errors.Is(r.Err, stop)) {
			t.Errorf("result %d: %v, written %v", i, r.Err, written)
		}
	}
	if got := e.p.Calls()["ec2:CreateTags"]; got != 2 {
		t.Errorf("%d CreateTags calls, want 2 (none after the stop)", got)
	}
}
