package cloud

import "fmt"

// Redacted replaces secrets wherever a configuration is printed.
const Redacted = "[redacted]"

// Secret is a credential value (a client secret, an access key). It prints,
// formats and marshals as "[redacted]" so that logging a provider's
// configuration never reveals it; Reveal returns the value.
type Secret string

// String redacts the secret (the empty secret prints as "").
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return Redacted
}

// GoString redacts the secret under %#v.
func (s Secret) GoString() string { return fmt.Sprintf("%q", s.String()) }

// MarshalText redacts the secret in JSON, YAML and structured logs.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Reveal returns the secret's value; pass it only to a credential.
func (s Secret) Reveal() string { return string(s) }
