package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

// Two replicas sharing a Redis share one pace per key: after one takes the key's turn the other
// is told to wait (at most the interval), another key goes at once, and the turn comes back.
func TestRedisPacesAKeyAcrossEveryoneWhoSharesIt(t *testing.T) {
	addr := testenv.RedisAddr(t)
	prefix := fmt.Sprintf("pace-%d:", time.Now().UnixNano())
	var replicas []*Redis
	for range 2 {
		r, err := NewRedis("redis://"+addr+"/0", "", prefix)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		replicas = append(replicas, r)
	}
	ctx := context.Background()
	const interval = time.Minute // long: the second ask always falls inside it
	if wait, err := replicas[0].Pace(ctx, "slack:pace:C1", interval); err != nil || wait != 0 {
		t.Fatalf("the first event: wait %s, err %v; want it to go now", wait, err)
	}
	wait, err := replicas[1].Pace(ctx, "slack:pace:C1", interval)
	if err != nil || wait <= 0 || wait > interval {
		t.Fatalf("the other replica, same key: wait %s, err %v; want a wait within the interval", wait, err)
	}
	if wait, err := replicas[1].Pace(ctx, "slack:pace:C2", interval); err != nil || wait != 0 {
		t.Fatalf("another key: wait %s, err %v; want it to go now", wait, err)
	}
	other, err := NewRedis("redis://"+addr+"/0", "", "other-"+prefix) // another tenant (redis.key_prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if wait, err := other.Pace(ctx, "slack:pace:C1", interval); err != nil || wait != 0 {
		t.Fatalf("the same key under another key_prefix: wait %s, err %v; want it to go now", wait, err)
	}
	const short = 50 * time.Millisecond
	if wait, err := replicas[0].Pace(ctx, "slack:pace:C3", short); err != nil || wait != 0 {
		t.Fatalf("a short interval's first event: wait %s, err %v", wait, err)
	}
	testenv.WaitFor(t, 10*time.Second, "the key's turn to come back", func() bool {
		wait, err := replicas[1].Pace(ctx, "slack:pace:C3", short)
		return err == nil && wait == 0
	})
}

func TestRedisPaceSaysTheStoreIsUnavailableWhenRedisIsDown(t *testing.T) {
	r, err := NewRedis(fmt.Sprintf("redis://127.0.0.1:%d/0", testenv.FreePort(t)), "", "x:")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Pace(context.Background(), "k", time.Second); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Pace with Redis down: %v, want ErrUnavailable", err)
	}
}

var _ Pacer = (*Redis)(nil)
