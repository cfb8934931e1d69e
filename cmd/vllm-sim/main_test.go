package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the logger and the test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRunServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	ready := make(chan string, 1)
	done := make(chan int, 1)
	go func() {
		done <- runWith(ctx, []string{"--listen", "127.0.0.1:0", "--scenario", "healthy", "--metric-names", "legacy",
			"--model-name", "test/model", "--profiler-dir", t.TempDir(), "--profile-flush-delay", "10ms"}, &logs, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case code := <-done:
		t.Fatalf("exited early with %d: %s", code, logs.String())
	case <-time.After(10 * time.Second):
		t.Fatal("not ready within 10s")
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `vllm:gpu_cache_usage_perc{engine="0",model_name="test/model"}`) {
		t.Errorf("legacy metric with the model name missing:\n%.500s", body)
	}
	resp, err = http.Post("http://"+addr+"/start_profile", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("start_profile status %d with --profiler-dir", resp.StatusCode)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit code %d: %s", code, logs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("did not stop within 10s of cancellation")
	}
	if !strings.Contains(logs.String(), `"listen_addr":"`+addr+`"`) {
		t.Errorf("the listen address is not logged: %s", logs.String())
	}
}

func TestBadFlagsExitNonZero(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"an unknown scenario is rejected", []string{"--scenario", "nope"}},
		{"unknown metric names are rejected", []string{"--metric-names", "old"}},
		{"an impossible KV pool is rejected", []string{"--num-gpu-blocks", "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out syncBuffer
			if code := runWith(context.Background(), append([]string{"--listen", "127.0.0.1:0"}, tc.args...), &out, nil); code == 0 {
				t.Fatalf("exit code 0, want non-zero")
			}
		})
	}
}
