package armsim

import (
	"strings"
)

// AdvancedFilter is one advanced filter. armsim supports the string
// operators StringIn, StringNotIn, StringContains, StringNotContains,
// StringBeginsWith, StringNotBeginsWith, StringEndsWith and
// StringNotEndsWith (case-insensitive, as in Event Grid) on the keys id,
// topic/source, subject, eventType/type and data.<path> (e.g.
// data.operationName, data.resourceUri, data.authorization.action). A key
// the event lacks fails the positive operators and passes the Not ones.
type AdvancedFilter struct {
	// OperatorType is one of the operators above.
	OperatorType string `json:"operatorType"`
	// Key is the event field compared.
	Key string `json:"key"`
	// Values are the strings it is compared with.
	Values []string `json:"values,omitempty"`
}

// stringOps are the advanced filter operators armsim evaluates: a
// predicate on (field, value), and whether the operator negates it.
var stringOps = map[string]struct {
	test   func(field, value string) bool
	negate bool
}{
	"stringin":            {strings.EqualFold, false},
	"stringnotin":         {strings.EqualFold, true},
	"stringcontains":      {containsFold, false},
	"stringnotcontains":   {containsFold, true},
	"stringbeginswith":    {hasPrefixFold, false},
	"stringnotbeginswith": {hasPrefixFold, true},
	"stringendswith":      {hasSuffixFold, false},
	"stringnotendswith":   {hasSuffixFold, true},
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func hasSuffixFold(s, suffix string) bool {
	return len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix)
}

// validate rejects filters armsim cannot evaluate.
func (f *EventSubscriptionFilter) validate() *Error {
	if f == nil {
		return nil
	}
	if len(f.AdvancedFilters) > maxAdvancedFilters {
		return errInvalidEventSub("At most %d advanced filters are allowed; there are %d.", maxAdvancedFilters, len(f.AdvancedFilters))
	}
	for _, af := range f.AdvancedFilters {
		if _, ok := stringOps[strings.ToLower(af.OperatorType)]; !ok {
			return errInvalidEventSub("Advanced filter operator '%s' is not supported by armsim; use StringIn, StringNotIn, StringContains, StringNotContains, StringBeginsWith, StringNotBeginsWith, StringEndsWith or StringNotEndsWith.", af.OperatorType)
		}
		if af.Key == "" || len(af.Values) == 0 {
			return errInvalidEventSub("Advanced filter '%s' needs a key and at least one value.", af.OperatorType)
		}
	}
	return nil
}

// matches reports whether the filter lets ev through (a nil filter does).
func (f *EventSubscriptionFilter) matches(ev *resourceEvent) bool {
	if f == nil {
		return true
	}
	if !f.typeIncluded(ev.EventType) || !f.subjectMatches(ev.Subject) {
		return false
	}
	for _, af := range f.AdvancedFilters {
		if !af.matches(ev) {
			return false
		}
	}
	return true
}

func (f *EventSubscriptionFilter) typeIncluded(typ string) bool {
	if len(f.IncludedEventTypes) == 0 {
		return true
	}
	for _, t := range f.IncludedEventTypes {
		if strings.EqualFold(t, typ) || strings.EqualFold(t, "All") {
			return true
		}
	}
	return false
}

func (f *EventSubscriptionFilter) subjectMatches(subject string) bool {
	if f.IsSubjectCaseSensitive {
		return strings.HasPrefix(subject, f.SubjectBeginsWith) && strings.HasSuffix(subject, f.SubjectEndsWith)
	}
	return hasPrefixFold(subject, f.SubjectBeginsWith) && hasSuffixFold(subject, f.SubjectEndsWith)
}

// matches evaluates one advanced filter: any value may match.
func (af AdvancedFilter) matches(ev *resourceEvent) bool {
	op := stringOps[strings.ToLower(af.OperatorType)]
	field, ok := ev.field(af.Key)
	if !ok {
		return op.negate
	}
	for _, v := range af.Values {
		if op.test(field, v) {
			return !op.negate
		}
	}
	return op.negate
}
