package armsim

import (
	"strings"
)

// resourceFilter is a parsed Resources - List $filter: clauses of the form
// <field> eq '<value>' joined by "and", for the fields tagName, tagValue,
// resourceType, name, resourceGroup and location.
type resourceFilter struct {
	tagName, tagValue   string
	hasTag, hasTagValue bool
	fields              map[string]string // lower-cased field -> value
}

// parseResourceFilter parses $filter; an unsupported filter is a 400.
func parseResourceFilter(f string) (*resourceFilter, *Error) {
	rf := &resourceFilter{fields: map[string]string{}}
	if strings.TrimSpace(f) == "" {
		return rf, nil
	}
	for _, clause := range splitAnd(f) {
		field, value, ok := parseEq(clause)
		if !ok {
			return nil, badFilter(f)
		}
		switch strings.ToLower(field) {
		case "tagname":
			rf.tagName, rf.hasTag = value, true
		case "tagvalue":
			rf.tagValue, rf.hasTagValue = value, true
		case "resourcetype", "name", "resourcegroup", "location":
			rf.fields[strings.ToLower(field)] = value
		default:
			return nil, badFilter(f)
		}
	}
	if rf.hasTagValue && !rf.hasTag {
		return nil, errBadRequest("InvalidFilterInQueryString", "The filter 'tagValue' requires a 'tagName' filter.")
	}
	return rf, nil
}

func badFilter(f string) *Error {
	return errBadRequest("InvalidFilterInQueryString",
		"The $filter '%s' is not supported. Use clauses like tagName eq 'k' and tagValue eq 'v', resourceType eq 'ns/type', name eq 'n', resourceGroup eq 'rg', joined by 'and'.", f)
}

// splitAnd splits on " and " outside single-quoted strings.
func splitAnd(f string) []string {
	var out []string
	inQuote, start := false, 0
	low := strings.ToLower(f)
	for i := 0; i < len(f); i++ {
		switch {
		case f[i] == '\'':
			inQuote = !inQuote
		case !inQuote && strings.HasPrefix(low[i:], " and "):
			out = append(out, f[start:i])
			start = i + len(" and ")
			i += len(" and ") - 1
		}
	}
	return append(out, f[start:])
}

// parseEq parses "<field> eq '<value>'" (” escapes a quote).
func parseEq(clause string) (string, string, bool) {
	clause = strings.TrimSpace(clause)
	i := strings.Index(strings.ToLower(clause), " eq ")
	if i <= 0 {
		return "", "", false
	}
	field, rhs := strings.TrimSpace(clause[:i]), strings.TrimSpace(clause[i+4:])
	if len(rhs) < 2 || rhs[0] != '\'' || rhs[len(rhs)-1] != '\'' {
		return "", "", false
	}
	inner := rhs[1 : len(rhs)-1]
	if strings.Count(inner, "'")%2 != 0 || strings.Contains(strings.ReplaceAll(inner, "''", ""), "'") {
		return "", "", false
	}
	return field, strings.ReplaceAll(inner, "''", "'"), true
}

// match reports whether o passes the filter. Tag names and field values
// compare case-insensitively, tag values case-sensitively.
func (rf *resourceFilter) match(o *object) bool {
	if rf.hasTag {
		v, ok := o.tags.get(rf.tagName)
		if !ok || (rf.hasTagValue && v != rf.tagValue) {
			return false
		}
	}
	for f, want := range rf.fields {
		var got string
		switch f {
		case "resourcetype":
			got = o.typ
		case "name":
			got = o.name
		case "resourcegroup":
			got = o.rg
		case "location":
			got = o.location
		}
		if !strings.EqualFold(got, want) {
			return false
		}
	}
	return true
}
