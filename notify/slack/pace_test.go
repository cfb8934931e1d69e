package slack

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	slackgo "github.com/slack-go/slack"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/notify/slack/fakeslack"
	"github.com/vllm-responder/vllm-responder/store"
)

// postAll posts n messages to one channel from each API at once and returns how long it took.
func postAll(t *testing.T, apis []*webAPI, n int) time.Duration {
	t.Helper()
	start := time.Now()
	var wg sync.WaitGroup
	for i, a := range apis {
		for j := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, _, err := a.Post(context.Background(), "#vllm-incidents", slackgo.MsgOptionText(fmt.Sprintf("replica %d post %d", i, j), false)); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	return time.Since(start)
}

// With Redis, post_interval holds across replicas: two replicas posting 3 messages each to one
// channel take at least 5 intervals, not 2 (a pacer never lets a call go early, so this lower
// bound does not depend on the machine's speed).
func TestPacingIsSharedByReplicasThroughRedis(t *testing.T) {
	addr := testenv.RedisAddr(t)
	const interval = 100 * time.Millisecond
	fs := fakeslack.New(t, "chat.postMessage")
	prefix := fmt.Sprintf("pace-%d:", time.Now().UnixNano())
	var apis []*webAPI
	for range 2 {
		cfg := testConfig(fs.APIURL())
		cfg.PostInterval = interval
		st, err := store.NewRedis("redis://"+addr+"/0", "", prefix)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		a := newAPI(cfg, nil, zerolog.New(zerolog.NewTestWriter(t)), nil)
		a.sharePacing(st)
		apis = append(apis, a)
	}
	if took := postAll(t, apis, 3); took < 5*interval {
		t.Fatalf("6 posts from 2 replicas took %s; shared pacing needs at least %s", took, 5*interval)
	}
	if got := len(fs.Calls("chat.postMessage")); got != 6 {
		t.Fatalf("%d posts, want 6", got)
	}
}

// Redis unreachable: each replica paces on its own again (and posts).
func TestPacingFallsBackToTheReplicaWhenRedisIsDown(t *testing.T) {
	// Nothing listens on this port: Redis is down.
	st, err := store.NewRedis(fmt.Sprintf("redis://127.0.0.1:%d/0", testenv.FreePort(t)), "", "x:")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const interval = 100 * time.Millisecond
	fs := fakeslack.New(t, "chat.postMessage")
	cfg := testConfig(fs.APIURL())
	cfg.PostInterval = interval
	a := newAPI(cfg, nil, zerolog.New(zerolog.NewTestWriter(t)), nil)
	a.sharePacing(st)
	if took := postAll(t, []*webAPI{a}, 3); took < 2*interval {
		t.Fatalf("3 posts took %s; pacing within the replica needs at least %s", took, 2*interval)
	}
	if got := len(fs.Calls("chat.postMessage")); got != 3 {
		t.Fatalf("%d posts, want 3", got)
	}
}
