package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

func TestRedisThroughSentinelFindsTheMaster(t *testing.T) {
	master := testenv.StartRedis(t)
	sentinel := testenv.StartSentinel(t, "vllm", master.Addr)
	s := NewRedisSentinel("vllm", []string{sentinel}, 0, "", "", fmt.Sprintf("sentinel-%d:", time.Now().UnixNano()))
	defer s.Close()
	ctx := context.Background()
	testenv.WaitFor(t, 15*time.Second, "the sentinel to name the master", func() bool { return s.Ping(ctx) == nil })
	ok, err := s.Claim(ctx, "k", time.Minute)
	if err != nil || !ok {
		t.Fatalf("first claim through sentinel: %v %v", ok, err)
	}
	if ok, _ := s.Claim(ctx, "k", time.Minute); ok {
		t.Fatal("second claim through sentinel succeeded")
	}
	lock, err := s.Lock(ctx, "pod-a", time.Minute, LockHolder{ID: "1", Name: "alice", Since: time.Now()})
	if err != nil {
		t.Fatalf("lock through sentinel: %v", err)
	}
	lock.Release(ctx)
}
