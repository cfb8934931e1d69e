//go:build realvllm

package probe

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/vllm-responder/vllm-responder/internal/realvllm"
	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/store"
)

// running reads vllm:num_requests_running from the server's own /metrics.
func running(t *testing.T, s *realvllm.Server) float64 {
	t.Helper()
	resp, err := http.Get(s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fams, err := realvllm.Families(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return realvllm.Sum(fams, "vllm:num_requests_running", nil)
}

// On the real vLLM 0.32: a busy but healthy server answers the probe; with its engine core
// stopped (SIGSTOP: every series frozen, /health 200) the probe times out.
func TestTheProbeOnARealVLLM(t *testing.T) {
	s, err := realvllm.Start(realvllm.Options{MaxNumSeqs: 8, MaxModelLen: 512, BlockSize: 32, NumBlocks: 64}, 10*time.Minute)
	if err != nil {
		t.Fatalf("the real vLLM did not start (make test-vllm sets it up): %v", err)
	}
	defer s.Stop()
	t.Logf("real vLLM %s on %s, healthy after %s", s.Version, s.Addr, s.StartupDur.Round(time.Second))
	defer func() {
		if t.Failed() {
			t.Logf("--- last output of vLLM ---\n%s", s.Tail(6000))
		}
	}()

	prom := testenv.Prometheus(t, testenv.PromOptions{ScrapeInterval: time.Second,
		ScrapeTargets: []testenv.Target{{Addr: s.Addr, Labels: map[string]string{"pod": "vllm-0", "namespace": "llm"}}}})
	client, err := api.NewClient(api.Config{Address: prom.URL})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.NewRedis("redis://"+testenv.RedisAddr(t)+"/0", "", fmt.Sprintf("proberealtest-%d-%d:", os.Getpid(), time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := Config{Enabled: true, Timeout: 5 * time.Second, MinInterval: 5 * time.Second}
	cfg.SetDefaults()
	p, err := New(cfg, Deps{Prometheus: v1.NewAPI(client), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 30*time.Second, "Prometheus to scrape the server", func() bool {
		_, err := p.res.Resolve(context.Background(), "vllm-0", "llm")
		return err == nil
	})

	// Busy: four long requests (20 + 400 tokens) decoding, again and again, beside the probe.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	stop := make(chan struct{})
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		s.LoadUntil(ctx, stop, 1000, 10*time.Millisecond, 4, func(i int) realvllm.Request {
			return realvllm.Request{PromptTokens: 20, MaxTokens: 400, Seed: 7000 + i}
		})
	}()
	testenv.WaitFor(t, time.Minute, "four requests running", func() bool { return running(t, s) >= 4 })
	busy := p.Probe(context.Background(), "vllm-0", "llm")
	t.Logf("busy: %s (%d running)", busy.Text(), int(running(t, s)))
	if busy.Outcome != OutcomeAnswered || busy.Took >= cfg.Timeout || busy.Endpoint != s.Addr {
		t.Errorf("a busy healthy server: %+v", busy)
	}

	// The engine core stopped: nothing answers, /health still 200.
	hang := s.StopEngineCore(t)
	var hung Result
	testenv.WaitFor(t, 30*time.Second, "the busy probe's interval to pass", func() bool {
		hung = p.Probe(context.Background(), "vllm-0", "llm")
		return hung.Outcome != OutcomeRecent
	})
	t.Logf("stopped: %s", hung.Text())
	if hung.Outcome != OutcomeTimedOut || !hung.Stalled() || hung.Text() != "a 1-token request timed out after 5 s" {
		t.Errorf("a stopped engine core: %+v", hung)
	}
	if h, err := http.Get(s.URL + "/health"); err != nil || h.StatusCode != 200 {
		t.Errorf("/health during the stop: %v %v (vLLM answers 200)", h, err)
	} else {
		h.Body.Close()
	}
	hang.Resume(t)
	close(stop)
	cancel()
	<-loadDone
}
