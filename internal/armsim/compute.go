package armsim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// etagString renders an ETag as compute does: a quoted integer.
func etagString(n int64) string { return `"` + strconv.FormatInt(n, 10) + `"` }

// etagMatches compares an If-Match value with the current ETag, loosely
// about quotes and weak prefixes.
func etagMatches(header string, cur int64) bool {
	for _, v := range strings.Split(header, ",") {
		v = strings.TrimSpace(v)
		if v == "*" {
			return true
		}
		v = strings.Trim(strings.TrimPrefix(v, "W/"), `"`)
		if v == strconv.FormatInt(cur, 10) {
			return true
		}
	}
	return false
}

// checkPreconditions applies If-Match / If-None-Match to an existing resource.
func checkPreconditions(r *http.Request, cur int64) *Error {
	if im := r.Header.Get("If-Match"); im != "" && !etagMatches(im, cur) {
		return newError(http.StatusPreconditionFailed, "PreconditionFailed",
			"Etag provided in if-match header %s does not match etag %s of resource.", im, etagString(cur))
	}
	if inm := r.Header.Get("If-None-Match"); inm == "*" || (inm != "" && etagMatches(inm, cur)) {
		return newError(http.StatusPreconditionFailed, "PreconditionFailed",
			"Etag provided in if-none-match header %s matches the etag %s of the resource.", inm, etagString(cur))
	}
	return nil
}

// renderVM is the compute representation of a virtual machine.
func renderVM(o *object) any {
	props := map[string]any{
		"vmId":              o.uuid,
		"hardwareProfile":   map[string]any{"vmSize": o.size},
		"osProfile":         map[string]any{"computerName": o.computerName},
		"provisioningState": o.provisioning,
		"timeCreated":       o.created.UTC().Format(time.RFC3339Nano),
	}
	m := baseJSON(o)
	if o.avSetID != "" {
		props["availabilitySet"] = map[string]any{"id": o.avSetID}
	}
	if o.vmssID != "" {
		props["virtualMachineScaleSet"] = map[string]any{"id": o.vmssID}
		m["managedBy"] = o.vmssID
	}
	m["properties"] = props
	m["etag"] = etagString(o.etag)
	return m
}

// renderVMSS is the compute representation of a scale set.
func renderVMSS(o *object) any {
	m := baseJSON(o)
	capacity := len(o.instances)
	m["sku"] = map[string]any{"name": o.size, "tier": "Standard", "capacity": capacity}
	m["etag"] = etagString(o.etag)
	m["properties"] = map[string]any{
		"orchestrationMode": o.mode,
		"provisioningState": o.provisioning,
		"uniqueId":          o.uuid,
		"timeCreated":       o.created.UTC().Format(time.RFC3339Nano),
	}
	return m
}

// renderInstance is the compute representation of a Uniform instance. It
// has no tags: they live on the scale set.
func renderInstance(in *instance) any {
	return map[string]any{
		"id": in.id(), "name": in.name(), "type": TypeScaleSetVM, "location": in.parent.location,
		"instanceId": in.instanceID, "etag": etagString(in.etag),
		"sku": map[string]any{"name": in.parent.size, "tier": "Standard"},
		"properties": map[string]any{
			"vmId": in.uuid, "latestModelApplied": true, "provisioningState": in.provisioning,
			"osProfile":       map[string]any{"computerName": in.computerName},
			"hardwareProfile": map[string]any{"vmSize": in.parent.size},
		},
	}
}

// baseJSON holds the fields every resource has.
func baseJSON(o *object) map[string]any {
	m := map[string]any{"id": o.id, "name": o.name, "type": o.typ, "location": o.location}
	if len(o.tags) > 0 {
		m["tags"] = o.tags.public()
	}
	if len(o.zones) > 0 {
		m["zones"] = o.zones
	}
	if o.kind != "" {
		m["kind"] = o.kind
	}
	return m
}

// computeGet serves a GET of a VM or scale set.
func (s *Server) computeGet(w http.ResponseWriter, rt *route, typ string, render func(*object) any) {
	s.serveRead(w, func() (any, *Error) {
		o, e := s.st.lookupObject(rt.sub, rt.segs[3], typ, rt.segs[7])
		if e != nil {
			return nil, e
		}
		return render(o), nil
	})
}

func (s *Server) handleVMGet(w http.ResponseWriter, _ *http.Request, rt *route) {
	s.computeGet(w, rt, TypeVirtualMachine, renderVM)
}

func (s *Server) handleVMSSGet(w http.ResponseWriter, _ *http.Request, rt *route) {
	s.computeGet(w, rt, TypeScaleSet, renderVMSS)
}

// tagsPatch is the part of a compute PATCH body armsim honours.
type tagsPatch struct {
	Tags *map[string]string `json:"tags"`
}

// readJSON decodes a request body into v (an empty body decodes to zero).
func readJSON(r *http.Request, v any) *Error {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return errBadRequest("InvalidRequestContent", "The request content could not be read: %v.", err)
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return errInvalidJSON(err)
	}
	return nil
}

// computeUpdate serves a PATCH of a VM or scale set: tags in the body
// replace the resource's tags, the ETag changes, and the answer is an LRO.
func (s *Server) computeUpdate(w http.ResponseWriter, r *http.Request, rt *route, typ string, render func(*object) any) {
	var body tagsPatch
	s.serveComputeUpdate(w, r, &body, func() (any, lroTarget, *Error) {
		o, e := s.st.lookupObject(rt.sub, rt.segs[3], typ, rt.segs[7])
		if e == nil {
			e = s.applyComputeUpdate(r, o, body.Tags)
		}
		if e != nil {
			return nil, lroTarget{}, e
		}
		return render(o), lroTarget{sub: o.sub, location: o.location, finish: s.finisher(o)}, nil
	})
}

// lroTarget is where an update's long-running operation runs: the
// subscription and location of the resource, and what to do when it
// completes (nil: nothing).
type lroTarget struct {
	sub, location string
	finish        func()
}

// serveComputeUpdate reads the request body into body, runs update under
// the state lock and answers with what it returns: an error, or the
// resource as rendered, after a long-running operation when
// Options.LROPolls asks for one.
func (s *Server) serveComputeUpdate(w http.ResponseWriter, r *http.Request, body any, update func() (any, lroTarget, *Error)) {
	if e := readJSON(r, body); e != nil {
		writeError(w, e)
		return
	}
	s.st.mu.Lock()
	out, at, e := update()
	s.st.mu.Unlock()
	if e != nil {
		writeError(w, e)
		return
	}
	if s.opts.LROPolls > 0 {
		s.startLRO(w, r, at.sub, "Microsoft.Compute", at.location, at.finish, nil)
	}
	writeJSON(w, http.StatusOK, out)
}

// applyComputeUpdate checks preconditions and tag rules, then writes; the
// caller holds the write lock.
func (s *Server) applyComputeUpdate(r *http.Request, o *object, tags *map[string]string) *Error {
	if e := checkPreconditions(r, o.etag); e != nil {
		return e
	}
	if tags != nil {
		result := tagSetFrom(*tags)
		if e := checkWrite(o.typ, o.tags, result, *tags); e != nil {
			return e
		}
		s.retagged(&o.tags, o.tags)
		o.tags = s.applyPolicies(o.id, result)
	}
	o.etag++
	if s.opts.LROPolls > 0 {
		o.provisioning = "Updating"
	}
	return nil
}

// finisher returns the completion hook of an update of o.
func (s *Server) finisher(o *object) func() {
	return func() {
		s.st.mu.Lock()
		o.provisioning = statusSucceeded
		s.st.mu.Unlock()
	}
}

func (s *Server) handleVMUpdate(w http.ResponseWriter, r *http.Request, rt *route) {
	s.computeUpdate(w, r, rt, TypeVirtualMachine, renderVM)
}

func (s *Server) handleVMSSUpdate(w http.ResponseWriter, r *http.Request, rt *route) {
	s.computeUpdate(w, r, rt, TypeScaleSet, renderVMSS)
}

// handleVMList lists VMs of a group or, without a group, of a subscription,
// optionally filtered by 'virtualMachineScaleSet/id' eq '<id>'.
func (s *Server) handleVMList(w http.ResponseWriter, r *http.Request, rt *route) {
	vmss, e := parseVMFilter(r.URL.Query().Get("$filter"))
	if e != nil {
		writeError(w, e)
		return
	}
	match := func(o *object) bool {
		return o.typ == TypeVirtualMachine && (vmss == "" || lowerEq(o.vmssID, vmss))
	}
	s.listCompute(w, r, rt, TypeVirtualMachine, match, renderVM)
}

func (s *Server) handleVMSSList(w http.ResponseWriter, r *http.Request, rt *route) {
	match := func(o *object) bool { return o.typ == TypeScaleSet }
	s.listCompute(w, r, rt, TypeScaleSet, match, renderVMSS)
}

// listCompute lists objects of typ in the group of the path, or in the
// subscription when the path has no group.
func (s *Server) listCompute(w http.ResponseWriter, r *http.Request, rt *route, typ string, match func(*object) bool, render func(*object) any) {
	prefix, e := s.listScope(rt, rt.low[2] == "resourcegroups", "/providers/"+typ+"/")
	if e != nil {
		writeError(w, e)
		return
	}
	s.listObjects(w, r, prefix, match, render)
}

// listScope checks that a list's scope exists and returns the ID prefix of
// what it lists: the resource group's IDs (followed by within) when inGroup,
// else the subscription's.
func (s *Server) listScope(rt *route, inGroup bool, within string) (string, *Error) {
	s.st.mu.RLock()
	defer s.st.mu.RUnlock()
	if inGroup {
		if _, e := s.st.lookupGroup(rt.sub, rt.segs[3]); e != nil {
			return "", e
		}
		return strings.ToLower(groupID(rt.sub, rt.segs[3]) + within), nil
	}
	if _, ok := s.st.subs[strings.ToLower(rt.sub)]; !ok {
		return "", errSubscriptionNotFound(rt.sub)
	}
	return strings.ToLower("/subscriptions/" + rt.sub + "/"), nil
}

// parseVMFilter understands "'virtualMachineScaleSet/id' eq '<id>'".
func parseVMFilter(f string) (string, *Error) {
	f = strings.TrimSpace(f)
	if f == "" {
		return "", nil
	}
	lhs, rhs, ok := strings.Cut(f, " eq ")
	lhs, rhs = strings.TrimSpace(lhs), strings.TrimSpace(rhs)
	if !ok || !strings.EqualFold(strings.Trim(lhs, "'"), "virtualMachineScaleSet/id") ||
		len(rhs) < 2 || rhs[0] != '\'' || rhs[len(rhs)-1] != '\'' {
		return "", errBadRequest("InvalidFilterInQueryString",
			"The $filter '%s' is not supported; use 'virtualMachineScaleSet/id' eq '<scale set ID>'.", f)
	}
	return strings.ReplaceAll(rhs[1:len(rhs)-1], "''", "'"), nil
}

// lookupScaleSet resolves the scale set of a VMSS VMs path.
func (s *Server) lookupScaleSet(rt *route) (*object, *Error) {
	return s.st.lookupObject(rt.sub, rt.segs[3], TypeScaleSet, rt.segs[7])
}

func errFlexibleInstances(o *object) *Error {
	return errBadRequest("OperationNotAllowed",
		"Scale set '%s' uses Flexible orchestration; list its VMs with the virtual machines API and $filter 'virtualMachineScaleSet/id' eq '%s'.",
		o.name, o.id)
}

// handleInstanceList lists the instances of a Uniform scale set.
func (s *Server) handleInstanceList(w http.ResponseWriter, r *http.Request, rt *route) {
	after, size, e := s.pageRequest(r)
	if e != nil {
		writeError(w, e)
		return
	}
	page := listPage{Value: []any{}}
	s.st.mu.RLock()
	o, e := s.lookupScaleSet(rt)
	if e == nil && o.mode == Flexible {
		e = errFlexibleInstances(o)
	}
	if e == nil {
		page = instancePage(r, o, after, size)
	}
	s.st.mu.RUnlock()
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// instancePage returns the instances after the one with ID after.
func instancePage(r *http.Request, o *object, after string, size int) listPage {
	page := listPage{Value: []any{}}
	for _, in := range o.instances {
		if after != "" && (instanceLess(in.instanceID, after) || in.instanceID == after) {
			continue
		}
		if len(page.Value) == size {
			page.NextLink = nextLink(r, lastInstance(page))
			break
		}
		page.Value = append(page.Value, renderInstance(in))
	}
	return page
}

func lastInstance(p listPage) string {
	return p.Value[len(p.Value)-1].(map[string]any)["instanceId"].(string)
}

// instanceLess orders instance IDs numerically when they are numbers.
func instanceLess(a, b string) bool {
	na, ea := strconv.Atoi(a)
	nb, eb := strconv.Atoi(b)
	if ea == nil && eb == nil {
		return na < nb
	}
	return a < b
}

// lookupInstance resolves the instance of a VMSS VM path.
func (s *Server) lookupInstance(rt *route) (*instance, *Error) {
	o, e := s.lookupScaleSet(rt)
	if e != nil {
		return nil, e
	}
	in := o.findInstance(rt.segs[9])
	if in == nil {
		return nil, errResourceNotFound(TypeScaleSetVM, fmt.Sprintf("%s/%s", o.name, rt.segs[9]), rt.segs[3])
	}
	return in, nil
}

func (s *Server) handleInstanceGet(w http.ResponseWriter, _ *http.Request, rt *route) {
	s.serveRead(w, func() (any, *Error) {
		in, e := s.lookupInstance(rt)
		if e != nil {
			return nil, e
		}
		return renderInstance(in), nil
	})
}

// handleInstanceUpdate accepts an instance update (PUT). As in Azure, tags
// in the body do not stick to a Uniform instance: it answers 200 and the
// instance keeps no tags of its own.
func (s *Server) handleInstanceUpdate(w http.ResponseWriter, r *http.Request, rt *route) {
	var body map[string]any
	s.serveComputeUpdate(w, r, &body, func() (any, lroTarget, *Error) {
		in, e := s.lookupInstance(rt)
		if e == nil {
			e = checkPreconditions(r, in.etag)
		}
		if e != nil {
			return nil, lroTarget{}, e
		}
		in.etag++
		return renderInstance(in), lroTarget{sub: in.parent.sub, location: in.parent.location}, nil
	})
}
