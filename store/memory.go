package store

import (
	"context"
	"strings"
	"sync"
	"time"
)

// Memory is a Store for a single replica. It forgets everything on restart.
type Memory struct {
	mu    sync.Mutex
	now   func() time.Time
	items map[string]memItem
	// nextSweep is the table size at which expired items are next swept out. Expired items are
	// also dropped when read, but most keys (an alert state's claim) are never read again.
	nextSweep int
	// recent are the recent lists (Recents), a handful, each bounded by its own bound.
	recent map[string]recentList
}

// minSweep is the table size below which expired items are not swept.
const minSweep = 4096

// claimed is the value of every claim (read-only: Get copies it out).
var claimed = []byte{1}

type memItem struct {
	val     []byte
	expires int64 // Unix nanoseconds; 0: never (no time.Location pointer for the GC to trace)
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{now: time.Now, items: make(map[string]memItem), nextSweep: minSweep, recent: make(map[string]recentList)}
}

func (m *Memory) live(key string, now time.Time) (memItem, bool) {
	it, ok := m.items[key]
	if !ok {
		return memItem{}, false
	}
	if it.expired(now) {
		delete(m.items, key)
		return memItem{}, false
	}
	return it, true
}

func (m *Memory) expiry(now time.Time, ttl time.Duration) int64 {
	if ttl <= 0 {
		return 0
	}
	return now.Add(ttl).UnixNano()
}

// expired reports whether the item's time is up at now.
func (it memItem) expired(now time.Time) bool {
	return it.expires != 0 && now.UnixNano() >= it.expires
}

// put stores an item and, once the table has doubled since the last sweep, drops every expired
// item: O(1) amortized per new key, and memory bounded by what is live. Called with m.mu held.
func (m *Memory) put(key string, it memItem, now time.Time) {
	m.items[key] = it
	if len(m.items) < m.nextSweep {
		return
	}
	for k, v := range m.items {
		if v.expired(now) {
			delete(m.items, k)
		}
	}
	m.nextSweep = max(minSweep, 2*len(m.items))
}

// Claim implements Store.
func (m *Memory) Claim(_ context.Context, key string, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if _, ok := m.live(key, now); ok {
		return false, nil
	}
	m.put(key, memItem{val: claimed, expires: m.expiry(now, ttl)}, now)
	return true, nil
}

// ClaimAll implements BatchClaimer.
func (m *Memory) ClaimAll(ctx context.Context, keys []string, ttl time.Duration) ([]bool, error) {
	out := make([]bool, len(keys))
	for i, k := range keys {
		out[i], _ = m.Claim(ctx, k, ttl)
	}
	return out, nil
}

// Unclaim implements Store.
func (m *Memory) Unclaim(ctx context.Context, key string) error { return m.Delete(ctx, key) }

// Get implements Store.
func (m *Memory) Get(_ context.Context, key string) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	it, ok := m.live(key, m.now())
	if !ok {
		return nil, false, nil
	}
	return append([]byte(nil), it.val...), true, nil
}

// Set implements Store.
func (m *Memory) Set(_ context.Context, key string, val []byte, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.put(key, memItem{val: append([]byte(nil), val...), expires: m.expiry(now, ttl)}, now)
	return nil
}

// Delete implements Store.
func (m *Memory) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.items, key)
	return nil
}

// List implements Store.
func (m *Memory) List(_ context.Context, prefix string) (map[string][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	out := make(map[string][]byte)
	for k := range m.items {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		if it, ok := m.live(k, now); ok {
			out[k] = append([]byte(nil), it.val...)
		}
	}
	return out, nil
}

// Ping implements Store.
func (m *Memory) Ping(context.Context) error { return nil }

// Close implements Store.
func (m *Memory) Close() error { return nil }
