//go:build realvllm

package realvllm

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/sim"
)

// TestSpecDecodeAcceptanceFallsWhileITLStaysPerStep: n-gram speculation (4 draft tokens, lookup
// 1 to 4) under three kinds of traffic, one after the other: repetitive prompts answered greedily,
// random prompts answered greedily, random prompts sampled at temperature 1. Acceptance falls from
// one to the next; inter_token_latency_seconds is observed once per engine step per request
// (however many tokens the step accepted), so it stays a step time, while the per-request time
// per output token (request_time_per_output_token_seconds) follows the tokens a step gives.
func TestSpecDecodeAcceptanceFallsWhileITLStaysPerStep(t *testing.T) {
	o := Options{MaxNumSeqs: 4, MaxModelLen: 1024, BlockSize: 32, NumBlocks: 256, OTLP: "http://127.0.0.1:1", Args: SpecDecodeArgs(4, 4, 1)}
	s, err := Start(o, 10*time.Minute)
	if err != nil {
		t.Fatalf("the speculative-decoding server did not start: %v", err)
	}
	defer s.Stop()
	t.Logf("vLLM %s with %s, healthy after %s", s.Version, strings.Join(o.Args, " "), s.StartupDur.Round(time.Second))
	type phase struct {
		kind                                 SpecTraffic
		drafts, draftTokens, accepted        float64
		perPos                               [4]float64
		generated, itlCount, itlMean, tpot   float64
		steps, decodeMean, e2eMean, requests float64
	}
	run := func(k SpecTraffic) phase {
		before := waitIdleOn(t, s)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		for i, r := range s.Load(ctx, 12, 0, 4, func(i int) Request { return k.Request(i, 200, 200) }) {
			if r.Err != nil || r.Finish != "length" {
				t.Fatalf("%s, request %d: %+v", k, i, r)
			}
		}
		after := waitIdleOn(t, s)
		d := func(name string, match ...string) float64 { return after.v(name, match...) - before.v(name, match...) }
		p := phase{
			kind: k, drafts: d("vllm:spec_decode_num_drafts_total"), draftTokens: d("vllm:spec_decode_num_draft_tokens_total"),
			accepted: d("vllm:spec_decode_num_accepted_tokens_total"), generated: d("vllm:generation_tokens_total"),
			itlCount: d("vllm:inter_token_latency_seconds_count"), itlMean: d("vllm:inter_token_latency_seconds_sum") / d("vllm:inter_token_latency_seconds_count"),
			tpot:  d("vllm:request_time_per_output_token_seconds_sum") / d("vllm:request_time_per_output_token_seconds_count"),
			steps: d("vllm:iteration_tokens_total_count"), decodeMean: d("vllm:request_decode_time_seconds_sum") / d("vllm:request_decode_time_seconds_count"),
			e2eMean: d("vllm:e2e_request_latency_seconds_sum") / d("vllm:e2e_request_latency_seconds_count"), requests: d("vllm:request_success_total"),
		}
		for i := range p.perPos {
			p.perPos[i] = d("vllm:spec_decode_num_accepted_tokens_per_pos_total", "position", fmt.Sprint(i))
		}
		return p
	}
	var phases []phase
	for _, k := range []SpecTraffic{SpecRepetitive, SpecRandomGreedy, SpecRandomSampled} {
		p := run(k)
		phases = append(phases, p)
		t.Logf("  %s: %v requests, %v tokens generated in %v engine steps", k, p.requests, p.generated, p.steps)
		t.Logf("    drafts %v, draft tokens %v, accepted %v: acceptance rate %.3f, mean acceptance length %.2f, accepted per position %v",
			p.drafts, p.draftTokens, p.accepted, p.accepted/p.draftTokens, 1+p.accepted/p.drafts, p.perPos)
		t.Logf("    ITL: %v observations (%.2f per generated token), mean %.2f ms; time per output token mean %.2f ms (%.2f x ITL); decode mean %.2f s, e2e mean %.2f s",
			p.itlCount, p.itlCount/p.generated, 1000*p.itlMean, 1000*p.tpot, p.tpot/p.itlMean, p.decodeMean, p.e2eMean)
	}
	// vllm-sim with as many speculative tokens: the same families, types, labels and positions.
	final := snapOf(t, s)
	featureFamiliesExist(t, featureSpecDecode, final)
	compareFeatureFamilies(t, final, simFeatureMetrics(t, o, func(c *sim.Config) { c.NumSpeculativeTokens = 4 }, ""), "vllm:spec_decode_")
	rep, sampled := phases[0], phases[2]
	if r := rep.accepted / rep.draftTokens; r < 0.6 {
		t.Errorf("acceptance with repetitive prompts, greedy: %.3f, want above 0.6 (the greedy output loops)", r)
	}
	if sampled.drafts == 0 {
		t.Fatalf("no draft with sampled output: with prompt_lookup_min 1 the proposer matches single tokens")
	}
	if r := sampled.accepted / sampled.draftTokens; r > 0.15 {
		t.Errorf("acceptance with random prompts, sampled: %.3f, want below 0.15", r)
	}
	// ITL is one observation per step per request: fewer than one per token while drafts are
	// accepted, about one per token when none are.
	if r := rep.itlCount / rep.generated; r > 0.5 {
		t.Errorf("repetitive: %.2f ITL observations per generated token, want well under 1 (one per step, several tokens a step)", r)
	}
	if r := sampled.itlCount / sampled.generated; r < 0.8 {
		t.Errorf("sampled: %.2f ITL observations per generated token, want about 1 (one token a step)", r)
	}
	// So the time per output token is a fraction of the ITL while drafts are accepted, and about
	// the ITL when they are not: ITL alone does not see the acceptance fall.
	if a, b := rep.tpot/rep.itlMean, sampled.tpot/sampled.itlMean; a > 0.6*b {
		t.Errorf("time per output token / ITL: %.2f with acceptance, %.2f without; want the first well under the second", a, b)
	}
	for i, p := range []phase{rep, sampled} {
		if p.perPos[0] < p.perPos[3] {
			t.Errorf("phase %d: accepted at position 0 (%v) below position 3 (%v): a draft token is accepted only after the ones before it", i, p.perPos[0], p.perPos[3])
		}
	}
}
