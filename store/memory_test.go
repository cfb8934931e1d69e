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
