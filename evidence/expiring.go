package evidence

import (
	"time"

	"github.com/vllm-responder/vllm-responder/internal/writeorder"
)

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
	order writeorder.Queue // the puts, oldest first
}

type expiringItem[V any] struct {
	v   V
	at  time.Time
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
	x.items[key] = expiringItem[V]{v: v, at: now, seq: x.order.Push(key)}
	for p, ok := x.order.Front(); ok; p, ok = x.order.Front() {
		if it, ok := x.items[p.Key]; ok && it.seq == p.Seq {
			if len(x.items) <= x.max && now.Sub(it.at) < x.ttl {
				break
			}
			delete(x.items, p.Key)
		}
		x.order.Pop()
	}
	x.order.Tidy(len(x.items), 64, x.current)
}

// current reports whether w is its key's last put, still held.
func (x *expiring[V]) current(w writeorder.Write) bool {
	it, ok := x.items[w.Key]
	return ok && it.seq == w.Seq
}

func (x *expiring[V]) len() int { return len(x.items) }
