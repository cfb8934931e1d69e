package sim

import (
	"testing"
	"time"
)

// A wedged engine makes no step: arrivals pile up in the queue, no token is computed and nothing
// finishes, while the gauges are still published (so /metrics answers).
func TestAStalledEngineQueuesArrivalsAndComputesNothing(t *testing.T) {
	v := newVirtual(t, DefaultConfig(), "healthy")
	v.run(30 * time.Second)
	v.switchTo("engine-stalled")
	a := v.snap()
	steps := v.e.Stats().Steps
	v.run(30 * time.Second)
	w := window{a, v.snap()}
	if got := v.e.Stats().Steps; got != steps {
		t.Errorf("the engine made %d steps while stalled", got-steps)
	}
	if r := w.rate("vllm:prompt_tokens_total") + w.rate("vllm:generation_tokens_total"); r != 0 {
		t.Errorf("tokens/s while stalled: %g, want 0", r)
	}
	if q := w.b.values["vllm:num_requests_waiting"]; q < 60 { // ~4/s for 30 s
		t.Errorf("waiting after 30 s stalled at 4 req/s: %g, want it to grow with the arrivals", q)
	}
	// back to a working engine: it serves the backlog
	v.switchTo("healthy")
	b := v.snap()
	v.run(10 * time.Second)
	if r := (window{b, v.snap()}).rate("vllm:generation_tokens_total"); r == 0 {
		t.Error("the engine did not resume")
	}
}

// The prefix cache's hit rate comes out of the load: the same prompts, first sharing a system
// prompt, then each starting with a unique request id (a template change), miss the cache; the
// prompt lengths stay, prefill time rises.
func TestAPrefixCollapseIsAChangeOfTheClientsPrompts(t *testing.T) {
	v := newVirtual(t, DefaultConfig(), "prefix-collapse")
	v.run(30 * time.Second)
	a := v.snap()
	v.run(50 * time.Second)
	before := window{a, v.snap()}
	v.run(30 * time.Second) // 110 s: 20 s after the template change
	c := v.snap()
	v.run(40 * time.Second)
	after := window{c, v.snap()}
	hit := func(w window) float64 {
		return w.rate("vllm:prefix_cache_hits_total") / w.rate("vllm:prefix_cache_queries_total")
	}
	if h := hit(before); h < 0.8 {
		t.Errorf("hit rate with a shared system prompt: %.2f, want about 0.9", h)
	}
	if h := hit(after); h > 0.05 {
		t.Errorf("hit rate after the template change: %.2f, want about 0", h)
	}
	pb, pa := before.mean("vllm:request_prompt_tokens"), after.mean("vllm:request_prompt_tokens")
	if pa > 1.2*pb || pa < pb/1.2 {
		t.Errorf("prompt mean changed from %.0f to %.0f tokens; the load keeps the prompts", pb, pa)
	}
	fb, fa := before.mean("vllm:request_prefill_time_seconds"), after.mean("vllm:request_prefill_time_seconds")
	if fa < 3*fb {
		t.Errorf("prefill mean went from %.3fs to %.3fs; recomputing the whole prompt should take several times longer", fb, fa)
	}
	// Hard negative: longer prompts keep the clients' hit rate.
	lp := newVirtual(t, DefaultConfig(), "long-prompts")
	lp.run(10 * time.Second)
	l := lp.snap()
	lp.run(60 * time.Second)
	if h := hit(window{l, lp.snap()}); h < 0.15 || h > 0.25 {
		t.Errorf("hit rate of long prompts: %.2f, want the scenario's 0.2", h)
	}
}

// router-imbalance over three pods: the fleet as a whole has room, but the router's weights put
// pod 0 past the knee while its siblings idle.
func TestRouterImbalanceOverloadsOnePodWhileItsSiblingsHaveRoom(t *testing.T) {
	var clocks []*vclock
	var engines []*Engine
	for i := range 3 {
		cfg := DefaultConfig()
		cfg.Seed += uint64(i)
		v := newVirtual(t, cfg, "")
		clocks, engines = append(clocks, v), append(engines, v.e)
	}
	f := NewFleet(engines...)
	plan := f.Plan(FleetScenarios["router-imbalance"])
	if plan[0].ArrivalRate != 48 || plan[1].ArrivalRate != 6 || plan[2].ArrivalRate != 6 {
		t.Fatalf("rates %g %g %g; want the router's 8:1:1 of 60 req/s", plan[0].ArrivalRate, plan[1].ArrivalRate, plan[2].ArrivalRate)
	}
	if err := f.Apply("router-imbalance", true, epoch); err != nil {
		t.Fatal(err)
	}
	var sigs []signature
	for _, v := range clocks {
		v.run(30 * time.Second)
		a := v.snap()
		v.run(30 * time.Second)
		sigs = append(sigs, window{a, v.snap()}.signature())
	}
	t.Logf("pod 0: %s", sigs[0])
	t.Logf("pod 1: %s", sigs[1])
	if sigs[0].Running < 0.9*256 || sigs[0].Waiting < 100 {
		t.Errorf("pod 0 should be past the knee (running pinned, queue growing): %s", sigs[0])
	}
	for i, s := range sigs[1:] {
		if s.Waiting > 2 || s.Running > 64 {
			t.Errorf("pod %d should have room: %s", i+1, s)
		}
	}
	if err := f.Apply("no-such", true, epoch); err == nil {
		t.Error("an unknown scenario was accepted")
	}
}

// engine-stall wedges pod 0 only; its siblings keep serving the same load.
func TestEngineStallWedgesOnePodOfTheFleet(t *testing.T) {
	f := NewFleet(make([]*Engine, 3)...)
	plan := f.Plan(FleetScenarios["engine-stall"])
	if !plan[0].EngineStalled || plan[1].EngineStalled || plan[2].EngineStalled {
		t.Fatalf("stalled: %v %v %v; want pod 0 only", plan[0].EngineStalled, plan[1].EngineStalled, plan[2].EngineStalled)
	}
	for i, sc := range plan {
		if sc.ArrivalRate != Scenarios["healthy"].ArrivalRate {
			t.Errorf("pod %d gets %g req/s; want healthy's on every pod", i, sc.ArrivalRate)
		}
	}
}
