package secret

import (
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
)

// URL is a connection URL that may carry a password (redis://:pw@host:6379/0) or a token in its
// query string (?api_key=...). It prints, logs and marshals with the password and the query
// string replaced by "xxxxx" (and no fragment); Reveal returns it whole. A URL that may carry its credential in its
// path is a TokenURL.
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
	if p.RawQuery != "" || p.ForceQuery {
		p.RawQuery = "xxxxx" // a key may be the token itself (?T0K3N)
	}
	p.Fragment, p.RawFragment = "", ""
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

// TokenURL is a URL that may carry its credential in its path or query string, as incident
// tools issue webhook URLs (https://hooks.example.com/v1/T0K3N, ...?token=...). It prints, logs
// and marshals as its scheme and host only, as the errors of a POST to it name it (Host); Reveal
// returns it whole.
type TokenURL string

// Reveal returns the whole URL.
func (u TokenURL) Reveal() string { return string(u) }

// String implements fmt.Stringer.
func (u TokenURL) String() string { return Host(string(u)) }

// GoString implements fmt.GoStringer.
func (u TokenURL) GoString() string { return `"` + u.String() + `"` }

// MarshalYAML implements yaml.Marshaler.
func (u TokenURL) MarshalYAML() (any, error) { return u.String(), nil }

// MarshalJSON implements json.Marshaler.
func (u TokenURL) MarshalJSON() ([]byte, error) { return json.Marshal(u.String()) }

// MarshalText implements encoding.TextMarshaler.
func (u TokenURL) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

// Host is the scheme and host of a URL, what logs, errors and `responder check` may show of a
// URL that can carry a credential anywhere but in its host: "" for "", "(unparsable URL)" when
// it has no host.
func Host(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(unparsable URL)"
	}
	return u.Scheme + "://" + u.Host
}

// RedactURLError returns err with the URL of the *url.Error in its chain (net/http quotes a
// request's whole URL in its errors) shown as its scheme and host, for a URL that carries a
// credential (a Slack response_url, a presigned upload URL): what errors.Is and errors.As find in
// err is unchanged. err without a *url.Error is returned as it is.
func RedactURLError(err error) error {
	var ue *url.Error
	if err == nil || !errors.As(err, &ue) || ue.URL == "" {
		return err
	}
	host := Host(ue.URL)
	msg := strings.ReplaceAll(err.Error(), strconv.Quote(ue.URL), strconv.Quote(host))
	return &redactedError{msg: strings.ReplaceAll(msg, ue.URL, host), err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
