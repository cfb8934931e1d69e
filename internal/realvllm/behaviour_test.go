//go:build realvllm

package realvllm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// The behaviour checks: each asserts what the real vLLM does, and docs/vllm-facts.md states it
// with the name of the test.

type snapshot map[string]*dto.MetricFamily

func snap(t *testing.T) snapshot { t.Helper(); return snapOf(t, srv) }

// snapOf parses the /metrics of s (a server of its own test, or the package's).
func snapOf(t *testing.T, s *Server) snapshot {
	t.Helper()
	text, err := s.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	fams, err := Families(text)
	if err != nil {
		t.Fatal(err)
	}
	return snapshot(fams)
}

func (s snapshot) v(name string, match ...string) float64 {
	m := map[string]string{}
	for i := 0; i+1 < len(match); i += 2 {
		m[match[i]] = match[i+1]
	}
	return Sum(s, name, m)
}

// waitIdle waits until the engine has no running or waiting request, and the metrics have
// caught up (vLLM publishes them once per engine step).
func waitIdle(t *testing.T) snapshot { t.Helper(); return waitIdleOn(t, srv) }

func waitIdleOn(t *testing.T, srv *Server) snapshot {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		s := snapOf(t, srv)
		if s.v("vllm:num_requests_running") == 0 && s.v("vllm:num_requests_waiting") == 0 {
			time.Sleep(1500 * time.Millisecond) // two stat intervals, so the counters are final
			return snapOf(t, srv)
		}
		if time.Now().After(deadline) {
			t.Fatalf("vLLM not idle after 3m: running %v, waiting %v", s.v("vllm:num_requests_running"), s.v("vllm:num_requests_waiting"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func traceparent() (header, traceID, spanID string) {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	traceID, spanID = hex.EncodeToString(b[:16]), hex.EncodeToString(b[16:])
	return "00-" + traceID + "-" + spanID + "-01", traceID, spanID
}

var finishedHistograms = []string{
	"vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds", "vllm:request_prefill_time_seconds",
	"vllm:request_decode_time_seconds", "vllm:request_inference_time_seconds", "vllm:request_prompt_tokens",
	"vllm:request_generation_tokens", "vllm:request_time_per_output_token_seconds",
}

// TestClientDisconnectMidStreamIsNotCountedAsFinished: clients that disconnect after a few
// streamed tokens. Their requests are aborted inside vLLM but never recorded as finished.
func TestClientDisconnectMidStreamIsNotCountedAsFinished(t *testing.T) {
	before := waitIdle(t)
	const n, prompt = 3, 40
	var wg sync.WaitGroup
	results := make([]Result, n)
	for i := 0; i < n; i++ {
		tp, _, _ := traceparent()
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = srv.Complete(context.Background(), Request{PromptTokens: prompt, MaxTokens: 400, GiveUpChunks: 5, Seed: 1000 + i, Traceparent: tp})
		}(i)
	}
	wg.Wait()
	for i, r := range results {
		if !r.GaveUp || r.Chunks != 5 {
			t.Fatalf("request %d did not stream 5 chunks before the client left: %+v", i, r)
		}
	}
	after := waitIdle(t)
	d := func(name string, match ...string) float64 { return after.v(name, match...) - before.v(name, match...) }
	t.Logf("vLLM %s, %d clients disconnected after 5 streamed chunks (prompt %d tokens, max_tokens 400):", srv.Version, n, prompt)
	for _, r := range []string{"stop", "length", "abort", "error", "repetition"} {
		t.Logf("  request_success_total{finished_reason=%q} +%v", r, d("vllm:request_success_total", "finished_reason", r))
	}
	for _, h := range finishedHistograms {
		t.Logf("  %s_count +%v", h, d(h+"_count"))
	}
	for _, c := range []string{"vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:time_to_first_token_seconds_count",
		"vllm:inter_token_latency_seconds_count", "vllm:prefix_cache_queries_total", "vllm:num_preemptions_total"} {
		t.Logf("  %s +%v", c, d(c))
	}
	if got := d("vllm:request_success_total", "finished_reason", "abort"); got != 0 {
		t.Errorf("request_success_total{finished_reason=\"abort\"} rose by %v for client disconnects; vLLM V1 does not count them (output_processor.py drops an aborted request)", got)
	}
	if got := d("vllm:request_success_total"); got != 0 {
		t.Errorf("request_success_total rose by %v", got)
	}
	for _, h := range finishedHistograms {
		if got := d(h + "_count"); got != 0 {
			t.Errorf("%s_count rose by %v for aborted requests", h, got)
		}
	}
	if got := d("vllm:prompt_tokens_total"); got != n*prompt {
		t.Errorf("prompt_tokens_total rose by %v, want %d (the aborted requests' prompts)", got, n*prompt)
	}
	if got := d("vllm:time_to_first_token_seconds_count"); got != n {
		t.Errorf("time_to_first_token_seconds_count rose by %v, want %d", got, n)
	}
	if got := d("vllm:generation_tokens_total"); got < 5*n {
		t.Errorf("generation_tokens_total rose by %v, want at least the %d tokens streamed", got, 5*n)
	}
}

// TestPreemptionIsCountedWhenThePreemptedRequestResumes: more long requests than the KV pool
// holds. The scheduler preempts (the request goes back to waiting, with no new arrival) before
// num_preemptions_total moves: the counter rises only once the preempted request runs again.
func TestPreemptionIsCountedWhenThePreemptedRequestResumes(t *testing.T) {
	before := waitIdle(t)
	// 4 requests of 100 + 300 tokens want 4 x 13 = 52 blocks of 32 tokens; the pool has 24.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	done := make(chan []Result, 1)
	go func() {
		done <- srv.Load(ctx, maxNumSeqs, 0, 0, func(i int) Request {
			return Request{PromptTokens: 100, MaxTokens: 300, Seed: 2000 + i}
		})
	}()
	var (
		sawRunningFull         bool
		sawRequeuedBeforeCount bool
		maxKV                  float64
		samples                int
	)
	preBase := before.v("vllm:num_preemptions_total")
poll:
	for {
		select {
		case res := <-done:
			for i, r := range res {
				if r.Err != nil || r.Finish != "length" {
					t.Fatalf("request %d: %+v", i, r)
				}
			}
			break poll
		default:
		}
		s := snap(t)
		samples++
		running, waiting := s.v("vllm:num_requests_running"), s.v("vllm:num_requests_waiting")
		pre := s.v("vllm:num_preemptions_total") - preBase
		maxKV = max(maxKV, s.v("vllm:kv_cache_usage_perc"))
		if running == maxNumSeqs {
			sawRunningFull = true
		}
		// Every request was admitted once (running was full); one waiting again was preempted.
		if sawRunningFull && waiting > 0 && pre == 0 {
			if !sawRequeuedBeforeCount {
				t.Logf("preempted but not counted yet: running %v, waiting %v, kv %.2f, num_preemptions_total +%v", running, waiting, s.v("vllm:kv_cache_usage_perc"), pre)
			}
			sawRequeuedBeforeCount = true
		}
		time.Sleep(50 * time.Millisecond)
	}
	after := waitIdle(t)
	pre := after.v("vllm:num_preemptions_total") - preBase
	hist := after.v("vllm:request_num_preemptions_sum") - before.v("vllm:request_num_preemptions_sum")
	t.Logf("vLLM %s: %d samples, peak KV usage %.2f, num_preemptions_total +%v, request_num_preemptions_sum +%v", srv.Version, samples, maxKV, pre, hist)
	if pre == 0 {
		t.Fatalf("no preemption counted with a KV pool of %d tokens for %d requests of 400 tokens", numBlocks*blockSize, maxNumSeqs)
	}
	if hist != pre {
		t.Errorf("request_num_preemptions_sum +%v differs from num_preemptions_total +%v", hist, pre)
	}
	if !sawRunningFull || !sawRequeuedBeforeCount {
		t.Errorf("never saw a preempted request back in the queue before the counter moved (running full %v); the counter is not late", sawRunningFull)
	}
	if maxKV < 0.9 {
		t.Errorf("peak KV usage %.2f: the pool was never near full", maxKV)
	}
}

// TestProfilerStartStopAnswersAndStall: /start_profile and /stop_profile answers, a second
// start, a stop without a start, the trace files, and whether streaming stalls during the stop.
func TestProfilerStartStopAnswersAndStall(t *testing.T) {
	waitIdle(t)
	ctx := context.Background()
	post := func(path string) (int, string, time.Duration) {
		code, body, d, err := srv.Post(ctx, path)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		t.Logf("POST %s -> %d %q in %s", path, code, body, d.Round(time.Millisecond))
		return code, body, d
	}
	// A stop without a start is answered like a stop: 200, empty body.
	if code, body, _ := post("/stop_profile"); code != 200 || body != "" {
		t.Errorf("stop without a start: %d %q, want 200 and an empty body", code, body)
	}
	if code, body, _ := post("/start_profile"); code != 200 || body != "" {
		t.Fatalf("start_profile: %d %q, want 200 and an empty body", code, body)
	}
	// A second start while a session is active is refused with 409 (docs/vllm-facts.md: vLLM's source
	// read as ignoring it).
	if code, body, _ := post("/start_profile"); code != 409 || !strings.Contains(body, "already active") {
		t.Errorf("second start while active: %d %q, want 409 \"A profiling session is already active\"", code, body)
	}
	// Load while profiling, then a streaming request that runs across the stop.
	res := srv.Load(ctx, 4, 50*time.Millisecond, 0, func(i int) Request { return Request{PromptTokens: 30, MaxTokens: 30, Seed: 3000 + i} })
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("request %d during the profile: %v", i, r.Err)
		}
	}
	type gap struct {
		at  time.Time
		gap time.Duration
	}
	var gaps []gap
	streamDone := make(chan Result, 1)
	go func() {
		streamDone <- srv.streamGaps(ctx, Request{PromptTokens: 20, MaxTokens: 480, Seed: 3100}, func(at time.Time, g time.Duration) { gaps = append(gaps, gap{at, g}) })
	}()
	time.Sleep(300 * time.Millisecond) // the stream is under way (a stall shows as one long gap)
	stopStart := time.Now()
	code, _, stopDur := post("/stop_profile")
	stopEnd := time.Now()
	if code != 200 {
		t.Fatalf("stop_profile: %d", code)
	}
	r := <-streamDone
	if r.Err != nil {
		t.Fatalf("the stream across the stop: %v", r.Err)
	}
	var before, during time.Duration
	for _, g := range gaps {
		if g.at.Before(stopStart) {
			before = max(before, g.gap)
		} else if g.at.Before(stopEnd.Add(time.Second)) {
			during = max(during, g.gap)
		}
	}
	t.Logf("vLLM %s: stop_profile took %s; longest gap between streamed tokens before the stop %s, during/just after %s",
		srv.Version, stopDur.Round(time.Millisecond), before.Round(time.Millisecond), during.Round(time.Millisecond))
	var files []string
	_ = filepath.Walk(profileDir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			files = append(files, strings.TrimPrefix(p, profileDir+"/")+fmt.Sprintf(" (%d bytes)", info.Size()))
		}
		return nil
	})
	t.Logf("trace files: %v", files)
	// The worker's trace (rank0.*) and, new in the V1 front end, the API server's AsyncLLM trace.
	for _, want := range []string{"rank0.", ".async_llm."} {
		found := false
		for _, f := range files {
			if strings.Contains(f, want) && strings.Contains(f, ".pt.trace.json.gz") {
				found = true
			}
		}
		if !found {
			t.Errorf("no %s*.pt.trace.json.gz in %s after stop_profile: %v", want, profileDir, files)
		}
	}
	// The engine makes no progress while it writes the trace: the stream across the stop stood
	// still for most of it.
	if during < stopDur/2 {
		t.Errorf("the stream's longest gap during the stop was %s of a %s stop: serving did not stall", during, stopDur)
	}
}

// TestLLMRequestSpans: one llm_request span per finished request, child of the caller's
// traceparent, with the gen_ai attributes and the service name; none for aborted requests.
func TestLLMRequestSpans(t *testing.T) {
	waitIdle(t)
	// First a request whose client disconnects mid-stream, then two that finish: by the time
	// the finished ones' spans arrive, an aborted request's span would have been exported too.
	abortTP, abortedTrace, _ := traceparent()
	if r := srv.Complete(context.Background(), Request{PromptTokens: 25, MaxTokens: 400, GiveUpChunks: 3, Seed: 3999, Traceparent: abortTP}); !r.GaveUp {
		t.Fatalf("the aborting client did not disconnect mid-stream: %+v", r)
	}
	waitIdle(t)
	type sent struct{ trace, parent string }
	var reqs []sent
	for i := 0; i < 2; i++ {
		tp, traceID, spanID := traceparent()
		r := srv.Complete(context.Background(), Request{PromptTokens: 25, MaxTokens: 12, Seed: 4000 + i, Traceparent: tp})
		if r.Err != nil || r.Finish != "length" {
			t.Fatalf("request %d: %+v", i, r)
		}
		reqs = append(reqs, sent{traceID, spanID})
	}
	byTrace := func() map[string][]Span {
		m := map[string][]Span{}
		for _, s := range col.Spans() {
			m[s.TraceID] = append(m[s.TraceID], s)
		}
		return m
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		m := byTrace()
		if len(m[reqs[0].trace]) > 0 && len(m[reqs[1].trace]) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no span for the finished requests after 60s; %d spans received", len(col.Spans()))
		}
		time.Sleep(200 * time.Millisecond)
	}
	m := byTrace()
	for _, r := range reqs {
		spans := m[r.trace]
		if len(spans) != 1 {
			t.Errorf("trace %s: %d spans, want 1", r.trace, len(spans))
		}
		s := spans[0]
		t.Logf("vLLM %s span: name %q kind %s service %q parent %s attributes %v", srv.Version, s.Name, s.Kind, s.Service, s.ParentSpanID, s.Attrs)
		if s.Name != "llm_request" || s.Kind.String() != "SPAN_KIND_SERVER" || s.Service != serviceName || s.ParentSpanID != r.parent {
			t.Errorf("span: name %q kind %s service %q parent %q, want llm_request SERVER %q %q", s.Name, s.Kind, s.Service, s.ParentSpanID, serviceName, r.parent)
		}
		for _, a := range []string{"gen_ai.latency.time_in_queue", "gen_ai.latency.time_to_first_token", "gen_ai.latency.e2e",
			"gen_ai.latency.time_in_model_prefill", "gen_ai.latency.time_in_model_decode", "gen_ai.latency.time_in_model_inference",
			"gen_ai.usage.prompt_tokens", "gen_ai.usage.completion_tokens", "gen_ai.request.id"} {
			if _, ok := s.Attrs[a]; !ok {
				t.Errorf("span has no attribute %s", a)
			}
		}
		if got := fmt.Sprint(s.Attrs["gen_ai.usage.prompt_tokens"]); got != "25" {
			t.Errorf("gen_ai.usage.prompt_tokens = %s, want 25", got)
		}
	}
	if len(m[abortedTrace]) > 0 {
		t.Errorf("the aborted request got a span: %+v", m[abortedTrace][0])
	}
	t.Logf("%d spans received in all; none for the aborted request", len(col.Spans()))
}
