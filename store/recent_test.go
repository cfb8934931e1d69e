package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

// recents returns each Recents implementation under test, with a fresh key namespace.
func recents(t *testing.T) map[string]Recents {
	t.Helper()
	r, err := NewRedis("redis://"+testenv.RedisAddr(t)+"/0", "", fmt.Sprintf("recenttest-%s-%d:", t.Name(), time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return map[string]Recents{"memory": NewMemory(), "redis": r}
}

func ids(es []RecentEntry) string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID+"="+string(e.Val))
	}
	return strings.Join(out, " ")
}

func TestARecentListKeepsItsBoundNewestFirstOneEntryPerID(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for name, rs := range recents(t) {
		t.Run(name, func(t *testing.T) {
			put := func(bound int, es ...RecentEntry) {
				t.Helper()
				if err := rs.PutRecent(ctx, "l", es, bound, time.Hour); err != nil {
					t.Fatal(err)
				}
			}
			get := func(limit int) string {
				t.Helper()
				es, err := rs.Recent(ctx, "l", limit)
				if err != nil {
					t.Fatal(err)
				}
				return ids(es)
			}
			if got := get(0); got != "" {
				t.Fatalf("no list: %q", got)
			}
			put(3, RecentEntry{ID: "a", At: at(1), Val: []byte("1")}, RecentEntry{ID: "b", At: at(3), Val: []byte("1")})
			put(3, RecentEntry{ID: "c", At: at(2), Val: []byte("1")})
			if got, want := get(0), "b=1 c=1 a=1"; got != want {
				t.Errorf("by time, newest first: %q, want %q", got, want)
			}
			// A put of an ID replaces its entry, at its new time.
			put(3, RecentEntry{ID: "a", At: at(4), Val: []byte("2")})
			if got, want := get(0), "a=2 b=1 c=1"; got != want {
				t.Errorf("after a's update: %q, want %q", got, want)
			}
			// Past the bound the oldest go, and a put's own entries count: of d, e, f at one time,
			// the greater ID is the newer.
			put(3, RecentEntry{ID: "d", At: at(5), Val: []byte("1")}, RecentEntry{ID: "f", At: at(5), Val: []byte("1")},
				RecentEntry{ID: "e", At: at(5), Val: []byte("1")})
			if got, want := get(0), "f=1 e=1 d=1"; got != want {
				t.Errorf("bounded: %q, want %q", got, want)
			}
			if got, want := get(2), "f=1 e=1"; got != want {
				t.Errorf("limit 2: %q, want %q", got, want)
			}
			// An entry older than every kept one does not enter a full list.
			put(3, RecentEntry{ID: "old", At: at(0), Val: []byte("1")})
			if got, want := get(0), "f=1 e=1 d=1"; got != want {
				t.Errorf("an old entry: %q, want %q", got, want)
			}
			es, _ := rs.Recent(ctx, "l", 1)
			if !es[0].At.Equal(at(5).Truncate(time.Microsecond)) {
				t.Errorf("time %s, want %s to the microsecond", es[0].At, at(5))
			}
			if es, _ := rs.Recent(ctx, "other", 0); len(es) != 0 {
				t.Errorf("another key's list: %v", es)
			}
		})
	}
}

// Replicas put at once: every entry is kept (no read-modify-write loses another's), within the
// bound.
func TestConcurrentPutsOfARecentListLoseNothing(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	for name, rs := range recents(t) {
		t.Run(name, func(t *testing.T) {
			var wg sync.WaitGroup
			for i := range 40 {
				wg.Go(func() {
					e := RecentEntry{ID: fmt.Sprintf("%02d", i), At: now.Add(time.Duration(i) * time.Millisecond), Val: []byte("x")}
					if err := rs.PutRecent(ctx, "l", []RecentEntry{e}, 50, time.Hour); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			es, err := rs.Recent(ctx, "l", 0)
			if err != nil || len(es) != 40 || es[0].ID != "39" || es[39].ID != "00" {
				t.Fatalf("%d entries (%v), first and last %q; want 40, 39 first", len(es), err, ids(es))
			}
		})
	}
}

func TestARecentListExpiresItsTTLAfterItsLastPut(t *testing.T) {
	ctx := context.Background()
	for name, rs := range recents(t) {
		t.Run(name, func(t *testing.T) {
			e := []RecentEntry{{ID: "a", At: time.Now(), Val: []byte("1")}}
			if err := rs.PutRecent(ctx, "forever", e, 10, 0); err != nil {
				t.Fatal(err)
			}
			if err := rs.PutRecent(ctx, "l", e, 10, 200*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			testenv.WaitFor(t, 10*time.Second, "the list to expire", func() bool {
				es, err := rs.Recent(ctx, "l", 0)
				return err == nil && len(es) == 0
			})
			if es, _ := rs.Recent(ctx, "forever", 0); len(es) != 1 {
				t.Errorf("a list without a TTL expired: %v", es)
			}
		})
	}
}

// The memory store returns copies: a caller's change of a value it put or got changes nothing.
func TestMemoryRecentListsHoldCopies(t *testing.T) {
	ctx := context.Background()
	m := NewMemory()
	v := []byte("1")
	_ = m.PutRecent(ctx, "l", []RecentEntry{{ID: "a", At: time.Now(), Val: v}}, 10, time.Hour)
	v[0] = '9'
	es, _ := m.Recent(ctx, "l", 0)
	es[0].Val[0] = '8'
	if es, _ := m.Recent(ctx, "l", 0); string(es[0].Val) != "1" {
		t.Errorf("value %q, want 1", es[0].Val)
	}
}

func TestARecentListOnAnUnreachableRedisSaysUnavailable(t *testing.T) {
	r, err := NewRedis("redis://127.0.0.1:"+fmt.Sprint(testenv.FreePort(t))+"/0", "", "down:")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	if err := r.PutRecent(ctx, "l", []RecentEntry{{ID: "a", At: time.Now()}}, 10, time.Hour); !errors.Is(err, ErrUnavailable) {
		t.Errorf("put: %v, want ErrUnavailable", err)
	}
	if _, err := r.Recent(ctx, "l", 0); !errors.Is(err, ErrUnavailable) {
		t.Errorf("read: %v, want ErrUnavailable", err)
	}
}
