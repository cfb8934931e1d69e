package store

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// Recents keeps bounded lists of recent entries, one list per key, shared by everyone who shares
// the store: the index of recent diagnoses (MCP's recent_diagnoses), the index of recent Slack
// threads (`/vllm status`). Each entry has an ID, under which a later put replaces it, and a
// time; a list keeps its bound newest entries (by time, then by ID) and expires ttl after its last
// put. A put is one atomic step, so replicas that put at once lose nothing to each other.
type Recents interface {
	// PutRecent puts entries into the list at key, keeps its bound newest and sets its expiry to
	// ttl from now (ttl 0: none). When the store cannot be reached the error wraps
	// ErrUnavailable.
	PutRecent(ctx context.Context, key string, entries []RecentEntry, bound int, ttl time.Duration) error
	// Recent returns up to limit entries of the list at key (limit 0: all), newest first; none
	// when there is no list.
	Recent(ctx context.Context, key string, limit int) ([]RecentEntry, error)
}

// RecentEntry is one entry of a recent list.
type RecentEntry struct {
	// ID names the entry: a put of the same ID replaces it. Of two entries of the same time,
	// the one with the greater ID is the newer.
	ID string
	// At orders the list, newest first; it is kept to the microsecond.
	At time.Time
	// Val is the entry's value.
	Val []byte
}

// newestFirst orders entries as every list is: by time, then by ID, newest first.
func newestFirst(a, b RecentEntry) int {
	if c := b.At.Compare(a.At); c != 0 {
		return c
	}
	return cmp.Compare(b.ID, a.ID)
}

// newest is the bound newest of entries, one per ID (the last put of an ID wins), newest first,
// their times kept to the microsecond.
func newest(entries []RecentEntry, bound int) []RecentEntry {
	last := make(map[string]int, len(entries))
	for i, e := range entries {
		last[e.ID] = i
	}
	out := make([]RecentEntry, 0, len(last))
	for i, e := range entries {
		if last[e.ID] == i {
			e.At = e.At.Truncate(time.Microsecond)
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, newestFirst)
	return out[:min(len(out), max(bound, 0))]
}
