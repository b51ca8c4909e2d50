package armsim

import (
	"fmt"
	"strconv"
	"strings"
)

// The Resource Graph subset armsim understands:
//
//	resources
//	| where <cond> [and <cond>]...        (any number of where stages)
//	| project <column>[, <column>]...
//	| limit <n>  (or take <n>)
//
// cond is one of
//
//	<column> == | =~ | != | !~ '<string>'
//	<column> in | in~ | !in | !in~ ('<string>', ...)
//	tags['<name>'] <same operators>          (tag name case-sensitive, as ARG)
//	isnotempty(<column or tags['name']>) / isempty(...)
//
// Columns: id, name, type (lower-case, as ARG stores it), location,
// resourceGroup (lower-case), subscriptionId, tenantId, kind, tags,
// properties, zones, sku. Anything else is a 400.

// kqlQuery is a parsed query.
type kqlQuery struct {
	conds   []kqlCond
	project []string
	limit   int
}

// kqlCond is one predicate.
type kqlCond struct {
	col, tag string // column; tag name when col == "tags"
	op       string // ==, =~, !=, !~, in, in~, !in, !in~, isempty, isnotempty
	values   []string
}

var kqlColumns = map[string]string{
	"id": "id", "name": "name", "type": "type", "location": "location", "resourcegroup": "resourceGroup",
	"subscriptionid": "subscriptionId", "tenantid": "tenantId", "kind": "kind", "tags": "tags",
	"properties": "properties", "zones": "zones", "sku": "sku",
}

// kqlLexer splits a query into tokens.
type kqlLexer struct {
	toks []string
	pos  int
}

// lexKQL tokenizes: identifiers, numbers, quoted strings (kept with a
// leading quote marker), and operators.
func lexKQL(q string) ([]string, error) {
	var toks []string
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '\'' || c == '"':
			s, n, err := lexString(q[i:])
			if err != nil {
				return nil, err
			}
			toks = append(toks, "'"+s)
			i += n
		case isIdentByte(c):
			j := i
			for j < len(q) && (isIdentByte(q[j]) || q[j] == '.' || q[j] == '-') {
				j++
			}
			if j < len(q) && q[j] == '~' && strings.EqualFold(q[i:j], "in") {
				j++ // in~
			}
			toks = append(toks, q[i:j])
			i = j
		default:
			op := lexOp(q[i:])
			if op == "" {
				return nil, fmt.Errorf("unexpected character %q at offset %d", c, i)
			}
			toks = append(toks, op)
			i += len(op)
		}
	}
	return toks, nil
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func lexOp(s string) string {
	for _, op := range []string{"!in~", "!in", "==", "=~", "!=", "!~", "|", "(", ")", ",", "[", "]"} {
		if strings.HasPrefix(s, op) {
			return op
		}
	}
	return ""
}

// lexString reads a quoted string with backslash escapes.
func lexString(s string) (string, int, error) {
	quote := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
		case c == quote:
			return b.String(), i + 1, nil
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, fmt.Errorf("unterminated string")
}

func (l *kqlLexer) peek() string {
	if l.pos < len(l.toks) {
		return l.toks[l.pos]
	}
	return ""
}

func (l *kqlLexer) next() string {
	t := l.peek()
	if l.pos < len(l.toks) {
		l.pos++
	}
	return t
}

func (l *kqlLexer) expect(want string) error {
	if got := l.next(); !strings.EqualFold(got, want) {
		return fmt.Errorf("expected %q, found %q", want, got)
	}
	return nil
}

// parseKQL parses the supported subset.
func parseKQL(q string) (*kqlQuery, error) {
	toks, err := lexKQL(q)
	if err != nil {
		return nil, err
	}
	l := &kqlLexer{toks: toks}
	if t := l.next(); !strings.EqualFold(t, "resources") {
		return nil, fmt.Errorf("only the 'resources' table is supported, found %q", t)
	}
	out := &kqlQuery{limit: -1}
	for l.peek() != "" {
		if err := l.expect("|"); err != nil {
			return nil, err
		}
		if err := parseStage(l, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func parseStage(l *kqlLexer, out *kqlQuery) error {
	switch op := strings.ToLower(l.next()); op {
	case "where":
		return parseWhere(l, out)
	case "project":
		return parseProject(l, out)
	case "limit", "take":
		n, err := strconv.Atoi(l.next())
		if err != nil || n < 0 {
			return fmt.Errorf("%s needs a non-negative number", op)
		}
		out.limit = n
		return nil
	default:
		return fmt.Errorf("operator %q is not supported", op)
	}
}

func parseWhere(l *kqlLexer, out *kqlQuery) error {
	for {
		c, err := parseCond(l)
		if err != nil {
			return err
		}
		out.conds = append(out.conds, c)
		if !strings.EqualFold(l.peek(), "and") {
			return nil
		}
		l.next()
	}
}

func parseProject(l *kqlLexer, out *kqlQuery) error {
	for {
		col, ok := kqlColumns[strings.ToLower(l.next())]
		if !ok {
			return fmt.Errorf("project: unknown column")
		}
		out.project = append(out.project, col)
		if l.peek() != "," {
			return nil
		}
		l.next()
	}
}

// parseTerm reads a column or tags['name'].
func parseTerm(l *kqlLexer) (string, string, error) {
	col, ok := kqlColumns[strings.ToLower(l.next())]
	if !ok {
		return "", "", fmt.Errorf("unknown column")
	}
	if col != "tags" || l.peek() != "[" {
		return col, "", nil
	}
	l.next()
	name := l.next()
	if !strings.HasPrefix(name, "'") {
		return "", "", fmt.Errorf("tags[...] needs a quoted tag name")
	}
	if err := l.expect("]"); err != nil {
		return "", "", err
	}
	return col, name[1:], nil
}

func parseCond(l *kqlLexer) (kqlCond, error) {
	if fn := strings.ToLower(l.peek()); fn == "isempty" || fn == "isnotempty" {
		l.next()
		if err := l.expect("("); err != nil {
			return kqlCond{}, err
		}
		col, tag, err := parseTerm(l)
		if err != nil {
			return kqlCond{}, err
		}
		return kqlCond{col: col, tag: tag, op: fn}, l.expect(")")
	}
	col, tag, err := parseTerm(l)
	if err != nil {
		return kqlCond{}, err
	}
	c := kqlCond{col: col, tag: tag, op: strings.ToLower(l.next())}
	switch c.op {
	case "==", "=~", "!=", "!~":
		v := l.next()
		if !strings.HasPrefix(v, "'") {
			return c, fmt.Errorf("%s needs a quoted string", c.op)
		}
		c.values = []string{v[1:]}
		return c, nil
	case "in", "in~", "!in", "!in~":
		c.values, err = parseList(l)
		return c, err
	}
	return c, fmt.Errorf("operator %q is not supported", c.op)
}

func parseList(l *kqlLexer) ([]string, error) {
	if err := l.expect("("); err != nil {
		return nil, err
	}
	var vals []string
	for {
		v := l.next()
		if !strings.HasPrefix(v, "'") {
			return nil, fmt.Errorf("in (...) needs quoted strings")
		}
		vals = append(vals, v[1:])
		switch l.next() {
		case ",":
		case ")":
			return vals, nil
		default:
			return nil, fmt.Errorf("malformed list")
		}
	}
}

// eval reports whether a resource satisfies the condition; col reads a
// column of it.
func (c kqlCond) eval(o *object, col func(string) any) bool {
	v, present := c.value(o, col)
	switch c.op {
	case "isempty":
		return !present || v == ""
	case "isnotempty":
		return present && v != ""
	case "==", "in":
		return present && containsStr(c.values, v, false)
	case "=~", "in~":
		return present && containsStr(c.values, v, true)
	case "!=", "!in":
		return !present || !containsStr(c.values, v, false)
	case "!~", "!in~":
		return !present || !containsStr(c.values, v, true)
	}
	return false
}

// value extracts the string the condition compares. Tag lookups are
// case-sensitive, as in Resource Graph.
func (c kqlCond) value(o *object, col func(string) any) (string, bool) {
	if c.col == "tags" && c.tag != "" {
		v, ok := o.tags[c.tag]
		return v, ok
	}
	switch v := col(c.col).(type) {
	case string:
		return v, true
	case nil:
		return "", false
	default:
		return fmt.Sprint(v), true
	}
}

func containsStr(vals []string, v string, fold bool) bool {
	for _, x := range vals {
		if x == v || fold && strings.EqualFold(x, v) {
			return true
		}
	}
	return false
}
