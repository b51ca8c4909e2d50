package armsim

import (
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// tagSet holds tags with the casing they were written with. Names are
// matched case-insensitively, as ARM does; there is never more than one key
// per case-folded name.
type tagSet map[string]string

// key returns the stored spelling of name, if present.
func (t tagSet) key(name string) (string, bool) {
	if _, ok := t[name]; ok {
		return name, true
	}
	for k := range t {
		if strings.EqualFold(k, name) {
			return k, true
		}
	}
	return "", false
}

// get returns the value of name, case-insensitively.
func (t tagSet) get(name string) (string, bool) {
	k, ok := t.key(name)
	if !ok {
		return "", false
	}
	return t[k], true
}

// set writes name=value, keeping the existing spelling of name if any.
func (t tagSet) set(name, value string) {
	if k, ok := t.key(name); ok {
		t[k] = value
		return
	}
	t[name] = value
}

// del removes name, case-insensitively.
func (t tagSet) del(name string) {
	if k, ok := t.key(name); ok {
		delete(t, k)
	}
}

func (t tagSet) clone() tagSet {
	c := make(tagSet, len(t))
	for k, v := range t {
		c[k] = v
	}
	return c
}

// public returns a copy as a plain map (never nil).
func (t tagSet) public() map[string]string {
	return map[string]string(t.clone())
}

func tagSetFrom(m map[string]string) tagSet {
	t := make(tagSet, len(m))
	for k, v := range m {
		t.set(k, v)
	}
	return t
}

// subscription is a subscription record.
type subscription struct {
	id   string
	tags tagSet
	etag int64
}

// group is a resource group record.
type group struct {
	key, id, name, sub, location string
	tags                         tagSet
	etag                         int64
	created                      time.Time
}

// object is a top-level resource: a VM, a scale set or a generic resource.
type object struct {
	key, id, name, typ, sub, rg string
	location, kind              string
	tags                        tagSet
	etag                        int64
	created                     time.Time
	props                       map[string]any
	zones                       []string
	provisioning                string

	// Compute fields.
	size, computerName, uuid string
	avSetID, vmssID          string // VM: availability set / Flexible scale set
	mode                     string // scale set orchestration mode
	instances                []*instance
}

// instance is an instance of a Uniform scale set.
type instance struct {
	parent                         *object
	instanceID, computerName, uuid string
	etag                           int64
	provisioning                   string
}

func (i *instance) id() string { return i.parent.id + "/virtualMachines/" + i.instanceID }

func (i *instance) name() string { return i.parent.name + "_" + i.instanceID }

// findInstance returns the Uniform instance with the given instance ID.
func (o *object) findInstance(instanceID string) *instance {
	for _, in := range o.instances {
		if strings.EqualFold(in.instanceID, instanceID) {
			return in
		}
	}
	return nil
}

// store is the in-memory estate. Objects are kept in a slice sorted by
// lower-cased ID, so that a resource group's resources of one type are
// contiguous and lists page by "first ID after the last one returned".
type store struct {
	mu     sync.RWMutex
	subs   map[string]*subscription
	groups map[string]*group
	objs   map[string]*object
	sorted []*object
}

func newStore() *store {
	return &store{subs: map[string]*subscription{}, groups: map[string]*group{}, objs: map[string]*object{}}
}

// groupID builds a resource group ID.
func groupID(sub, rg string) string {
	return "/subscriptions/" + sub + "/resourceGroups/" + rg
}

// insert adds o to the index; the caller holds the write lock.
func (st *store) insert(o *object) *Error {
	if _, ok := st.objs[o.key]; ok {
		return newError(http.StatusConflict, "Conflict", "Resource '%s' already exists.", o.id)
	}
	st.objs[o.key] = o
	i := sort.Search(len(st.sorted), func(i int) bool { return st.sorted[i].key >= o.key })
	st.sorted = append(st.sorted, nil)
	copy(st.sorted[i+1:], st.sorted[i:])
	st.sorted[i] = o
	return nil
}

// remove deletes the object with the given key; the caller holds the lock.
func (st *store) remove(key string) bool {
	if _, ok := st.objs[key]; !ok {
		return false
	}
	delete(st.objs, key)
	i := sort.Search(len(st.sorted), func(i int) bool { return st.sorted[i].key >= key })
	st.sorted = append(st.sorted[:i], st.sorted[i+1:]...)
	return true
}

// scan calls fn for objects whose key starts with prefix and sorts after
// the key after, in order, until fn returns false.
func (st *store) scan(prefix, after string, fn func(*object) bool) {
	start := prefix
	if after > start {
		start = after + "\x00"
	}
	i := sort.Search(len(st.sorted), func(i int) bool { return st.sorted[i].key >= start })
	for ; i < len(st.sorted); i++ {
		o := st.sorted[i]
		if !strings.HasPrefix(o.key, prefix) || !fn(o) {
			return
		}
	}
}

// lookupGroup resolves a subscription and group, with ARM's errors.
func (st *store) lookupGroup(sub, rg string) (*group, *Error) {
	if _, ok := st.subs[strings.ToLower(sub)]; !ok {
		return nil, errSubscriptionNotFound(sub)
	}
	g, ok := st.groups[strings.ToLower(groupID(sub, rg))]
	if !ok {
		return nil, errGroupNotFound(rg)
	}
	return g, nil
}

// lookupObject resolves a top-level resource of the given type by name.
func (st *store) lookupObject(sub, rg, typ, name string) (*object, *Error) {
	if _, err := st.lookupGroup(sub, rg); err != nil {
		return nil, err
	}
	o, ok := st.objs[strings.ToLower(groupID(sub, rg)+"/providers/"+typ+"/"+name)]
	if !ok {
		return nil, errResourceNotFound(typ, name, rg)
	}
	return o, nil
}

// objectByID returns the top-level object with the given ID.
func (st *store) objectByID(id string) (*object, bool) {
	o, ok := st.objs[strings.ToLower(strings.TrimSuffix(id, "/"))]
	return o, ok
}
