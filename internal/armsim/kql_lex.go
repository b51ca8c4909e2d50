package armsim

import (
	"fmt"
	"strings"
)

// kqlLexer splits a query into tokens.
type kqlLexer struct {
	toks []string
	pos  int
	// expanded is the name mv-expand gave the tag pair ("" before).
	expanded string
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
		case c == '@' && i+1 < len(q) && (q[i+1] == '\'' || q[i+1] == '"'):
			s, n, err := lexVerbatim(q[i+1:])
			if err != nil {
				return nil, err
			}
			toks = append(toks, "'"+s)
			i += n + 1
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
	for _, op := range []string{"!in~", "!in", "==", "=~", "!=", "!~", "=", "|", "(", ")", ",", "[", "]"} {
		if strings.HasPrefix(s, op) {
			return op
		}
	}
	return ""
}

// kqlEscapes are the characters a backslash escape stands for.
var kqlEscapes = map[byte]byte{'\\': '\\', '\'': '\'', '"': '"', 'n': '\n', 'r': '\r', 't': '\t'}

// lexString reads a quoted string with KQL's backslash escapes. Raw line
// breaks are not allowed inside, as in KQL.
func lexString(s string) (string, int, error) {
	quote := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			if i+1 >= len(s) {
				return "", 0, fmt.Errorf("unterminated string")
			}
			e, ok := kqlEscapes[s[i+1]]
			if !ok {
				return "", 0, fmt.Errorf("unknown escape sequence \\%c", s[i+1])
			}
			b.WriteByte(e)
			i++
		case c == '\n' || c == '\r':
			return "", 0, fmt.Errorf("line break in a string literal")
		case c == quote:
			return b.String(), i + 1, nil
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, fmt.Errorf("unterminated string")
}

// lexVerbatim reads a verbatim string (after the @): no escapes, the quote
// doubled stands for itself.
func lexVerbatim(s string) (string, int, error) {
	quote := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		if c != quote {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(s) && s[i+1] == quote {
			b.WriteByte(quote)
			i++
			continue
		}
		return b.String(), i + 1, nil
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
