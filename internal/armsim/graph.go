package armsim

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
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
	rows := s.graphRows(req.Subscriptions, q)
	writeJSON(w, http.StatusOK, graphPage(req.Query, rows, skip, top))
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

// graphRows evaluates q over the resources of the subscriptions.
func (s *Server) graphRows(subs []string, q *kqlQuery) []map[string]any {
	want := map[string]bool{}
	for _, sub := range subs {
		want[strings.ToLower(sub)] = true
	}
	cols := q.project
	if len(cols) == 0 {
		cols = allGraphColumns
	}
	var rows []map[string]any
	s.st.mu.RLock()
	defer s.st.mu.RUnlock()
	for _, o := range s.st.sorted {
		if len(want) > 0 && !want[strings.ToLower(o.sub)] {
			continue
		}
		col := func(c string) any { return s.graphCol(o, c) }
		if !matchAll(q.conds, o, col) {
			continue
		}
		row := make(map[string]any, len(cols))
		for _, c := range cols {
			row[c] = col(c)
		}
		rows = append(rows, row)
		if q.limit >= 0 && len(rows) >= q.limit {
			break
		}
	}
	return rows
}

var allGraphColumns = []string{"id", "name", "type", "location", "resourceGroup", "subscriptionId", "tenantId", "kind", "tags", "properties", "zones", "sku"}

func matchAll(conds []kqlCond, o *object, col func(string) any) bool {
	for _, c := range conds {
		if !c.eval(o, col) {
			return false
		}
	}
	return true
}

// graphCol is one column of an object's Resource Graph row. As in ARG,
// type and resourceGroup are lower-case.
func (s *Server) graphCol(o *object, c string) any {
	switch c {
	case "id":
		return o.id
	case "name":
		return o.name
	case "type":
		return strings.ToLower(o.typ)
	case "location":
		return o.location
	case "resourceGroup":
		return strings.ToLower(o.rg)
	case "subscriptionId":
		return o.sub
	case "tenantId":
		return s.opts.TenantID
	case "kind":
		return o.kind
	case "tags":
		return o.tags.public()
	case "zones":
		return o.zones
	}
	full, _ := renderGeneric(o).(map[string]any)
	return full[c]
}

// graphPage cuts one page out of rows.
func graphPage(query string, rows []map[string]any, skip, top int) graphResponse {
	resp := graphResponse{TotalRecords: len(rows), ResultTruncated: "false", Data: []map[string]any{}, Facets: []any{}}
	if skip < len(rows) {
		end := min(skip+top, len(rows))
		resp.Data = rows[skip:end]
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
