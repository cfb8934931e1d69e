//go:build realvllm

package realvllm

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

// stallFor is how long the engine core stays stopped in the hang tests: 20 scrapes a second
// apart, with a request arriving every second.
const stallFor = 20 * time.Second

// TestEngineCoreStoppedFreezesEveryVLLMSeries: SIGSTOP of the VLLM::EngineCore process (a hang
// inside a step, a GPU fault that leaves the process alive, a collective hang) while it runs
// requests, with nothing queued and with a queue, and a request arriving every second. The API
// server keeps answering /metrics and /health, but every vllm: series stays at the engine's last
// reported stats; SIGCONT ends it, and the requests held meanwhile reach the engine at once.
func TestEngineCoreStoppedFreezesEveryVLLMSeries(t *testing.T) {
	for _, tc := range []struct {
		name             string
		running, waiting int
	}{
		{"two running, nothing queued", 2, 0},
		{"four running, two queued", maxNumSeqs, 2},
	} {
		t.Run(tc.name, func(t *testing.T) { engineStall(t, tc.running, tc.waiting) })
	}
}

// heldRequest is a request sent while the engine core was stopped.
type heldRequest struct {
	sent    time.Time
	traceID string
	res     Result
}

func engineStall(t *testing.T, running, waiting int) {
	before := waitIdle(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// Long requests (20 + 400 tokens) hold the sequences: `running` run, `waiting` queue behind them.
	var wg sync.WaitGroup
	long := make([]Result, running+waiting)
	for i := range long {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			long[i] = srv.Complete(ctx, Request{PromptTokens: 20, MaxTokens: 400, Seed: 5000 + 100*running + i})
		}(i)
	}
	testenv.WaitFor(t, 2*time.Minute, fmt.Sprintf("%d running and %d waiting", running, waiting), func() bool {
		s := snap(t)
		return s.v("vllm:num_requests_running") == float64(running) && s.v("vllm:num_requests_waiting") == float64(waiting)
	})
	worker, err := srv.WorkerPID()
	if err != nil {
		t.Fatal(err)
	}
	hang := srv.StopEngineCore(t)
	stopped := hang.At
	ec, _ := srv.EngineCorePID()
	testenv.WaitFor(t, 10*time.Second, "the engine core to be stopped", func() bool { st, _ := ProcState(ec); return st == "T" })
	workerCPU0, _ := ProcCPUSeconds(worker)

	// The frozen exposition: outputs already sent when the engine stopped are still applied, so
	// the first exposition that stays the same across two scrapes half a second apart.
	vllmSeries := func() (map[string]string, snapshot) {
		text, err := srv.Metrics()
		if err != nil {
			t.Fatalf("GET /metrics while the engine core is stopped: %v", err)
		}
		fams, err := Families(text)
		if err != nil {
			t.Fatal(err)
		}
		return Series(text, "vllm:"), snapshot(fams)
	}
	var frozen map[string]string
	var frozenSnap snapshot
	prev, _ := vllmSeries()
	testenv.WaitFor(t, 10*time.Second, "the exposition to settle after the stop", func() bool {
		time.Sleep(500 * time.Millisecond)
		cur, s := vllmSeries()
		if len(Changed(prev, cur)) == 0 {
			frozen, frozenSnap = cur, s
			return true
		}
		prev = cur
		return false
	})

	// A request every second while the engine is stopped, and a scrape and a health check each second.
	var held []*heldRequest
	var hwg sync.WaitGroup
	type probe struct {
		changed       []string
		openFDs, cpu  float64
		httpRequests  float64
		health        int
		healthLatency time.Duration
	}
	var probes []probe
	for len(held) < int(stallFor/time.Second) {
		tp, traceID, _ := traceparent()
		h := &heldRequest{sent: time.Now(), traceID: traceID}
		held = append(held, h)
		seed := 6000 + 100*running + len(held)
		hwg.Add(1)
		go func() {
			defer hwg.Done()
			h.res = srv.Complete(ctx, Request{PromptTokens: 24, MaxTokens: 64, Seed: seed, Traceparent: tp})
		}()
		time.Sleep(time.Second)
		cur, s := vllmSeries()
		p := probe{changed: Changed(frozen, cur), openFDs: s.v("process_open_fds"), cpu: s.v("process_cpu_seconds_total"), httpRequests: s.v("http_requests_total")}
		t0 := time.Now()
		if r, err := http.Get(srv.URL + "/health"); err == nil {
			p.health = r.StatusCode
			r.Body.Close()
		}
		p.healthLatency = time.Since(t0)
		probes = append(probes, p)
	}
	workerCPU1, _ := ProcCPUSeconds(worker)
	cont := hang.Resume(t)

	// The burst: the held requests reach the engine's queue at once.
	var peakWaiting, peakRunning float64
	done := make(chan struct{})
	go func() { hwg.Wait(); wg.Wait(); close(done) }()
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		case <-time.After(100 * time.Millisecond):
			s := snap(t)
			peakWaiting, peakRunning = max(peakWaiting, s.v("vllm:num_requests_waiting")), max(peakRunning, s.v("vllm:num_requests_running"))
		}
	}
	after := waitIdle(t)

	first, last := probes[0], probes[len(probes)-1]
	t.Logf("vLLM %s: engine core stopped %s with %d running and %d waiting; %d requests sent meanwhile; %d vllm: series",
		srv.Version, cont.Sub(stopped).Round(100*time.Millisecond), running, waiting, len(held), len(frozen))
	t.Logf("  frozen gauges: running %v, waiting %v (capacity %v, deferred %v), kv_cache_usage_perc %.3f",
		frozenSnap.v("vllm:num_requests_running"), frozenSnap.v("vllm:num_requests_waiting"),
		frozenSnap.v("vllm:num_requests_waiting_by_reason", "reason", "capacity"), frozenSnap.v("vllm:num_requests_waiting_by_reason", "reason", "deferred"),
		frozenSnap.v("vllm:kv_cache_usage_perc"))
	t.Logf("  API server during the stop: process_open_fds %v -> %v, process_cpu_seconds_total %.2f -> %.2f, http_requests_total %v -> %v; /health %d in %s (last)",
		first.openFDs, last.openFDs, first.cpu, last.cpu, first.httpRequests, last.httpRequests, last.health, last.healthLatency.Round(time.Millisecond))
	t.Logf("  the worker (VLLM::Worker, not stopped) used %.1f s of CPU in the %s", workerCPU1-workerCPU0, cont.Sub(stopped).Round(time.Second))
	t.Logf("  after SIGCONT: peak waiting %v, peak running %v", peakWaiting, peakRunning)

	if frozenSnap.v("vllm:num_requests_running") != float64(running) || frozenSnap.v("vllm:num_requests_waiting") != float64(waiting) {
		t.Errorf("frozen gauges: running %v, waiting %v; want the last reported %d and %d",
			frozenSnap.v("vllm:num_requests_running"), frozenSnap.v("vllm:num_requests_waiting"), running, waiting)
	}
	for i, p := range probes {
		if len(p.changed) > 0 {
			t.Errorf("scrape %d of the stop: %d vllm: series changed while the engine core was stopped: %s", i+1, len(p.changed), strings.Join(p.changed[:min(len(p.changed), 10)], "; "))
		}
		if p.health != 200 {
			t.Errorf("scrape %d of the stop: /health answered %d, want 200 (the API server does not ask the engine)", i+1, p.health)
		}
	}
	// Each accepted request holds a connection (one file descriptor) in the API server.
	if grew := last.openFDs - first.openFDs; grew < float64(len(held))/2 {
		t.Errorf("process_open_fds grew by %v while %d requests were sent to the stopped engine", grew, len(held))
	}
	for i, r := range long {
		if r.Err != nil || r.Finish != "length" {
			t.Errorf("long request %d: %+v", i, r)
		}
	}
	// A held request reaches the engine only after SIGCONT: its first token came after it, and its
	// TTFT (from its arrival at the API server) holds the wait, while the engine's queue time
	// (from the engine's own QUEUED event) does not: TTFT - queue - prefill >= the time it was held.
	spans := map[string]Span{}
	testenv.WaitFor(t, time.Minute, "the held requests' spans", func() bool {
		for _, s := range col.Spans() {
			spans[s.TraceID] = s
		}
		for _, h := range held {
			if _, ok := spans[h.traceID]; !ok {
				return false
			}
		}
		return true
	})
	var minGap, maxGap time.Duration = time.Hour, 0
	for i, h := range held {
		if h.res.Err != nil || h.res.Finish != "length" {
			t.Errorf("held request %d: %+v", i, h.res)
			continue
		}
		if got := h.sent.Add(h.res.FirstToken); got.Before(cont) {
			t.Errorf("held request %d got its first token %s before SIGCONT", i, cont.Sub(got))
		}
		s := spans[h.traceID]
		outside := time.Duration((attrFloat(s, "gen_ai.latency.time_to_first_token") - attrFloat(s, "gen_ai.latency.time_in_queue") -
			attrFloat(s, "gen_ai.latency.time_in_model_prefill")) * float64(time.Second))
		heldFor := cont.Sub(h.sent)
		minGap, maxGap = min(minGap, outside-heldFor), max(maxGap, outside-heldFor)
		if outside < heldFor-500*time.Millisecond {
			t.Errorf("held request %d: TTFT - queue - prefill = %s, but it was held %s before SIGCONT", i, outside.Round(time.Millisecond), heldFor.Round(time.Millisecond))
		}
	}
	t.Logf("  held requests: TTFT - queue - prefill minus the time held before SIGCONT: %s to %s", minGap.Round(time.Millisecond), maxGap.Round(time.Millisecond))
	d := func(name string) float64 { return after.v(name) - before.v(name) }
	t.Logf("  over the episode: TTFT mean %.2f s, queue mean %.2f s, prefill mean %.3f s (%v requests)",
		d("vllm:time_to_first_token_seconds_sum")/d("vllm:time_to_first_token_seconds_count"),
		d("vllm:request_queue_time_seconds_sum")/d("vllm:request_queue_time_seconds_count"),
		d("vllm:request_prefill_time_seconds_sum")/d("vllm:request_prefill_time_seconds_count"), d("vllm:request_success_total"))
	// The backlog after the hang: the held requests were queued at once.
	if peakWaiting < float64(len(held))/2 {
		t.Errorf("after SIGCONT the queue peaked at %v with %d requests held", peakWaiting, len(held))
	}
}

// attrFloat is a numeric span attribute (0 when absent).
func attrFloat(s Span, key string) float64 {
	switch v := s.Attrs[key].(type) {
	case float64:
		return v
	case int64:
		return float64(v)
	}
	return 0
}
