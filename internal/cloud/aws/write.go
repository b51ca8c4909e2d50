package aws

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/tagsync/tagsync/internal/cloud"
)

// resourceRef is a resource to write: its region and EC2 resource ID.
type resourceRef struct {
	id     string // as given
	region string
	ec2ID  string
}

// parseRef reads an EC2 ARN (arn:aws:ec2:us-east-1:123456789012:instance/i-0abc:
// region us-east-1, resource ID i-0abc) or a bare EC2 resource ID (i-0abc,
// in the provider's region).
func (p *Provider) parseRef(id string) (resourceRef, error) {
	if !arn.IsARN(id) {
		if id == "" || strings.ContainsAny(id, ":/ \t\n") {
			return resourceRef{}, fmt.Errorf("aws: %q is neither an ARN nor an EC2 resource ID", id)
		}
		return resourceRef{id: id, region: p.region, ec2ID: id}, nil
	}
	a, err := arn.Parse(id)
	if err != nil {
		return resourceRef{}, fmt.Errorf("aws: %q is not a valid ARN: %w", id, err)
	}
	if a.Service != "ec2" {
		return resourceRef{}, fmt.Errorf("aws: %s is not an EC2 resource", id)
	}
	_, rid, ok := strings.Cut(a.Resource, "/")
	if !ok || rid == "" || strings.Contains(rid, "/") {
		return resourceRef{}, fmt.Errorf("aws: %s does not end in an EC2 resource type and ID (type/id)", id)
	}
	region := a.Region
	if region == "" {
		region = p.region
	}
	return resourceRef{id: id, region: region, ec2ID: rid}, nil
}

// Tag operations of WriteTags.
const (
	opCreateTags = "CreateTags"
	opDeleteTags = "DeleteTags"
)

// WriteTags applies each write's patch to its resources without reading
// them (see cloud.ClassifiedProvider). IDs are ARNs (Classified.ID) or bare EC2
// resource IDs (in the provider's region). Resources of other services
// than EC2 (load balancers, target groups, file systems...) are written
// through the Resource Groups Tagging API (see writeTagging). For EC2, per write, region and batch of
// up to 1000 resource IDs it sends one DeleteTags for Patch.Delete, each
// name with its Expect value when there is one (EC2 then deletes the tag
// only where it still has that value; an empty expected value matches only
// an empty value), then one CreateTags for Patch.Set. Deleting
// first keeps a patch that swaps tags on a resource at the 50-tag limit
// within it. A resource whose delete failed is not sent to CreateTags.
//
// EC2 refuses a whole call for one bad resource (a missing one, one at its
// tag limit, one the caller may not tag). Then WriteTags finds the bad ones
// so the others are written: resources the error message names (EC2 names
// missing IDs) fail with that error and the rest are sent again; when the
// message names none, the batch is halved and each half sent again, down to
// single resources. These extra calls are bounded per batch call by
// Options.MaxIsolationCalls: resources still unresolved then fail with the
// batch's error, without its cloud kind when some resource of the batch
// was written, with it when none was (the refusal is then taken to be
// about all, e.g. a credential without ec2:CreateTags). Other errors (throttling, invalid
// tags, transport) fail every resource of the call at once.
//
// Results stream to each (see cloud.ClassifiedProvider) per batch call: every
// resource of a batch is reported pending before its first call and with
// its result once its last call has answered, so a batch's resources
// complete together. Once each returns an error, no further call is sent
// and the resources left fail with an error wrapping it.
//
// A Fresh write (the node sync's) is written as patchBatch writes it.
//
// It returns one result per ID, in the order given, writes after writes.
func (p *Provider) WriteTags(ctx context.Context, writes []cloud.TagWrite, each func(cloud.WriteResult) error) []cloud.WriteResult {
	stream := cloud.NewResultStream(each)
	var out []cloud.WriteResult
	for _, w := range writes {
		if w.Fresh {
			out = append(out, cloud.WriteFresh(ctx, w, stream, p.patchBatch)...)
			continue
		}
		out = append(out, p.write(ctx, w, stream)...)
	}
	return out
}

// regionalID is an EC2 resource in a region.
type regionalID struct{ region, ec2ID string }

// write applies one TagWrite, batch by batch.
func (p *Provider) write(ctx context.Context, w cloud.TagWrite, stream *cloud.ResultStream) []cloud.WriteResult {
	out := make([]cloud.WriteResult, len(w.IDs))
	var regions []string
	byRegion := map[string][]string{}
	at := map[regionalID][]int{} // indexes in out, per resource
	other := map[string][]int{}  // resources of other services, by region
	for i, id := range w.IDs {
		out[i].ID = id
		if isTaggingARN(id) && !w.Patch.IsEmpty() {
			region := p.regionOfARN(id)
			other[region] = append(other[region], i)
			continue
		}
		r, err := p.parseRef(id)
		if err != nil || w.Patch.IsEmpty() {
			out[i].Err = err
			_ = stream.Done(out[i])
			continue
		}
		k := regionalID{r.region, r.ec2ID}
		if _, ok := byRegion[r.region]; !ok {
			regions = append(regions, r.region)
		}
		if len(at[k]) == 0 {
			byRegion[r.region] = append(byRegion[r.region], r.ec2ID)
		}
		at[k] = append(at[k], i)
	}
	for _, region := range regions {
		for chunk := range slices.Chunk(byRegion[region], p.opts.maxIDsPerCall) {
			failed := p.writeBatch(ctx, chunk, func(ec2ID string) error {
				return stream.Start(w.IDs[at[regionalID{region, ec2ID}][0]])
			}, func(ids []string) map[string]error { return p.writeRegion(ctx, region, ids, w) })
			for _, id := range chunk {
				for _, i := range at[regionalID{region, id}] {
					out[i].Err = failed[id]
					_ = stream.Done(out[i])
				}
			}
		}
	}
	for _, region := range slices.Sorted(maps.Keys(other)) {
		p.writeOthers(ctx, region, other[region], w, out, stream)
	}
	return out
}

// writeOthers writes the resources of other services than EC2 that w
// names at indexes at, all in region, through the Tagging API, batch by
// batch of MaxTaggingWriteARNs (see writeTagging).
func (p *Provider) writeOthers(ctx context.Context, region string, at []int, w cloud.TagWrite, out []cloud.WriteResult, stream *cloud.ResultStream) {
	byARN := map[string][]int{}
	var arns []string
	for _, i := range at {
		if len(byARN[w.IDs[i]]) == 0 {
			arns = append(arns, w.IDs[i])
		}
		byARN[w.IDs[i]] = append(byARN[w.IDs[i]], i)
	}
	for chunk := range slices.Chunk(arns, MaxTaggingWriteARNs) {
		failed := p.writeBatch(ctx, chunk, func(id string) error { return stream.Start(id) },
			func(ids []string) map[string]error { return p.writeTagging(ctx, region, ids, w) })
		for _, id := range chunk {
			for _, i := range byARN[id] {
				out[i].Err = failed[id]
				_ = stream.Done(out[i])
			}
		}
	}
}

// writeBatch reports the resources of one batch started, then writes
// them with send (again for those throttled, see retryThrottled); when a
// report fails, none is sent and each fails with an error wrapping the
// report's.
func (p *Provider) writeBatch(ctx context.Context, ids []string, start func(id string) error, send func(ids []string) map[string]error) map[string]error {
	var stop error
	for _, id := range ids {
		if stop = start(id); stop != nil {
			break
		}
	}
	if stop == nil {
		return p.retryThrottled(ctx, ids, send)
	}
	failed := make(map[string]error, len(ids))
	for _, id := range ids {
		failed[id] = cloud.NotStarted(id, stop)
	}
	return failed
}

// writeRegion applies a write to EC2 resources of one region and returns
// the errors of those it failed on. A deleted name carries its expected
// value when the write has one, so EC2 deletes it only where it still
// holds that value.
func (p *Provider) writeRegion(ctx context.Context, region string, ids []string, w cloud.TagWrite) map[string]error {
	nc := TagRules.NameCase()
	var del []ec2types.Tag
	for _, name := range w.Patch.Delete {
		t := ec2types.Tag{Key: sdkaws.String(name)}
		if v, ok := w.Expect.Get(nc, name); ok {
			t.Value = sdkaws.String(v)
		}
		del = append(del, t)
	}
	return p.sendEC2(ctx, region, ids, ec2TagList(w.Patch.Set), del)
}

// batch sends one tag operation for ids, in calls of at most
// Options.maxIDsPerCall IDs, isolating failing resources in each, and
// records the failures.
func (p *Provider) batch(ctx context.Context, region, op string, t []ec2types.Tag, ids []string, failed map[string]error) {
	if len(ids) == 0 {
		return
	}
	c := p.clientsFor(region)
	for chunk := range slices.Chunk(ids, p.opts.maxIDsPerCall) {
		iso := &isolator{p: p, c: c, region: region, op: op, tags: t, budget: p.opts.MaxIsolationCalls, failed: failed}
		iso.run(ctx, chunk, nil, false)
	}
}

// isolator sends one tag operation for a batch of resources and, when EC2
// refuses the call because of some of them, finds which (see WriteTags).
type isolator struct {
	p      *Provider
	c      *clients
	region string
	op     string
	tags   []ec2types.Tag
	budget int // extra calls left
	failed map[string]error
	// wrote is set once a call of the batch succeeded: a refusal then
	// cannot be about every resource.
	wrote bool
}

// send runs the operation once.
func (s *isolator) send(ctx context.Context, ids []string) error {
	var err error
	if s.op == opDeleteTags {
		_, err = s.c.ec2.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: ids, Tags: s.tags})
	} else {
		_, err = s.c.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: ids, Tags: s.tags})
	}
	return err
}

// names lists the tag names of the operation, for messages.
func (s *isolator) names() string {
	n := make([]string, len(s.tags))
	for i, t := range s.tags {
		n[i] = sdkaws.ToString(t.Key)
	}
	return strings.Join(n, ", ")
}

// context describes the operation on ids, for messages.
func (s *isolator) context(ids []string) string {
	what := ids[0]
	if len(ids) > 1 {
		what = fmt.Sprintf("%d resources (%s, ...)", len(ids), ids[0])
	}
	return fmt.Sprintf("aws: %s %s on %s in %s", s.op, s.names(), what, s.region)
}

// run sends the operation for ids and, when EC2 refuses it because of
// some resources, isolates them. cause is nil for the batch's first call;
// for an extra call it is the error of the call that held ids. knownBad
// says ids hold a resource the cause is about (their sibling half
// succeeded), so that sending them whole again would only repeat cause.
func (s *isolator) run(ctx context.Context, ids []string, cause error, knownBad bool) {
	var err error
	switch {
	case cause == nil:
		err = s.send(ctx, ids)
	case knownBad && len(ids) == 1:
		err = cause
	case knownBad:
		s.halve(ctx, ids, cause)
		return
	case s.budget <= 0:
		s.unresolved(ids, cause)
		return
	default:
		s.budget--
		err = s.send(ctx, ids)
	}
	if err == nil {
		s.wrote = true
		return
	}
	kind := kindOf(err)
	isolatable := kind == cloud.ErrNotFound || kind == cloud.ErrTooManyTags || kind == cloud.ErrForbidden
	if !isolatable || len(ids) == 1 || s.p.opts.MaxIsolationCalls == 0 {
		e := s.p.wrap(s.region, s.context(ids), err)
		for _, id := range ids {
			s.failed[id] = e
		}
		return
	}
	if named := namedIDs(err, ids); len(named) > 0 {
		var rest []string
		for _, id := range ids {
			if named[id] {
				s.failed[id] = s.p.wrap(s.region, s.context([]string{id}), err)
			} else {
				rest = append(rest, id)
			}
		}
		if len(rest) > 0 {
			s.run(ctx, rest, err, false)
		}
		return
	}
	s.halve(ctx, ids, err)
}

// halve sends the halves of ids that cause refused. When the first half
// succeeds, the second holds what cause is about: it is halved again
// without being sent whole (or, a single resource, fails with cause).
func (s *isolator) halve(ctx context.Context, ids []string, cause error) {
	half := len(ids) / 2
	left, right := ids[:half], ids[half:]
	s.run(ctx, left, cause, false)
	leftOK := true
	for _, id := range left {
		if _, bad := s.failed[id]; bad {
			leftOK = false
			break
		}
	}
	s.run(ctx, right, cause, leftOK)
}

// unresolved fails ids that a failed call held and the budget could not
// isolate. When some call of the batch succeeded, the refusal was about
// some resources only: they fail with the call's error but without its
// cloud kind, which may belong to another resource. When none did, the
// refusal is taken to be about all (a credential missing the permission,
// every resource at its tag limit): they fail with the typed error.
func (s *isolator) unresolved(ids []string, cause error) {
	if !s.wrote {
		e := s.p.wrap(s.region, s.context(ids), cause)
		e.msg += fmt.Sprintf(" (no resource of the batch could be written in %d extra calls)", s.p.opts.MaxIsolationCalls)
		for _, id := range ids {
			s.failed[id] = e
		}
		return
	}
	e := &unresolvedError{
		msg: fmt.Sprintf("%s: EC2 refused a batch holding this resource because of some of its resources, and the %d extra calls allowed to find them are spent: %s",
			s.context(ids), s.p.opts.MaxIsolationCalls, describe(cause)),
		err: cause,
	}
	for _, id := range ids {
		s.failed[id] = e
	}
}

// unresolvedError is the error of a resource WriteTags could not tell
// from the bad ones of its batch. It unwraps to the SDK's error (for
// errors.As) but reports no cloud kind.
type unresolvedError struct {
	msg string
	err error
}

// Error returns the message.
func (e *unresolvedError) Error() string { return e.msg }

// Unwrap returns the SDK's error.
func (e *unresolvedError) Unwrap() error { return e.err }

// namedIDs returns the IDs among ids that an error's message names (EC2
// names the missing ones: "The instance IDs 'i-1, i-2' do not exist").
func namedIDs(err error, ids []string) map[string]bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return nil
	}
	in := make(map[string]bool, len(ids))
	for _, id := range ids {
		in[id] = true
	}
	named := map[string]bool{}
	for _, tok := range strings.FieldsFunc(ae.ErrorMessage(), func(r rune) bool {
		return !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) {
		if in[tok] {
			named[tok] = true
		}
	}
	return named
}
