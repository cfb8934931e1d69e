package sim

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"
)

func kvConsumerConfig() Config {
	c := DefaultConfig()
	c.KVRole = KVConsumer
	return c
}

// checkWaitingSplit pins vLLM's invariant: the two reasons add up to num_requests_waiting.
func checkWaitingSplit(t *testing.T, s snapshot) {
	t.Helper()
	w := s.values["vllm:num_requests_waiting"]
	c, d := s.values["vllm:num_requests_waiting_by_reason{reason=capacity}"], s.values["vllm:num_requests_waiting_by_reason{reason=deferred}"]
	if c+d != w {
		t.Errorf("waiting_by_reason capacity %g + deferred %g != waiting %g", c, d, w)
	}
}

// A healthy KV consumer: each request loads its prompt's KV from the prefill side in tens of
// milliseconds, waiting deferred meanwhile, then decodes.
func TestAHealthyKVConsumerLoadsEachPromptAndDecodes(t *testing.T) {
	v := newVirtual(t, kvConsumerConfig(), "kv-consumer")
	v.run(20 * time.Second)
	a := v.snap()
	v.run(40 * time.Second)
	b := v.snap()
	w := window{a, b}
	checkWaitingSplit(t, b)
	if x := w.mean("vllm:nixl_xfer_time_seconds"); x < 0.005 || x > 0.03 {
		t.Errorf("NIXL transfer time mean %.3fs: want ~10 ms for ~1500 tokens at 20 GB/s", x)
	}
	if n := w.count("vllm:nixl_xfer_time_seconds"); n < 80 {
		t.Errorf("%g transfers in 40 s at 3 req/s", n)
	}
	if f := w.rate("vllm:nixl_num_failed_transfers_total"); f != 0 {
		t.Errorf("failed transfers %g/s on a healthy link", f)
	}
	if ttft := w.mean("vllm:time_to_first_token_seconds"); ttft > 0.2 {
		t.Errorf("TTFT mean %.3fs: the prompt is loaded, not computed", ttft)
	}
	ext, total := w.rate("vllm:prompt_tokens_by_source_total{source=external_kv_transfer}"), w.rate("vllm:prompt_tokens_total")
	if ext < 0.95*total {
		t.Errorf("external KV %g tokens/s of %g prompt tokens/s: the prefill side computed the prompts", ext, total)
	}
	if h := w.rate("vllm:external_prefix_cache_hits_total"); h < 0.95*total {
		t.Errorf("external prefix cache hits %g tokens/s, want the prompts (%g)", h, total)
	}
	if st := b.values["vllm:num_requests_kv_fetch_by_stage{stage=in_progress}"]; st > 5 {
		t.Errorf("%g loads in progress on a healthy link", st)
	}
	if g := w.rate("vllm:generation_tokens_total"); g < 300 {
		t.Errorf("generation %.0f tokens/s: want ~450 (3 req/s x 150)", g)
	}
}

// Without --kv-role consumer the same clients' prompts are computed here: no fetch stages, no
// NIXL families (vLLM creates them only with the connector).
func TestWithoutAKVRoleThereIsNoKVTransfer(t *testing.T) {
	v := newVirtual(t, DefaultConfig(), "kv-consumer")
	v.run(10 * time.Second)
	s := v.snap()
	for name := range s.types {
		if strings.HasPrefix(name, "vllm:nixl_") || name == "vllm:num_requests_kv_fetch_by_stage" {
			t.Errorf("%s exported without a KV connector", name)
		}
	}
	if s.values["vllm:prompt_tokens_by_source_total{source=external_kv_transfer}"] != 0 {
		t.Error("external KV tokens without a connector")
	}
}

// kv-transfer-stuck: the prefill side stops answering; loads stay in progress holding their
// blocks, requests wait deferred, some transfers fail (counted, the request errors), and tokens
// stop while the queue is not a capacity queue.
func TestAStuckKVTransferLeavesRequestsDeferredAndCountsFailures(t *testing.T) {
	v := newVirtual(t, kvConsumerConfig(), "kv-transfer-stuck")
	v.run(25 * time.Second)
	a := v.snap()
	if a.values["vllm:nixl_num_failed_transfers_total"] != 0 {
		t.Fatal("failures before the prefill side stopped answering")
	}
	v.run(35 * time.Second) // 60 s: stuck for 30 s
	b := v.snap()
	v.run(30 * time.Second)
	c := v.snap()
	w := window{b, c}
	checkWaitingSplit(t, b)
	checkWaitingSplit(t, c)
	if d := c.values["vllm:num_requests_waiting_by_reason{reason=deferred}"]; d < 40 {
		t.Errorf("%g requests deferred with the prefill side gone: want the loads that never complete", d)
	}
	if p := c.values["vllm:num_requests_kv_fetch_by_stage{stage=in_progress}"]; p < 40 {
		t.Errorf("%g loads in progress: want them stuck there", p)
	}
	if f := w.rate("vllm:nixl_num_failed_transfers_total"); f < 0.5 {
		t.Errorf("failed transfers %.2f/s: want ~30%% of 4 req/s", f)
	}
	if e := w.rate("vllm:request_success_total{finished_reason=error}"); e < 0.5 {
		t.Errorf("requests failed %.2f/s: a failed load fails its request (kv_load_failure_policy fail)", e)
	}
	if g := w.rate("vllm:generation_tokens_total"); g > 50 {
		t.Errorf("generation %.0f tokens/s 30 s into the stall: want it near 0", g)
	}
	if n := w.count("vllm:nixl_xfer_time_seconds"); n != 0 {
		t.Errorf("%g transfers completed while the prefill side does not answer", n)
	}
	// As vLLM 0.32 does, a request failed before its first token poisons the phase histograms:
	// its prefill time is the engine's monotonic clock (the host's uptime, 72 h here).
	if p := w.quantile(1, "vllm:request_prefill_time_seconds"); !math.IsInf(p, 1) {
		t.Errorf("failed requests' prefill time lands in bucket %g, want +Inf (uptime seconds)", p)
	}
	if q := (c.hists["vllm:request_queue_time_seconds"].GetSampleSum() - b.hists["vllm:request_queue_time_seconds"].GetSampleSum()); q > -1e5 {
		t.Errorf("queue time sum moved by %g: a failed request's queue time is minus its QUEUED timestamp in vLLM 0.32", q)
	}
}

func specConfig() Config {
	c := DefaultConfig()
	c.NumSpeculativeTokens = 3
	return c
}

// acceptance is what vLLM's docs compute: accepted / draft tokens over the window.
func acceptance(w window) float64 {
	return w.rate("vllm:spec_decode_num_accepted_tokens_total") / w.rate("vllm:spec_decode_num_draft_tokens_total")
}

// spec-decode-acceptance-drop: the traffic turns from repetitive to random. ITL, observed once
// per step per request, stays about flat; the time per output token (decode time / (tokens-1))
// rises with the acceptance's fall.
func TestAnAcceptanceDropRaisesTheTimePerOutputTokenNotTheITL(t *testing.T) {
	v := newVirtual(t, specConfig(), "spec-decode-acceptance-drop")
	v.run(40 * time.Second)
	a := v.snap()
	v.run(45 * time.Second) // 85 s
	b := v.snap()
	v.run(45 * time.Second) // 130 s: 40 s of random traffic
	c := v.snap()
	v.run(30 * time.Second)
	d := v.snap()
	before, after := window{a, b}, window{c, d}
	ab, aa := acceptance(before), acceptance(after)
	if ab < 0.55 || ab > 0.75 || aa > 0.1 {
		t.Errorf("acceptance %.2f before, %.2f after: want ~0.65 (0.8 per position, 3 tokens) then ~0.04", ab, aa)
	}
	if p0 := before.rate("vllm:spec_decode_num_accepted_tokens_per_pos_total{position=0}") / before.rate("vllm:spec_decode_num_drafts_total"); math.Abs(p0-0.8) > 0.05 {
		t.Errorf("position 0 acceptance %.2f, want 0.8", p0)
	}
	if p2 := before.rate("vllm:spec_decode_num_accepted_tokens_per_pos_total{position=2}") / before.rate("vllm:spec_decode_num_drafts_total"); math.Abs(p2-0.512) > 0.05 {
		t.Errorf("position 2 acceptance %.2f, want 0.8^3", p2)
	}
	itl := after.mean("vllm:inter_token_latency_seconds") / before.mean("vllm:inter_token_latency_seconds")
	tpot := after.mean("vllm:request_time_per_output_token_seconds") / before.mean("vllm:request_time_per_output_token_seconds")
	if itl > 1.5 || tpot < 2 {
		t.Errorf("after the drop ITL x%.2f, time per output token x%.2f: want ITL about flat and the per-token time up 2x or more", itl, tpot)
	}
	rb, ra := b.values["vllm:num_requests_running"], d.values["vllm:num_requests_running"]
	t.Logf("acceptance %.2f -> %.2f, ITL x%.2f, TPOT x%.2f, running %g -> %g", ab, aa, itl, tpot, rb, ra)
	if ra > 60 {
		t.Errorf("running %g after the drop: the batch should stay narrow (requests take more steps, no more)", ra)
	}
}

// Hard negative: a wider batch with steady acceptance raises ITL and the per-token time
// together, and the acceptance does not move.
func TestAWideBatchWithSteadyAcceptanceRaisesITL(t *testing.T) {
	v := newVirtual(t, specConfig(), "spec-decode")
	v.run(30 * time.Second)
	a := v.snap()
	v.run(30 * time.Second)
	healthy := window{a, v.snap()}
	v.switchTo("spec-decode-wide-batch")
	v.run(30 * time.Second)
	b := v.snap()
	v.run(30 * time.Second)
	wide := window{b, v.snap()}
	if d := acceptance(wide) - acceptance(healthy); math.Abs(d) > 0.05 {
		t.Errorf("acceptance moved by %.2f with the batch: it is the traffic's, not the batch's", d)
	}
	if r := wide.mean("vllm:inter_token_latency_seconds") / healthy.mean("vllm:inter_token_latency_seconds"); r < 2.5 {
		t.Errorf("ITL x%.2f with a batch of %g (was %g): want it up with the batch", r, wide.b.values["vllm:num_requests_running"], healthy.b.values["vllm:num_requests_running"])
	}
}

func loraConfig() Config {
	c := DefaultConfig()
	c.EnableLoRA, c.MaxLoras = true, 4
	return c
}

// loraInfo returns the labels of lora_requests_info's current series (the latest timestamp).
func loraInfo(t *testing.T, v *vclock) map[string]string {
	t.Helper()
	mfs, err := v.e.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var best map[string]string
	bestV := -1.0
	for _, mf := range mfs {
		if mf.GetName() != "vllm:lora_requests_info" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetGauge().GetValue() > bestV {
				bestV = m.GetGauge().GetValue()
				best = map[string]string{}
				for _, l := range m.GetLabel() {
					best[l.GetName()] = l.GetValue()
				}
			}
		}
	}
	return best
}

// lora-hot-adapters: more hot adapters than --max-loras slots: requests for the others wait
// deferred while the batch has room. lora_requests_info lists the adapters running (max_lora of
// them) and, as vLLM 0.32's API server sees it, no waiting adapter.
func TestMoreHotAdaptersThanSlotsDeferRequestsWhileTheBatchHasRoom(t *testing.T) {
	v := newVirtual(t, loraConfig(), "lora-hot-adapters")
	v.run(60 * time.Second)
	s := v.snap()
	checkWaitingSplit(t, s)
	d, r := s.values["vllm:num_requests_waiting_by_reason{reason=deferred}"], s.values["vllm:num_requests_running"]
	if d < 20 || r >= 256 {
		t.Errorf("deferred %g, running %g: want requests deferred for a slot while the batch has room", d, r)
	}
	if c := s.values["vllm:num_requests_waiting_by_reason{reason=capacity}"]; c > 0 {
		t.Errorf("%g requests waiting for capacity: the engine has room", c)
	}
	info := loraInfo(t, v)
	running := strings.Split(info["running_lora_adapters"], ",")
	sort.Strings(running)
	if info["max_lora"] != "4" || len(running) != 4 || info["waiting_lora_adapters"] != "" {
		t.Errorf("lora_requests_info %v: want max_lora 4, four running adapters, no waiting one (vLLM 0.32's API server never sees one)", info)
	}
}

// Hard negative: as many adapters as slots: nothing is deferred.
func TestAdaptersWithinTheSlotsDeferNothing(t *testing.T) {
	v := newVirtual(t, loraConfig(), "lora-adapters")
	for range 6 {
		v.run(10 * time.Second)
		if d := v.snap().values["vllm:num_requests_waiting_by_reason{reason=deferred}"]; d != 0 {
			t.Fatalf("%g requests deferred with 3 adapters and 4 slots", d)
		}
	}
	if running := loraInfo(t, v)["running_lora_adapters"]; len(strings.Split(running, ",")) != 3 {
		t.Errorf("running adapters %q, want the three", running)
	}
}

// frontend-bound: the API server's core saturates; TTFT grows outside queue + prefill.
func TestAnAPIServerBottleneckGrowsTTFTOutsideTheEngine(t *testing.T) {
	v := newVirtual(t, DefaultConfig(), "frontend-bound")
	v.run(30 * time.Second)
	a := v.snap()
	v.run(30 * time.Second)
	b := v.snap()
	w := window{a, b}
	if cpu := w.rate("process_cpu_seconds_total"); cpu < 0.95 || cpu > 1.01 {
		t.Errorf("API server CPU %.2f core/s, want ~1 (its one core saturated)", cpu)
	}
	ttft, queue, prefill := w.mean("vllm:time_to_first_token_seconds"), w.mean("vllm:request_queue_time_seconds"), w.mean("vllm:request_prefill_time_seconds")
	if gap := ttft - queue - prefill; gap < 1 || queue+prefill > 0.1 {
		t.Errorf("TTFT %.2fs, queue %.3fs, prefill %.3fs: want most of TTFT outside the engine", ttft, queue, prefill)
	}
}

// Hard negative: long prompts raise TTFT through prefill, with the API server nearly idle.
func TestLongPromptsRaiseTTFTThroughPrefillNotTheAPIServer(t *testing.T) {
	v := newVirtual(t, DefaultConfig(), "long-prompts")
	v.run(30 * time.Second)
	a := v.snap()
	v.run(60 * time.Second)
	w := window{a, v.snap()}
	if cpu := w.rate("process_cpu_seconds_total"); cpu > 0.05 {
		t.Errorf("API server CPU %.3f core/s for 0.6 req/s", cpu)
	}
	ttft, queue, prefill := w.mean("vllm:time_to_first_token_seconds"), w.mean("vllm:request_queue_time_seconds"), w.mean("vllm:request_prefill_time_seconds")
	if gap := ttft - queue - prefill; gap > 0.2*ttft {
		t.Errorf("TTFT %.3fs, queue %.3fs, prefill %.3fs: the gap outside the engine should be small", ttft, queue, prefill)
	}
}

// The families vLLM 0.32 creates under a feature, with its names, types, label names and
// buckets (vllm/v1/metrics/loggers.py, vllm/v1/spec_decode/metrics.py,
// vllm/distributed/kv_transfer/kv_connector/v1/nixl/stats.py).
func TestFeatureFamiliesAreVLLMs(t *testing.T) {
	cfg := DefaultConfig()
	cfg.KVRole, cfg.NumSpeculativeTokens, cfg.EnableLoRA, cfg.MaxLoras = KVConsumer, 2, true, 2
	v := newVirtual(t, cfg, "kv-consumer")
	v.run(5 * time.Second)
	mfs, err := v.e.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	type family struct {
		typ     string
		labels  string
		buckets []float64
	}
	want := map[string]family{
		"vllm:num_requests_kv_fetch_by_stage":                {"GAUGE", "engine,model_name,stage", nil},
		"vllm:nixl_xfer_time_seconds":                        {"HISTOGRAM", "engine,model_name", []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 5}},
		"vllm:nixl_post_time_seconds":                        {"HISTOGRAM", "engine,model_name", []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 5}},
		"vllm:nixl_bytes_transferred":                        {"HISTOGRAM", "engine,model_name", []float64{2048, 8192, 32768, 131072, 524288, 2097152, 8388608, 33554432, 134217728, 536870912, 2147483648, 8589934592}},
		"vllm:nixl_num_descriptors":                          {"HISTOGRAM", "engine,model_name", []float64{10, 20, 30, 50, 75, 100, 200, 400, 1000, 2000, 4000, 10000, 20000, 50000}},
		"vllm:nixl_num_failed_transfers_total":               {"COUNTER", "engine,model_name", nil},
		"vllm:nixl_num_failed_notifications_total":           {"COUNTER", "engine,model_name", nil},
		"vllm:nixl_num_kv_expired_reqs_total":                {"COUNTER", "engine,model_name", nil},
		"vllm:nixl_num_notifications_after_expiry_total":     {"COUNTER", "engine,model_name", nil},
		"vllm:spec_decode_num_drafts_total":                  {"COUNTER", "engine,model_name", nil},
		"vllm:spec_decode_num_draft_tokens_total":            {"COUNTER", "engine,model_name", nil},
		"vllm:spec_decode_num_accepted_tokens_total":         {"COUNTER", "engine,model_name", nil},
		"vllm:spec_decode_num_accepted_tokens_per_pos_total": {"COUNTER", "engine,model_name,position", nil},
		"vllm:lora_requests_info":                            {"GAUGE", "max_lora,running_lora_adapters,waiting_lora_adapters", nil},
		"vllm:num_requests_waiting_by_reason":                {"GAUGE", "engine,model_name,reason", nil},
		"vllm:engine_sleep_state":                            {"GAUGE", "engine,model_name,sleep_state", nil},
		"vllm:admission_rejections_total":                    {"COUNTER", "model_name,reason", nil},
		"vllm:external_prefix_cache_queries_total":           {"COUNTER", "engine,model_name", nil},
		"vllm:prompt_tokens_by_source_total":                 {"COUNTER", "engine,model_name,source", nil},
		"vllm:prompt_tokens_cached_total":                    {"COUNTER", "engine,model_name", nil},
		"process_cpu_seconds_total":                          {"COUNTER", "", nil},
		"process_open_fds":                                   {"GAUGE", "", nil},
		"process_start_time_seconds":                         {"GAUGE", "", nil},
	}
	got := map[string]family{}
	for _, mf := range mfs {
		f := family{typ: mf.GetType().String()}
		if len(mf.GetMetric()) > 0 {
			m := mf.GetMetric()[0]
			var names []string
			for _, l := range m.GetLabel() {
				names = append(names, l.GetName())
			}
			f.labels = strings.Join(names, ",")
			for _, b := range m.GetHistogram().GetBucket() {
				f.buckets = append(f.buckets, b.GetUpperBound())
			}
		}
		got[mf.GetName()] = f
	}
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s missing", name)
		case g.typ != w.typ || g.labels != w.labels || fmt.Sprint(g.buckets) != fmt.Sprint(w.buckets):
			t.Errorf("%s: %s {%s} %v, want %s {%s} %v", name, g.typ, g.labels, g.buckets, w.typ, w.labels, w.buckets)
		}
	}
	var positions []string
	for _, mf := range mfs {
		if mf.GetName() == "vllm:spec_decode_num_accepted_tokens_per_pos_total" {
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "position" {
						positions = append(positions, l.GetValue())
					}
				}
			}
		}
	}
	if fmt.Sprint(positions) != "[0 1]" {
		t.Errorf("positions %v, want one per speculative token from 0", positions)
	}
}

// process_cpu_seconds_total is a counter: read after every step (as often as a scraper could),
// it never goes down, whatever the API server's work ahead of the clock (a step's outputs are
// charged at its end, the tokenization of a request arriving later at its arrival). A dip would
// read as a process restart to rate(): one dip of 0.01 s adds the whole counter.
func TestTheAPIServersCPUCounterNeverGoesDown(t *testing.T) {
	for _, scenario := range []string{"long-prompts", "frontend-bound", "healthy"} {
		t.Run(scenario, func(t *testing.T) {
			v := newVirtual(t, DefaultConfig(), scenario)
			prev := 0.0
			end := v.now.Add(60 * time.Second)
			for v.now.Before(end) {
				res := v.e.Step(v.now)
				v.now = v.now.Add(res.Duration)
				cpu := v.e.processStats().cpu
				if cpu < prev {
					t.Fatalf("process_cpu_seconds_total went from %.2f to %.2f at %s", prev, cpu, v.now.Sub(epoch))
				}
				prev = cpu
			}
		})
	}
}
