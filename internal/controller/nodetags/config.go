package nodetags

import (
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tagsync/tagsync/api/v1alpha1"
	"github.com/tagsync/tagsync/internal/cloud"
	"github.com/tagsync/tagsync/internal/tags"
)

// defaultResync is used when the spec leaves resyncInterval unset (the API
// server defaults it; this covers objects created before the default existed).
const defaultResync = 5 * time.Minute

// syncConfig is a NodeTagSync's spec, validated and turned into the values
// the sync pass uses.
type syncConfig struct {
	provider       cloud.NodeProvider // the cloud spec.provider names
	rules          tags.Rules         // the provider's tag rules
	direction      tags.Direction
	policy         tags.Policy
	codec          tags.Codec
	filter         tags.Filter
	target         cloud.Target
	resourceGroups []string
	selector       labels.Selector
	resync         time.Duration
	syncTaints     bool
	// origin is the configuration the pass's merge bases are made under
	// (set by configFor; a base made under another is no base).
	origin tags.Origin
	// suspend: plan and report, write nothing (spec.suspend).
	suspend bool
	// retain: never delete a tag or label (deletionPolicy Retain).
	retain bool
	// warnings describe a valid spec that cannot do what it seems to ask.
	warnings []string
}

// configFor chooses the provider nts.Spec.Provider names (azure when
// empty), which must support the node sync, and validates the spec against
// its rules.
func configFor(nts *v1alpha1.NodeTagSync, providers cloud.Providers) (syncConfig, error) {
	name := orDefault(string(nts.Spec.Provider), string(v1alpha1.ProviderAzure))
	p, err := providers.NodeProvider(name)
	if err != nil {
		return syncConfig{}, err
	}
	cfg, err := configFrom(nts.Spec, p.Rules(), p.PlatformKeys())
	cfg.provider = p
	cfg.origin = tags.Origin{Sync: string(nts.UID), Prefix: cfg.codec.Prefix, Direction: cfg.direction, Provider: name}
	return cfg, err
}

// configFrom validates spec beyond what the API server checks and returns
// the sync configuration for a provider with the given tag rules and
// platform keys, or an error that says what to fix.
func configFrom(spec v1alpha1.NodeTagSyncSpec, rules tags.Rules, platform []tags.PlatformKey) (syncConfig, error) {
	cfg := syncConfig{
		rules:      rules,
		direction:  tags.Direction(orDefault(string(spec.Direction), string(v1alpha1.DirectionTwoWay))),
		policy:     tags.Policy(orDefault(string(spec.ConflictPolicy), string(v1alpha1.ConflictIgnore))),
		target:     cloud.Target(orDefault(string(spec.Target), string(v1alpha1.TargetScaleSet))),
		resync:     defaultResync,
		selector:   labels.Everything(),
		syncTaints: spec.SyncTaints,
		suspend:    spec.Suspend,
		retain:     spec.DeletionPolicy == v1alpha1.DeletionPolicyRetain,
	}
	cfg.codec = tags.Codec{Prefix: spec.EffectiveLabelPrefix(), Rules: &rules}
	for _, p := range spec.IncludeTags {
		cfg.filter.Include = append(cfg.filter.Include, string(p))
	}
	for _, p := range spec.ExcludeTags {
		cfg.filter.Exclude = append(cfg.filter.Exclude, string(p))
	}
	// Keys the platform owns are out of scope like excluded ones (never
	// written, deleted nor made labels) unless includePlatformTags lets them
	// in.
	provider := orDefault(string(spec.Provider), string(v1alpha1.ProviderAzure))
	cfg.filter.Platform = tags.PlatformPatterns(platform)
	for _, p := range spec.IncludePlatformTags {
		cfg.filter.PlatformOptIn = append(cfg.filter.PlatformOptIn, string(p))
	}
	for _, rg := range spec.ResourceGroups {
		cfg.resourceGroups = append(cfg.resourceGroups, string(rg))
	}
	if spec.ResyncInterval != nil {
		cfg.resync = spec.ResyncInterval.Duration
	}
	var errs []error
	errs = append(errs, cfg.direction.Validate(), cfg.policy.Validate(), cfg.codec.Validate(), cfg.filter.Validate())
	if cfg.target != cloud.TargetScaleSet && cfg.target != cloud.TargetInstance {
		errs = append(errs, fmt.Errorf("target %q is not ScaleSet or Instance", cfg.target))
	}
	if spec.NodeSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(spec.NodeSelector)
		if err != nil {
			errs = append(errs, fmt.Errorf("nodeSelector: %w", err))
		} else {
			cfg.selector = sel
		}
	}
	if cfg.syncTaints && cfg.direction == tags.CloudToNode {
		errs = append(errs, errors.New("syncTaints exports taints as tags, so it needs direction TwoWay or NodeToCloud"))
	}
	if cfg.resync <= 0 {
		errs = append(errs, fmt.Errorf("resyncInterval must be positive, got %s", cfg.resync))
	}
	for i, p := range spec.IncludePlatformTags {
		if validPattern(string(p)) && !tags.OverlapsPlatform(platform, cfg.nameCase(), string(p)) {
			cfg.warnings = append(cfg.warnings, fmt.Sprintf("includePlatformTags[%d] %q matches no platform tag on %s, so it changes nothing: "+
				"tags that are not the platform's are synced without it", i, p, provider))
		}
	}
	if cfg.filter.ExcludesEverything(cfg.nameCase()) && !cfg.syncTaints {
		cfg.warnings = append(cfg.warnings, "includeTags and excludeTags (with the platform's tags) together exclude every tag, so no tag or label is synced: "+
			"narrow excludeTags, widen includeTags, or list the platform tags you mean in includePlatformTags")
	}
	return cfg, errors.Join(errs...)
}

// nameCase is how the provider compares tag names.
func (cfg syncConfig) nameCase() tags.NameCase { return cfg.rules.NameCase() }

// validPattern reports whether p is a well-formed tag filter pattern.
func validPattern(p string) bool { return (tags.Filter{Include: []string{p}}).Validate() == nil }

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
