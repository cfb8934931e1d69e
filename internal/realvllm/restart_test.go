//go:build realvllm

package realvllm

import (
	"context"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

// TestDeadEngineCoreEndsTheServerAndARestartResetsCounters: the engine core killed (a crash in
// the model, a fault that kills the process): the API server notices, answers /health 503 and
// exits by itself, with status 0. Started again on the same address, as a restarted pod: /metrics
// is gone meanwhile (Prometheus' up 0), and the new process starts every counter from 0 with a
// new process_start_time_seconds. (Killing every process at once, as an OOM kill does, ends the
// same way without the 503: cmd/responder's end-to-end test does that.)
func TestDeadEngineCoreEndsTheServerAndARestartResetsCounters(t *testing.T) {
	waitIdle(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i, r := range srv.Load(ctx, 3, 0, 0, func(i int) Request { return Request{PromptTokens: 30, MaxTokens: 10, Seed: 7000 + i} }) {
		if r.Err != nil {
			t.Fatalf("request %d before the kill: %v", i, r.Err)
		}
	}
	before := waitIdle(t)
	counters := []string{"vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:request_success_total", "vllm:iteration_tokens_total_count"}
	for _, c := range counters {
		if before.v(c) == 0 {
			t.Fatalf("%s is 0 before the kill: nothing to reset", c)
		}
	}

	ec, err := srv.EngineCorePID()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(ec, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	died := time.Now()
	var unhealthy time.Time
	healthCode := 0
	testenv.WaitFor(t, time.Minute, "/health to stop answering 200 after the engine core died", func() bool {
		r, err := http.Get(srv.URL + "/health")
		if err != nil {
			return true
		}
		r.Body.Close()
		if r.StatusCode != 200 {
			healthCode, unhealthy = r.StatusCode, time.Now()
			return true
		}
		return false
	})
	_, metricsErr := srv.Metrics()
	select {
	case <-srv.Exited():
	case <-time.After(2 * time.Minute):
		t.Fatalf("the API server still runs 2 minutes after its engine core died")
	}
	exited := time.Now()
	t.Logf("vLLM %s, engine core killed: /health %d after %s (/metrics then: %v), the API server exited by itself after %s (%s)",
		srv.Version, healthCode, unhealthy.Sub(died).Round(100*time.Millisecond), errText(metricsErr), exited.Sub(died).Round(100*time.Millisecond), srv.cmd.ProcessState)
	if healthCode != 503 {
		t.Errorf("/health answered %d after the engine core died, want 503", healthCode)
	}
	// Measured on 0.32: the API server shuts uvicorn down cleanly on EngineDeadError and exits 0,
	// so a container runtime records the crash as a normal exit (Kubernetes: reason Completed, exit
	// code 0), not as Error; the pod's restart policy restarts it all the same.
	if !srv.cmd.ProcessState.Success() {
		t.Errorf("the API server exited with %s after its engine core died; vLLM 0.32 exited 0 (update docs/vllm-facts.md)", srv.cmd.ProcessState)
	}
	srv.Kill() // what the dead engine core left (its worker)
	if _, err := srv.Metrics(); err == nil {
		t.Fatal("/metrics answered after the server exited")
	}

	firstUp, err := restartWatchingMetrics(t)
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	fresh := snap(t) // before any request to the new process
	t.Logf("restarted on the same port: /metrics answered again %s after the engine core died (the restart's start-up to /health %s)",
		firstUp.Sub(died).Round(100*time.Millisecond), srv.StartupDur.Round(100*time.Millisecond))
	for _, c := range counters {
		t.Logf("  %s: %v before, %v after the restart", c, before.v(c), fresh.v(c))
		if fresh.v(c) != 0 {
			t.Errorf("%s is %v after the restart, want 0 (a new process)", c, fresh.v(c))
		}
	}
	for _, g := range []string{"process_start_time_seconds", "vllm:prompt_tokens_created"} {
		t.Logf("  %s: %.1f before, %.1f after", g, before.v(g), fresh.v(g))
		if fresh.v(g) <= before.v(g) {
			t.Errorf("%s did not move forward across the restart: %.1f -> %.1f", g, before.v(g), fresh.v(g))
		}
	}
}

func errText(err error) string {
	if err == nil {
		return "200"
	}
	return err.Error()
}

// restartWatchingMetrics restarts srv and returns when /metrics first answered 200 meanwhile.
func restartWatchingMetrics(t *testing.T) (time.Time, error) {
	t.Helper()
	var mu sync.Mutex
	var firstUp time.Time
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(250 * time.Millisecond):
			}
			if _, err := srv.Metrics(); err == nil {
				mu.Lock()
				if firstUp.IsZero() {
					firstUp = time.Now()
				}
				mu.Unlock()
				return
			}
		}
	}()
	err := srv.Restart(10 * time.Minute)
	if err == nil {
		testenv.WaitFor(t, 10*time.Second, "the /metrics watcher", func() bool { mu.Lock(); defer mu.Unlock(); return !firstUp.IsZero() })
	}
	close(stop)
	wg.Wait()
	return firstUp, err
}
