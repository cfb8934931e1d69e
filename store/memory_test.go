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
