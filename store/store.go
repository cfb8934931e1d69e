// Package store holds the responder's shared state: claims that deduplicate alerts across
// re-sends and replicas, small records (Slack threads, profile captures) and locks. Redis backs it
// when several replicas run; the in-memory implementation serves a single replica.
package store

import (
	"context"
	"errors"
	"time"
)

// ErrUnavailable wraps every error caused by the backing store being unreachable.
var ErrUnavailable = errors.New("store unavailable")

// Store is the state the responder shares between requests, workers and replicas.
type Store interface {
	Locker
	Recents
	// Claim records key for ttl and reports whether this caller is the first to claim it.
	// It is how a re-sent alert, or one delivered to two replicas, is diagnosed once.
	Claim(ctx context.Context, key string, ttl time.Duration) (bool, error)
	// Unclaim drops a claim, so that work that could not be accepted can be retried.
	Unclaim(ctx context.Context, key string) error

	// Get returns the record at key; ok is false when there is none.
	Get(ctx context.Context, key string) (val []byte, ok bool, err error)
	// Set stores a record; ttl 0 keeps it until deleted.
	Set(ctx context.Context, key string, val []byte, ttl time.Duration) error
	// Delete removes a record; deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List returns every record whose key starts with prefix.
	List(ctx context.Context, prefix string) (map[string][]byte, error)

	// Ping checks the store can be reached (for /readyz).
	Ping(ctx context.Context) error
	Close() error
}

// BatchClaimer is a Store that claims many keys in one round trip (a notification's alerts).
type BatchClaimer interface {
	// ClaimAll is Claim for each key, in order.
	ClaimAll(ctx context.Context, keys []string, ttl time.Duration) ([]bool, error)
}
