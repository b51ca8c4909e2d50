package armsim

import (
	"fmt"
	"strconv"
	"strings"
)

// The Resource Graph subset armsim understands:
//
//	resources | resourcecontainers          (the table the query starts from)
//	| where <expr>                          (any number of stages, in any order)
//	| union resources | resourcecontainers  (appends the other table's rows)
//	| project <column>[, <column>]...
//	| limit <n>  (or take <n>)
//	| mv-expand bagexpansion=array <name> = tags   (once; kind=array also)
//
// expr combines conditions with "and" and "or" ("and" binds tighter, as
// in KQL) and parentheses. A condition is one of
//
//	<column> == | =~ | != | !~ | startswith | startswith_cs '<string>'
//	<column> in | in~ | !in | !in~ ('<string>', ...)
//	tags['<name>'] <same operators>          (tag name case-sensitive, as ARG)
//	isnotempty(<column or tags['name']>) / isempty(...)
//	tostring(<name>[0]) / tostring(<name>[1]) <same operators>
//	                                         (after mv-expand: a tag's name
//	                                          and value; =~ ignores case)
//
// Strings are single- or double-quoted with the backslash escapes \\ \'
// \" \n \r \t, or verbatim (@'...', @"...", the quote doubled inside).
// Columns: id, name, type (lower-case, as ARG stores it), location,
// resourceGroup (lower-case), subscriptionId, tenantId, kind, tags,
// properties, zones, sku. Anything else is a 400.
//
// mv-expand turns each row into one row per tag, its <name> column the
// pair [tag name, tag value] (the stored spelling of the name); a row
// without tags (an empty property bag) yields no row, as in KQL. It is the
// way to compare tag names without regard to case: tags['name'] looks a
// name up exactly as spelled.

// Resource Graph's tables.
const (
	tableResources  = "resources"
	tableContainers = "resourcecontainers"
)

// maxKQLDepth bounds the nesting of parentheses in a where expression.
const maxKQLDepth = 32

// kqlQuery is a parsed query: a table, then stages applied in order.
type kqlQuery struct {
	table  string
	stages []kqlStage
}

// kqlStage is one "| ..." stage.
type kqlStage struct {
	op      string   // where, union, project, limit, mv-expand
	expr    kqlExpr  // where
	table   string   // union
	project []string // project
	limit   int      // limit
}

// kqlExpanded is the column of the tag pair mv-expand adds to each row.
const kqlExpanded = "@tag"

// kqlExpr is a where predicate over a Resource Graph row.
type kqlExpr interface {
	eval(s *Server, r graphRow) bool
}

// kqlAnd holds when all its terms hold.
type kqlAnd []kqlExpr

func (a kqlAnd) eval(s *Server, r graphRow) bool {
	for _, e := range a {
		if !e.eval(s, r) {
			return false
		}
	}
	return true
}

// kqlOr holds when any of its terms holds.
type kqlOr []kqlExpr

func (o kqlOr) eval(s *Server, r graphRow) bool {
	for _, e := range o {
		if e.eval(s, r) {
			return true
		}
	}
	return false
}

// kqlCond is one predicate.
type kqlCond struct {
	col, tag string // column; tag name when col == "tags"
	elem     int    // 0 (name) or 1 (value) of the pair when col == kqlExpanded
	op       string // ==, =~, !=, !~, in, in~, !in, !in~, isempty, isnotempty
	values   []string
}

var kqlColumns = map[string]string{
	"id": "id", "name": "name", "type": "type", "location": "location", "resourcegroup": "resourceGroup",
	"subscriptionid": "subscriptionId", "tenantid": "tenantId", "kind": "kind", "tags": "tags",
	"properties": "properties", "zones": "zones", "sku": "sku",
}

// kqlTables maps the table names armsim knows (any casing) to their name.
var kqlTables = map[string]string{tableResources: tableResources, tableContainers: tableContainers}

// parseKQL parses the supported subset.
func parseKQL(q string) (*kqlQuery, error) {
	toks, err := lexKQL(q)
	if err != nil {
		return nil, err
	}
	l := &kqlLexer{toks: toks}
	first := l.next()
	table, ok := kqlTables[strings.ToLower(first)]
	if !ok {
		return nil, fmt.Errorf("only the 'resources' and 'resourcecontainers' tables are supported, found %q", first)
	}
	out := &kqlQuery{table: table}
	projected := false
	for l.peek() != "" {
		if err := l.expect("|"); err != nil {
			return nil, err
		}
		st, err := parseStage(l)
		if err != nil {
			return nil, err
		}
		switch st.op {
		case "project":
			projected = true
		case "union":
			if projected {
				return nil, fmt.Errorf("union after project is not supported")
			}
		}
		out.stages = append(out.stages, st)
	}
	return out, nil
}

func parseStage(l *kqlLexer) (kqlStage, error) {
	st := kqlStage{op: strings.ToLower(l.next())}
	var err error
	switch st.op {
	case "where":
		if st.expr, err = parseOr(l, 0); err == nil && l.peek() != "" && l.peek() != "|" {
			err = fmt.Errorf("unexpected %q after the where condition", l.peek())
		}
	case "union":
		t := l.next()
		var ok bool
		if st.table, ok = kqlTables[strings.ToLower(t)]; !ok {
			err = fmt.Errorf("union: only the tables 'resources' and 'resourcecontainers' are supported, found %q", t)
		}
	case "project":
		st.project, err = parseProject(l)
	case "mv-expand":
		err = parseExpand(l)
	case "limit", "take":
		n, aerr := strconv.Atoi(l.next())
		if aerr != nil || n < 0 {
			err = fmt.Errorf("%s needs a non-negative number", st.op)
		}
		st.op, st.limit = "limit", n
	default:
		err = fmt.Errorf("operator %q is not supported", st.op)
	}
	return st, err
}

// parseExpand reads the rest of "mv-expand bagexpansion=array <name> =
// tags": the one form armsim models (a second mv-expand is refused).
func parseExpand(l *kqlLexer) error {
	if l.expanded != "" {
		return fmt.Errorf("only one mv-expand is supported")
	}
	if kind := strings.ToLower(l.next()); kind != "bagexpansion" && kind != "kind" {
		return fmt.Errorf("mv-expand: only 'bagexpansion=array <name> = tags' is supported")
	}
	if err := l.expect("="); err != nil {
		return err
	}
	if err := l.expect("array"); err != nil {
		return err
	}
	name := l.next()
	if _, taken := kqlColumns[strings.ToLower(name)]; taken || name == "" || !isIdentByte(name[0]) {
		return fmt.Errorf("mv-expand: name the expanded tag a new column, found %q", name)
	}
	if err := l.expect("="); err != nil {
		return err
	}
	if err := l.expect("tags"); err != nil {
		return err
	}
	l.expanded = name
	return nil
}

// parseOr reads and-terms joined by "or".
func parseOr(l *kqlLexer, depth int) (kqlExpr, error) {
	return parseJoined(l, depth, "or", parseAnd, func(terms []kqlExpr) kqlExpr { return kqlOr(terms) })
}

// parseAnd reads primaries joined by "and".
func parseAnd(l *kqlLexer, depth int) (kqlExpr, error) {
	return parseJoined(l, depth, "and", parsePrimary, func(terms []kqlExpr) kqlExpr { return kqlAnd(terms) })
}

// parseJoined reads one or more terms (each read by term) joined by the
// keyword op: a single term as it is, several as join makes them.
func parseJoined(l *kqlLexer, depth int, op string, term func(*kqlLexer, int) (kqlExpr, error),
	join func([]kqlExpr) kqlExpr) (kqlExpr, error) {
	var terms []kqlExpr
	for {
		t, err := term(l, depth)
		if err != nil {
			return nil, err
		}
		terms = append(terms, t)
		if !strings.EqualFold(l.peek(), op) {
			break
		}
		l.next()
	}
	if len(terms) == 1 {
		return terms[0], nil
	}
	return join(terms), nil
}

// parsePrimary reads a parenthesised expression or a condition.
func parsePrimary(l *kqlLexer, depth int) (kqlExpr, error) {
	if l.peek() != "(" {
		return parseCond(l)
	}
	if depth >= maxKQLDepth {
		return nil, fmt.Errorf("parentheses nested deeper than %d", maxKQLDepth)
	}
	l.next()
	e, err := parseOr(l, depth+1)
	if err != nil {
		return nil, err
	}
	return e, l.expect(")")
}

func parseProject(l *kqlLexer) ([]string, error) {
	var cols []string
	for {
		col, ok := kqlColumns[strings.ToLower(l.next())]
		if !ok {
			return nil, fmt.Errorf("project: unknown column")
		}
		cols = append(cols, col)
		if l.peek() != "," {
			return cols, nil
		}
		l.next()
	}
}

// parseTerm reads a column, tags['name'], or tostring(<expanded>[i]).
func parseTerm(l *kqlLexer) (kqlCond, error) {
	if strings.EqualFold(l.peek(), "tostring") {
		return parseExpandedTerm(l)
	}
	col, tag, err := parseColumn(l)
	return kqlCond{col: col, tag: tag}, err
}

// parseExpandedTerm reads tostring(<expanded>[0 or 1]).
func parseExpandedTerm(l *kqlLexer) (kqlCond, error) {
	l.next()
	if err := l.expect("("); err != nil {
		return kqlCond{}, err
	}
	if name := l.next(); l.expanded == "" || name != l.expanded {
		return kqlCond{}, fmt.Errorf("tostring(...) is supported only on the column mv-expand adds, found %q", name)
	}
	if err := l.expect("["); err != nil {
		return kqlCond{}, err
	}
	i := l.next()
	if i != "0" && i != "1" {
		return kqlCond{}, fmt.Errorf("a tag pair has the elements 0 and 1, found %q", i)
	}
	if err := l.expect("]"); err != nil {
		return kqlCond{}, err
	}
	return kqlCond{col: kqlExpanded, elem: int(i[0] - '0')}, l.expect(")")
}

// parseColumn reads a column or tags['name'].
func parseColumn(l *kqlLexer) (string, string, error) {
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

func parseCond(l *kqlLexer) (kqlExpr, error) {
	if fn := strings.ToLower(l.peek()); fn == "isempty" || fn == "isnotempty" {
		l.next()
		if err := l.expect("("); err != nil {
			return nil, err
		}
		c, err := parseTerm(l)
		if err != nil {
			return nil, err
		}
		c.op = fn
		return c, l.expect(")")
	}
	c, err := parseTerm(l)
	if err != nil {
		return nil, err
	}
	c.op = strings.ToLower(l.next())
	switch c.op {
	case "==", "=~", "!=", "!~", "startswith", "startswith_cs":
		v := l.next()
		if !strings.HasPrefix(v, "'") {
			return nil, fmt.Errorf("%s needs a quoted string", c.op)
		}
		c.values = []string{v[1:]}
		return c, nil
	case "in", "in~", "!in", "!in~":
		c.values, err = parseList(l)
		return c, err
	}
	return nil, fmt.Errorf("operator %q is not supported", c.op)
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

// eval reports whether a row satisfies the condition.
func (c kqlCond) eval(s *Server, r graphRow) bool {
	v, present := c.value(s, r)
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
	case "startswith":
		return present && strings.HasPrefix(strings.ToLower(v), strings.ToLower(c.values[0]))
	case "startswith_cs":
		return present && strings.HasPrefix(v, c.values[0])
	}
	return false
}

// value extracts the string the condition compares. Tag lookups are
// case-sensitive, as in Resource Graph.
func (c kqlCond) value(s *Server, r graphRow) (string, bool) {
	if c.col == kqlExpanded {
		if r.pair == nil {
			return "", false
		}
		return r.pair[c.elem], true
	}
	if c.col == "tags" && c.tag != "" {
		v, ok := r.tagSet()[c.tag]
		return v, ok
	}
	switch v := s.graphCol(r, c.col).(type) {
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
