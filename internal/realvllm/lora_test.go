//go:build realvllm

package realvllm

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/sim"
)

// TestLoRARequestsWaitDeferredForASlot: three adapters made locally (random weights, the tiny
// model's shapes) on a server with --max-loras 1 and 4 sequences: two requests for each adapter
// and one for the base model at once. The requests of the adapters not in the slot wait
// "deferred" while the engine has free sequences; lora_requests_info names the adapters.
func TestLoRARequestsWaitDeferredForASlot(t *testing.T) {
	dir := t.TempDir()
	adapters := AdapterNames(3)
	if err := MakeLoRAAdapters(dir, adapters...); err != nil {
		t.Fatal(err)
	}
	o := Options{MaxNumSeqs: 4, MaxModelLen: 512, BlockSize: 32, NumBlocks: 256, OTLP: "http://127.0.0.1:1", Args: LoRAArgs(dir, 1, adapters...)}
	s, err := Start(o, 10*time.Minute)
	if err != nil {
		t.Fatalf("the LoRA server did not start (does the CPU backend serve LoRA?): %v", err)
	}
	defer s.Stop()
	t.Logf("vLLM %s with --enable-lora --max-loras 1 and %d adapters, healthy after %s", s.Version, len(adapters), s.StartupDur.Round(time.Second))
	idle := snapOf(t, s)
	t.Logf("  idle: lora_requests_info has %d series; num_requests_waiting_by_reason %v", len(idle["vllm:lora_requests_info"].GetMetric()), LabelValues(idle["vllm:num_requests_waiting_by_reason"], "reason"))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	mix := append(append([]string{}, adapters...), adapters...)
	mix = append(mix, "")
	var wg sync.WaitGroup
	results := make([]Result, len(mix))
	for i := range mix {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = s.Complete(ctx, AdapterRequest(mix, i, 20, 100))
		}(i)
	}
	// The state while adapters wait: some requests deferred, sequences free.
	var during snapshot
	testenv.WaitFor(t, 2*time.Minute, "requests deferred for a LoRA slot", func() bool {
		during = snapOf(t, s)
		return during.v("vllm:num_requests_waiting_by_reason", "reason", "deferred") >= 2 && during.v("vllm:num_requests_running") > 0
	})
	info := currentLoRAInfo(during["vllm:lora_requests_info"])
	running, waiting := during.v("vllm:num_requests_running"), during.v("vllm:num_requests_waiting")
	deferred, capacity := during.v("vllm:num_requests_waiting_by_reason", "reason", "deferred"), during.v("vllm:num_requests_waiting_by_reason", "reason", "capacity")
	t.Logf("  while adapters wait: running %v of %d sequences, waiting %v (deferred %v, capacity %v), KV %.3f", running, o.MaxNumSeqs, waiting, deferred, capacity, during.v("vllm:kv_cache_usage_perc"))
	t.Logf("  lora_requests_info (the most recent of %d series): %v", len(during["vllm:lora_requests_info"].GetMetric()), info)
	wg.Wait()
	after := waitIdleOn(t, s)
	for i, r := range results {
		if r.Err != nil || r.Finish != "length" {
			t.Errorf("request %d (%q): %+v", i, mix[i], r)
		}
	}
	var series []string
	for _, m := range after["vllm:lora_requests_info"].GetMetric() {
		series = append(series, fmt.Sprintf("%s %.3f", labelString(m), m.GetGauge().GetValue()))
	}
	t.Logf("  after the load, lora_requests_info exports %d series: %s", len(series), strings.Join(series, "; "))
	t.Logf("  ITL mean %.1f ms over the load", 1000*(after.v("vllm:inter_token_latency_seconds_sum")-idle.v("vllm:inter_token_latency_seconds_sum"))/
		(after.v("vllm:inter_token_latency_seconds_count")-idle.v("vllm:inter_token_latency_seconds_count")))

	// vllm-sim with as many LoRA slots and adapters, after a request for each: the same families,
	// and what it puts in waiting_lora_adapters beside the running ones.
	featureFamiliesExist(t, featureLoRA, after)
	simFams := simFeatureMetrics(t, o, func(c *sim.Config) { c.EnableLoRA, c.MaxLoras, c.LoRAModules = true, 1, adapters }, mix...)
	compareFeatureFamilies(t, after, simFams, "vllm:lora_requests_info", "vllm:num_requests_waiting_by_reason")
	realOdd, simOdd := loRALabelsApart(after["vllm:lora_requests_info"]), loRALabelsApart(simFams["vllm:lora_requests_info"])
	checkKnownBehaviour(t, "vllm:lora_requests_info: waiting_lora_adapters", len(realOdd) == 0 && len(simOdd) > 0,
		fmt.Sprintf("series whose waiting_lora_adapters is not running_lora_adapters: real %v, vllm-sim %v", realOdd, simOdd))
	if capacity != 0 || deferred != waiting {
		t.Errorf("waiting %v = capacity %v + deferred %v: want all of it deferred (the engine had free sequences)", waiting, capacity, deferred)
	}
	if running >= float64(o.MaxNumSeqs) {
		t.Errorf("running %v: the requests waited for sequences, not for a LoRA slot", running)
	}
	if info["max_lora"] != "1" {
		t.Errorf("lora_requests_info max_lora %q, want 1", info["max_lora"])
	}
	run := strings.Split(info["running_lora_adapters"], ",")
	if len(run) != 1 || run[0] == "" {
		t.Errorf("running_lora_adapters %q: want the one adapter in the slot", info["running_lora_adapters"])
	}
	// Measured on 0.32: the API server learns of a request's state from the events riding on its
	// outputs, and a request that waits was never scheduled, so it has none yet; and both labels
	// are the keys of one table of the adapters with requests in flight. The adapters that wait for
	// the slot are not named; waiting_lora_adapters repeats running_lora_adapters.
	if info["waiting_lora_adapters"] != info["running_lora_adapters"] {
		t.Errorf("waiting_lora_adapters %q differs from running_lora_adapters %q: vLLM now names the waiting adapters (update docs/vllm-facts.md)", info["waiting_lora_adapters"], info["running_lora_adapters"])
	}
	// Each state is its own series, set to the time it was last reported, and none is removed.
	if len(series) < 2 {
		t.Errorf("lora_requests_info exports %d series after adapters took turns in the slot, want one per state seen", len(series))
	}
}

// currentLoRAInfo is the label set of lora_requests_info's most recent series (its value is the
// time it was last set).
func currentLoRAInfo(f *dto.MetricFamily) map[string]string {
	var best *dto.Metric
	for _, m := range f.GetMetric() {
		if best == nil || m.GetGauge().GetValue() > best.GetGauge().GetValue() {
			best = m
		}
	}
	out := map[string]string{}
	for _, l := range best.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// loRALabelsApart lists the series of lora_requests_info with adapters running whose
// waiting_lora_adapters differs from running_lora_adapters.
func loRALabelsApart(f *dto.MetricFamily) []string {
	var out []string
	for _, m := range f.GetMetric() {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		if l["running_lora_adapters"] != "" && l["waiting_lora_adapters"] != l["running_lora_adapters"] {
			out = append(out, labelString(m))
		}
	}
	return out
}

func labelString(m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() {
		parts = append(parts, l.GetName()+"="+`"`+l.GetValue()+`"`)
	}
	return "{" + strings.Join(parts, ",") + "}"
}
