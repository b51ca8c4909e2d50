package armsim

import (
	"io"
	"net/http"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// The admin API lives under /_admin, outside ARM's paths. It needs no
// token, is never throttled, faulted or counted. See docs/armsim.md.
func adminRoutes(rt *route) methods {
	path := strings.Join(rt.low[min(1, len(rt.low)):], "/")
	if adminHandlers[path] == nil {
		return nil
	}
	m := methods{}
	for method, h := range adminHandlers[path] {
		m[method] = operation{"Admin", h}
	}
	return m
}

// adminHandlers are the admin API's handlers by path (/_admin/{path}) and
// HTTP method.
var adminHandlers = map[string]map[string]handlerFunc{
	"state":     {http.MethodGet: (*Server).adminGetState, http.MethodPut: (*Server).adminPutState, http.MethodPost: (*Server).adminAddState},
	"reset":     {http.MethodPost: (*Server).adminReset},
	"calls":     {http.MethodGet: (*Server).adminGetCalls, http.MethodDelete: (*Server).adminResetCalls},
	"tags":      {http.MethodGet: (*Server).adminGetTags, http.MethodPost: (*Server).adminEditTags},
	"instances": {http.MethodPost: (*Server).adminAddInstances},
	"resources": {http.MethodDelete: (*Server).adminDeleteResource},
	"faults":    {http.MethodGet: (*Server).adminGetFaults, http.MethodPost: (*Server).adminAddFault, http.MethodDelete: (*Server).adminClearFaults},
	"config":    {http.MethodPut: (*Server).adminConfig},

	"eventgrid":          {http.MethodGet: (*Server).adminEventGridStats},
	"eventgrid/config":   {http.MethodGet: (*Server).adminEventGridConfig, http.MethodPut: (*Server).adminSetEventGridConfig},
	"eventgrid/validate": {http.MethodGet: (*Server).adminEventGridValidate},
}

// adminError answers an admin request that failed.
func adminError(w http.ResponseWriter, err error) {
	if e, ok := err.(*Error); ok {
		writeError(w, e)
		return
	}
	writeError(w, errBadRequest("BadRequest", "%v", err))
}

func readAdminBody(r *http.Request, v any) error {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		return errInvalidJSON(err)
	}
	return nil
}

func (s *Server) adminGetState(w http.ResponseWriter, _ *http.Request, _ *route) {
	data, err := s.SaveYAML()
	if err != nil {
		adminError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(data)
}

func (s *Server) adminPutState(w http.ResponseWriter, r *http.Request, _ *route) {
	s.adminState(w, r, s.Load)
}

func (s *Server) adminAddState(w http.ResponseWriter, r *http.Request, _ *route) {
	s.adminState(w, r, s.Add)
}

func (s *Server) adminState(w http.ResponseWriter, r *http.Request, apply func(State) error) {
	var st State
	if err := readAdminBody(r, &st); err != nil {
		adminError(w, err)
		return
	}
	if err := apply(st); err != nil {
		adminError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) adminReset(w http.ResponseWriter, _ *http.Request, _ *route) {
	s.Reset()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) adminGetCalls(w http.ResponseWriter, _ *http.Request, _ *route) {
	writeJSON(w, http.StatusOK, s.Calls())
}

func (s *Server) adminResetCalls(w http.ResponseWriter, _ *http.Request, _ *route) {
	s.ResetCalls()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) adminGetTags(w http.ResponseWriter, r *http.Request, _ *route) {
	tags, err := s.Tags(r.URL.Query().Get("id"))
	if err != nil {
		adminError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"tags": tags})
}

// adminTagEdit is the body of POST /_admin/tags: exactly one of Set
// (portal edit), Replace (wholesale rewrite) or Delete (names).
type adminTagEdit struct {
	ID      string            `json:"id"`
	Set     map[string]string `json:"set,omitempty"`
	Replace map[string]string `json:"replace,omitempty"`
	Delete  []string          `json:"delete,omitempty"`
}

func (s *Server) adminEditTags(w http.ResponseWriter, r *http.Request, _ *route) {
	var b adminTagEdit
	if err := readAdminBody(r, &b); err != nil {
		adminError(w, err)
		return
	}
	var err error
	switch {
	case b.Replace != nil:
		err = s.ReplaceTags(b.ID, b.Replace)
	case b.Set != nil:
		err = s.SetTags(b.ID, b.Set)
	default:
		err = s.DeleteTags(b.ID, b.Delete...)
	}
	if err != nil {
		adminError(w, err)
		return
	}
	s.adminGetTags(w, withQuery(r, "id", b.ID), nil)
}

func withQuery(r *http.Request, k, v string) *http.Request {
	r2 := r.Clone(r.Context())
	q := r2.URL.Query()
	q.Set(k, v)
	r2.URL.RawQuery = q.Encode()
	return r2
}

func (s *Server) adminAddInstances(w http.ResponseWriter, r *http.Request, _ *route) {
	var b struct {
		ScaleSetID string `json:"scaleSetId"`
		Count      int    `json:"count"`
	}
	if err := readAdminBody(r, &b); err != nil {
		adminError(w, err)
		return
	}
	ids, err := s.AddInstances(b.ScaleSetID, b.Count)
	if err != nil {
		adminError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ids": ids})
}

func (s *Server) adminDeleteResource(w http.ResponseWriter, r *http.Request, _ *route) {
	if err := s.DeleteResource(r.URL.Query().Get("id")); err != nil {
		adminError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) adminGetFaults(w http.ResponseWriter, _ *http.Request, _ *route) {
	writeJSON(w, http.StatusOK, s.Faults())
}

func (s *Server) adminAddFault(w http.ResponseWriter, r *http.Request, _ *route) {
	var f Fault
	if err := readAdminBody(r, &f); err != nil {
		adminError(w, err)
		return
	}
	s.AddFault(f)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) adminClearFaults(w http.ResponseWriter, _ *http.Request, _ *route) {
	s.ClearFaults()
	w.WriteHeader(http.StatusNoContent)
}

// adminConfigBody is the body of PUT /_admin/config; absent fields are
// left unchanged.
type adminConfigBody struct {
	ErrorRate *float64         `json:"errorRate,omitempty"`
	Latency   *string          `json:"latency,omitempty"`
	Throttle  *ThrottleOptions `json:"throttle,omitempty"`
}

func (s *Server) adminConfig(w http.ResponseWriter, r *http.Request, _ *route) {
	var b adminConfigBody
	if err := readAdminBody(r, &b); err != nil {
		adminError(w, err)
		return
	}
	if b.Latency != nil {
		d, err := time.ParseDuration(*b.Latency)
		if err != nil {
			adminError(w, err)
			return
		}
		s.SetLatency(d)
	}
	if b.ErrorRate != nil {
		s.SetErrorRate(*b.ErrorRate)
	}
	if b.Throttle != nil {
		s.SetThrottle(*b.Throttle)
	}
	w.WriteHeader(http.StatusNoContent)
}
