package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

// lockers returns each Locker implementation under test, with a fresh key namespace.
func lockers(t *testing.T) map[string]Locker {
	t.Helper()
	r, err := NewRedis("redis://"+testenv.RedisAddr(t)+"/0", "", fmt.Sprintf("locktest-%s-%d:", t.Name(), time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return map[string]Locker{"memory": NewMemory(), "redis": r}
}

func TestLockIsExclusiveAndNamesItsHolder(t *testing.T) {
	ctx := context.Background()
	for name, lk := range lockers(t) {
		t.Run(name, func(t *testing.T) {
			since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			l, err := lk.Lock(ctx, "profile:lock:ns/pod-a", time.Minute, LockHolder{ID: "c1", Name: "alice", Since: since})
			if err != nil {
				t.Fatalf("first lock: %v", err)
			}
			_, err = lk.Lock(ctx, "profile:lock:ns/pod-a", time.Minute, LockHolder{ID: "c2", Name: "bob"})
			var le *LockedError
			if !errors.As(err, &le) || !errors.Is(err, ErrLocked) {
				t.Fatalf("second lock: got %v, want a *LockedError", err)
			}
			if le.Holder.Name != "alice" || le.Holder.ID != "c1" || !le.Holder.Since.Equal(since) {
				t.Fatalf("holder = %+v, want alice/c1 since %s", le.Holder, since)
			}
			if _, err := lk.Lock(ctx, "profile:lock:ns/pod-b", time.Minute, LockHolder{Name: "bob"}); err != nil {
				t.Fatalf("another key must be free: %v", err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatalf("release: %v", err)
			}
			if err := l.Release(ctx); !errors.Is(err, ErrNotHeld) {
				t.Fatalf("second release: got %v, want ErrNotHeld", err)
			}
			l2, err := lk.Lock(ctx, "profile:lock:ns/pod-a", time.Minute, LockHolder{Name: "bob"})
			if err != nil {
				t.Fatalf("lock after release: %v", err)
			}
			if l2.Holder().Name != "bob" || l2.Holder().Since.IsZero() {
				t.Fatalf("holder = %+v, want bob with a since time", l2.Holder())
			}
		})
	}
}

func TestAnExpiredLockCannotBeRefreshedOrReleasedOverItsSuccessor(t *testing.T) {
	ctx := context.Background()
	for name, lk := range lockers(t) {
		t.Run(name, func(t *testing.T) {
			ttl := 150 * time.Millisecond
			l, err := lk.Lock(ctx, "k", ttl, LockHolder{Name: "first"})
			if err != nil {
				t.Fatal(err)
			}
			var next Lock
			testenv.WaitFor(t, 5*time.Second, "the lock to expire and be taken again", func() bool {
				next, err = lk.Lock(ctx, "k", time.Minute, LockHolder{Name: "second"})
				return err == nil
			})
			if err := l.Refresh(ctx, time.Minute); !errors.Is(err, ErrNotHeld) {
				t.Fatalf("refresh of an expired lock: got %v, want ErrNotHeld", err)
			}
			if err := l.Release(ctx); !errors.Is(err, ErrNotHeld) {
				t.Fatalf("release of an expired lock: got %v, want ErrNotHeld", err)
			}
			if _, err := lk.Lock(ctx, "k", time.Minute, LockHolder{Name: "third"}); !errors.Is(err, ErrLocked) {
				t.Fatalf("the successor's lock must survive: got %v", err)
			}
			if err := next.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestRefreshKeepsALockPastItsTTL(t *testing.T) {
	ctx := context.Background()
	for name, lk := range lockers(t) {
		t.Run(name, func(t *testing.T) {
			ttl := 300 * time.Millisecond
			l, err := lk.Lock(ctx, "k", ttl, LockHolder{Name: "first"})
			if err != nil {
				t.Fatal(err)
			}
			end := time.Now().Add(3 * ttl)
			for time.Now().Before(end) {
				if err := l.Refresh(ctx, ttl); err != nil {
					t.Fatalf("refresh: %v", err)
				}
				if _, err := lk.Lock(ctx, "k", ttl, LockHolder{Name: "other"}); !errors.Is(err, ErrLocked) {
					t.Fatalf("lock taken while refreshed: %v", err)
				}
				time.Sleep(ttl / 5)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestConcurrentLockersGetExactlyOneWinner(t *testing.T) {
	ctx := context.Background()
	for name, lk := range lockers(t) {
		t.Run(name, func(t *testing.T) {
			for round := 0; round < 20; round++ {
				key := fmt.Sprintf("race-%d", round)
				var wins, refusals atomic.Int32
				var wg sync.WaitGroup
				for i := 0; i < 8; i++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, err := lk.Lock(ctx, key, time.Minute, LockHolder{Name: fmt.Sprint(i)})
						switch {
						case err == nil:
							wins.Add(1)
						case errors.Is(err, ErrLocked):
							refusals.Add(1)
						default:
							t.Errorf("lock: %v", err)
						}
					}()
				}
				wg.Wait()
				if wins.Load() != 1 || refusals.Load() != 7 {
					t.Fatalf("round %d: %d winners and %d refusals, want 1 and 7", round, wins.Load(), refusals.Load())
				}
			}
		})
	}
}

func TestRedisLockFailsClosedWhenRedisIsDown(t *testing.T) {
	ctx := context.Background()
	srv := testenv.StartRedis(t)
	r, err := NewRedis("redis://"+srv.Addr+"/0", "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	l, err := r.Lock(ctx, "k", time.Minute, LockHolder{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	if _, err := r.Lock(ctx, "k2", time.Minute, LockHolder{Name: "b"}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("lock with Redis down: got %v, want ErrUnavailable", err)
	}
	if err := l.Refresh(ctx, time.Minute); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("refresh with Redis down: got %v, want ErrUnavailable", err)
	}
	if err := l.Release(ctx); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("release with Redis down: got %v, want ErrUnavailable", err)
	}
	ctx2, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.Lock(ctx2, "k3", time.Minute, LockHolder{Name: "c"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("lock with a cancelled context: got %v, want context.Canceled", err)
	}
}

func TestLockRejectsANonPositiveTTL(t *testing.T) {
	for name, lk := range lockers(t) {
		t.Run(name, func(t *testing.T) {
			if _, err := lk.Lock(context.Background(), "k", 0, LockHolder{}); err == nil {
				t.Fatal("ttl 0 accepted")
			}
		})
	}
}
