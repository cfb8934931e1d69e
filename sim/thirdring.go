package sim

import "time"

// The third ring (issue 36): long prompts that stretch every decode step beside them, requests
// that wait for a structured-output grammar, and the admission wedge of vllm#53130. The router in
// front of the engines is gateway.go.

// thirdRingScenarios are the pod scenarios of issue 36, calibrated against DefaultConfig.
func thirdRingScenarios() []Scenario {
	// Chat clients with long answers: ~40 requests decoding at once, ~30 ms steps.
	decode := Scenario{
		Name: "decode-steady", Description: "3 req/s of chat requests with ~200-token answers: ~12 requests decoding at once, ITL ~20 ms; the baseline of the prefill-interference scenarios",
		ArrivalRate: 3, PromptMean: 300, PromptSigma: 0.4, OutputMean: 200, OutputSigma: 0.3, MaxTokens: 1024,
		PrefixHitRate: 0.2,
	}
	interfere := decode
	interfere.Name = "prefill-interference"
	interfere.Description = "decode-steady, and 60 s after the switch a batch job starts beside the chat clients: 1 req/s of ~7000-token prompts asking for ~20 tokens. Each long prompt is prefilled in chunks of the step's token budget (--max-num-batched-tokens 2048), and every decode token of those steps waits for the chunk: ITL p99 ~2.5x and its spread (p99 / mean) ~1.8x, ITL mean and time per output token ~1.45x; the running batch grows ~1.6x, by the long requests themselves and the chat clients' slower decodes, not by more clients"
	interfere.LongRate, interfere.LongPromptMean, interfere.LongPromptSigma, interfere.LongOutputMean, interfere.LongAfter = 1, 7000, 0.1, 20, 60*time.Second
	widen := decode
	widen.Name = "decode-widening"
	widen.Description = "decode-steady's clients at twice the rate (12 req/s) and no long prompt: the running batch widens ~14x (~10 to ~140), ITL mean ~3.4x with it, and its spread (p99 / mean) narrows: every step is slower, not some (the hard negative of prefill-interference: decode-bound)"
	widen.ArrivalRate = 10
	alone := Scenario{
		Name: "long-prompts-alone", Description: "the batch job of prefill-interference with no chat clients beside it: 0.1 req/s of ~7000-token prompts asking for ~20 tokens; prefill time and TTFT are long, but nothing decodes beside the chunks, so ITL stays a decode-only step's (the hard negative: long prompts with no decode slowdown)",
		LongRate: 0.1, LongPromptMean: 7000, LongPromptSigma: 0.1, LongOutputMean: 20,
		PrefixHitRate: 0.2,
	}

	// Tool-calling clients: every request carries a tool grammar that takes 2 s to compile (a
	// large tool schema, a cold grammar cache); an agent fleet fans out 300 at once.
	tools := Scenario{
		Name: "structured-outputs", Description: "6 req/s of tool-calling chat requests, each with a grammar that takes 2 s to compile (deferred meanwhile), and a burst of 300 at the switch: the burst waits deferred ~2 s, then is admitted (the batch fills to 256 for a while) and drains; nothing wedges",
		ArrivalRate: 6, PromptMean: 600, PromptSigma: 0.4, OutputMean: 150, OutputSigma: 0.5, MaxTokens: 1024,
		PrefixHitRate: 0.5, StructuredShare: 1, GrammarCompile: 2 * time.Second, Burst: 300,
	}
	wedge := tools
	wedge.Name = "admission-wedge"
	wedge.Description = "structured-outputs on a scheduler with vllm#53130's fault: the burst's parked requests count against max_num_seqs (256), and once running + parked reach it nothing is admitted again: the running requests finish and are not replaced, waiting grows (~250 deferred, then the new arrivals waiting for capacity), KV usage falls to 0, tokens stop, /health 200; only a restart (or a switch to a scenario without the fault) clears it"
	wedge.AdmissionWedge = true
	return []Scenario{decode, interfere, widen, alone, tools, wedge}
}

// planLong starts the long clients' stream of s at now + s.LongAfter.
func (e *Engine) planLong(s Scenario, now time.Time) {
	e.nextLong = time.Time{}
	if s.LongRate > 0 {
		e.nextLong = now.Add(s.LongAfter + e.expDuration(s.LongRate))
	}
}

// generateLong adds the long clients' arrivals due by now.
func (e *Engine) generateLong(now time.Time) {
	for !e.nextLong.IsZero() && !e.nextLong.After(now) {
		at := e.nextLong
		e.nextLong = at.Add(e.expDuration(e.scenario.LongRate))
		e.addLong(at)
	}
}

// addLong draws one long client arriving at at: a long prompt asking for a short answer.
func (e *Engine) addLong(at time.Time) {
	s := e.scenario
	if len(e.waiting)+len(e.api.held) >= e.cfg.MaxWaiting || e.life.down {
		e.dropped++
		return
	}
	prompt := min(e.lognormalInt(s.LongPromptMean, s.LongPromptSigma), e.cfg.MaxModelLen-2)
	out := min(e.lognormalInt(s.LongOutputMean, 0.3), e.cfg.MaxModelLen-prompt)
	r := &request{
		synthetic: true, arrival: at, promptLen: prompt,
		targetOutput: out, targetReason: reasonStop,
	}
	e.accept(r, at, s.TemplateCost)
}

// drawGrammar is when a new request of s arriving at at has its grammar compiled: zero for a
// request without structured output.
func (e *Engine) drawGrammar(s Scenario, at time.Time) time.Time {
	if s.StructuredShare <= 0 || e.rng.Float64() >= s.StructuredShare {
		return time.Time{}
	}
	return at.Add(s.GrammarCompile)
}

// wedgeCounts is 1 when the scheduler counts parked (deferred) requests against max_num_seqs at
// admission (AdmissionWedge), else 0.
func (e *Engine) wedgeCounts() int {
	if e.scenario.AdmissionWedge {
		return 1
	}
	return 0
}

// latchWedge closes the admission for good once the running and parked requests fill
// max_num_seqs under AdmissionWedge. vllm#53130's numbers show the gate still closed at 3 running
// and 227 deferred, below the limit, and only a restart reopening it; #53772 names the cause
// (parked requests are promoted only when the admission loop reaches them). vllm-sim reproduces
// the symptom as reported, a latch, not the bug's internals.
func (e *Engine) latchWedge(parked int) {
	if e.scenario.AdmissionWedge && len(e.running)+parked >= e.cfg.MaxNumSeqs {
		e.admissionWedged = true
	}
}

// parkedAtAdmission is how many of the waiting requests the admission check counts as taking a
// slot: under AdmissionWedge the deferred ones ("running + skipped_waiting reaches max_num_seqs",
// vllm#53130), else none (vLLM 0.32 counts running requests and paused streaming sessions).
func (e *Engine) parkedAtAdmission(queue []*request) int {
	if !e.scenario.AdmissionWedge {
		return 0
	}
	n := 0
	for _, r := range queue {
		if r.deferred {
			n++
		}
	}
	return n
}
