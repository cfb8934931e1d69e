package store

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/writeorder"
)

// Memory is a Store for a single replica. It forgets everything on restart.
//
// It holds at most MemoryMaxBytes of keys and values: past that, each write drops the records
// written longest ago (an old thread's record before a fresh dedup claim, expired or not) until
// the store is within the bound again. Without it a storm of distinct groups (each with its
// thread record, delivery records and dedup claims, kept for up to slack.thread_ttl) grew the process for a week; with it, a
// record dropped early costs at most a second post of an old group, never a lost one.
type Memory struct {
	mu    sync.Mutex
	now   func() time.Time
	items map[string]memItem
	// nextSweep is the table size at which expired items are next swept out. Expired items are
	// also dropped when read, but most keys (an alert state's claim) are never read again.
	nextSweep int
	// recent are the recent lists (Recents), a handful, each bounded by its own bound.
	recent map[string]recentList
	// bytes is the size of the keys and values held; max bounds it.
	bytes, max int
	// order is the writes, oldest first: what the bound drops first. Past the bound, dropping
	// the oldest writes so costs what is dropped, not a sort of the whole table under the lock
	// that every webhook's claims wait on (about 1 s for 300,000 claims).
	order writeorder.Queue
}

// MemoryMaxBytes bounds the keys and values an in-memory store holds: 64 MiB.
const MemoryMaxBytes = 64 << 20

// minSweep is the table size below which expired items are not swept.
const minSweep = 4096

// bytes1 holds every one-byte value, read-only (Get and List copy values out): a claim's value
// ({1}), also when the dispatcher confirms it with Set, is a slice of it, not an allocation of its
// own for the GC to mark for as long as the claim lasts.
var bytes1 = func() (b [256]byte) {
	for i := range b {
		b[i] = byte(i)
	}
	return b
}()

// claimed is the value of every claim.
var claimed = bytes1[1:2:2]

// stored is the copy of val the store keeps.
func stored(val []byte) []byte {
	if len(val) == 1 {
		return bytes1[val[0] : val[0]+1 : val[0]+1]
	}
	return append([]byte(nil), val...)
}

type memItem struct {
	val     []byte
	expires int64  // Unix nanoseconds; 0: never (no time.Location pointer for the GC to trace)
	seq     uint64 // when it was written, in writes
}

// NewMemory returns an empty in-memory store bounded at MemoryMaxBytes.
func NewMemory() *Memory { return NewMemoryBounded(MemoryMaxBytes) }

// NewMemoryBounded returns an empty in-memory store that holds at most max bytes of keys and
// values.
func NewMemoryBounded(max int) *Memory {
	return &Memory{now: time.Now, items: make(map[string]memItem), nextSweep: minSweep, max: max, recent: make(map[string]recentList)}
}

// Size is what the store holds: its keys and values in bytes, and how many.
func (m *Memory) Size() (bytes, entries int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bytes, len(m.items)
}

// drop deletes key's item. Called with m.mu held.
func (m *Memory) drop(key string) {
	if it, ok := m.items[key]; ok {
		m.bytes -= len(key) + len(it.val)
		delete(m.items, key)
	}
}

func (m *Memory) live(key string, now time.Time) (memItem, bool) {
	it, ok := m.items[key]
	if !ok {
		return memItem{}, false
	}
	if it.expired(now) {
		m.drop(key)
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
// item: O(1) amortized per new key, and memory bounded by what is live. Past the byte bound it
// drops the items written longest ago, from the front of order, until the store is within the
// bound: O(1) amortized per write too, never a batch. Called with m.mu held.
func (m *Memory) put(key string, it memItem, now time.Time) {
	m.drop(key)
	it.seq = m.order.Push(key)
	m.items[key] = it
	m.bytes += len(key) + len(it.val)
	if len(m.items) >= m.nextSweep {
		m.sweep(now)
		m.nextSweep = max(minSweep, 2*len(m.items))
	}
	for m.max > 0 && m.bytes > m.max {
		w, ok := m.order.Front()
		if !ok {
			break
		}
		m.order.Pop()
		if m.current(w) {
			m.drop(w.Key)
		}
	}
	m.order.Tidy(len(m.items), minSweep, m.current)
}

// current reports whether w is its key's last write, still held. Called with m.mu held.
func (m *Memory) current(w writeorder.Write) bool {
	it, ok := m.items[w.Key]
	return ok && it.seq == w.Seq
}

// sweep drops every expired item. Called with m.mu held.
func (m *Memory) sweep(now time.Time) {
	for k, v := range m.items {
		if v.expired(now) {
			m.drop(k)
		}
	}
}

// Claim implements Store.
func (m *Memory) Claim(_ context.Context, key string, ttl time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.claim(key, ttl, m.now()), nil
}

// ClaimAll implements BatchClaimer: every key under one hold of the lock.
func (m *Memory) ClaimAll(_ context.Context, keys []string, ttl time.Duration) ([]bool, error) {
	out := make([]bool, len(keys))
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	for i, k := range keys {
		out[i] = m.claim(k, ttl, now)
	}
	return out, nil
}

// claim is Claim with m.mu held.
func (m *Memory) claim(key string, ttl time.Duration, now time.Time) bool {
	if _, ok := m.live(key, now); ok {
		return false
	}
	m.put(key, memItem{val: claimed, expires: m.expiry(now, ttl)}, now)
	return true
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
	m.put(key, memItem{val: stored(val), expires: m.expiry(now, ttl)}, now)
	return nil
}

// Delete implements Store.
func (m *Memory) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.drop(key)
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
