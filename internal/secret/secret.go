// Package secret holds the type for credentials in configuration: it never prints its value.
package secret

import "encoding/json"

// Redacted is what a Secret prints as.
const Redacted = "<secret>"

// Secret is a credential read from configuration. It prints, logs and marshals as "<secret>"
// (empty when unset), so a config dump or a log line can never leak it. Reveal returns the value.
//
// A struct field of this type may have a sibling string field whose yaml tag is the secret's tag
// plus "_file" (bot_token and bot_token_file): the config loader then reads the secret from that file.
type Secret string

// Reveal returns the secret's value, for the one place that needs it.
func (s Secret) Reveal() string { return string(s) }

// IsSet reports whether the secret has a value.
func (s Secret) IsSet() bool { return s != "" }

func (s Secret) redacted() string {
	if s == "" {
		return ""
	}
	return Redacted
}

// String implements fmt.Stringer.
func (s Secret) String() string { return s.redacted() }

// GoString implements fmt.GoStringer, so %#v does not leak either.
func (s Secret) GoString() string { return `"` + s.redacted() + `"` }

// MarshalYAML implements yaml.Marshaler.
func (s Secret) MarshalYAML() (any, error) { return s.redacted(), nil }

// MarshalJSON implements json.Marshaler.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.redacted()) }

// MarshalText implements encoding.TextMarshaler (zerolog and others use it).
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.redacted()), nil }
