package secret

import (
	"encoding/json"
	"net/url"
)

// URL is a connection URL that may carry a password (redis://:pw@host:6379/0). It prints,
// logs and marshals with the password replaced by "xxxxx"; Reveal returns it whole.
type URL string

// Reveal returns the URL with its password.
func (u URL) Reveal() string { return string(u) }

func (u URL) redacted() string {
	if u == "" {
		return ""
	}
	p, err := url.Parse(string(u))
	if err != nil {
		return Redacted // unparsable: it may still hold a password
	}
	if _, has := p.User.Password(); has {
		p.User = url.UserPassword(p.User.Username(), "xxxxx")
	}
	return p.String()
}

// String implements fmt.Stringer.
func (u URL) String() string { return u.redacted() }

// GoString implements fmt.GoStringer.
func (u URL) GoString() string { return `"` + u.redacted() + `"` }

// MarshalYAML implements yaml.Marshaler.
func (u URL) MarshalYAML() (any, error) { return u.redacted(), nil }

// MarshalJSON implements json.Marshaler.
func (u URL) MarshalJSON() ([]byte, error) { return json.Marshal(u.redacted()) }

// MarshalText implements encoding.TextMarshaler.
func (u URL) MarshalText() ([]byte, error) { return []byte(u.redacted()), nil }
