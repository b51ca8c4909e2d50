package armsim

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// graphRequest is the body of POST /providers/Microsoft.ResourceGraph/resources.
type graphRequest struct {
	Subscriptions []string `json:"subscriptions"`
	Query         string   `json:"query"`
	Options       *struct {
		SkipToken    string `json:"$skipToken"`
		Skip         *int   `json:"$skip"`
		Top          *int   `json:"$top"`
		ResultFormat string `json:"resultFormat"`
	} `json:"options"`
}

// graphResponse is Resource Graph's answer.
type graphResponse struct {
	TotalRecords    int              `json:"totalRecords"`
	Count           int              `json:"count"`
	ResultTruncated string           `json:"resultTruncated"`
	SkipToken       string           `json:"$skipToken,omitempty"`
	Data            []map[string]any `json:"data"`
	Facets          []any            `json:"facets"`
}

func errBadQuery(msg string) *Error {
	return errBadRequest("BadRequest",
		"Please provide below info when asking for support: armsim. Query is invalid or not supported by armsim: %s. See docs/armsim.md for the supported subset.", msg)
}

// handleGraph runs a Resource Graph query.
func (s *Server) handleGraph(w http.ResponseWriter, r *http.Request, _ *route) {
	var req graphRequest
	if e := readJSON(r, &req); e != nil {
		writeError(w, e)
		return
	}
	q, err := parseKQL(req.Query)
	if err != nil {
		writeError(w, errBadQuery(err.Error()))
		return
	}
	if req.Options != nil && req.Options.ResultFormat != "" && !strings.EqualFold(req.Options.ResultFormat, "objectArray") {
		writeError(w, errBadQuery("only resultFormat objectArray is supported"))
		return
	}
	skip, top, e := s.graphWindow(req)
	if e != nil {
		writeError(w, e)
		return
	}
	caller := ""
	if c, err := s.parseToken(strings.TrimSpace(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))); err == nil {
		caller = c.AppID
	}
	s.st.mu.RLock()
	rows, cols := s.graphRows(req.Subscriptions, q, func(id string) bool { return s.readable(caller, id) })
	resp := s.graphPage(req.Query, rows, cols, skip, top)
	s.st.mu.RUnlock()
	writeJSON(w, http.StatusOK, resp)
}

// graphWindow returns the offset and page size of the request.
func (s *Server) graphWindow(req graphRequest) (int, int, *Error) {
	skip, top := 0, s.opts.GraphPageSize
	if o := req.Options; o != nil {
		if o.Top != nil && *o.Top > 0 {
			top = min(*o.Top, 1000)
		}
		if o.Skip != nil && *o.Skip > 0 {
			skip = *o.Skip
		}
		if o.SkipToken != "" {
			off, ok := parseGraphToken(o.SkipToken, req.Query)
			if !ok {
				return 0, 0, errBadQuery("the $skipToken does not belong to this query")
			}
			skip = off
		}
	}
	return skip, top, nil
}

// graphRow is one row of a Resource Graph table: a resource (resources),
// or a subscription or resource group (resourcecontainers). Exactly one
// of o, g and sub is set; pair is the tag an mv-expand row stands for.
type graphRow struct {
	o    *object
	g    *group
	sub  *subscription
	pair *[2]string
	// lagged are the tags Resource Graph shows while it has not indexed
	// the latest tag writes (graphLag); set when lagging is.
	lagged  tagSet
	lagging bool
}

// tagSet returns the row's tags, as Resource Graph has indexed them.
func (r graphRow) tagSet() tagSet {
	switch {
	case r.lagging:
		return r.lagged
	case r.o != nil:
		return r.o.tags
	case r.g != nil:
		return r.g.tags
	}
	return r.sub.tags
}

// Resource Graph's types of the resourcecontainers rows armsim has.
const (
	// GraphTypeSubscription is a subscription's type in Resource Graph.
	GraphTypeSubscription = "microsoft.resources/subscriptions"
	// GraphTypeResourceGroup is a resource group's type in Resource Graph
	// (a GET of the group says TypeResourceGroup).
	GraphTypeResourceGroup = "microsoft.resources/subscriptions/resourcegroups"
)

// graphRows evaluates q over the tables' rows in the subscriptions (all
// when none is given) and returns the matching rows and the columns to
// render. The caller holds the read lock; rows are rendered later, one
// page at a time.
func (s *Server) graphRows(subs []string, q *kqlQuery, readable func(id string) bool) ([]graphRow, []string) {
	want := map[string]bool{}
	for _, sub := range subs {
		want[strings.ToLower(sub)] = true
	}
	inScope := func(sub string) bool { return len(want) == 0 || want[strings.ToLower(sub)] }
	rows := onlyReadable(s.tableRows(q.table, inScope), readable)
	cols := allGraphColumns
	for _, st := range q.stages {
		switch st.op {
		case "where":
			kept := rows[:0] // rows is this query's own slice
			for _, r := range rows {
				if st.expr.eval(s, r) {
					kept = append(kept, r)
				}
			}
			rows = kept
		case "union":
			rows = append(rows, onlyReadable(s.tableRows(st.table, inScope), readable)...)
		case "project":
			cols = st.project
		case "mv-expand":
			rows = expandTags(rows)
		case "limit":
			if len(rows) > st.limit {
				rows = rows[:st.limit]
			}
		}
	}
	return rows, cols
}

// onlyReadable keeps the rows the caller may read: Resource Graph leaves
// out the others silently.
func onlyReadable(rows []graphRow, readable func(id string) bool) []graphRow {
	kept := rows[:0]
	for _, r := range rows {
		if readable(r.rowID()) {
			kept = append(kept, r)
		}
	}
	return kept
}

// rowID is the ID of the resource, group or subscription a row stands for.
func (r graphRow) rowID() string {
	switch {
	case r.o != nil:
		return r.o.id
	case r.g != nil:
		return r.g.id
	}
	return "/subscriptions/" + r.sub.id
}

// expandTags is mv-expand bagexpansion=array over tags: one row per tag
// (in name order), none for a row without tags.
func expandTags(rows []graphRow) []graphRow {
	var out []graphRow
	for _, r := range rows {
		t := r.tagSet()
		for _, k := range sortedKeys(t) {
			row := r
			row.pair = &[2]string{k, t[k]}
			out = append(out, row)
		}
	}
	return out
}

// tableRows returns a table's rows in the subscriptions inScope accepts:
// resources in ID order; subscriptions, each followed by its groups, in
// ID order.
func (s *Server) tableRows(table string, inScope func(string) bool) []graphRow {
	var rows []graphRow
	if table == tableResources {
		for _, o := range s.st.sorted {
			if inScope(o.sub) {
				rows = append(rows, s.lagRow(graphRow{o: o}, &o.tags))
			}
		}
		return rows
	}
	groups := map[string][]*group{}
	for _, g := range s.st.groups {
		groups[strings.ToLower(g.sub)] = append(groups[strings.ToLower(g.sub)], g)
	}
	for _, k := range sortedKeys(s.st.subs) {
		sub := s.st.subs[k]
		if !inScope(sub.id) {
			continue
		}
		rows = append(rows, s.lagRow(graphRow{sub: sub}, &sub.tags))
		gs := groups[k]
		sort.Slice(gs, func(i, j int) bool { return gs[i].key < gs[j].key })
		for _, g := range gs {
			rows = append(rows, s.lagRow(graphRow{g: g}, &g.tags))
		}
	}
	return rows
}

// lagRow is r with the tags at p as Resource Graph has indexed them.
func (s *Server) lagRow(r graphRow, p *tagSet) graphRow {
	r.lagged, r.lagging = s.indexed(p, *p)
	return r
}

var allGraphColumns = []string{"id", "name", "type", "location", "resourceGroup", "subscriptionId", "tenantId", "kind", "tags", "properties", "zones", "sku"}

// graphCol is one column of a Resource Graph row. As in ARG, type and
// resourceGroup are lower-case.
func (s *Server) graphCol(r graphRow, c string) any {
	switch {
	case r.g != nil:
		return s.groupCol(r.g, r.tagSet(), c)
	case r.sub != nil:
		return s.subscriptionCol(r.sub, r.tagSet(), c)
	}
	o := r.o
	if v, ok := s.commonCol(graphFields{values: [7]string{o.id, o.name, strings.ToLower(o.typ), o.location,
		strings.ToLower(o.rg), o.sub, o.kind}, tags: r.tagSet()}, c); ok {
		return v
	}
	if c == "zones" {
		return o.zones
	}
	full, _ := renderGeneric(o).(map[string]any)
	return full[c]
}

// graphFields are the columns every Resource Graph row has: the string
// ones in commonColumns' order, and the tags.
type graphFields struct {
	values [7]string
	tags   tagSet
}

// commonColumns index graphFields.values by column name.
var commonColumns = map[string]int{"id": 0, "name": 1, "type": 2, "location": 3, "resourceGroup": 4, "subscriptionId": 5, "kind": 6}

// commonCol returns column c when it is one every row has.
func (s *Server) commonCol(f graphFields, c string) (any, bool) {
	if i, ok := commonColumns[c]; ok {
		return f.values[i], true
	}
	switch c {
	case "tenantId":
		return s.opts.TenantID, true
	case "tags":
		return f.tags.public(), true
	}
	return nil, false
}

// groupCol is a column of a resource group's resourcecontainers row.
func (s *Server) groupCol(g *group, tags tagSet, c string) any {
	if v, ok := s.commonCol(graphFields{values: [7]string{g.id, g.name, GraphTypeResourceGroup, g.location,
		strings.ToLower(g.name), g.sub, ""}, tags: tags}, c); ok {
		return v
	}
	if c == "properties" {
		return map[string]any{"provisioningState": statusSucceeded}
	}
	return nil
}

// subscriptionCol is a column of a subscription's resourcecontainers row
// (armsim has no display names: name is the ID).
func (s *Server) subscriptionCol(sub *subscription, tags tagSet, c string) any {
	if v, ok := s.commonCol(graphFields{values: [7]string{"/subscriptions/" + sub.id, sub.id, GraphTypeSubscription, "",
		"", sub.id, ""}, tags: tags}, c); ok {
		return v
	}
	if c == "properties" {
		return map[string]any{"state": "Enabled"}
	}
	return nil
}

// graphPage renders one page of rows; the caller holds the read lock.
func (s *Server) graphPage(query string, rows []graphRow, cols []string, skip, top int) graphResponse {
	resp := graphResponse{TotalRecords: len(rows), ResultTruncated: "false", Data: []map[string]any{}, Facets: []any{}}
	if skip < len(rows) {
		end := min(skip+top, len(rows))
		for _, r := range rows[skip:end] {
			row := make(map[string]any, len(cols))
			for _, c := range cols {
				row[c] = s.graphCol(r, c)
			}
			resp.Data = append(resp.Data, row)
		}
		if end < len(rows) {
			resp.SkipToken = graphToken(end, query)
		}
	}
	resp.Count = len(resp.Data)
	return resp
}

// graphToken encodes an offset bound to the query text.
func graphToken(offset int, query string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(offset) + ":" + queryHash(query)))
}

func parseGraphToken(tok, query string) (int, bool) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return 0, false
	}
	off, h, ok := strings.Cut(string(b), ":")
	n, err := strconv.Atoi(off)
	if !ok || err != nil || n < 0 || h != queryHash(query) {
		return 0, false
	}
	return n, true
}

func queryHash(q string) string {
	sum := sha256.Sum256([]byte(q))
	return hex.EncodeToString(sum[:8])
}

// opGraph is the operation name of a Resource Graph query.
const opGraph = "ResourceGraph.Resources"

// graphScopes returns "/subscriptions/{id}" for each subscription a
// Resource Graph request names, for fault scopes, and puts the body back
// for the handler.
func graphScopes(r *http.Request) []string {
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return nil
	}
	var req struct {
		Subscriptions []string `json:"subscriptions"`
	}
	if json.Unmarshal(body, &req) != nil {
		return nil
	}
	out := make([]string, 0, len(req.Subscriptions))
	for _, sub := range req.Subscriptions {
		out = append(out, "/subscriptions/"+sub)
	}
	return out
}
