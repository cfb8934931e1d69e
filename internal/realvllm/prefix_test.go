//go:build realvllm

package realvllm

import (
	"context"
	"testing"
	"time"
)

// TestPrefixCollapseOnAFreshServer: on a server that just started, 12 requests sharing a
// 3,360-token prefix, then 12 of the same length with nothing shared: the prefix-cache hit rate
// (hits / queries, in tokens) falls from 0.875 to 0, the prompt length stays, the prefill computes
// 3,840 tokens a request instead of 480, and prefill time and TTFT rise.
func TestPrefixCollapseOnAFreshServer(t *testing.T) {
	o := CollapseOptions()
	o.OTLP = "http://127.0.0.1:1" // no collector: spans are TestLLMRequestSpans's business
	s, err := Start(o, 10*time.Minute)
	if err != nil {
		t.Fatalf("the prefix-collapse server did not start: %v", err)
	}
	defer s.Stop()
	t.Logf("vLLM %s (max-model-len %d, %d blocks of %d) healthy after %s", s.Version, o.MaxModelLen, o.NumBlocks, o.BlockSize, s.StartupDur.Round(time.Second))
	// The first requests of a new server pay its warm-up (vLLM 0.32 skips its warm-up pass in eager
	// mode with an explicit KV size): one shared and one unique request first, not measured. The
	// shared prefix is then cached, as on a pod that has served for a while.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for i, r := range []Request{CollapseRequest(1000, true), CollapseRequest(1000, false)} {
		if res := s.Complete(ctx, r); res.Err != nil {
			t.Fatalf("warm-up request %d: %v", i, res.Err)
		}
	}
	type phase struct {
		hitRate, promptMean, computedMean, prefillMean, ttftMean, queueMean float64
	}
	run := func(shared bool) phase {
		before := waitIdleOn(t, s)
		for i, r := range s.Load(ctx, 12, 500*time.Millisecond, 2, func(i int) Request { return CollapseRequest(i, shared) }) {
			if r.Err != nil || r.Finish != "length" {
				t.Fatalf("request %d (shared %v): %+v", i, shared, r)
			}
		}
		after := waitIdleOn(t, s)
		d := func(name string) float64 { return after.v(name) - before.v(name) }
		mean := func(h string) float64 { return d(h+"_sum") / d(h+"_count") }
		return phase{
			hitRate:      d("vllm:prefix_cache_hits_total") / d("vllm:prefix_cache_queries_total"),
			promptMean:   mean("vllm:request_prompt_tokens"),
			computedMean: mean("vllm:request_prefill_kv_computed_tokens"),
			prefillMean:  mean("vllm:request_prefill_time_seconds"),
			ttftMean:     mean("vllm:time_to_first_token_seconds"),
			queueMean:    mean("vllm:request_queue_time_seconds"),
		}
	}
	shared, unique := run(true), run(false)
	for _, p := range []struct {
		name string
		phase
	}{{"shared prefix", shared}, {"unique prefixes", unique}} {
		t.Logf("  %s: prefix-cache hit rate %.3f, prompt %.0f tokens of which %.0f computed, prefill mean %.3f s, queue mean %.3f s, TTFT mean %.3f s",
			p.name, p.hitRate, p.promptMean, p.computedMean, p.prefillMean, p.queueMean, p.ttftMean)
	}
	if shared.hitRate < 0.85 {
		t.Errorf("hit rate with a shared 3,360-token prefix %.3f, want 0.875 (each request finds 3,360 of 3,840 tokens)", shared.hitRate)
	}
	// vllm:request_prefill_kv_computed_tokens (prompt tokens less the cached ones, at finish): the
	// prefill recomputes what it reused.
	if shared.computedMean != CollapsePromptTokens-CollapsePrefixTokens || unique.computedMean != CollapsePromptTokens {
		t.Errorf("prefill computed %.0f then %.0f tokens a request, want %d then %d", shared.computedMean, unique.computedMean, CollapsePromptTokens-CollapsePrefixTokens, CollapsePromptTokens)
	}
	if unique.hitRate > 0.05 {
		t.Errorf("hit rate with unique prefixes %.3f, want about 0", unique.hitRate)
	}
	if shared.promptMean != CollapsePromptTokens || unique.promptMean != CollapsePromptTokens {
		t.Errorf("prompt means %.0f and %.0f, want %d both: the collapse must not change the prompt length", shared.promptMean, unique.promptMean, CollapsePromptTokens)
	}
	// 8 times the tokens to compute, but the shared prefix's attention still reads all 3,840: 2.2
	// to 3.3 times the prefill time in the runs so far. 1.5 is the playbooks' prefill_rise.
	if unique.prefillMean < 1.5*shared.prefillMean {
		t.Errorf("prefill mean %.3f s with unique prefixes, %.3f s with the shared one: want it up by half at least", unique.prefillMean, shared.prefillMean)
	}
}
