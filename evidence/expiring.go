package evidence

import "time"

// expiring is a map whose entries live ttl from when they were put, at most max of them (past max
// the oldest go first). Entries leave in the order they came, so keeping both bounds costs what
// is dropped (amortized O(1) a put), never a pass over the table under the engine's lock: with
// more than a few thousand fresh answers held (a storm of distinct pods), the pass every put made
// was most of the responder's CPU, and the answers of the webhook waited behind it. Not safe for
// concurrent use: the engine holds its mutex.
type expiring[V any] struct {
	ttl   time.Duration
	max   int
	items map[string]expiringItem[V]
	// order is the puts, oldest first from head; an entry whose key was put again or dropped
	// since is stale, skipped when reached.
	order []expiringPut
	head  int
	seq   uint64
}

type expiringItem[V any] struct {
	v   V
	at  time.Time
	seq uint64
}

type expiringPut struct {
	key string
	seq uint64
}

func newExpiring[V any](ttl time.Duration, max int) *expiring[V] {
	return &expiring[V]{ttl: ttl, max: max, items: map[string]expiringItem[V]{}}
}

// get is key's value, when ttl has not passed at now since it was put.
func (x *expiring[V]) get(key string, now time.Time) (V, bool) {
	it, ok := x.items[key]
	if !ok || now.Sub(it.at) >= x.ttl {
		var zero V
		return zero, false
	}
	return it.v, true
}

// put keeps v for key from now, then drops from the oldest what has expired or is past max.
func (x *expiring[V]) put(key string, v V, now time.Time) {
	x.seq++
	x.items[key] = expiringItem[V]{v: v, at: now, seq: x.seq}
	x.order = append(x.order, expiringPut{key: key, seq: x.seq})
	for x.head < len(x.order) {
		p := x.order[x.head]
		if it, ok := x.items[p.key]; ok && it.seq == p.seq {
			if len(x.items) <= x.max && now.Sub(it.at) < x.ttl {
				break
			}
			delete(x.items, p.key)
		}
		x.order[x.head] = expiringPut{} // no longer holds the key for the GC
		x.head++
	}
	if x.head > len(x.order)/2 || len(x.order)-x.head > 2*len(x.items)+64 {
		x.compact()
	}
}

// compact keeps only order's current entries, from the front of the slice: once the dropped
// or stale entries are as many as the kept ones, so O(1) amortized a put.
func (x *expiring[V]) compact() {
	kept := x.order[:0]
	for _, p := range x.order[x.head:] {
		if it, ok := x.items[p.key]; ok && it.seq == p.seq {
			kept = append(kept, p)
		}
	}
	clear(x.order[len(kept):])
	x.order, x.head = kept, 0
}

func (x *expiring[V]) len() int { return len(x.items) }
