package store

import (
	"context"
	"slices"
	"time"
)

// recentList is one list of Memory's recent lists.
type recentList struct {
	entries []RecentEntry // newest first
	expires int64         // Unix nanoseconds; 0: never
}

// PutRecent implements Recents.
func (m *Memory) PutRecent(_ context.Context, key string, entries []RecentEntry, bound int, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	l := m.recentList(key, now)
	all := slices.Concat(l.entries, entries)
	for i := range all[len(l.entries):] {
		all[len(l.entries)+i].Val = slices.Clone(all[len(l.entries)+i].Val)
	}
	m.recent[key] = recentList{entries: newest(all, bound), expires: m.expiry(now, ttl)}
	return nil
}

// Recent implements Recents.
func (m *Memory) Recent(_ context.Context, key string, limit int) ([]RecentEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.recentList(key, m.now())
	n := len(l.entries)
	if limit > 0 {
		n = min(n, limit)
	}
	out := make([]RecentEntry, n)
	for i, e := range l.entries[:n] {
		e.Val = slices.Clone(e.Val)
		out[i] = e
	}
	return out, nil
}

// recentList is the list at key, empty when there is none or it expired. Called with m.mu held.
func (m *Memory) recentList(key string, now time.Time) recentList {
	l, ok := m.recent[key]
	if ok && l.expires != 0 && now.UnixNano() >= l.expires {
		delete(m.recent, key)
		return recentList{}
	}
	return l
}
