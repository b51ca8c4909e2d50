package azure

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/tagsync/tagsync/internal/cloud"
)

// maxDirectReads bounds the Tags API reads one ReadTags sends for
// resources Resource Graph does not show yet; the rest are Unread and
// read by a later pass.
const maxDirectReads = 50

// ReadTags reads the tags of the resources ids name (ARM resource IDs) in
// bulk: one Resource Graph query over their subscriptions for every
// resource of their types in their resource groups (a workload's disks
// share the cluster's node resource group, so a read of n disks costs
// about ceil(n/1000) requests, its pages of up to 1000 rows), the rows
// kept for the IDs asked. Resource Graph indexes a new resource with a
// delay of seconds to minutes, so an ID it does not show is read with the
// Tags API (one GET each, at most maxDirectReads per call): a 404 there
// means the resource does not exist (Missing), another failure leaves it
// Unread with the error in Failed. IDs in fresh (a change named them) are
// read that way too, whatever the search shows, so an edit is seen before
// the index has caught up. An ID that is not an ARM resource ID is
// Unread with the reason in Failed. Failures of the query itself are
// reported per subscription as Discover reports them; the error is for a
// context that ended.
func (p *Provider) ReadTags(ctx context.Context, ids, fresh []string) (cloud.Reading, error) {
	direct := map[string]bool{}
	for _, id := range fresh {
		direct[cloud.CanonicalID(id)] = true
	}
	var r cloud.Reading
	refs := map[string]resourceRef{}
	var order []string
	for _, id := range ids {
		ref, err := parseRef(id)
		if err != nil || ref.rg == "" {
			r.Unread = append(r.Unread, id)
			r.Failed = append(r.Failed, cloud.ScopeError{Scope: id, Err: fmt.Errorf("azure: %q is not the ID of a resource in a resource group", id)})
			continue
		}
		key := cloud.CanonicalID(id)
		if _, dup := refs[key]; !dup {
			order = append(order, key)
		}
		refs[key] = ref
	}
	if len(refs) == 0 {
		return r, nil
	}
	found, failed, calls, err := p.searchIDs(ctx, refs)
	r.Calls += calls
	if err != nil {
		return r, err
	}
	r.Failed = append(r.Failed, failed...)
	reads := 0
	for _, key := range order {
		ref := refs[key]
		if c, ok := found[key]; ok && !direct[key] {
			c.ID = ref.id
			r.Resources = append(r.Resources, c)
			continue
		}
		if failedSub(failed, ref.sub) || reads >= maxDirectReads {
			r.Unread = append(r.Unread, ref.id)
			continue
		}
		reads++
		r.Calls++
		e, err := p.read(ctx, resourceRef{id: ref.id, sub: ref.sub, rg: ref.rg, name: ref.name, typ: ref.typ})
		switch {
		case err == nil:
			r.Resources = append(r.Resources, cloud.Classified{ID: ref.id, Type: strings.ToLower(ref.typ), Scope: ref.sub,
				Tags: e.Tags, Rules: RulesFor(ref.typ)})
		case kindOf(err) == cloud.ErrNotFound:
			r.Missing = append(r.Missing, ref.id)
		case ctx.Err() != nil:
			return r, err
		default:
			r.Unread = append(r.Unread, ref.id)
			r.Failed = append(r.Failed, cloud.ScopeError{Scope: ref.id, Err: err})
		}
	}
	return r, nil
}

// searchIDs finds the resources of refs with one Resource Graph query
// over their subscriptions, types and groups, keyed by CanonicalID.
func (p *Provider) searchIDs(ctx context.Context, refs map[string]resourceRef) (map[string]cloud.Classified, []cloud.ScopeError, int, error) {
	var subs, types, groups []string
	seen := map[string]bool{}
	add := func(list *[]string, kind, v string) {
		if k := kind + strings.ToLower(v); !seen[k] {
			seen[k] = true
			*list = append(*list, v)
		}
	}
	for _, ref := range refs {
		add(&subs, "s", ref.sub)
		add(&types, "t", ref.typ)
		add(&groups, "g", ref.rg)
	}
	sort.Strings(subs)
	sort.Strings(types)
	sort.Strings(groups)
	q, err := idsQuery(types, groups)
	if err != nil {
		return nil, nil, 0, err
	}
	rows, failed, calls, err := p.runQueries(ctx, []string{q}, subs)
	if err != nil {
		return nil, nil, calls, err
	}
	found := map[string]cloud.Classified{}
	for _, row := range rows {
		id, _ := row["id"].(string)
		typ, _ := row["type"].(string)
		sub, _ := row["subscriptionId"].(string)
		if _, ok := refs[cloud.CanonicalID(id)]; ok {
			found[cloud.CanonicalID(id)] = cloud.Classified{ID: id, Type: strings.ToLower(typ), Scope: sub,
				Tags: rowTags(row["tags"]), Rules: RulesFor(typ)}
		}
	}
	return found, failed, calls, nil
}

// idsQuery is the Resource Graph query for every resource of the types in
// the groups.
func idsQuery(types, groups []string) (string, error) {
	tq, err := kqlList(types)
	if err != nil {
		return "", err
	}
	gq, err := kqlList(groups)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("resources | where type in~ (%s) and resourceGroup in~ (%s) | project id, name, type, resourceGroup, subscriptionId, tags", tq, gq), nil
}

// kqlList quotes each string for KQL and joins them with commas.
func kqlList(ss []string) (string, error) {
	quoted := make([]string, len(ss))
	for i, s := range ss {
		q, err := kqlString(s)
		if err != nil {
			return "", err
		}
		quoted[i] = q
	}
	return strings.Join(quoted, ", "), nil
}

// failedSub reports whether the subscription is among the failed scopes.
func failedSub(failed []cloud.ScopeError, sub string) bool {
	for _, f := range failed {
		if strings.EqualFold(f.Scope, sub) {
			return true
		}
	}
	return false
}
