package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	tagging "github.com/aws/aws-sdk-go-v2/service/resourcegroupstaggingapi"
)

// tagIndex delays what the Resource Groups Tagging API's GetResources sees
// of EC2 tag writes. AWS's tagging API reads an index that is eventually
// consistent: a tag written a moment ago may not be found yet (and a
// removed one still found). moto answers from its live state, so the rules
// keep, for each resource tagged or untagged through them within the
// delay, its tags before those writes and after each one, and answer
// GetResources from the tags as they were a delay ago.
//
// It covers EC2 CreateTags and DeleteTags (tags written at creation, by
// RunInstances' TagSpecifications, are seen at once) and GetResources by
// TagFilters and ResourceTypeFilters, paginated. The delay is
// DefaultTaggingIndexDelay unless a test sets another
// (SetTaggingIndexDelay); with 0 the rules only pass calls on.
type tagIndex struct {
	mu      sync.Mutex
	delay   time.Duration
	history map[string]*tagHistory // by awsCaller.key and EC2 resource ID
}

// tagHistory is one resource's tags before its recent writes and after each.
type tagHistory struct {
	base   map[string]string
	writes []tagWrite
}

type tagWrite struct {
	at    time.Time
	after map[string]string
}

// DefaultTaggingIndexDelay is how long, in the rules, a tag write takes to
// reach tag:GetResources. AWS documents the Resource Groups Tagging API as
// eventually consistent without a figure: GetResources answers from an
// index that AWS services update after the write (its API reference warns
// that it can return resources no longer tagged, "previously tagged"; AWS's
// explanation in https://github.com/aws/aws-sdk/issues/302), and EC2's own
// API is eventually consistent too ("Eventual consistency in the Amazon
// EC2 API", https://docs.aws.amazon.com/ec2/latest/devguide/eventual-consistency.html:
// results "might not be immediately visible to all subsequent commands").
// Five seconds is the typical lag users report; a test of the tail sets
// 30 s.
const DefaultTaggingIndexDelay = 5 * time.Second

// taggingPageToken starts the pagination tokens of the answers the rules
// make themselves.
const taggingPageToken = "testenv-index-"

// SetTaggingIndexDelay makes a resource's EC2 tag change visible to
// tag:GetResources only d after it was written through the rules. The
// default is DefaultTaggingIndexDelay; 0 makes GetResources see every write
// at once.
func (a *AWSRules) SetTaggingIndexDelay(d time.Duration) {
	a.index.mu.Lock()
	defer a.index.mu.Unlock()
	a.index.delay = d
	if d == 0 {
		a.index.history = nil
	}
}

// TaggingShows reports whether tag:GetResources shows the latest tags of
// the EC2 resource id (an ID such as i-0abc, or its ARN), for every caller:
// none of its tag writes waits for the indexing delay. A test that makes
// an edit no event announces, and wants a pass to see it, waits for it.
func (a *AWSRules) TaggingShows(id string) bool {
	id = id[strings.LastIndex(id, "/")+1:]
	a.index.mu.Lock()
	defer a.index.mu.Unlock()
	cutoff := time.Now().Add(-a.index.delay)
	for key, h := range a.index.history {
		if strings.HasSuffix(key, "|"+id) && len(h.writes) > 0 && h.writes[len(h.writes)-1].at.After(cutoff) {
			return false
		}
	}
	return true
}

// indexDelay returns the delay in force.
func (a *AWSRules) indexDelay() time.Duration {
	a.index.mu.Lock()
	defer a.index.mu.Unlock()
	return a.index.delay
}

// resourceIDs returns the ResourceId.N of an EC2 call.
func resourceIDs(form url.Values) []string {
	var ids []string
	for key, vs := range form {
		if strings.HasPrefix(key, "ResourceId.") && len(vs) > 0 {
			ids = append(ids, vs[0])
		}
	}
	slices.Sort(ids)
	return ids
}

// currentTags reads the tags of resources from moto (Direct).
func (a *AWSRules) currentTags(ctx context.Context, caller awsCaller, ids []string) (map[string]map[string]string, error) {
	c := ec2.NewFromConfig(caller.config(a.direct))
	tags := map[string]map[string]string{}
	for _, id := range ids {
		tags[id] = map[string]string{}
	}
	for chunk := range slices.Chunk(ids, MaxEC2FilterValues) {
		p := ec2.NewDescribeTagsPaginator(c, &ec2.DescribeTagsInput{
			Filters: []ec2types.Filter{{Name: aws.String("resource-id"), Values: chunk}}})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("reading tags of %d resources from moto: %w", len(chunk), err)
			}
			for _, d := range page.Tags {
				if m := tags[aws.ToString(d.ResourceId)]; m != nil {
					m[aws.ToString(d.Key)] = aws.ToString(d.Value)
				}
			}
		}
	}
	return tags, nil
}

// recordTagWrite passes an EC2 tag write to moto, records the tags of its
// resources before and after it for the indexing delay, and follows it
// (events, actors: wrote).
func (a *AWSRules) recordTagWrite(w http.ResponseWriter, r *http.Request, caller awsCaller, form url.Values) {
	ids := resourceIDs(form)
	before, err := a.currentTags(r.Context(), caller, ids)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	rec := &bufferedAnswer{header: http.Header{}, status: http.StatusOK}
	a.proxy.ServeHTTP(rec, r)
	defer rec.send(w)
	if rec.status/100 != 2 {
		return
	}
	after, err := a.currentTags(r.Context(), caller, ids)
	if err != nil {
		return // the write is done; without its after state it is seen at once
	}
	if a.indexDelay() > 0 {
		a.remember(caller, before, after)
	}
	if a.observed() {
		a.wrote(r.Context(), ec2TagCall(caller, form, ids, before, after))
	}
}

// ec2TagCall is the tagCall of an EC2 CreateTags or DeleteTags of ids.
func ec2TagCall(caller awsCaller, form url.Values, ids []string, before, after map[string]map[string]string) tagCall {
	c := tagCall{caller: caller, service: "ec2", action: form.Get("Action"), ids: ids, set: map[string]string{}, at: time.Now()}
	for key, vs := range form {
		if m := ec2TagKey.FindStringSubmatch(key); m != nil && len(vs) > 0 {
			if c.action == "DeleteTags" {
				c.removed = append(c.removed, vs[0])
			} else {
				c.set[vs[0]] = form.Get("Tag." + m[1] + ".Value")
			}
		}
	}
	slices.Sort(c.removed)
	for _, id := range ids {
		c.resources = append(c.resources, resourceChange{arn: ec2ARN(caller, id), before: before[id], after: after[id]})
	}
	return c
}

// ec2Types are EC2's resource types by the prefix of their IDs, as their
// ARNs name them.
var ec2Types = map[string]string{"i": "instance", "vol": "volume", "snap": "snapshot", "eni": "network-interface",
	"sg": "security-group", "subnet": "subnet", "vpc": "vpc", "ami": "image", "lt": "launch-template", "eipalloc": "elastic-ip"}

// ec2ARN is the ARN of the EC2 resource id of the caller's account and
// region.
func ec2ARN(caller awsCaller, id string) string {
	prefix, _, _ := strings.Cut(id, "-")
	typ := ec2Types[prefix]
	if typ == "" {
		typ = prefix
	}
	return fmt.Sprintf("arn:aws:ec2:%s:%s:%s/%s", caller.region, accountOf(caller), typ, id)
}

// bufferedAnswer keeps an answer until send, so that what follows a write
// (wrote) happens before its answer leaves.
type bufferedAnswer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedAnswer) Header() http.Header         { return b.header }
func (b *bufferedAnswer) WriteHeader(status int)      { b.status = status }
func (b *bufferedAnswer) Write(p []byte) (int, error) { return b.body.Write(p) }

// send writes the answer to w.
func (b *bufferedAnswer) send(w http.ResponseWriter) {
	maps.Copy(w.Header(), b.header)
	w.WriteHeader(b.status)
	_, _ = w.Write(b.body.Bytes())
}

// remember records a tag write of the caller's: each resource's tags
// before and after it, by index key (an EC2 resource ID, or the last part
// of an ARN, see indexKey).
func (a *AWSRules) remember(caller awsCaller, before, after map[string]map[string]string) {
	now := time.Now()
	a.index.mu.Lock()
	defer a.index.mu.Unlock()
	if a.index.history == nil {
		a.index.history = map[string]*tagHistory{}
	}
	for id := range after {
		h := a.index.history[caller.key()+"|"+id]
		if h == nil {
			h = &tagHistory{base: before[id]}
			a.index.history[caller.key()+"|"+id] = h
		}
		h.writes = append(h.writes, tagWrite{at: now, after: after[id]})
	}
}

// visible returns the tags GetResources sees now of the resources written
// within the delay, by ID, forgetting writes older than the delay.
func (a *AWSRules) visible(now time.Time, caller awsCaller) map[string]map[string]string {
	a.index.mu.Lock()
	defer a.index.mu.Unlock()
	seen := map[string]map[string]string{}
	for key, h := range a.index.history {
		id, ok := strings.CutPrefix(key, caller.key()+"|")
		if !ok {
			continue
		}
		for len(h.writes) > 0 && !h.writes[0].at.After(now.Add(-a.index.delay)) {
			h.base, h.writes = h.writes[0].after, h.writes[1:]
		}
		if len(h.writes) == 0 {
			delete(a.index.history, key)
			continue
		}
		seen[id] = h.base
	}
	return seen
}

// getResourcesInput is the part of a GetResources request the rules read.
type getResourcesInput struct {
	PaginationToken     string
	ResourcesPerPage    int
	ResourceTypeFilters []string
	ResourceARNList     []string
	TagFilters          []struct {
		Key    string
		Values []string
	}
}

// serveGetResources answers GetResources itself when a write within the
// delay makes moto's live answer differ from AWS's indexed one, or when it
// names resources by ResourceARNList (which moto 5.2.1 ignores, answering
// with every resource), and passes it to moto otherwise.
func (a *AWSRules) serveGetResources(w http.ResponseWriter, r *http.Request, caller awsCaller) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var in getResourcesInput
	if err := json.Unmarshal(body, &in); err != nil {
		a.proxy.ServeHTTP(w, r)
		return
	}
	seen := a.visible(time.Now(), caller)
	ours := strings.HasPrefix(in.PaginationToken, taggingPageToken)
	if !ours && len(in.ResourceARNList) == 0 && (len(seen) == 0 || in.PaginationToken != "") {
		a.proxy.ServeHTTP(w, r)
		return
	}
	// Every resource of the types asked for, from moto, with the tags of
	// those written within the delay as they were; then the tag filters.
	type tag struct{ Key, Value string }
	type mapping struct {
		ResourceARN string
		Tags        []tag
	}
	var all []mapping
	types := in.ResourceTypeFilters
	for _, id := range in.ResourceARNList {
		if t := arnType(id); t != "" && !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	p := tagging.NewGetResourcesPaginator(tagging.NewFromConfig(caller.config(a.direct)), &tagging.GetResourcesInput{ResourceTypeFilters: types})
	for p.HasMorePages() {
		page, err := p.NextPage(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		for _, m := range page.ResourceTagMappingList {
			arn := aws.ToString(m.ResourceARN)
			if len(in.ResourceARNList) > 0 && !slices.Contains(in.ResourceARNList, arn) {
				continue
			}
			tags := map[string]string{}
			for _, t := range m.Tags {
				tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
			}
			if old, ok := seen[indexKey(arn)]; ok {
				tags = old
			}
			match := true
			for _, f := range in.TagFilters {
				v, ok := tags[f.Key]
				match = match && ok && (len(f.Values) == 0 || slices.Contains(f.Values, v))
			}
			if !match || len(tags) == 0 && len(in.TagFilters) > 0 {
				continue
			}
			out := mapping{ResourceARN: arn, Tags: []tag{}}
			for k, v := range tags {
				out.Tags = append(out.Tags, tag{k, v})
			}
			slices.SortFunc(out.Tags, func(a, b tag) int { return strings.Compare(a.Key, b.Key) })
			all = append(all, out)
		}
	}
	slices.SortFunc(all, func(a, b mapping) int { return strings.Compare(a.ResourceARN, b.ResourceARN) })
	size := in.ResourcesPerPage
	if size <= 0 {
		size = 100
	}
	from := 0
	if ours {
		from, _ = strconv.Atoi(strings.TrimPrefix(in.PaginationToken, taggingPageToken))
	}
	from = min(from, len(all))
	to := min(from+size, len(all))
	next := ""
	if to < len(all) {
		next = taggingPageToken + strconv.Itoa(to)
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(struct {
		PaginationToken        string
		ResourceTagMappingList []mapping
	}{next, all[from:to]})
}

// arnType returns the Tagging API's resource type of an ARN
// (service:type, e.g. elasticloadbalancing:loadbalancer), or "".
func arnType(id string) string {
	a, err := arn.Parse(id)
	if err != nil {
		return ""
	}
	typ, _, ok := strings.Cut(a.Resource, "/")
	if !ok {
		return a.Service
	}
	return a.Service + ":" + typ
}
