package sim

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// countAbove is how many observations of the histogram name fell above bound over the window
// (bound is one of its bucket bounds): increase(x_bucket{le="+Inf"}) - increase(x_bucket{le="bound"}).
func (w window) countAbove(name string, bound float64) float64 {
	hb, ha := w.b.hists[name], w.a.hists[name]
	for i, b := range hb.GetBucket() {
		if b.GetUpperBound() == bound {
			below := b.GetCumulativeCount() - ha.GetBucket()[i].GetCumulativeCount()
			return w.count(name) - float64(below)
		}
	}
	panic(fmt.Sprintf("%s has no bucket bound %g", name, bound)) // a mistake in the test
}

// runningMean runs d and returns the running batch's time average over it (what
// avg_over_time(vllm:num_requests_running[d]) reads at a fine scrape).
func (v *vclock) runningMean(d time.Duration) float64 {
	v.resetIntegrals()
	v.run(d)
	return v.runningArea / v.area
}

// decodeWindow measures a window of d: the running batch's mean and the metrics' window.
func (v *vclock) decodeWindow(d time.Duration) (float64, window) {
	a := v.snap()
	r := v.runningMean(d)
	return r, window{a, v.snap()}
}

// prefill-interference: long prompts chunked into the decoding requests' steps stretch every
// decode step while the running batch grows only by the decodes' own slowdown.
func TestLongPromptsBesideDecodesStretchEveryDecodeStep(t *testing.T) {
	v := newVirtual(t, DefaultConfig(), "prefill-interference")
	v.run(20 * time.Second)
	runBefore, before := v.decodeWindow(35 * time.Second) // 20-55 s: chat clients only
	v.run(25 * time.Second)                               // the batch job starts at 60 s
	runAfter, after := v.decodeWindow(35 * time.Second)   // 80-115 s
	b, a := before.signature(), after.signature()
	t.Logf("before: running %.1f %s", runBefore, b)
	t.Logf("after:  running %.1f %s", runAfter, a)

	itlMean, itlP99 := a.ITLMean/b.ITLMean, a.ITLp99/b.ITLp99
	tpot := after.mean("vllm:request_time_per_output_token_seconds") / before.mean("vllm:request_time_per_output_token_seconds")
	spread := (a.ITLp99 / a.ITLMean) / (b.ITLp99 / b.ITLMean)
	batch := runAfter / runBefore
	if itlP99 < 2.2 || itlMean < 1.25 || tpot < 1.25 {
		t.Errorf("ITL p99 x%.2f, ITL mean x%.2f, time per output token x%.2f: want the decode steps stretched (p99 x2.2, means x1.25 or more)", itlP99, itlMean, tpot)
	}
	// Some steps are slow, not all: the distribution spreads (p99 over mean), where a wider batch
	// narrows it (TestAWiderBatchRaisesITLWithTheBatchAndNoLongPrompt).
	if spread < 1.4 {
		t.Errorf("ITL p99/mean went from %.2f to %.2f (x%.2f): want the mixed steps in the tail", b.ITLp99/b.ITLMean, a.ITLp99/a.ITLMean, spread)
	}
	// The batch grows by the long requests themselves and by the chat clients' slower decodes
	// (Little's law), not by more clients: far less than decode-widening's x14.
	if batch > 2 {
		t.Errorf("running batch x%.2f (%.1f -> %.1f): more than the long requests and the slower decodes explain", batch, runBefore, runAfter)
	}
	// The long prompts are in the prompt histogram's tail (observed at finish) ...
	if n := before.countAbove("vllm:request_prompt_tokens", 5000); n != 0 {
		t.Errorf("%g prompts above 5000 tokens before the batch job", n)
	}
	longs := after.countAbove("vllm:request_prompt_tokens", 5000)
	if longs < 0.6*after.secs() {
		t.Errorf("%g prompts above 5000 tokens in %.0f s of 1 long req/s", longs, after.secs())
	}
	// ... and in iteration_tokens_total only once each: vLLM counts a prompt's tokens in the step
	// that completes its prefill, not in the ~3 chunk steps before (vllm/v1/metrics/stats.py).
	steps := after.countAbove("vllm:iteration_tokens_total", 4096)
	if math.Abs(steps-longs) > 0.15*longs+3 {
		t.Errorf("%g engine steps observed above 4096 tokens for %g long prompts: want one each (the step that completes the prefill)", steps, longs)
	}
	if n := before.countAbove("vllm:iteration_tokens_total", 4096); n != 0 {
		t.Errorf("%g steps above 4096 tokens before the batch job", n)
	}
	if a.SchedPreemptPerSec != 0 || a.KV > 0.2 {
		t.Errorf("preemptions %.2f/s, KV %.2f: the slowdown must not come from the KV cache", a.SchedPreemptPerSec, a.KV)
	}
}

// Hard negative: the same clients at a higher rate widen the batch; ITL rises with it, and no
// long prompt is in sight.
func TestAWiderBatchRaisesITLWithTheBatchAndNoLongPrompt(t *testing.T) {
	v := newVirtual(t, DefaultConfig(), "decode-steady")
	v.run(20 * time.Second)
	runBefore, before := v.decodeWindow(30 * time.Second)
	sc, _ := LookupScenario("decode-widening")
	v.e.SetScenario(sc, false, v.now)
	v.run(30 * time.Second)
	runAfter, after := v.decodeWindow(30 * time.Second)
	b, a := before.signature(), after.signature()
	t.Logf("before: running %.1f %s", runBefore, b)
	t.Logf("after:  running %.1f %s", runAfter, a)
	batch, itl := runAfter/runBefore, a.ITLMean/b.ITLMean
	if batch < 4 || itl < 1.8 {
		t.Errorf("running x%.2f, ITL mean x%.2f: want the batch widened (x4) and ITL up with it (x1.8)", batch, itl)
	}
	if batch < itl {
		t.Errorf("running x%.2f below ITL x%.2f: a wider batch raises the step time less than it widens", batch, itl)
	}
	if sb, sa := b.ITLp99/b.ITLMean, a.ITLp99/a.ITLMean; sa > sb {
		t.Errorf("ITL p99/mean went from %.2f to %.2f: a wider batch slows every step, it should not spread the distribution", sb, sa)
	}
	for _, w := range []window{before, after} {
		if n := w.countAbove("vllm:request_prompt_tokens", 5000); n != 0 {
			t.Errorf("%g prompts above 5000 tokens", n)
		}
		if n := w.countAbove("vllm:iteration_tokens_total", 4096); n != 0 {
			t.Errorf("%g steps above 4096 tokens", n)
		}
	}
	if a.Waiting > 2 || a.SchedPreemptPerSec != 0 {
		t.Errorf("waiting %g, preemptions %.2f/s: the wider batch is below the knee", a.Waiting, a.SchedPreemptPerSec)
	}
}

// Hard negative: the batch job alone. Its prompts are as long and its prefill as slow, but no
// decode rides in the chunk steps: ITL stays a decode-only step's.
func TestLongPromptsWithNoDecodesBesideThemLeaveITLAlone(t *testing.T) {
	ref := newVirtual(t, DefaultConfig(), "prefill-interference")
	ref.run(80 * time.Second)
	_, interfered := ref.decodeWindow(40 * time.Second)

	v := newVirtual(t, DefaultConfig(), "long-prompts-alone")
	v.run(20 * time.Second)
	_, w := v.decodeWindow(120 * time.Second)
	s := w.signature()
	t.Logf("long prompts alone: %s", s)
	if n := w.countAbove("vllm:request_prompt_tokens", 5000); n < 6 {
		t.Errorf("%g long prompts in 120 s at 0.1 req/s", n)
	}
	if s.PrefillMean < 0.15 {
		t.Errorf("prefill mean %.3fs: ~7000-token prompts take several chunk steps", s.PrefillMean)
	}
	if s.ITLp99 > 0.05 || s.ITLp99 > interfered.quantile(0.99, "vllm:inter_token_latency_seconds")/2 {
		t.Errorf("ITL p99 %.1f ms (with chat clients decoding beside the same prompts: %.1f ms): the long requests' own decode steps carry no chunk",
			s.ITLp99*1000, interfered.quantile(0.99, "vllm:inter_token_latency_seconds")*1000)
	}
}

// switchKeep switches to the named scenario keeping the requests in flight (a load change, not
// a new server).
func (v *vclock) switchKeep(name string) {
	v.t.Helper()
	sc, err := LookupScenario(name)
	if err != nil {
		v.t.Fatal(err)
	}
	v.e.SetScenario(sc, false, v.now)
}

func (s snapshot) waitingFor(reason string) float64 {
	return s.values["vllm:num_requests_waiting_by_reason{reason="+reason+"}"]
}

// admission-wedge: a burst of tool-calling requests parks deferred for its grammars; on a
// scheduler that counts parked requests against max_num_seqs (vllm#53130) the admission closes
// for good. The running requests finish and are not replaced, the queue grows, the KV cache
// empties; only a restart clears it.
func TestParkedRequestsThatFillMaxNumSeqsWedgeAdmission(t *testing.T) {
	v := newVirtual(t, DefaultConfig(), "decode-steady")
	v.run(30 * time.Second)
	running0 := v.e.Stats().Running
	v.switchKeep("admission-wedge")
	v.run(time.Second)
	if st := v.e.Stats(); st.Running > running0 {
		t.Errorf("running %d a second after the burst, %d before: nothing should be admitted", st.Running, running0)
	}
	v.run(9 * time.Second)
	a := v.snap()
	checkWaitingSplit(t, a)
	v.run(30 * time.Second)
	b := v.snap()
	w := window{a, b}
	checkWaitingSplit(t, b)
	t.Logf("running %d at the switch; 10 s later: running %g, waiting %g (capacity %g, deferred %g), KV %.3f; 40 s: waiting %g",
		running0, a.values["vllm:num_requests_running"], a.values["vllm:num_requests_waiting"], a.waitingFor("capacity"), a.waitingFor("deferred"),
		a.values["vllm:kv_cache_usage_perc"], b.values["vllm:num_requests_waiting"])
	if running0 < 5 {
		t.Fatalf("healthy ran %d requests: nothing to drain", running0)
	}
	if r := b.values["vllm:num_requests_running"]; r != 0 {
		t.Errorf("running %g 40 s into the wedge: the requests running at the switch finish and nothing replaces them", r)
	}
	if d := b.waitingFor("deferred"); d+float64(running0) < float64(DefaultConfig().MaxNumSeqs) || d > float64(DefaultConfig().MaxNumSeqs) {
		t.Errorf("%g parked with %d running at the switch: want them to have filled max_num_seqs %d", d, running0, DefaultConfig().MaxNumSeqs)
	}
	if grow := b.values["vllm:num_requests_waiting"] - a.values["vllm:num_requests_waiting"]; grow < 0.7*6*w.secs() {
		t.Errorf("waiting grew by %g in %.0f s of 6 req/s: new arrivals should queue (for capacity)", grow, w.secs())
	}
	if g, f := w.rate("vllm:generation_tokens_total"), w.signature().FinishedPerSec; g != 0 || f != 0 {
		t.Errorf("%.1f tokens/s, %.2f finished/s: nothing is admitted, so nothing runs", g, f)
	}
	if kv := b.values["vllm:kv_cache_usage_perc"]; kv > 0.05 {
		t.Errorf("KV usage %.3f: parked requests hold no KV blocks, the cache is free", kv)
	}
	if q := w.count("vllm:request_queue_time_seconds"); q != 0 {
		t.Errorf("%g requests scheduled during the wedge", q)
	}
	// It never resumes on its own ...
	v.run(2 * time.Minute)
	if st := v.e.Stats(); st.Running != 0 || st.Waiting < 1000 {
		t.Errorf("3 minutes in: running %d, waiting %d: the wedge should hold", st.Running, st.Waiting)
	}
	// ... and a restart (a new server) serves again.
	v.switchTo("healthy")
	c := v.snap()
	v.run(20 * time.Second)
	if g := (window{c, v.snap()}).rate("vllm:generation_tokens_total"); g == 0 {
		t.Error("no token after the restart")
	}
}

// Hard negative: the same clients on a scheduler without the fault. The burst waits deferred for
// its grammars, then fills the batch and drains: no wedge.
func TestParkedRequestsAreAdmittedOnceTheirGrammarsCompile(t *testing.T) {
	v := newVirtual(t, DefaultConfig(), "healthy")
	v.run(30 * time.Second)
	v.switchKeep("structured-outputs")
	v.run(time.Second)
	if d := v.snap().waitingFor("deferred"); d < 250 {
		t.Errorf("%g deferred 1 s after a burst of 300 with 2 s grammars", d)
	}
	v.run(9 * time.Second)
	a := v.snap()
	if r := a.values["vllm:num_requests_running"]; r < 0.9*float64(DefaultConfig().MaxNumSeqs) {
		t.Errorf("running %g 10 s after the burst: its grammars compiled after 2 s, it should fill the batch", r)
	}
	v.run(80 * time.Second)
	b := v.snap()
	w := window{a, b}
	if d := b.waitingFor("deferred"); d > 30 {
		t.Errorf("%g deferred after the burst drained: want the steady ~12 (6 req/s x 2 s)", d)
	}
	if c := b.waitingFor("capacity"); c > 5 {
		t.Errorf("%g waiting for capacity after the burst drained", c)
	}
	if f := w.signature().FinishedPerSec; f < 6 {
		t.Errorf("%.1f finished/s: the burst and the steady load should be served", f)
	}
}

// Hard negative: a real knee. The running batch is pinned at max_num_seqs with its KV in use,
// tokens flow at the engine's capacity, and the queue that grows waits for capacity.
func TestAKneeKeepsTheBatchFullAndTheKVInUse(t *testing.T) {
	v := newVirtual(t, DefaultConfig(), "healthy")
	v.run(30 * time.Second)
	v.switchKeep("overload")
	v.run(20 * time.Second)
	a := v.snap()
	v.run(30 * time.Second)
	b := v.snap()
	w := window{a, b}
	if r := b.values["vllm:num_requests_running"]; r < 0.9*float64(DefaultConfig().MaxNumSeqs) {
		t.Errorf("running %g: a knee pins the batch at max_num_seqs", r)
	}
	if kv := b.values["vllm:kv_cache_usage_perc"]; kv < 0.2 {
		t.Errorf("KV usage %.3f: a full batch holds its KV", kv)
	}
	if d, c := b.waitingFor("deferred"), b.waitingFor("capacity"); d != 0 || c < 500 {
		t.Errorf("waiting: %g deferred, %g for capacity; want the queue all capacity", d, c)
	}
	if g := w.rate("vllm:generation_tokens_total"); g < 2000 {
		t.Errorf("%.0f tokens/s: a knee serves at capacity", g)
	}
}
