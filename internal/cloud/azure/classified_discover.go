package azure

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// Resource Graph settings of Discover.
const (
	// graphPageSize is the rows per Resource Graph page: ARG's maximum.
	graphPageSize = 1000
	// graphMaxQuotaWaits bounds how often one search waits for Resource
	// Graph's quota to come back (see graphQuery.run).
	graphMaxQuotaWaits = 5
	// graphTypeSubscription is a subscription's row type in Resource
	// Graph's resourcecontainers table, which Discover leaves out.
	graphTypeSubscription = "microsoft.resources/subscriptions"
	// graphTypeResourceGroup is a resource group's row type there.
	graphTypeResourceGroup = "microsoft.resources/subscriptions/resourcegroups"
)

// Discover finds, with Resource Graph, every resource and resource group
// of the subscriptions in opts.Scopes (default Config.DefaultSubscription;
// an error when there is neither) that carries any of the classifiers,
// with all its tags. It sends one query over all the subscriptions, the
// classifiers OR-ed (see discoveryQuery), and follows its pages of up to
// 1000 rows with $skipToken: a search of n rows costs ceil(n/1000)
// requests; the resources of opts.Named are a second query of their own.
// Discovery.Calls counts the HTTP requests sent (retries included, calls a
// throttle gate held not). Each Classified carries its ARM ID, its type
// lower-cased, the subscription as spelled in opts.Scopes (Scope) and
// RulesFor its type.
//
// Classifier names match as ARM compares tag names, without regard to
// case (a resource carries "Env" or "env", never both), and values
// exactly. Resource Graph's tags['name'] looks a name up case-sensitively,
// so the query expands each resource's tags into rows (mv-expand) and
// compares each tag's name with =~ and its value with ==: only the tags
// that match come back as rows, so a resource costs one row per classifier
// it carries, as before, and the pages do not grow with the tags the
// resources carry besides. Rows are filtered again locally with the same
// rule and each resource is returned once.
//
// Failures: Resource Graph answers a query naming a subscription the
// caller may not read with 403 (AccessDenied) for the whole query, not
// with partial results; but it leaves out, with no error, what the caller
// may not read inside a subscription it may see (readable.go: such a
// subscription is reported in Discovery.Failed with ErrPartialRead, its
// rows still returned). On a 403 or 404 over several subscriptions,
// Discover asks each subscription alone (one query each, with its pages)
// and reports those that fail in Discovery.Failed (Scope: the
// subscription ID as given); the others' resources are returned. Any other
// failure (throttling: ARG's quota is per principal and tenant, so one
// throttled query means all are; a server error after the retries; a page
// that fails after earlier ones) reports every subscription in Failed
// with that error and returns no resources, as no subscription was
// searched completely. A throttled query is a *cloud.ThrottledError (see
// the package doc); when Resource Graph says its quota is spent until a
// reset (x-ms-user-quota-remaining 0) the gate of Resource Graph queries
// closes until then, and Discover waits for it when the wait is at most
// Retry.MaxRetryDelay, as azcore does for a Retry-After, so that a search
// of more pages than one quota window allows still completes. The error
// is for a search that cannot run: no subscription, a classifier that
// cannot be expressed in KQL, or the context ended.
func (p *Provider) Discover(ctx context.Context, classifiers []cloud.Classifier, opts cloud.DiscoverOptions) (cloud.Discovery, error) {
	scopes, err := p.discoveryScopes(opts.Scopes)
	if err != nil {
		return cloud.Discovery{}, err
	}
	if len(classifiers) == 0 && len(opts.Named) == 0 {
		return cloud.Discovery{}, nil
	}
	queries, err := discoveryQueries(classifiers, opts.Named)
	if err != nil {
		return cloud.Discovery{}, err
	}
	rows, failed, calls, err := p.runQueries(ctx, queries, scopes)
	if err != nil {
		return cloud.Discovery{Calls: calls}, err
	}
	return cloud.Discovery{Resources: classify(p.Rules().NameCase(), rows, classifiers, opts.Named, scopes),
		Failed: failed, Calls: calls}, nil
}

// runQueries runs Resource Graph queries over the subscriptions and
// returns their rows, the subscriptions that could not be searched, or
// only in part (see Discover for how failures are reported; readable.go)
// and the requests sent. The error
// is for a context that ended.
func (p *Provider) runQueries(ctx context.Context, queries, scopes []string) ([]map[string]any, []cloud.ScopeError, int, error) {
	g, err := p.newGraphQuery(queries...)
	if err != nil {
		return nil, nil, 0, err
	}
	var failed []cloud.ScopeError
	rows, err := g.run(ctx, scopes)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return nil, nil, g.calls(), fmt.Errorf("azure: search subscriptions %s with Resource Graph: %w", strings.Join(scopes, ", "), err)
	case len(scopes) > 1 && perSubscription(err):
		rows = nil
		for _, sub := range scopes {
			r, err := g.run(ctx, []string{sub})
			if err != nil {
				if ctx.Err() != nil {
					return nil, nil, g.calls(), fmt.Errorf("azure: search subscription %s with Resource Graph: %w", sub, err)
				}
				failed = append(failed, cloud.ScopeError{Scope: sub,
					Err: p.armErr(fmt.Sprintf("azure: search subscription %s with Resource Graph", sub), err)})
				continue
			}
			rows = append(rows, r...)
		}
	default:
		e := p.armErr(fmt.Sprintf("azure: search subscriptions %s with Resource Graph", strings.Join(scopes, ", ")), err)
		for _, sub := range scopes {
			failed = append(failed, cloud.ScopeError{Scope: sub, Err: e})
		}
		rows = nil
	}
	failed = append(failed, p.partialReads(ctx, scopes, failed)...)
	return rows, failed, g.calls(), nil
}

// discoveryScopes returns the subscriptions to search: given, without
// duplicates (compared case-insensitively; the first spelling is kept), or
// the default subscription.
func (p *Provider) discoveryScopes(given []string) ([]string, error) {
	if len(given) == 0 {
		if p.cfg.DefaultSubscription == "" {
			return nil, fmt.Errorf("azure: no subscription to search: name subscriptions in the scopes, or set %s", FlagSubscription)
		}
		given = []string{p.cfg.DefaultSubscription}
	}
	seen := map[string]bool{}
	var out []string
	for _, s := range given {
		s = strings.TrimSpace(s)
		if s == "" || strings.Contains(s, "/") {
			return nil, fmt.Errorf("azure: %q is not a subscription ID", s)
		}
		if !seen[strings.ToLower(s)] {
			seen[strings.ToLower(s)] = true
			out = append(out, s)
		}
	}
	return out, nil
}

// perSubscription reports whether a failed query over several
// subscriptions may be one subscription's fault (403 for one the caller
// may not read, 404 for one that does not exist), so that asking each
// alone can save the others.
func perSubscription(err error) bool {
	k := kindOf(err)
	return k == cloud.ErrForbidden || k == cloud.ErrNotFound
}

// discoveryQueries are the Resource Graph queries of Discover: the
// classifiers' (discoveryQuery), and the name scopes' (namedQuery) when
// there are any.
func discoveryQueries(classifiers []cloud.Classifier, named []cloud.NameScope) ([]string, error) {
	var queries []string
	if len(classifiers) > 0 {
		q, err := discoveryQuery(classifiers)
		if err != nil {
			return nil, err
		}
		queries = append(queries, q)
	}
	if len(named) > 0 {
		q, err := namedQuery(named)
		if err != nil {
			return nil, err
		}
		queries = append(queries, q)
	}
	return queries, nil
}

// graphTables is the start of Discover's queries: the resources table and
// the resource groups (which ARG keeps in resourcecontainers, with the
// subscriptions, which are left out).
const graphTables = "resources | union resourcecontainers | where type != '" + graphTypeSubscription + "'"

// graphColumns ends Discover's queries with the columns classify reads.
const graphColumns = " | project id, name, type, subscriptionId, resourceGroup, tags"

// discoveryQuery is the classifiers' query: every tag of every row
// expanded into a row of its own, kept when its name equals a classifier's
// without regard to case (=~) and its value exactly (==), the terms
// OR-ed, sorted and without duplicates:
//
//	resources | union resourcecontainers | where type != 'microsoft.resources/subscriptions'
//	| mv-expand bagexpansion=array tag = tags
//	| where (tostring(tag[0]) =~ 'k1' and tostring(tag[1]) == 'v1') or (...)
//	| project id, name, type, subscriptionId, resourceGroup, tags
//
// (on one line; tags stays the row's full set). Names and values are KQL
// string literals (kqlString), so a quote in a classifier cannot end the
// literal or inject KQL.
func discoveryQuery(classifiers []cloud.Classifier) (string, error) {
	seen := map[string]bool{}
	var terms []string
	for _, c := range classifiers {
		if c.Name == "" {
			return "", errors.New("azure: a classifier has an empty tag name")
		}
		name, err := kqlString(c.Name)
		if err != nil {
			return "", fmt.Errorf("azure: classifier tag name %q: %w", c.Name, err)
		}
		value, err := kqlString(c.Value)
		if err != nil {
			return "", fmt.Errorf("azure: classifier %q value %q: %w", c.Name, c.Value, err)
		}
		if t := "(tostring(tag[0]) =~ " + name + " and tostring(tag[1]) == " + value + ")"; !seen[t] {
			seen[t] = true
			terms = append(terms, t)
		}
	}
	sort.Strings(terms)
	return graphTables + " | mv-expand bagexpansion=array tag = tags | where " + strings.Join(terms, " or ") + graphColumns, nil
}

// namedQuery is the name scopes' query (not expanded: their resources
// may carry no tag at all), the terms OR-ed, sorted and without
// duplicates.
func namedQuery(named []cloud.NameScope) (string, error) {
	seen := map[string]bool{}
	var terms []string
	for _, n := range named {
		t, err := nameTerm(n)
		if err != nil {
			return "", err
		}
		if !seen[t] {
			seen[t] = true
			terms = append(terms, t)
		}
	}
	sort.Strings(terms)
	return graphTables + " and (" + strings.Join(terms, " or ") + ")" + graphColumns, nil
}

// nameTerm is the KQL condition of a NameScope: the rows of a resource
// group (not the group itself: its row has the type of a group) whose
// names start with the prefix. KQL's =~ and startswith ignore case, as ARM
// names do.
func nameTerm(n cloud.NameScope) (string, error) {
	group, err := kqlString(n.Group)
	if err != nil || n.Group == "" {
		return "", fmt.Errorf("azure: resource group %q cannot be searched: %v", n.Group, err)
	}
	prefix, err := kqlString(n.NamePrefix)
	if err != nil {
		return "", fmt.Errorf("azure: name prefix %q: %w", n.NamePrefix, err)
	}
	return "(resourceGroup =~ " + group + " and type != '" + graphTypeResourceGroup + "' and name startswith " + prefix + ")", nil
}

// kqlString renders s as a single-quoted KQL string literal: backslash,
// quote, tab, line feed and carriage return escaped (KQL's escapes), every
// other character as itself. Other control characters and invalid UTF-8
// have no documented escape and are refused: no tag name may contain them,
// and a value with them cannot be matched safely.
func kqlString(s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", errors.New("not valid UTF-8")
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('\'')
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '\'':
			b.WriteString(`\'`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if unicode.IsControl(r) {
				return "", fmt.Errorf("control character %U cannot be written in a Resource Graph query", r)
			}
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return b.String(), nil
}

// classify turns Resource Graph rows into the resources in scope, sorted
// by CanonicalID, each once: a row of one of the subscriptions that
// carries a classifier's name (matched as nc says) with exactly its value.
func classify(nc tags.NameCase, rows []map[string]any, classifiers []cloud.Classifier, named []cloud.NameScope, scopes []string) []cloud.Classified {
	scopeOf := make(map[string]string, len(scopes))
	for _, s := range scopes {
		scopeOf[strings.ToLower(s)] = s
	}
	seen := map[string]bool{}
	var out []cloud.Classified
	for _, row := range rows {
		id, _ := row["id"].(string)
		typ, _ := row["type"].(string)
		sub, _ := row["subscriptionId"].(string)
		scope, ok := scopeOf[strings.ToLower(sub)]
		key := cloud.CanonicalID(id)
		if id == "" || !ok || seen[key] || strings.EqualFold(typ, graphTypeSubscription) {
			continue
		}
		t := rowTags(row["tags"])
		if !cloud.Classifies(nc, t, classifiers) && !namedIn(row, named) {
			continue
		}
		seen[key] = true
		out = append(out, cloud.Classified{ID: id, Type: strings.ToLower(typ), Scope: scope, Tags: t, Rules: RulesFor(typ)})
	}
	sort.Slice(out, func(i, j int) bool { return cloud.CanonicalID(out[i].ID) < cloud.CanonicalID(out[j].ID) })
	return out
}

// namedIn reports whether a row is in one of the name scopes.
func namedIn(row map[string]any, named []cloud.NameScope) bool {
	rg, _ := row["resourceGroup"].(string)
	name, _ := row["name"].(string)
	typ, _ := row["type"].(string)
	for _, n := range named {
		if strings.EqualFold(rg, n.Group) && !strings.EqualFold(typ, graphTypeResourceGroup) &&
			strings.HasPrefix(strings.ToLower(name), strings.ToLower(n.NamePrefix)) {
			return true
		}
	}
	return false
}

// rowTags converts a row's tags column (a JSON object, or null).
func rowTags(v any) tags.Set {
	m, _ := v.(map[string]any)
	t := make(tags.Set, len(m))
	for k, x := range m {
		if s, ok := x.(string); ok {
			t[k] = s
		} else if x != nil {
			t[k] = fmt.Sprint(x)
		}
	}
	return t
}
