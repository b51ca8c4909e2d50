package armsim

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

const (
	defaultLocation = "eastus"
	defaultVMSize   = "Standard_D2s_v3"
)

// validName rejects names that cannot be an ARM path segment.
func validName(kind, name string) *Error {
	if strings.TrimSpace(name) == "" || strings.ContainsAny(name, "/?#%\\") {
		return errBadRequest("InvalidResourceName", "The %s name '%s' is invalid.", kind, name)
	}
	return nil
}

// CreateSubscription adds a subscription (no-op if it exists; tags are
// then left alone).
func (s *Server) CreateSubscription(id string, tags map[string]string) error {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return nilIfOK(s.st.ensureSub(id, tags))
}

// ensureSub creates the subscription if needed; the caller holds the lock.
func (st *store) ensureSub(id string, tags map[string]string) *Error {
	if e := validName("subscription", id); e != nil {
		return e
	}
	if _, ok := st.subs[strings.ToLower(id)]; !ok {
		st.subs[strings.ToLower(id)] = &subscription{id: id, tags: tagSetFrom(tags), etag: 1}
	}
	return nil
}

// CreateResourceGroup creates a group (and its subscription) with the
// resources listed in rg, and returns the group ID. If the group exists
// its settings are kept and the listed resources are added.
func (s *Server) CreateResourceGroup(sub string, rg ResourceGroup) (string, error) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	g, e := s.createGroupLocked(sub, rg)
	if e != nil {
		return "", e
	}
	return g.id, nil
}

func (s *Server) createGroupLocked(sub string, rg ResourceGroup) (*group, *Error) {
	if e := s.st.ensureSub(sub, nil); e != nil {
		return nil, e
	}
	if e := validName("resource group", rg.Name); e != nil {
		return nil, e
	}
	id := groupID(s.st.subs[strings.ToLower(sub)].id, rg.Name)
	g, ok := s.st.groups[strings.ToLower(id)]
	if !ok {
		g = &group{key: strings.ToLower(id), id: id, name: rg.Name, sub: s.st.subs[strings.ToLower(sub)].id,
			location: or(rg.Location, defaultLocation), tags: tagSetFrom(rg.Tags), etag: 1, created: s.opts.Clock.Now()}
		s.st.groups[g.key] = g
	}
	return g, s.fillGroupLocked(g, rg)
}

// fillGroupLocked creates the resources listed in rg inside g.
func (s *Server) fillGroupLocked(g *group, rg ResourceGroup) *Error {
	for _, r := range rg.Resources {
		if _, e := s.createResourceLocked(g, r); e != nil {
			return e
		}
	}
	for _, ss := range rg.ScaleSets {
		if _, e := s.createScaleSetLocked(g, ss); e != nil {
			return e
		}
	}
	for _, vm := range rg.VirtualMachines {
		if _, e := s.createVMLocked(g, vm); e != nil {
			return e
		}
	}
	return nil
}

// groupFor returns an existing group, creating it (and the subscription)
// when missing, so seeding calls need no ceremony.
func (s *Server) groupFor(sub, rg string) (*group, *Error) {
	if g, ok := s.st.groups[strings.ToLower(groupID(sub, rg))]; ok {
		return g, nil
	}
	return s.createGroupLocked(sub, ResourceGroup{Name: rg})
}

// buildResourceID builds the ID of a resource of type typ ("ns/t1/t2")
// named name ("n1/n2") in group g.
func buildResourceID(g *group, typ, name string) (string, *Error) {
	ts := strings.Split(typ, "/")
	ns := strings.Split(name, "/")
	if len(ts) < 2 || len(ns) != len(ts)-1 {
		return "", errBadRequest("InvalidResourceType", "The resource type '%s' does not fit the name '%s'.", typ, name)
	}
	var b strings.Builder
	b.WriteString(g.id + "/providers/" + ts[0])
	for i, n := range ns {
		if e := validName("resource", n); e != nil {
			return "", e
		}
		b.WriteString("/" + ts[i+1] + "/" + n)
	}
	return b.String(), nil
}

// newObject prepares an object of type typ named name in group g.
func (s *Server) newObject(g *group, typ, name, location string, tags map[string]string) (*object, *Error) {
	id, e := buildResourceID(g, typ, name)
	if e != nil {
		return nil, e
	}
	if e := checkWrite(typ, nil, tagSetFrom(tags), tags); e != nil {
		return nil, e
	}
	leaf := name[strings.LastIndex(name, "/")+1:]
	return &object{
		key: strings.ToLower(id), id: id, name: leaf, typ: typ, sub: g.sub, rg: g.name,
		location: or(location, g.location), tags: tagSetFrom(tags), etag: 1,
		created: s.opts.Clock.Now(), provisioning: statusSucceeded, uuid: newUUID(),
	}, nil
}

// CreateResource creates a resource of any type in a group (created if
// missing) and returns its ID.
func (s *Server) CreateResource(sub, rg string, r Resource) (string, error) {
	return createInGroup(s, sub, rg, r, (*Server).createResourceLocked)
}

func (s *Server) createResourceLocked(g *group, r Resource) (*object, *Error) {
	loc := r.Location
	if loc == "" && globalType(r.Type) {
		loc = "global"
	}
	o, e := s.newObject(g, r.Type, r.Name, loc, r.Tags)
	if e != nil {
		return nil, e
	}
	o.kind, o.props = r.Kind, r.Properties
	if r.ETag > 0 {
		o.etag = r.ETag
	}
	return o, s.st.insert(o)
}

// createInGroup runs create for spec in group rg of sub (created if
// missing), under the state lock, and returns the new object's ID.
func createInGroup[T any](s *Server, sub, rg string, spec T, create func(*Server, *group, T) (*object, *Error)) (string, error) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	g, e := s.groupFor(sub, rg)
	if e != nil {
		return "", e
	}
	o, e := create(s, g, spec)
	if e != nil {
		return "", e
	}
	return o.id, nil
}

// globalType reports whether resources of type typ live in location
// "global" rather than a region (DNS zones, private DNS zones and their
// links).
func globalType(typ string) bool {
	switch strings.ToLower(typ) {
	case "microsoft.network/dnszones", "microsoft.network/privatednszones", "microsoft.network/privatednszones/virtualnetworklinks":
		return true
	}
	return false
}

// CreateScaleSet creates a scale set (Uniform unless ss.Mode is Flexible)
// with the Uniform instances listed in ss.Instances, and returns its ID.
func (s *Server) CreateScaleSet(sub, rg string, ss ScaleSet) (string, error) {
	return createInGroup(s, sub, rg, ss, (*Server).createScaleSetLocked)
}

func (s *Server) createScaleSetLocked(g *group, ss ScaleSet) (*object, *Error) {
	mode := Uniform
	if strings.EqualFold(ss.Mode, Flexible) {
		mode = Flexible
	}
	if mode == Flexible && len(ss.Instances) > 0 {
		return nil, errBadRequest("InvalidParameter", "Flexible scale set '%s' has no Uniform instances; add member VMs instead.", ss.Name)
	}
	o, e := s.newObject(g, TypeScaleSet, ss.Name, ss.Location, ss.Tags)
	if e != nil {
		return nil, e
	}
	o.mode, o.size, o.zones = mode, or(ss.SKU, defaultVMSize), ss.Zones
	if ss.ETag > 0 {
		o.etag = ss.ETag
	}
	for _, id := range ss.Instances {
		if o.findInstance(id) != nil {
			return nil, errBadRequest("InvalidParameter", "Duplicate instance ID '%s'.", id)
		}
		o.instances = append(o.instances, newInstance(o, id))
	}
	sortInstances(o)
	return o, s.st.insert(o)
}

func newInstance(o *object, id string) *instance {
	cn := o.name + id
	if n, err := strconv.ParseInt(id, 10, 64); err == nil {
		cn = fmt.Sprintf("%s%06s", o.name, strconv.FormatInt(n, 36))
	}
	return &instance{parent: o, instanceID: id, computerName: cn, uuid: newUUID(), etag: 1, provisioning: statusSucceeded}
}

func sortInstances(o *object) {
	sort.Slice(o.instances, func(i, j int) bool {
		return instanceLess(o.instances[i].instanceID, o.instances[j].instanceID)
	})
}

// AddInstances adds n instances to a Uniform scale set (IDs continue after
// the highest existing one, as a scale-out does) and returns their IDs.
func (s *Server) AddInstances(scaleSetID string, n int) ([]string, error) {
	ids, err := s.addInstances(scaleSetID, n)
	if err == nil {
		s.publishOutOfBand(EventResourceWriteSuccess, scaleSetID, TypeScaleSet+"/write")
	}
	return ids, err
}

func (s *Server) addInstances(scaleSetID string, n int) ([]string, error) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	o, ok := s.st.objectByID(scaleSetID)
	if !ok || o.typ != TypeScaleSet {
		return nil, notFoundByID(scaleSetID)
	}
	if o.mode != Uniform {
		return nil, errFlexibleInstances(o)
	}
	next := 0
	for _, in := range o.instances {
		if v, err := strconv.Atoi(in.instanceID); err == nil && v >= next {
			next = v + 1
		}
	}
	ids := make([]string, 0, n)
	for i := 0; i < n; i++ {
		in := newInstance(o, strconv.Itoa(next+i))
		o.instances = append(o.instances, in)
		ids = append(ids, in.id())
	}
	o.etag++
	return ids, nil
}

// CreateVM creates a virtual machine and returns its ID. vm.AvailabilitySet
// (created if missing) and vm.ScaleSet (must be a Flexible set) take a name
// in the same group or a full ID.
func (s *Server) CreateVM(sub, rg string, vm VirtualMachine) (string, error) {
	return createInGroup(s, sub, rg, vm, (*Server).createVMLocked)
}

func (s *Server) createVMLocked(g *group, vm VirtualMachine) (*object, *Error) {
	o, e := s.newObject(g, TypeVirtualMachine, vm.Name, vm.Location, vm.Tags)
	if e != nil {
		return nil, e
	}
	o.size, o.computerName, o.zones = or(vm.Size, defaultVMSize), or(vm.ComputerName, vm.Name), vm.Zones
	if vm.ETag > 0 {
		o.etag = vm.ETag
	}
	if vm.AvailabilitySet != "" {
		if o.avSetID, e = s.ensureAvailabilitySet(g, vm.AvailabilitySet); e != nil {
			return nil, e
		}
	}
	if vm.ScaleSet != "" {
		if o.vmssID, e = s.flexibleSetID(g, vm.ScaleSet); e != nil {
			return nil, e
		}
	}
	return o, s.st.insert(o)
}

// refID turns a name in group g or a full ID into an ID.
func refID(g *group, typ, ref string) string {
	if strings.Contains(ref, "/") {
		return ref
	}
	return g.id + "/providers/" + typ + "/" + ref
}

func (s *Server) ensureAvailabilitySet(g *group, ref string) (string, *Error) {
	id := refID(g, TypeAvailabilitySet, ref)
	if o, ok := s.st.objectByID(id); ok {
		return o.id, nil
	}
	if strings.Contains(ref, "/") {
		return "", notFoundByID(id)
	}
	o, e := s.createResourceLocked(g, Resource{Type: TypeAvailabilitySet, Name: ref})
	if e != nil {
		return "", e
	}
	return o.id, nil
}

func (s *Server) flexibleSetID(g *group, ref string) (string, *Error) {
	o, ok := s.st.objectByID(refID(g, TypeScaleSet, ref))
	if !ok || o.typ != TypeScaleSet {
		return "", notFoundByID(refID(g, TypeScaleSet, ref))
	}
	if o.mode != Flexible {
		return "", errBadRequest("InvalidParameter", "Scale set '%s' is Uniform; only Flexible scale sets have member VMs.", o.id)
	}
	return o.id, nil
}

func notFoundByID(id string) *Error {
	return newError(http.StatusNotFound, "ResourceNotFound", "The Resource '%s' was not found.", id)
}

// DeleteResource removes a resource, a Uniform instance (a scale-in or a
// node replacement) or an empty resource group, by ID.
//
// Event Grid subscriptions get a ResourceDeleteSuccess.
func (s *Server) DeleteResource(id string) error {
	id = strings.TrimSuffix(id, "/")
	typ, e := s.deleteResource(id)
	if e != nil {
		return e
	}
	s.publishOutOfBand(EventResourceDeleteSuccess, id, typ+"/delete")
	return nil
}

// deleteResource removes what DeleteResource names and returns its type.
func (s *Server) deleteResource(id string) (string, *Error) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	key := strings.ToLower(id)
	if o, ok := s.st.objs[key]; ok {
		s.st.remove(key)
		return o.typ, nil
	}
	if g, ok := s.st.groups[key]; ok {
		return TypeResourceGroup, s.st.removeGroup(g)
	}
	segs := splitPath(id)
	if len(segs) == 10 {
		if o, ok := s.st.objectByID("/" + strings.Join(segs[:8], "/")); ok && o.findInstance(segs[9]) != nil {
			removeInstance(o, segs[9])
			return TypeScaleSetVM, nil
		}
	}
	return "", notFoundByID(id)
}

func (st *store) removeGroup(g *group) *Error {
	empty := true
	st.scan(g.key+"/", "", func(*object) bool { empty = false; return false })
	if !empty {
		return newError(http.StatusConflict, "ResourceGroupNotEmpty", "Resource group '%s' still has resources.", g.name)
	}
	delete(st.groups, g.key)
	return nil
}

func removeInstance(o *object, instanceID string) {
	out := o.instances[:0]
	for _, in := range o.instances {
		if !strings.EqualFold(in.instanceID, instanceID) {
			out = append(out, in)
		}
	}
	o.instances = out
	o.etag++
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// nilIfOK converts a nil *Error into a nil error interface.
func nilIfOK(e *Error) error {
	if e == nil {
		return nil
	}
	return e
}
