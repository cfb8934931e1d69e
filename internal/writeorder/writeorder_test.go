package writeorder

import (
	"fmt"
	"testing"
)

// A table of 3 keys written 100,000 times: the queue stays proportional to the 3 records, and
// the front is always the oldest current write.
func TestQueueStaysProportionalToTheLiveRecords(t *testing.T) {
	var q Queue
	last := map[string]uint64{}
	for i := range 100_000 {
		k := fmt.Sprint(i % 3)
		last[k] = q.Push(k)
		q.Tidy(len(last), 8, func(w Write) bool { return last[w.Key] == w.Seq })
	}
	if q.Len() > 2*3+8+1 {
		t.Fatalf("%d writes queued for 3 records", q.Len())
	}
	// Skip what is stale: the first current write is key 1's (written at i = 99,997).
	for w, ok := q.Front(); ok && last[w.Key] != w.Seq; w, ok = q.Front() {
		q.Pop()
	}
	if w, ok := q.Front(); !ok || w.Key != "1" || w.Seq != last["1"] {
		t.Fatalf("front %+v, %v; want key 1's last write, seq %d", w, ok, last["1"])
	}
}

func TestQueuePopsInWriteOrder(t *testing.T) {
	var q Queue
	for _, k := range []string{"a", "b", "c"} {
		q.Push(k)
	}
	for _, want := range []string{"a", "b", "c"} {
		w, ok := q.Front()
		if !ok || w.Key != want {
			t.Fatalf("front %+v, %v; want %s", w, ok, want)
		}
		q.Pop()
	}
	if _, ok := q.Front(); ok || q.Len() != 0 {
		t.Fatalf("a queue popped empty still has a front (len %d)", q.Len())
	}
}
