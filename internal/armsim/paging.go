package armsim

import (
	"encoding/base64"
	"net/http"
	"strconv"
)

// skipTokenParam is the query parameter armsim's nextLinks carry.
const skipTokenParam = "$skiptoken"

// listPage is one page of an ARM list.
type listPage struct {
	Value    []any  `json:"value"`
	NextLink string `json:"nextLink,omitempty"`
}

// pageSize is Options.PageSize, lowered by a valid $top.
func (s *Server) pageSize(r *http.Request) int {
	n := s.opts.PageSize
	if top, err := strconv.Atoi(r.URL.Query().Get("$top")); err == nil && top > 0 && top < n {
		n = top
	}
	return n
}

// decodeSkipToken returns the key a page starts after.
func decodeSkipToken(r *http.Request) (string, *Error) {
	tok := r.URL.Query().Get(skipTokenParam)
	if tok == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return "", errBadRequest("InvalidSkipToken", "The $skiptoken '%s' is not valid.", tok)
	}
	return string(b), nil
}

// nextLink is the URL of the page after the item with key last.
func nextLink(r *http.Request, last string) string {
	q := r.URL.Query()
	q.Set(skipTokenParam, base64.RawURLEncoding.EncodeToString([]byte(last)))
	return baseURL(r) + r.URL.Path + "?" + q.Encode()
}

// listObjects writes one page of the objects under prefix that match,
// rendered by render.
func (s *Server) listObjects(w http.ResponseWriter, r *http.Request, prefix string, match func(*object) bool, render func(*object) any) {
	after, size, e := s.pageRequest(r)
	if e != nil {
		writeError(w, e)
		return
	}
	page := listPage{Value: []any{}}
	var last string
	more := false
	s.st.mu.RLock()
	s.st.scan(prefix, after, func(o *object) bool {
		if !match(o) {
			return true
		}
		if len(page.Value) == size {
			more = true
			return false
		}
		page.Value = append(page.Value, render(o))
		last = o.key
		return true
	})
	s.st.mu.RUnlock()
	if more {
		page.NextLink = nextLink(r, last)
	}
	writeJSON(w, http.StatusOK, page)
}

// pageRequest reads a list request's paging: where to continue (the skip
// token) and how many items a page holds.
func (s *Server) pageRequest(r *http.Request) (after string, size int, e *Error) {
	after, e = decodeSkipToken(r)
	return after, s.pageSize(r), e
}
