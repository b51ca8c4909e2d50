package armsim

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Snapshot returns the whole estate as a State (sorted by ID).
func (s *Server) Snapshot() State {
	s.st.mu.RLock()
	defer s.st.mu.RUnlock()
	var st State
	for _, k := range sortedKeys(s.st.subs) {
		sub := s.st.subs[k]
		st.Subscriptions = append(st.Subscriptions, Subscription{ID: sub.id, Tags: nilIfEmpty(sub.tags), ResourceGroups: s.snapshotGroups(sub)})
	}
	return st
}

func (s *Server) snapshotGroups(sub *subscription) []ResourceGroup {
	var gs []*group
	for _, g := range s.st.groups {
		if strings.EqualFold(g.sub, sub.id) {
			gs = append(gs, g)
		}
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].key < gs[j].key })
	out := make([]ResourceGroup, 0, len(gs))
	for _, g := range gs {
		rg := ResourceGroup{Name: g.name, Location: g.location, Tags: nilIfEmpty(g.tags)}
		s.st.scan(g.key+"/", "", func(o *object) bool {
			addSnapshot(&rg, o)
			return true
		})
		out = append(out, rg)
	}
	return out
}

// addSnapshot records o in rg under its kind.
func addSnapshot(rg *ResourceGroup, o *object) {
	switch o.typ {
	case TypeVirtualMachine:
		rg.VirtualMachines = append(rg.VirtualMachines, VirtualMachine{
			Name: o.name, Location: o.location, Size: o.size, ComputerName: o.computerName,
			AvailabilitySet: o.avSetID, ScaleSet: o.vmssID, Tags: nilIfEmpty(o.tags), Zones: o.zones, ETag: o.etag,
		})
	case TypeScaleSet:
		ss := ScaleSet{Name: o.name, Location: o.location, Mode: o.mode, SKU: o.size, Tags: nilIfEmpty(o.tags), Zones: o.zones, ETag: o.etag}
		for _, in := range o.instances {
			ss.Instances = append(ss.Instances, in.instanceID)
		}
		rg.ScaleSets = append(rg.ScaleSets, ss)
	default:
		rg.Resources = append(rg.Resources, Resource{
			Type: o.typ, Name: o.leafName(), Location: o.location, Kind: o.kind,
			Tags: nilIfEmpty(o.tags), Properties: o.props, ETag: o.etag,
		})
	}
}

// leafName is the resource's name path below its group ("srv/db" for a
// nested type).
func (o *object) leafName() string {
	segs := splitPath(o.id)
	var names []string
	for i := 7; i < len(segs); i += 2 {
		names = append(names, segs[i])
	}
	return strings.Join(names, "/")
}

func nilIfEmpty(t tagSet) map[string]string {
	if len(t) == 0 {
		return nil
	}
	return t.public()
}

// Load replaces the estate with st. On error the estate is left empty
// except for what was loaded before the failing item.
func (s *Server) Load(st State) error {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	s.st.subs, s.st.groups, s.st.objs, s.st.sorted = map[string]*subscription{}, map[string]*group{}, map[string]*object{}, nil
	return s.addStateLocked(st)
}

// Add adds st to the estate (groups that exist get the listed resources).
func (s *Server) Add(st State) error {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return s.addStateLocked(st)
}

func (s *Server) addStateLocked(st State) error {
	for _, sub := range st.Subscriptions {
		if e := s.st.ensureSub(sub.ID, sub.Tags); e != nil {
			return e
		}
		for _, rg := range sub.ResourceGroups {
			if _, e := s.createGroupLocked(sub.ID, rg); e != nil {
				return fmt.Errorf("armsim: subscription %s, group %s: %w", sub.ID, rg.Name, e)
			}
		}
	}
	return nil
}

// LoadYAML replaces the estate with the State in data (YAML or JSON).
func (s *Server) LoadYAML(data []byte) error {
	var st State
	if err := yaml.UnmarshalStrict(data, &st); err != nil {
		return fmt.Errorf("armsim: parsing state: %w", err)
	}
	return s.Load(st)
}

// LoadYAMLFile replaces the estate with the State in a YAML file.
func (s *Server) LoadYAMLFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := s.LoadYAML(data); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// SaveYAML renders the estate as YAML (LoadYAML reads it back).
func (s *Server) SaveYAML() ([]byte, error) {
	return yaml.Marshal(s.Snapshot())
}

// SaveYAMLFile writes the estate to a YAML file.
func (s *Server) SaveYAMLFile(path string) error {
	data, err := s.SaveYAML()
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
