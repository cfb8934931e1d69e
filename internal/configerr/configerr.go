// Package configerr is the error contract every section of the responder's configuration
// follows. A section's Validate returns all of its errors at once (errors.Join), each naming its
// key inside the section ("url", "basic_auth.password_file", "kinds[0].profiler") or none when
// it is about the section as a whole; it never names the section itself. The caller places the
// errors under the section's name once, with Prefix:
//
//	errs = append(errs, configerr.Prefix("profile", c.Profile.Validate()))
//
// so that a nested section (profile.kinds[0]) composes and no key is ever prefixed twice. A
// keyed error keeps its key only as itself: wrapped in another error (fmt.Errorf("...: %w")) it
// reads as an error of the section as a whole.
package configerr

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// Error is one configuration error at a key.
type Error struct {
	// Key is the path of the key inside its section; empty: the section as a whole.
	Key string
	Err error
}

func (e *Error) Error() string {
	if e.Key == "" {
		return e.Err.Error()
	}
	return e.Key + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// New returns the error of key, formatted as fmt.Errorf does (%w wraps).
func New(key, format string, args ...any) error {
	return &Error{Key: key, Err: fmt.Errorf(format, args...)}
}

// Prefix places every error err joins under section: an error of a key becomes the error of
// section.key (section[i] for an index), any other error (one of the section as a whole, or a
// library's own words) the error of section. nil stays nil.
func Prefix(section string, err error) error {
	list := List(err)
	if len(list) == 0 {
		return nil
	}
	out := make([]error, len(list))
	for i, e := range list {
		if ke, ok := e.(*Error); ok {
			out[i] = &Error{Key: join(section, ke.Key), Err: ke.Err}
		} else {
			out[i] = &Error{Key: section, Err: e}
		}
	}
	return errors.Join(out...)
}

// List returns the single errors that err joins with errors.Join (nested joins flattened), in
// order; err itself when it joins nothing; nothing for nil. An error that wraps several
// (fmt.Errorf with two %w) is one error, not a join.
func List(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok || !isJoin(err, j.Unwrap()) {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, List(e)...)
	}
	return out
}

// isJoin reports whether err reads as errors.Join of errs would: their messages, one a line.
func isJoin(err error, errs []error) bool {
	msgs := make([]string, 0, len(errs))
	for _, e := range errs {
		if e != nil {
			msgs = append(msgs, e.Error())
		}
	}
	return err.Error() == strings.Join(msgs, "\n")
}

func join(section, key string) string {
	switch {
	case key == "":
		return section
	case section == "":
		return key
	case strings.HasPrefix(key, "["):
		return section + key
	}
	return section + "." + key
}

// FormatDuration writes d as the configuration file does (Prometheus' syntax: 90s is 1m30s, a
// week 1w), for messages that quote a configured duration.
func FormatDuration(d time.Duration) string { return model.Duration(d).String() }
