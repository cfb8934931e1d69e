package sim

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// tinyConfig is a small engine whose behaviour can be followed by hand.
func tinyConfig() Config {
	c := DefaultConfig()
	c.MaxNumSeqs = 4
	c.MaxNumBatchedTokens = 64
	c.NumGPUBlocks = 16
	c.BlockSize = 4
	c.MaxModelLen = 64
	c.Jitter = 0
	c.EnablePrefixCaching = false
	return c
}

func newTiny(t *testing.T, mutate func(*Config)) *Engine {
	t.Helper()
	c := tinyConfig()
	c.Start = epoch
	if mutate != nil {
		mutate(&c)
	}
	e, err := NewEngine(c)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// add enqueues a request with exact lengths (no randomness).
func add(e *Engine, at time.Time, prompt, output int) *request {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := &request{arrival: at, promptLen: prompt, targetOutput: output, targetReason: reasonStop, synthetic: true}
	e.enqueue(r)
	return r
}

// submit is an HTTP client's request reaching the API server at at.
func submit(t *testing.T, e *Engine, at time.Time, prompt, maxTokens int, timeout time.Duration) *Handle {
	t.Helper()
	h, err := e.Submit(at, "/v1/completions", "", prompt, maxTokens, timeout)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func counterValue(t *testing.T, e *Engine, key string) float64 {
	t.Helper()
	v := &vclock{t: t, e: e}
	return v.snap().values[key]
}

func TestScheduler(t *testing.T) {
	t.Run("a long prompt is prefilled in chunks within the token budget before its first token", func(t *testing.T) {
		e := newTiny(t, func(c *Config) { c.MaxNumBatchedTokens = 16 })
		r := add(e, epoch, 40, 3)
		now := epoch
		for i, want := range []int{16, 32, 40} {
			now = now.Add(e.Step(now).Duration)
			if r.numComputed != want {
				t.Fatalf("after step %d computed %d tokens, want %d", i+1, r.numComputed, want)
			}
		}
		if r.output != 1 || r.firstTokenAt.IsZero() {
			t.Fatalf("first token should come with the last prefill chunk, got output=%d", r.output)
		}
	})

	t.Run("running requests are scheduled before waiting ones get the remaining budget", func(t *testing.T) {
		e := newTiny(t, func(c *Config) { c.MaxNumBatchedTokens = 10; c.NumGPUBlocks = 64 })
		a := add(e, epoch, 8, 10)
		now := epoch.Add(e.Step(epoch).Duration) // a prefilled, first token
		b := add(e, now, 30, 5)
		now = now.Add(e.Step(now).Duration)
		if a.output != 2 {
			t.Fatalf("the decoding request should get its token first, output=%d", a.output)
		}
		if b.numComputed != 9 {
			t.Fatalf("the waiting request should get the 9 tokens left in the budget, got %d", b.numComputed)
		}
	})

	t.Run("the running batch never exceeds max_num_seqs", func(t *testing.T) {
		e := newTiny(t, func(c *Config) { c.NumGPUBlocks = 1000 })
		for range 10 {
			add(e, epoch, 4, 50)
		}
		now := epoch
		for range 20 {
			now = now.Add(e.Step(now).Duration)
			if st := e.Stats(); st.Running > 4 {
				t.Fatalf("running=%d > max_num_seqs=4", st.Running)
			}
		}
		if st := e.Stats(); st.Running != 4 || st.Waiting != 6 {
			t.Fatalf("want 4 running and 6 waiting, got %+v", st)
		}
	})

	t.Run("when blocks run out the last running request is preempted to the front of the queue and nothing is admitted that step", func(t *testing.T) {
		// 16 blocks of 4 tokens = 64 tokens. Two requests of 28-token prompts
		// take 7 blocks each; decoding grows them until the pool is exhausted.
		e := newTiny(t, nil)
		first := add(e, epoch, 28, 30)
		second := add(e, epoch, 28, 30)
		now := epoch
		now = now.Add(e.Step(now).Duration)
		if e.Stats().Running != 2 {
			t.Fatalf("both should run, stats %+v", e.Stats())
		}
		third := add(e, now, 2, 2)
		var rec []StepRecord
		e.SetStepObserver(func(s StepRecord) { rec = append(rec, s) })
		for i := 0; i < 40 && e.Stats().Preemptions == 0; i++ {
			now = now.Add(e.Step(now).Duration)
		}
		if e.Stats().Preemptions == 0 {
			t.Fatal("no preemption although the pool was exhausted")
		}
		last := rec[len(rec)-1]
		if last.Admitted != 0 {
			t.Errorf("a step with a preemption admitted %d requests", last.Admitted)
		}
		if e.waiting[0] != second || second.numComputed != 0 || second.blocks != 0 {
			t.Errorf("the preempted (last) request should be at the front with its blocks freed: front=%v computed=%d blocks=%d",
				e.waiting[0].id, second.numComputed, second.blocks)
		}
		if first.preemptions != 0 {
			t.Error("the first (highest priority) request was preempted")
		}
		_ = third
		if got := counterValue(t, e, "vllm:num_preemptions_total"); got != 0 {
			t.Errorf("num_preemptions_total=%v right after the preemption: vLLM counts it only when the victim emits its next token", got)
		}
	})

	t.Run("a preemption is counted when the preempted request emits its next token after recompute", func(t *testing.T) {
		e := newTiny(t, nil)
		add(e, epoch, 28, 30)
		second := add(e, epoch, 28, 30)
		now := epoch
		for i := 0; i < 400 && second.preemptions == 0; i++ {
			now = now.Add(e.Step(now).Duration)
		}
		if second.preemptions == 0 {
			t.Fatal("no preemption although the pool was exhausted")
		}
		out := second.output
		for i := 0; i < 400 && second.output == out; i++ {
			if got := counterValue(t, e, "vllm:num_preemptions_total"); got != 0 {
				t.Fatalf("num_preemptions_total=%v before the preempted request resumed", got)
			}
			now = now.Add(e.Step(now).Duration)
		}
		if got := counterValue(t, e, "vllm:num_preemptions_total"); got != float64(second.preemptions) {
			t.Fatalf("num_preemptions_total=%v after the request resumed, want %d", got, second.preemptions)
		}
	})

	t.Run("a preempted request whose client gives up before it resumes is never counted", func(t *testing.T) {
		e := newTiny(t, nil)
		add(e, epoch, 28, 30)
		h := submit(t, e, epoch, 28, 30, time.Hour)
		now := epoch
		for i := 0; i < 400 && h.r.preemptions == 0; i++ {
			now = now.Add(e.Step(now).Duration)
		}
		if h.r.preemptions == 0 {
			t.Fatal("no preemption although the pool was exhausted")
		}
		e.Abort(h, now)
		for i := 0; i < 400 && e.Stats().Running+e.Stats().Waiting > 0; i++ {
			now = now.Add(e.Step(now).Duration)
		}
		if got := counterValue(t, e, "vllm:num_preemptions_total"); got != 0 {
			t.Fatalf("num_preemptions_total=%v: the preempted request was aborted before it resumed", got)
		}
		if e.Stats().Preemptions == 0 {
			t.Fatal("the scheduler should still know it preempted")
		}
	})

	t.Run("a preempted request is recomputed with its output and keeps generating", func(t *testing.T) {
		e := newTiny(t, nil)
		add(e, epoch, 28, 30)
		second := add(e, epoch, 28, 30)
		now := epoch
		for i := 0; i < 400 && e.Stats().Running+e.Stats().Waiting > 0; i++ {
			now = now.Add(e.Step(now).Duration)
		}
		if second.output != 30 || second.preemptions == 0 {
			t.Fatalf("second request: output=%d preemptions=%d, want 30 tokens after at least one preemption", second.output, second.preemptions)
		}
		if got := counterValue(t, e, "vllm:request_success_total{finished_reason=stop}"); got != 2 {
			t.Fatalf("stop finishes = %v, want 2", got)
		}
		if e.Stats().UsedBlocks != 0 {
			t.Fatalf("blocks leaked: %d", e.Stats().UsedBlocks)
		}
	})
}

func TestClientTimeouts(t *testing.T) {
	t.Run("a request whose client gives up is removed and never counted as finished, as in every vLLM V1 release", func(t *testing.T) {
		e := newTiny(t, nil)
		h := submit(t, e, epoch, 8, 60, 500*time.Millisecond)
		now := epoch
		for now.Sub(epoch) < time.Second {
			now = now.Add(e.Step(now).Duration)
		}
		select {
		case res := <-h.Done:
			if res.FinishReason != reasonAbort {
				t.Fatalf("finish reason %q, want abort", res.FinishReason)
			}
			if res.CompletionTokens == 0 {
				t.Fatal("the request should have generated tokens before its client gave up")
			}
		default:
			t.Fatal("the request did not finish")
		}
		if st := e.Stats(); st.Running+st.Waiting != 0 || st.UsedBlocks != 0 {
			t.Fatalf("aborted request still in the engine: %+v", st)
		}
		v := &vclock{t: t, e: e}
		snap := v.snap()
		for _, r := range []string{"stop", "length", "abort", "error", "repetition"} {
			if got := snap.values["vllm:request_success_total{finished_reason="+r+"}"]; got != 0 {
				t.Errorf("request_success_total{finished_reason=%q} = %v, want 0", r, got)
			}
		}
		for _, name := range []string{"vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds", "vllm:request_prompt_tokens"} {
			if n := snap.hists[name].GetSampleCount(); n != 0 {
				t.Errorf("%s has %d observations: a client abort is not a finished request", name, n)
			}
		}
		if n := snap.hists["vllm:time_to_first_token_seconds"].GetSampleCount(); n != 1 {
			t.Errorf("TTFT has %d observations, want the aborted request's first token", n)
		}
		if got := snap.values["vllm:prompt_tokens_total"]; got != 8 {
			t.Errorf("prompt_tokens_total = %v, want the aborted request's 8", got)
		}
	})
}

func TestStepTimeGrowsWithPrefillTokensAndContext(t *testing.T) {
	cfg := tinyConfig()
	cfg.NumGPUBlocks, cfg.MaxNumBatchedTokens, cfg.MaxModelLen, cfg.MaxNumSeqs = 10000, 4096, 8192, 64
	stepWith := func(prompt, n int) time.Duration {
		e, _ := NewEngine(cfg)
		for range n {
			add(e, epoch, prompt, 100)
		}
		d := e.Step(epoch).Duration
		return d
	}
	decodeWith := func(prompt, n int) time.Duration {
		e, _ := NewEngine(cfg)
		for range n {
			add(e, epoch, prompt, 100)
		}
		now := epoch
		for range 10 {
			now = now.Add(e.Step(now).Duration)
		}
		return e.Step(now).Duration
	}
	if a, b := stepWith(100, 1), stepWith(2000, 1); b <= a {
		t.Errorf("a 2000-token prefill step (%v) should be slower than a 100-token one (%v)", b, a)
	}
	if a, b := decodeWith(100, 8), decodeWith(3000, 8); b <= a {
		t.Errorf("decoding with 8x3000 tokens of context (%v) should be slower than with 8x100 (%v)", b, a)
	}
	if a, b := decodeWith(100, 4), decodeWith(100, 64); b <= a {
		t.Errorf("a 64-wide decode (%v) should be slower than a 4-wide one (%v)", b, a)
	}
}

func TestSameSeedGivesTheSameRun(t *testing.T) {
	run := func(seed uint64) snapshot {
		cfg := DefaultConfig()
		cfg.Seed = seed
		v := newVirtual(t, cfg, "client-timeouts")
		v.run(20 * time.Second)
		return v.snap()
	}
	a, b, c := run(7), run(7), run(8)
	for _, k := range []string{"vllm:generation_tokens_total", "vllm:request_success_total{finished_reason=stop}", "vllm:prompt_tokens_total"} {
		if a.values[k] != b.values[k] {
			t.Errorf("%s differs between runs with the same seed: %v vs %v", k, a.values[k], b.values[k])
		}
	}
	if a.values["vllm:generation_tokens_total"] == c.values["vllm:generation_tokens_total"] {
		t.Error("different seeds gave identical runs")
	}
}

func TestLittlesLawHoldsInSteadyState(t *testing.T) {
	// A small batch cap makes a real queue form at ~85% utilisation.
	cfg := DefaultConfig()
	cfg.MaxNumSeqs = 8
	v := newVirtual(t, cfg, "")
	sc := Scenarios["healthy"]
	sc.ArrivalRate = 2.6
	v.e.SetScenario(sc, true, v.now)
	v.run(200 * time.Second) // warm up
	a := v.snap()
	v.resetIntegrals()
	v.run(3000 * time.Second)
	w := window{a, v.snap()}

	meanWaiting := v.waitingArea / v.area
	arrivals := w.count("vllm:request_queue_time_seconds") / w.secs() // = throughput = arrival rate in steady state
	queue := w.mean("vllm:request_queue_time_seconds")
	t.Logf("L=%.3f lambda=%.3f W=%.3fs lambda*W=%.3f", meanWaiting, arrivals, queue, arrivals*queue)
	if meanWaiting < 0.5 {
		t.Fatalf("the load is too light to test Little's law: mean waiting %.3f", meanWaiting)
	}
	if math.Abs(arrivals-sc.ArrivalRate)/sc.ArrivalRate > 0.05 {
		t.Errorf("throughput %.3f/s differs from the arrival rate %.3f/s: not in steady state", arrivals, sc.ArrivalRate)
	}
	if got, want := meanWaiting, arrivals*queue; math.Abs(got-want)/want > 0.1 {
		t.Errorf("Little's law: mean waiting %.3f vs arrival rate x mean queue time %.3f (more than 10%% apart)", got, want)
	}

	// The same for the running batch: L = lambda x (time from scheduled to finish).
	meanRunning := v.runningArea / v.area
	inference := w.mean("vllm:request_inference_time_seconds")
	if got, want := meanRunning, arrivals*inference; math.Abs(got-want)/want > 0.1 {
		t.Errorf("Little's law for the batch: mean running %.3f vs lambda x inference time %.3f", got, want)
	}
}

func TestThroughputPlateausPastCapacity(t *testing.T) {
	type point struct{ rate, genTPS, queue, running, preempt float64 }
	var pts []point
	for _, rate := range []float64{70, 140} { // about 2x and 4x capacity
		v := newVirtual(t, DefaultConfig(), "")
		sc := Scenarios["overload"]
		sc.ArrivalRate = rate
		v.e.SetScenario(sc, true, v.now)
		v.run(30 * time.Second)
		a := v.snap()
		v.run(60 * time.Second)
		s := window{a, v.snap()}.signature()
		pts = append(pts, point{rate, s.GenTokensPerSec, s.QueueMean, s.Running, s.PreemptPerSec})
	}
	lo, hi := pts[0], pts[1]
	t.Logf("2x: %+v  4x: %+v", lo, hi)
	if math.Abs(hi.genTPS-lo.genTPS)/lo.genTPS > 0.1 {
		t.Errorf("generation tokens/s should plateau past capacity: %.0f at %v req/s vs %.0f at %v req/s", lo.genTPS, lo.rate, hi.genTPS, hi.rate)
	}
	if hi.queue < 1.3*lo.queue {
		t.Errorf("queue time should keep growing with load: %.1fs at 2x vs %.1fs at 4x", lo.queue, hi.queue)
	}
	for _, p := range pts {
		if p.running < 0.9*256 || p.preempt != 0 {
			t.Errorf("at %v req/s the batch should be pinned at max_num_seqs without preemption: running=%v preemptions/s=%v", p.rate, p.running, p.preempt)
		}
	}
}

func TestPreemptionsHappenOnlyWhenTheKVPoolIsExhausted(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		preempt  bool
	}{
		{"healthy", false},
		{"overload", false},
		{"long-prompts", false},
		{"wide-batch", false},
		{"client-timeouts", false},
		{"kv-pressure", true},
	} {
		t.Run(tc.scenario+" preempts="+map[bool]string{true: "yes", false: "never"}[tc.preempt], func(t *testing.T) {
			v := newVirtual(t, DefaultConfig(), "")
			minKV := 2.0
			v.e.SetStepObserver(func(s StepRecord) {
				if s.Preemptions > 0 {
					minKV = min(minKV, s.KVUsage)
				}
			})
			v.switchTo(tc.scenario)
			v.run(120 * time.Second)
			n := v.e.Stats().Preemptions
			if !tc.preempt && n != 0 {
				t.Fatalf("%d preemptions in %s", n, tc.scenario)
			}
			if tc.preempt {
				if n == 0 {
					t.Fatal("no preemption although the scenario exhausts the KV pool")
				}
				// After a preemption only the victim's blocks are free: the pool was full.
				if minKV < 0.95 {
					t.Fatalf("a preemption happened with KV usage %.3f after it: the pool was not exhausted", minKV)
				}
			}
		})
	}
}

// vllm-sim defers no request (no LoRA budget, no KV transfer): under a queue, every waiting
// request is waiting for capacity, as num_requests_waiting_by_reason says on vLLM 0.32.
func TestEveryWaitingRequestWaitsForCapacity(t *testing.T) {
	e, err := NewEngine(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	e.SetScenario(Scenarios["overload"], true, now)
	for end := now.Add(20 * time.Second); now.Before(end); {
		now = now.Add(e.Step(now).Duration)
	}
	value := func(g prometheus.Gauge) float64 {
		var m dto.Metric
		if err := g.Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetGauge().GetValue()
	}
	waiting, capacity := value(e.m.waiting), value(e.m.waitingCapacity)
	if waiting == 0 || capacity != waiting {
		t.Fatalf("waiting %v, waiting_by_reason{capacity} %v: want equal and above 0", waiting, capacity)
	}
}
