package tags

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestEncodeDecode(t *testing.T) {
	long200 := strings.Repeat("abcdefghij", 20)
	tests := []struct {
		name, in, want string
		wantErr        error
	}{
		{"plain", "env", "env", nil},
		{"hyphen", "cost-center", "cost-center", nil},
		{"underscore", "cc_1234", "cc_1234", nil},
		{"dots", "team.name", "team.name", nil},
		{"mixed case kept", "CostCenter", "CostCenter", nil},
		{"space", "Cost Center", "Costx_20Center", nil},
		{"slash and colon", "a/b:c", "ax_2fbx_3ac", nil},
		{"url", "https://x.io/p", "httpsx_3ax_2fx_2fx.iox_2fp", nil},
		{"unicode", "é", "x_c3x_a9", nil},
		{"leading hyphen", "-x-", "x_2dxx_2d", nil},
		{"leading dot", ".hidden", "x_2ehidden", nil},
		{"trailing underscore", "a_", "ax_5f", nil},
		{"single underscore", "_", "x_5f", nil},
		{"literal escape", "x_20", "xx_5f20", nil},
		{"literal escape twice", "xx_5f20", "xxx_5f5f20", nil},
		{"escape-like uppercase hex kept", "x_2F", "x_2F", nil},
		{"escape-like non hex kept", "max_cpu", "max_cpu", nil},
		{"x_ at end kept", "box_a", "box_a", nil},
		{"x before escaped byte", "x y", "xx_20y", nil},
		{"linux_x64 natural", "linux_x64", "linux_x64", nil},
		{"exactly 63", strings.Repeat("a", 63), strings.Repeat("a", 63), nil},
		{"64 too long", strings.Repeat("a", 64), "", ErrUnrepresentable},
		{"200 chars too long", long200, "", ErrUnrepresentable},
		{"grows past 63", strings.Repeat(" ", 16), "", ErrUnrepresentable},
		{"invalid utf8", "a\xffb", "", ErrUnrepresentable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, enc := range []func(string) (string, error){EncodeName, EncodeValue} {
				got, err := enc(tt.in)
				if !errors.Is(err, tt.wantErr) || got != tt.want {
					t.Fatalf("encode(%q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.wantErr)
				}
				if err != nil {
					continue
				}
				back, err := DecodeName(got)
				if err != nil || back != tt.in {
					t.Fatalf("decode(%q) = %q, %v; want %q", got, back, err, tt.in)
				}
			}
		})
	}
}

func TestEmptyNameAndValue(t *testing.T) {
	if _, err := EncodeName(""); !errors.Is(err, ErrUnrepresentable) {
		t.Errorf("EncodeName(\"\") error = %v, want ErrUnrepresentable", err)
	}
	if _, err := DecodeName(""); !errors.Is(err, ErrUndecodable) {
		t.Errorf("DecodeName(\"\") error = %v, want ErrUndecodable", err)
	}
	if v, err := EncodeValue(""); v != "" || err != nil {
		t.Errorf("EncodeValue(\"\") = %q, %v", v, err)
	}
	if v, err := DecodeValue(""); v != "" || err != nil {
		t.Errorf("DecodeValue(\"\") = %q, %v", v, err)
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, in := range []string{
		"x_41",    // needless escape of "A"
		"x_2F",    // fine as text: accepted below, not here
		"-a",      // not label syntax
		"a b",     // not label syntax
		"x_ff",    // invalid UTF-8
		"x_c3",    // truncated UTF-8
		"ax_5fb",  // needless escape of an inner "_"
		"a.x_2eb", // needless escape of an inner "."
		strings.Repeat("a", 64),
	} {
		if in == "x_2F" {
			if got, err := DecodeValue(in); err != nil || got != in {
				t.Errorf("DecodeValue(%q) = %q, %v; want it unchanged", in, got, err)
			}
			continue
		}
		if got, err := DecodeValue(in); !errors.Is(err, ErrUndecodable) {
			t.Errorf("DecodeValue(%q) = %q, %v; want ErrUndecodable", in, got, err)
		}
	}
}

// codecSeeds are seed corpus entries for the codec fuzz tests.
var codecSeeds = []string{
	"", "env", "Cost Center", "a/b:c", "https://example.com/a?b=c&d=e", "x_20", "xx_5f20", "x_", "_x", "-", ".",
	"__", "a_", "_a", "é", "日本語", "🙂", "tab\there", "new\nline", "linux_x64", "x_2F", "x_zz",
	strings.Repeat("ab ", 21), strings.Repeat("é", 100), strings.Repeat("z", 200), "a\xffb", "\x00",
}

func FuzzEncodeValue(f *testing.F) {
	for _, s := range codecSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkEncode(t, s, EncodeValue, DecodeValue, func(e string) []string { return validation.IsValidLabelValue(e) })
	})
}

func FuzzEncodeName(f *testing.F) {
	for _, s := range codecSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkEncode(t, s, EncodeName, DecodeName, func(e string) []string { return validation.IsQualifiedName(e) })
		c := Codec{Prefix: DefaultPrefix, Rules: &AzureRules}
		key, err := c.LabelKey(s)
		if err != nil {
			return
		}
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			t.Fatalf("LabelKey(%q) = %q, invalid: %v", s, key, errs)
		}
		if name, managed, err := c.TagName(key); !managed || err != nil || name != s {
			t.Fatalf("TagName(%q) = %q, %v, %v; want %q", key, name, managed, err, s)
		}
	})
}

func checkEncode(t *testing.T, s string, enc, dec func(string) (string, error), valid func(string) []string) {
	e, err := enc(s)
	if err != nil {
		if !errors.Is(err, ErrUnrepresentable) {
			t.Fatalf("encode(%q) error %v does not wrap ErrUnrepresentable", s, err)
		}
		if utf8.ValidString(s) && s != "" && len(escape(s)) <= MaxLabelLen {
			t.Fatalf("encode(%q) failed although it fits: %v", s, err)
		}
		return
	}
	if errs := valid(e); len(errs) > 0 {
		t.Fatalf("encode(%q) = %q, not valid label syntax: %v", s, e, errs)
	}
	if isLabelText(s) && !strings.Contains(s, escapeLead) && e != s {
		t.Fatalf("encode(%q) = %q; valid label text without the marker must be unchanged", s, e)
	}
	back, err := dec(e)
	if err != nil || back != s {
		t.Fatalf("decode(encode(%q)) = %q, %v", s, back, err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range codecSeeds {
		f.Add(s)
		e, _ := EncodeValue(s)
		f.Add(e)
	}
	f.Add("x_41")
	f.Add("x_c3x_a9")
	f.Fuzz(func(t *testing.T, s string) {
		for _, dec := range []func(string) (string, error){DecodeName, DecodeValue} {
			raw, err := dec(s)
			if err != nil {
				if !errors.Is(err, ErrUndecodable) {
					t.Fatalf("decode(%q) error %v does not wrap ErrUndecodable", s, err)
				}
				continue
			}
			// Decoding is strict: whatever decodes re-encodes to the same text.
			if e, err := EncodeValue(raw); err != nil || e != s {
				t.Fatalf("encode(decode(%q)) = %q, %v", s, e, err)
			}
		}
		_, _, _ = Codec{Prefix: DefaultPrefix, Rules: &AzureRules}.TagName(s)
		_, _ = Codec{Rules: &AzureRules}.FromLabels(map[string]string{s: s, "azure.tags/" + s: s})
	})
}
