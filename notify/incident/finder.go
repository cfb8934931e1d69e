package incident

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/store"
)

// Finder finds the open incident of a scope in the store, for on-demand triage (a triage of a
// scope with an open incident names it, and /vllm triage answers in its thread).
type Finder struct {
	cfg *Config
	st  store.Store
	now func() time.Time
}

// NewFinder returns a finder of the incidents cfg keeps in st.
func NewFinder(cfg *Config, st store.Store) *Finder {
	return &Finder{cfg: cfg, st: st, now: time.Now}
}

// Open returns the open incident of the scope's labels: the one whose key they name when they
// hold every key label; else, when they hold some (a triage names the model, not its
// namespace), the only open incident whose key agrees with them. nil when there is none, or
// several agree. An incident resolved less than the quiet time ago counts as open: the next
// alert of its key rejoins it.
func (f *Finder) Open(ctx context.Context, scope map[string]string) (*notify.Incident, error) {
	now := f.now()
	var partial bool
	for _, k := range f.cfg.Key {
		if scope[k] == "" {
			partial = true
		}
	}
	if !partial {
		key := make(map[string]string, len(f.cfg.Key))
		for _, k := range f.cfg.Key {
			key[k] = scope[k]
		}
		r, err := loadRecord(ctx, f.st, keyHash(key))
		var bad *unreadableError
		if errors.As(err, &bad) {
			return nil, nil
		}
		if err != nil || r == nil || !r.joinable(now, f.cfg.QuietTime) {
			return nil, err
		}
		return r.snapshot(notify.IncidentChange{}), nil
	}
	if !slices.ContainsFunc(f.cfg.Key, func(k string) bool { return scope[k] != "" }) {
		return nil, nil // a scope of every model: no one incident
	}
	// The index of the keys that had an incident, newest first.
	keys, err := f.st.Recent(ctx, indexKey, 0)
	if err != nil {
		return nil, err
	}
	var found *record
	for _, k := range keys {
		var e indexEntry
		if json.Unmarshal(k.Val, &e) != nil || !agrees(e.Key, scope) {
			continue
		}
		r, err := loadRecord(ctx, f.st, k.ID)
		var bad *unreadableError
		switch {
		case errors.As(err, &bad):
			continue
		case err != nil:
			return nil, err
		case r == nil || !r.joinable(now, f.cfg.QuietTime):
			continue
		case found != nil:
			return nil, nil // several: the scope does not say which
		}
		found = r
	}
	if found == nil {
		return nil, nil
	}
	return found.snapshot(notify.IncidentChange{}), nil
}

// agrees reports whether every key label the scope holds has the key's value.
func agrees(key, scope map[string]string) bool {
	for k, v := range key {
		if s := scope[k]; s != "" && s != v {
			return false
		}
	}
	return true
}

// loadRecord reads the record of a key's incident; nil when there is none. An unreadable one
// is an *unreadableError.
func loadRecord(ctx context.Context, st store.Store, kh string) (*record, error) {
	b, ok, err := st.Get(ctx, recordKeyPrefix+kh)
	if err != nil || !ok {
		return nil, err
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, &unreadableError{key: recordKeyPrefix + kh, err: err}
	}
	return &r, nil
}

// unreadableError is a record that does not decode (written by another version, or damaged).
type unreadableError struct {
	key string
	err error
}

func (e *unreadableError) Error() string {
	return "incident record " + e.key + " unreadable: " + e.err.Error()
}
func (e *unreadableError) Unwrap() error { return e.err }
