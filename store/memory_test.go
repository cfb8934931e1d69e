package store

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func TestMemoryClaimIsExclusiveUntilItExpiresOrIsDropped(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1700000000, 0)
	m := NewMemory()
	m.now = func() time.Time { return now }
	claim := func() bool {
		ok, err := m.Claim(ctx, "k", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !claim() || claim() {
		t.Fatal("the first claim must win and the second lose")
	}
	now = now.Add(time.Minute)
	if !claim() {
		t.Fatal("an expired claim must be claimable again")
	}
	if err := m.Unclaim(ctx, "k"); err != nil || !claim() {
		t.Fatalf("a dropped claim must be claimable again (%v)", err)
	}
	v, ok, err := m.Get(ctx, "k")
	if err != nil || !ok || len(v) != 1 {
		t.Fatalf("Get of a claim: %v %v %v", v, ok, err)
	}
	v[0] = 9 // a caller's copy: the next claim's value is unchanged
	if v2, _, _ := m.Get(ctx, "k"); v2[0] != 1 {
		t.Fatal("Get must return a copy")
	}
}

// Most keys (one per alert state) are never read again after their claim: expired ones must not
// stay in memory for the life of the process.
func TestMemoryForgetsExpiredKeysThatAreNeverReadAgain(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1700000000, 0)
	m := NewMemory()
	m.now = func() time.Time { return now }
	for i := range 50000 {
		if _, err := m.Claim(ctx, fmt.Sprintf("old-%d", i), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Set(ctx, "forever", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour)
	for i := range 50000 {
		if _, err := m.Claim(ctx, fmt.Sprintf("new-%d", i), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	m.mu.Lock()
	n := len(m.items)
	m.mu.Unlock()
	if n > 50001 {
		t.Fatalf("%d items held; want at most the 50001 live ones (the expired 50000 swept out)", n)
	}
	if _, ok, _ := m.Get(ctx, "forever"); !ok {
		t.Fatal("a key without expiry was swept")
	}
	if _, ok, _ := m.Get(ctx, "new-49999"); !ok {
		t.Fatal("a live key was swept")
	}
}

// Issue 33.4: a storm of distinct groups (each a thread record, delivery records and claims, kept
// for days) must not grow the store without bound: past its bound the records written longest
// ago are dropped first, and what was written last is kept.
func TestMemoryKeepsItsBoundDroppingTheOldestWritesFirst(t *testing.T) {
	ctx := context.Background()
	const bound = 1 << 20
	m := NewMemoryBounded(bound)
	val := make([]byte, 10_000)
	for i := range 1000 { // about 10 MB written, ten times the bound
		if err := m.Set(ctx, fmt.Sprintf("slack:thread:%04d", i), val, 7*24*time.Hour); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Claim(ctx, fmt.Sprintf("dedup:%04d", i), 4*time.Hour); err != nil {
			t.Fatal(err)
		}
		if b, _ := m.Size(); b > bound {
			t.Fatalf("after %d groups the store holds %d bytes, over its bound of %d", i+1, b, bound)
		}
	}
	b, n := m.Size()
	if b < bound/2 || n < 100 {
		t.Errorf("the store holds %d bytes in %d entries; want it kept near its bound, not emptied", b, n)
	}
	if _, ok, _ := m.Get(ctx, "slack:thread:0000"); ok {
		t.Error("the oldest record is still there")
	}
	for _, k := range []string{"slack:thread:0999", "dedup:0999", "slack:thread:0990"} {
		if _, ok, _ := m.Get(ctx, k); !ok {
			t.Errorf("%s, written last, was dropped", k)
		}
	}
	// The accounting follows overwrites and deletes: an emptied store holds nothing.
	for i := range 1000 {
		_ = m.Delete(ctx, fmt.Sprintf("slack:thread:%04d", i))
		_ = m.Delete(ctx, fmt.Sprintf("dedup:%04d", i))
	}
	if b, n := m.Size(); b != 0 || n != 0 {
		t.Fatalf("an emptied store holds %d bytes in %d entries", b, n)
	}
}

// Issue 37.3: past its bound the store drops its oldest writes one by one as it is written, from
// a queue in write order, not by sorting its whole table under the lock every webhook's claims
// wait on (about half a second for 300,000 claims). A record written again is as new as its last
// write, and the queue stays proportional to the records held however often they are rewritten.
func TestMemoryDropsItsOldestWritesInOrderAndItsWriteQueueStaysBounded(t *testing.T) {
	ctx := context.Background()
	m := NewMemoryBounded(1000)
	val := make([]byte, 91) // each record 100 bytes with its 9-byte key
	for i := range 10 {
		if err := m.Set(ctx, fmt.Sprintf("key:%05d", i), val, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Set(ctx, "key:00000", val, time.Hour); err != nil { // key 0 is now the newest
		t.Fatal(err)
	}
	if err := m.Set(ctx, "key:00010", val, time.Hour); err != nil { // one record over the bound
		t.Fatal(err)
	}
	if b, n := m.Size(); b != 1000 || n != 10 {
		t.Fatalf("the store holds %d bytes in %d records, want 1000 in 10: one dropped for one written", b, n)
	}
	for k, want := range map[string]bool{"key:00001": false, "key:00000": true, "key:00002": true, "key:00010": true} {
		if _, ok, _ := m.Get(ctx, k); ok != want {
			t.Errorf("%s held: %v, want %v (the oldest write, key 1, dropped first)", k, ok, want)
		}
	}
	for i := range 100_000 { // rewrites and deletes leave stale entries in the queue
		k := fmt.Sprintf("key:%05d", i%10)
		if i%7 == 0 {
			_ = m.Delete(ctx, k)
			continue
		}
		if _, err := m.Claim(ctx, k, time.Hour); err != nil {
			t.Fatal(err)
		}
		_ = m.Set(ctx, k, []byte{1}, time.Hour)
	}
	m.mu.Lock()
	queued, held := m.order.Len(), len(m.items)
	m.mu.Unlock()
	if queued > 2*(2*held+minSweep) {
		t.Fatalf("the write queue holds %d entries for %d records", queued, held)
	}
}

// One-byte values (a claim, and its confirmation by Set) share one read-only array instead of an
// allocation each: neither the caller's slice given to Set nor one Get returned can change them.
func TestMemoryOneByteValuesAreSharedYetNeverChangedThroughACallersSlice(t *testing.T) {
	ctx := context.Background()
	m := NewMemory()
	val := []byte{7}
	if err := m.Set(ctx, "a", val, time.Hour); err != nil {
		t.Fatal(err)
	}
	val[0] = 9 // the caller's slice, after Set
	got, ok, _ := m.Get(ctx, "a")
	if !ok || len(got) != 1 || got[0] != 7 {
		t.Fatalf("Get = %v, %v; want [7]", got, ok)
	}
	got[0] = 8 // the slice Get returned
	if _, err := m.Claim(ctx, "b", time.Hour); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]byte{"a": 7, "b": 1} {
		if v, ok, _ := m.Get(ctx, k); !ok || len(v) != 1 || v[0] != want {
			t.Errorf("%s = %v, want [%d]", k, v, want)
		}
	}
	if all, _ := m.List(ctx, ""); all["a"][0] != 7 {
		t.Errorf("List gives a = %v, want [7]", all["a"])
	}
}
