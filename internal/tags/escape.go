package tags

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxLabelLen is the longest label name part or label value Kubernetes accepts.
const MaxLabelLen = 63

// Errors returned by the codec, for errors.Is.
var (
	// ErrUnrepresentable: a tag name or value cannot be written as label
	// syntax (empty name, invalid UTF-8, or too long once encoded). Nothing is
	// ever truncated.
	ErrUnrepresentable = errors.New("not representable as a label")
	// ErrUndecodable: a label under the managed prefix is not something the
	// codec produces, so it is reported rather than guessed at.
	ErrUndecodable = errors.New("not a tagsync label encoding")
)

// escapeLead starts every escape: escapeLead followed by two lower-case hex
// digits stands for one byte. See the package documentation.
const escapeLead = "x_"

const hexDigits = "0123456789abcdef"

// EncodeName encodes a tag name as a label name part (the text after the
// prefix and "/"). Names that are already valid label names and contain no
// escape-like text are returned unchanged. It fails with ErrUnrepresentable for
// an empty name, invalid UTF-8, or an encoding longer than MaxLabelLen.
func EncodeName(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%w: the tag name is empty", ErrUnrepresentable)
	}
	return encode("tag name", name)
}

// DecodeName reverses EncodeName. It fails with ErrUndecodable for text that
// EncodeName never produces.
func DecodeName(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("%w: the label name is empty", ErrUndecodable)
	}
	return decode("label name", s)
}

// EncodeValue encodes a tag value as a label value, like EncodeName; the empty
// value encodes as the empty label value.
func EncodeValue(value string) (string, error) {
	if value == "" {
		return "", nil
	}
	return encode("tag value", value)
}

// DecodeValue reverses EncodeValue; the empty label value decodes as the empty
// tag value.
func DecodeValue(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	return decode("label value", s)
}

func encode(what, s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("%w: the %s %q is not valid UTF-8", ErrUnrepresentable, what, s)
	}
	out := escape(s)
	if len(out) > MaxLabelLen {
		return "", fmt.Errorf("%w: the %s %q is %d characters long once encoded for a label; labels allow %d",
			ErrUnrepresentable, what, s, len(out), MaxLabelLen)
	}
	return out, nil
}

func decode(what, s string) (string, error) {
	if !isLabelText(s) {
		return "", fmt.Errorf("%w: the %s %q is not valid label syntax", ErrUndecodable, what, s)
	}
	raw := unescape(s)
	if !utf8.ValidString(raw) {
		return "", fmt.Errorf("%w: the escapes in the %s %q do not decode to UTF-8 text", ErrUndecodable, what, s)
	}
	if want := escape(raw); want != s {
		return "", fmt.Errorf("%w: the %s %q is not how tagsync writes %q (that would be %q)", ErrUndecodable, what, s, raw, want)
	}
	return raw, nil
}

// escape writes every byte of s that needsEscape as escapeLead plus two hex
// digits and copies the others.
func escape(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !needsEscape(s, i) {
			b.WriteByte(c)
			continue
		}
		b.WriteString(escapeLead)
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&0xf])
	}
	return b.String()
}

// needsEscape reports whether byte i of s must be escaped: it is outside
// [A-Za-z0-9._-], or a non-alphanumeric at either end, or the "_" of text that
// would read as an escape.
func needsEscape(s string, i int) bool {
	c := s[i]
	switch {
	case isAlnum(c):
		return false
	case c != '-' && c != '_' && c != '.':
		return true
	case i == 0 || i == len(s)-1:
		return true
	}
	return c == '_' && isEscapeAt(s, i-1)
}

// isEscapeAt reports whether an escape sequence starts at byte i of s.
func isEscapeAt(s string, i int) bool {
	return i+3 < len(s) && s[i] == 'x' && s[i+1] == '_' && isHex(s[i+2]) && isHex(s[i+3])
}

// unescape replaces every escape sequence in s by its byte, scanning left to
// right.
func unescape(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if isEscapeAt(s, i) {
			b.WriteByte(unhex(s[i+2])<<4 | unhex(s[i+3]))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// isLabelText reports whether s is a non-empty label name part or label value:
// at most MaxLabelLen characters from [A-Za-z0-9._-], alphanumeric at both ends.
func isLabelText(s string) bool {
	if s == "" || len(s) > MaxLabelLen || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'a' + 10
}
