package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// vllmSamples flattens every vllm: series of a snapshot (gauges, counters, and each histogram's
// buckets, count and sum) into one map, so two snapshots can be compared series by series.
func vllmSamples(s snapshot) map[string]float64 {
	out := map[string]float64{}
	for k, v := range s.values {
		if strings.HasPrefix(k, "vllm:") {
			out[k] = v
		}
	}
	for k, h := range s.hists {
		if !strings.HasPrefix(k, "vllm:") {
			continue
		}
		out[k+"_count"] = float64(h.GetSampleCount())
		out[k+"_sum"] = h.GetSampleSum()
		for _, b := range h.GetBucket() {
			out[fmt.Sprintf("%s_bucket{le=%g}", k, b.GetUpperBound())] = float64(b.GetCumulativeCount())
		}
	}
	return out
}

// changed lists the series whose value differs between a and b.
func changed(a, b map[string]float64) []string {
	var out []string
	for k, v := range b {
		if a[k] != v {
			out = append(out, fmt.Sprintf("%s: %g -> %g", k, a[k], v))
		}
	}
	return out
}

// engine-hang is a SIGSTOP of EngineCore under load, as measured on vLLM 0.32
// (../shared/VLLM.md "When the engine hangs"): not one vllm: series moves, while the API server
// keeps accepting requests it cannot hand over (process_open_fds climbs) and barely uses CPU.
func TestEngineHangFreezesEveryVLLMSeriesWhileTheAPIServerHoldsTheRequests(t *testing.T) {
	v := newVirtual(t, DefaultConfig(), "engine-hang")
	v.run(21 * time.Second) // the core stops 20 s after the switch
	if !v.e.Stats().Hung {
		t.Fatal("the engine core should hang 20 s after the switch")
	}
	a := v.snap()
	steps := v.e.Stats().Steps
	v.run(60 * time.Second)
	b := v.snap()

	if diff := changed(vllmSamples(a), vllmSamples(b)); len(diff) > 0 {
		t.Errorf("%d vllm: series changed while the engine core was stopped, want none: %v", len(diff), diff[:min(len(diff), 8)])
	}
	if n := v.e.Stats().Steps; n != steps {
		t.Errorf("the engine made %d steps while stopped", n-steps)
	}
	if r, w := a.values["vllm:num_requests_running"], a.values["vllm:num_requests_waiting"]; r == 0 || w != 0 {
		t.Errorf("frozen at running %g, waiting %g: want requests running and none waiting (healthy load)", r, w)
	}
	w := window{a, b}
	if got := b.values["process_open_fds"] - a.values["process_open_fds"]; got < 150 || got > 350 {
		t.Errorf("process_open_fds rose by %g in 60 s at 4 req/s: want one per request held (about 240)", got)
	}
	if held := v.e.Stats().Held; held < 150 {
		t.Errorf("the API server holds %d requests: want the arrivals of the hang", held)
	}
	if cpu := w.rate("process_cpu_seconds_total"); cpu <= 0 || cpu > 0.05 {
		t.Errorf("API server CPU %.3f core while the engine is stopped: want it to barely move (above 0: it still tokenizes)", cpu)
	}
	if b.values["process_start_time_seconds"] != a.values["process_start_time_seconds"] {
		t.Error("a hang is not a restart: process_start_time_seconds must stay")
	}

	// The hang ends: the held requests reach the engine at once, their TTFT holds the hang while
	// their queue time starts late, and a burst drains.
	v.e.Release()
	c := v.snap()
	v.run(10 * time.Second)
	after := window{c, v.snap()}
	ttft, queue, prefill := after.mean("vllm:time_to_first_token_seconds"), after.mean("vllm:request_queue_time_seconds"), after.mean("vllm:request_prefill_time_seconds")
	if gap := ttft - queue - prefill; gap < 20 {
		t.Errorf("after the hang: TTFT %.1fs, queue %.2fs, prefill %.2fs: want most of TTFT outside queue + prefill (the hang)", ttft, queue, prefill)
	}
	if itlMax := after.quantile(1, "vllm:inter_token_latency_seconds"); itlMax < 40 {
		t.Errorf("the running requests' next token came %.0fs after their last: want the hang in that ITL sample", itlMax)
	}
	if burst, base := after.rate("vllm:request_success_total{finished_reason=stop}")+after.rate("vllm:request_success_total{finished_reason=length}"), 4.0; burst < 2*base {
		t.Errorf("%.1f finishes/s after the hang: want the held requests to drain in a burst (healthy finishes ~4/s)", burst)
	}
	if held := v.e.Stats().Held; held > 2 { // at most an arrival being tokenized
		t.Errorf("%d requests still held after the hang", held)
	}
}

// engine-hang-queued stops the core with the batch full and a queue: the gauges freeze with
// waiting above 0.
func TestEngineHangCanFreezeAQueue(t *testing.T) {
	v := newVirtual(t, DefaultConfig(), "engine-hang-queued")
	v.run(4 * time.Second)
	a := v.snap()
	v.run(30 * time.Second)
	b := v.snap()
	if diff := changed(vllmSamples(a), vllmSamples(b)); len(diff) > 0 {
		t.Errorf("vllm: series changed while stopped: %v", diff[:min(len(diff), 8)])
	}
	if r, w := a.values["vllm:num_requests_running"], a.values["vllm:num_requests_waiting"]; r == 0 || w == 0 {
		t.Errorf("frozen at running %g, waiting %g: want both above 0", r, w)
	}
}

// A hang started by hand ends by itself after its duration.
func TestAHangWithADurationEndsByItself(t *testing.T) {
	v := newVirtual(t, DefaultConfig(), "healthy")
	v.run(10 * time.Second)
	v.e.Hang(v.now, 15*time.Second)
	v.run(10 * time.Second)
	if !v.e.Stats().Hung {
		t.Fatal("not hung 10 s into a 15 s hang")
	}
	steps := v.e.Stats().Steps
	v.run(10 * time.Second)
	if v.e.Stats().Hung || v.e.Stats().Steps == steps {
		t.Fatalf("still stopped 5 s after the hang's end: %+v", v.e.Stats())
	}
}

// Hard negative: an idle engine (no load) changes no vllm: series either, but nothing is held
// and its gauges read 0: idle is not hung.
func TestAnIdleEngineHoldsNothing(t *testing.T) {
	v := newVirtual(t, DefaultConfig(), "idle")
	v.run(5 * time.Second)
	a := v.snap()
	v.run(30 * time.Second)
	b := v.snap()
	if r, w := b.values["vllm:num_requests_running"], b.values["vllm:num_requests_waiting"]; r != 0 || w != 0 {
		t.Errorf("idle engine reads running %g, waiting %g", r, w)
	}
	if a.values["process_open_fds"] != b.values["process_open_fds"] || v.e.Stats().Held != 0 {
		t.Errorf("idle: open fds %g -> %g, held %d", a.values["process_open_fds"], b.values["process_open_fds"], v.e.Stats().Held)
	}
}

// engine-hang-idle (issue 37): an idle engine whose core stops while one short request a second
// keeps arriving. It holds nothing when it stops, so its gauges freeze at 0/0 and no vllm: series
// moves, as on an idle engine; only the API server shows the requests it holds
// (process_open_fds +1/s). Released, the held requests reach the engine at once: their TTFT holds
// the hang.
func TestAnIdleEngineHangWithRequestsTricklingInShowsOnlyInTheAPIServer(t *testing.T) {
	v := newVirtual(t, DefaultConfig(), "engine-hang-idle")
	v.run(20 * time.Second)
	for i := 0; i < 50 && !v.e.Stats().Hung; i++ {
		v.run(100 * time.Millisecond)
	}
	if !v.e.Stats().Hung {
		t.Fatal("the engine core should stop once it holds nothing, 20 s after the switch")
	}
	a := v.snap()
	if r, w := a.values["vllm:num_requests_running"], a.values["vllm:num_requests_waiting"]; r != 0 || w != 0 {
		t.Fatalf("stopped at running %g, waiting %g: want an idle engine, 0/0", r, w)
	}
	v.run(60 * time.Second)
	b := v.snap()
	if diff := changed(vllmSamples(a), vllmSamples(b)); len(diff) > 0 {
		t.Errorf("%d vllm: series changed while the idle engine core was stopped, want none: %v", len(diff), diff[:min(len(diff), 8)])
	}
	if got := b.values["process_open_fds"] - a.values["process_open_fds"]; got < 35 || got > 90 {
		t.Errorf("process_open_fds rose by %g in 60 s at 1 req/s: want one per request held (about 60)", got)
	}
	v.run(15 * time.Second) // the hang ends 70 s after it began
	if v.e.Stats().Hung {
		t.Fatal("still stopped after 70 s")
	}
	c := v.snap()
	after := window{b, c}
	if ttft := after.quantile(1, "vllm:time_to_first_token_seconds"); ttft < 40 {
		t.Errorf("after the hang the slowest TTFT is %.1f s: want the hang in it", ttft)
	}
}

// Hard negative: the same hang with nothing arriving holds nothing and changes nothing, the API
// server's descriptors included: nothing to tell from idle, and nobody waits.
func TestAnIdleEngineHangWithNothingArrivingChangesNothing(t *testing.T) {
	v := newVirtual(t, DefaultConfig(), "engine-hang-idle-quiet")
	v.run(21 * time.Second)
	if !v.e.Stats().Hung {
		t.Fatal("the idle engine core should stop 20 s after the switch")
	}
	a := v.snap()
	v.run(30 * time.Second)
	b := v.snap()
	if a.values["process_open_fds"] != b.values["process_open_fds"] || v.e.Stats().Held != 0 {
		t.Errorf("quiet hang: open fds %g -> %g, held %d", a.values["process_open_fds"], b.values["process_open_fds"], v.e.Stats().Held)
	}
}
