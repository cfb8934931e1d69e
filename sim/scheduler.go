package sim

import (
	"math"
	"slices"
	"time"
)

// slot is one request's share of an engine step.
type slot struct {
	r     *request
	chunk int // tokens computed this step (for a speculative decode: 1 + the draft tokens)
	spec  int // draft tokens verified this step

	emits    bool // the request gets output this step (not a partial prefill)
	accepted int  // draft tokens accepted
}

// decoding reports whether r is past its prefill: one token to compute, the last one sampled.
func (r *request) decoding() bool { return r.output > 0 && r.numComputed == r.numTokens()-1 }

// holdsKV reports whether a waiting request holds KV blocks (an async KV load): vLLM schedules
// those first.
func (r *request) holdsKV() bool { return r.blocks > 0 }

// schedule is one call of vllm/v1/core/sched/scheduler.py's schedule(): running requests first
// (decode-first, chunked prefill, with their draft tokens under speculative decoding), then
// waiting ones in order. A waiting request that cannot run now for a reason of its own (its KV
// transfer is not done, its LoRA adapter has no slot) is skipped, the scheduler looks past it,
// and it counts as "deferred" until it is scheduled; the first request that does not fit
// (slots, budget, KV blocks) stops the admission.
func (e *Engine) schedule(now time.Time) (batch []slot, preempted, admitted int) {
	budget := e.cfg.MaxNumBatchedTokens
	loras := map[string]bool{} // adapters in this step's batch (max_loras)
	for i := 0; i < len(e.running) && budget > 0; i++ {
		r := e.running[i]
		spec := 0
		if e.cfg.NumSpeculativeTokens > 0 && r.decoding() {
			spec = e.cfg.NumSpeculativeTokens
		}
		want := r.numTokens() - r.numComputed + spec
		chunk := min(want, budget)
		if chunk <= 0 {
			continue
		}
		if chunk < want {
			spec = max(0, spec-(want-chunk))
		}
		ok := true
		for !e.canAllocate(r, chunk) {
			// Preempt the lowest-priority (last) running request: free its
			// blocks, recompute it later, put it at the front of the queue.
			victim := e.running[len(e.running)-1]
			e.running = e.running[:len(e.running)-1]
			e.preempt(victim)
			preempted++
			if victim == r {
				ok = false
				break
			}
		}
		if !ok {
			break
		}
		e.allocate(r, chunk)
		batch = append(batch, slot{r: r, chunk: chunk, spec: spec})
		budget -= chunk
		if r.adapter != "" {
			loras[r.adapter] = true
		}
	}
	if preempted > 0 || e.life.pause == pauseAll || e.admissionWedged {
		return batch, preempted, 0
	}

	// Requests holding KV blocks (async KV loads) are drained first.
	queue := e.waiting
	slices.SortStableFunc(queue, func(a, b *request) int {
		switch {
		case a.holdsKV() && !b.holdsKV():
			return -1
		case !a.holdsKV() && b.holdsKV():
			return 1
		}
		return 0
	})
	var skipped []*request
	// parked: the deferred requests the admission check counts (only under AdmissionWedge).
	parked := e.parkedAtAdmission(queue)
	skip := func(r *request) {
		if !r.deferred {
			parked += e.wedgeCounts()
		}
		r.deferred = true
		skipped = append(skipped, r)
	}
	i := 0
	for ; i < len(queue) && budget > 0 && len(e.running)+parked < e.cfg.MaxNumSeqs; i++ {
		r := queue[i]
		if e.life.pause == pauseNew && !r.holdsKV() {
			break // PAUSED_NEW admits only requests holding KV blocks
		}
		if !r.grammarAt.IsZero() && r.grammarAt.After(now) {
			skip(r) // WAITING_FOR_STRUCTURED_OUTPUT_GRAMMAR
			continue
		}
		switch r.fetch {
		case fetchInProgress:
			skip(r) // WAITING_FOR_REMOTE_KVS
			continue
		case fetchDone:
			// Promoted: the prompt's KV is here but for its last token, computed to sample.
			r.numComputed = r.promptLen - 1
		}
		if r.adapter != "" && len(loras) >= e.cfg.MaxLoras && !loras[r.adapter] {
			skip(r) // scheduling it would exceed max_loras
			continue
		}
		hits := 0
		first := r.numComputed == 0 && !r.scheduled && !r.lookedUp
		if first && e.cfg.EnablePrefixCaching && !r.uniquePrefix {
			// Prefix cache lookup on first scheduling: full blocks only, and at least one
			// token must be computed. A prompt that starts with something unique matches
			// no cached block.
			hits = int(e.scenario.PrefixHitRate*float64(r.promptLen)) / e.cfg.BlockSize * e.cfg.BlockSize
			hits = max(0, min(hits, (r.promptLen-1)/e.cfg.BlockSize*e.cfg.BlockSize))
		}
		if first && r.remote {
			// A KV consumer: the prefill side computed the prompt; load it asynchronously
			// into blocks allocated now, and look past the request until it has arrived.
			if !e.canAllocate(r, r.promptLen) {
				break
			}
			e.countLookup(r, hits, r.promptLen-hits)
			r.numComputed = hits
			e.allocate(r, r.promptLen-hits)
			e.startFetch(r, now)
			skip(r)
			continue
		}
		chunk := min(r.numTokens()-r.numComputed-hits, budget)
		if !e.canAllocate(r, hits+chunk) {
			break
		}
		if first {
			e.countLookup(r, hits, 0)
		}
		r.numComputed += hits
		e.allocate(r, chunk)
		e.running = append(e.running, r)
		if r.deferred {
			parked -= e.wedgeCounts()
		}
		r.deferred, r.fetch = false, fetchNone
		if !r.scheduled {
			r.scheduled, r.scheduledAt = true, now
		}
		if r.adapter != "" {
			loras[r.adapter] = true
		}
		batch = append(batch, slot{r: r, chunk: chunk})
		budget -= chunk
		admitted++
	}
	e.waiting = append(skipped, queue[i:]...)
	e.latchWedge(parked)
	return batch, preempted, admitted
}

// countLookup records a request's first scheduling: the prefix cache queried for its prompt
// (hits tokens found), the KV connector for the rest (external tokens it will load).
func (e *Engine) countLookup(r *request, hits, external int) {
	r.lookedUp, r.localHits, r.external = true, hits, external
	if !e.cfg.EnablePrefixCaching {
		return
	}
	e.m.prefixQueries.Add(float64(r.promptLen))
	e.m.prefixHits.Add(float64(hits))
	if e.m.externalQueries != nil && e.cfg.KVRole != "" {
		e.m.externalQueries.Add(float64(r.promptLen - hits))
		e.m.externalHits.Add(float64(external))
	}
}

// stepWork is what a step computed.
type stepWork struct{ prefill, decode, context int }

// execute is the model runner: the step's cost from its work.
func (e *Engine) execute(batch []slot) (time.Duration, stepWork) {
	var w stepWork
	spec := 0
	for _, s := range batch {
		switch {
		case s.spec > 0:
			w.decode++
			spec += s.spec
		case s.chunk == 1 && s.r.decoding():
			w.decode++
		default:
			w.prefill += s.chunk
		}
		w.context += s.r.numComputed + s.chunk
	}
	cost := float64(e.cfg.StepBase) +
		float64(e.cfg.PerSeq)*float64(len(batch)) +
		float64(e.cfg.PerPrefillToken)*float64(w.prefill+spec) + // draft tokens are verified like prefill
		float64(e.cfg.PerContextToken)*float64(w.context)
	cost *= e.gpuSlowdown() // a throttled GPU (gpu.go)
	if e.cfg.Jitter > 0 {
		cost *= math.Max(0.5, 1+e.cfg.Jitter*e.rng.NormFloat64())
	}
	return time.Duration(cost), w
}

// updateFromOutput is scheduler.update_from_output and the API server's output processing for
// a step that ran from now to end: tokens, speculative acceptance, finishes, and the metrics
// vLLM records from them. It returns how many requests finished.
func (e *Engine) updateFromOutput(batch []slot, now, end time.Time) int {
	tokens := 0
	for i := range batch {
		s := &batch[i]
		s.emits = s.r.numComputed+s.chunk >= s.r.numTokens()
		if !s.emits {
			continue
		}
		if s.spec > 0 {
			s.accepted = e.drawAccepted(s.r, s.spec)
		}
		tokens += min(1+s.accepted, s.r.targetOutput-s.r.output)
	}
	// Clients that arrived during the step were tokenized as they came, before the event loop
	// turns to this step's outputs at its end.
	e.generate(end)
	seen := end
	if tokens > 0 {
		seen = e.processOutputs(end, tokens)
	}
	e.observeSpeculation(batch)

	iterPrompt, iterGen, finished := 0, 0, 0
	for _, s := range batch {
		r := s.r
		r.numComputed += s.chunk - (s.spec - s.accepted) // rejected drafts are rolled back
		if !s.emits {
			continue // partial prefill: no token this step
		}
		if r.uncounted > 0 {
			e.m.preemptions.Add(float64(r.uncounted))
			r.uncounted = 0
		}
		if r.firstTokenAt.IsZero() {
			r.firstTokenAt, r.firstSeenAt = end, seen
			e.m.ttft.Observe(seen.Sub(r.arrival).Seconds())
			e.m.promptTokens.Add(float64(r.promptLen))
			e.countPromptSources(r)
			iterPrompt += r.promptLen - r.localHits - r.external
			e.loraView.add(r.adapter)
		} else {
			e.m.itl.Observe(end.Sub(r.lastTokenAt).Seconds()) // once per step, however many tokens
		}
		n := min(1+s.accepted, r.targetOutput-r.output)
		r.output += n
		r.lastTokenAt = end
		iterGen += n
		if r.output >= r.targetOutput {
			e.removeRunning(r)
			e.finish(r, r.targetReason, seen)
			finished++
		}
	}
	e.m.genTokens.Add(float64(iterGen))
	if iterPrompt+iterGen > 0 {
		e.m.iterToks.Observe(float64(iterPrompt + iterGen))
	}
	e.recordLoRA(seen)
	return finished
}

// drawAccepted is the rejection sampler's verdict on spec draft tokens: each is accepted with
// the request's acceptance probability if every one before it was.
func (e *Engine) drawAccepted(r *request, spec int) int {
	a := 0
	for a < spec && e.rng.Float64() < r.acceptance {
		a++
	}
	return a
}

// observeSpeculation records a step's SpecDecodingStats (vllm/v1/spec_decode/metrics.py): one
// draft per request that verified draft tokens.
func (e *Engine) observeSpeculation(batch []slot) {
	if e.m.spec == nil {
		return
	}
	for _, s := range batch {
		if s.spec == 0 || !s.emits {
			continue
		}
		e.m.spec.drafts.Inc()
		e.m.spec.draftTokens.Add(float64(s.spec))
		e.m.spec.accepted.Add(float64(s.accepted))
		for pos := range s.accepted {
			e.m.spec.perPos[pos].Inc()
		}
	}
}

// countPromptSources splits a request's prompt tokens by where their KV came from, as vLLM's
// PromptTokenStats does when its first token is out.
func (e *Engine) countPromptSources(r *request) {
	if e.m.promptBySource == nil {
		return
	}
	e.m.promptBySource.WithLabelValues("local_compute").Add(float64(r.promptLen - r.localHits - r.external))
	e.m.promptBySource.WithLabelValues("local_cache_hit").Add(float64(r.localHits))
	e.m.promptBySource.WithLabelValues("external_kv_transfer").Add(float64(r.external))
	e.m.promptCached.Add(float64(r.localHits + r.external))
}
