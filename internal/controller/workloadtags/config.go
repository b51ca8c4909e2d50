package workloadtags

import (
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/tags"
)

// config is a policy's spec, checked and ready for the planner.
type config struct {
	// name is the policy's name.
	name string
	// provider is the cloud's name; nc how it compares tag names.
	provider string
	nc       tags.NameCase
	// selector selects the namespaces (everything when the spec has none).
	selector labels.Selector
	// tags are the keys and their templates, in the spec's order.
	tags []tagTemplate
	// volumes, services, snapshots and ingresses say whether
	// PersistentVolumes' disks, Services' resources, VolumeSnapshots'
	// snapshots and Ingresses' load balancers are tagged.
	volumes, services, snapshots, ingresses bool
	suspend                                 bool
	every                                   time.Duration
}

// tagTemplate is one key of a policy and its value template.
type tagTemplate struct {
	key  string
	tmpl tags.Template
}

// errInvalidSpec is the kind of every error newConfig returns.
var errInvalidSpec = errors.New("invalid WorkloadTagPolicy")

// newConfig checks a policy's spec against its cloud's rules and the keys
// the resources' creators own, and returns its configuration; the error
// names every problem found (Check).
func newConfig(p *v1alpha1.WorkloadTagPolicy, rules tags.Rules, creators []tags.PlatformKey) (config, error) {
	c, problems := check(p, rules, creators)
	if len(problems) > 0 {
		return c, fmt.Errorf("%w: %s", errInvalidSpec, strings.Join(problems, "; "))
	}
	return c, nil
}

// Check reports every problem of a policy's spec that would stop the
// controller (tagsync validate): a namespace selector that does not parse,
// no key or more than MaxWorkloadTags (presets' included), a key the
// cloud's rules refuse or takes for another key of the policy, a key a
// resource's creator owns, a template that does not parse, and what
// admission refuses (a key longer than 127 characters).
func Check(p *v1alpha1.WorkloadTagPolicy, rules tags.Rules, creators []tags.PlatformKey) []string {
	_, problems := check(p, rules, creators)
	for _, t := range p.Spec.AllTags() {
		if n := len([]rune(t.Key)); n > 127 {
			problems = append(problems, fmt.Sprintf("tag %q: %d characters; a key has at most 127", t.Key, n))
		}
	}
	return problems
}

// check is the spec's configuration and its problems.
func check(p *v1alpha1.WorkloadTagPolicy, rules tags.Rules, creators []tags.PlatformKey) (config, []string) {
	c := config{name: p.Name, provider: string(p.Spec.Provider), suspend: p.Spec.Suspend,
		volumes: p.Spec.Tagging(v1alpha1.WorkloadPersistentVolume), services: p.Spec.Tagging(v1alpha1.WorkloadService),
		snapshots: p.Spec.Tagging(v1alpha1.WorkloadVolumeSnapshot), ingresses: p.Spec.Tagging(v1alpha1.WorkloadIngress),
		every: p.Spec.SyncInterval()}
	c.nc = rules.NameCase()
	if c.provider == "" {
		c.provider = string(v1alpha1.ProviderAzure)
	}
	var problems []string
	sel, err := selectorOf(p.Spec.NamespaceSelector)
	if err != nil {
		problems = append(problems, "namespaceSelector: "+err.Error())
	}
	c.selector = sel
	nc := rules.NameCase()
	all := p.Spec.AllTags()
	if n := len(all); n == 0 || n > v1alpha1.MaxWorkloadTags {
		problems = append(problems, fmt.Sprintf("tags: %d keys with the presets'; a policy has 1 to %d", n, v1alpha1.MaxWorkloadTags))
	}
	seen := map[string]string{}
	for _, t := range all {
		if prev, dup := seen[nc.Key(t.Key)]; dup {
			problems = append(problems, fmt.Sprintf("tag %q: the cloud takes it for the same tag as %q", t.Key, prev))
			continue
		}
		seen[nc.Key(t.Key)] = t.Key
		if err := rules.ValidateName(t.Key); err != nil {
			problems = append(problems, fmt.Sprintf("tag %q: %v", t.Key, err))
			continue
		}
		if owner := creatorOf(creators, nc, t.Key); owner != "" {
			problems = append(problems, fmt.Sprintf("tag %q belongs to the resources' creator (%s): tagsync never writes it", t.Key, owner))
			continue
		}
		tmpl, err := tags.ParseTemplate(t.Value)
		if err != nil {
			problems = append(problems, fmt.Sprintf("tag %q: %v", t.Key, err))
			continue
		}
		c.tags = append(c.tags, tagTemplate{key: t.Key, tmpl: tmpl})
	}
	return c, problems
}

// selectorOf is a namespace selector, everything when s is nil.
func selectorOf(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(s)
}

// creatorOf names the creator that owns key, "" when none does.
func creatorOf(creators []tags.PlatformKey, nc tags.NameCase, key string) string {
	for _, k := range creators {
		if tags.IsPlatformKey([]tags.PlatformKey{k}, nc, key) {
			return k.Owner
		}
	}
	return ""
}

// selects reports whether the policy covers w's namespace.
func (c config) selects(w tags.Workload) bool {
	return c.selector != nil && c.selector.Matches(labels.Set(w.NamespaceLabels))
}

// want is what the policy asks of a resource serving w: each key whose
// template renders.
func (c config) want(w tags.Workload) tags.Set {
	out := make(tags.Set, len(c.tags))
	for _, t := range c.tags {
		if v, ok := t.tmpl.Render(w); ok {
			out[t.key] = v
		}
	}
	return out
}
