package evidence

import (
	"fmt"
	"testing"
	"time"
)

func TestExpiringKeepsAnEntryForItsTTL(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	x := newExpiring[int](10*time.Second, 100)
	x.put("a", 1, t0)
	if v, ok := x.get("a", t0.Add(9*time.Second)); !ok || v != 1 {
		t.Errorf("a 9 s after its put = %d, %v; want 1, true", v, ok)
	}
	if _, ok := x.get("a", t0.Add(10*time.Second)); ok {
		t.Error("a is still kept 10 s (its ttl) after its put")
	}
	// Put again, it lives from its new put.
	x.put("a", 2, t0.Add(10*time.Second))
	if v, ok := x.get("a", t0.Add(19*time.Second)); !ok || v != 2 {
		t.Errorf("a 9 s after its second put = %d, %v; want 2, true", v, ok)
	}
	// A put drops what has expired.
	x.put("b", 3, t0.Add(30*time.Second))
	if x.len() != 1 {
		t.Errorf("%d entries after a's expiry; want 1 (b)", x.len())
	}
}

// Past max, the oldest entries go first, whatever their age; and however a table is written, it
// holds no more than max entries and its order stays within a bound of them.
func TestExpiringDropsTheOldestPastItsBound(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	x := newExpiring[int](time.Hour, 3)
	for i := range 5 {
		x.put(fmt.Sprint(i), i, t0)
	}
	for i, want := range []bool{false, false, true, true, true} {
		if _, ok := x.get(fmt.Sprint(i), t0); ok != want {
			t.Errorf("entry %d kept %v; want %v (the 3 written last)", i, ok, want)
		}
	}
	// The same keys written again and again: the order does not grow with the writes.
	for i := range 100_000 {
		x.put(fmt.Sprint(i%3), i, t0)
	}
	if x.len() != 3 || x.order.Len() > 2*3+64+1 {
		t.Errorf("%d entries, order of %d after 100,000 writes of 3 keys; want 3 and at most %d", x.len(), x.order.Len(), 2*3+64+1)
	}
	if v, ok := x.get("0", t0); !ok || v != 99_999 {
		t.Errorf("0 = %d, %v; want its last write 99999", v, ok)
	}
}
