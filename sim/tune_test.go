//go:build tune

// A tuning aid, not a test: built only with -tags tune, so plain `go test` never has it to skip.

package sim

import (
	"testing"
	"time"
)

// TestPrintScenarioSignatures prints each scenario's signature over successive
// windows after switching from healthy. Run with go test -tags tune -run Print -v ./sim.
func TestPrintScenarioSignatures(t *testing.T) {
	for _, name := range []string{"healthy", "overload", "kv-pressure", "long-prompts", "wide-batch", "client-timeouts"} {
		v := newVirtual(t, DefaultConfig(), "healthy")
		v.run(30 * time.Second)
		v.switchTo(name)
		prev := v.snap()
		for _, upto := range []time.Duration{15, 30, 45, 60, 90, 120, 180} {
			v.run(upto*time.Second - v.now.Sub(prev.at) - (prev.at.Sub(epoch) - 30*time.Second))
			cur := v.snap()
			t.Logf("%-16s t=%3.0fs %s", name, cur.at.Sub(epoch).Seconds()-30, window{prev, cur}.signature())
			prev = cur
		}
	}
}

// TestPrintSecondRing prints the issue-24 and issue-26 scenarios over successive 30 s windows,
// each with the flags it needs. Run with go test -tags tune -run SecondRing -v ./sim.
func TestPrintSecondRing(t *testing.T) {
	kv, spec, lora := DefaultConfig(), DefaultConfig(), DefaultConfig()
	kv.KVRole, spec.NumSpeculativeTokens, lora.EnableLoRA, lora.MaxLoras = KVConsumer, 3, true, 4
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"kv-consumer", kv}, {"kv-transfer-stuck", kv}, {"spec-decode", spec}, {"spec-decode-acceptance-drop", spec},
		{"spec-decode-wide-batch", spec}, {"lora-adapters", lora}, {"lora-hot-adapters", lora}, {"frontend-bound", DefaultConfig()},
		{"engine-hang", DefaultConfig()}, {"sleep", DefaultConfig()}, {"weight-update", DefaultConfig()}, {"restart-loop", DefaultConfig()},
	} {
		v := newVirtual(t, tc.cfg, tc.name)
		for range 6 {
			a := v.snap()
			v.run(30 * time.Second)
			s := v.snap()
			w := window{a, s}
			acc := w.rate("vllm:spec_decode_num_accepted_tokens_total") / w.rate("vllm:spec_decode_num_draft_tokens_total")
			t.Logf("%-28s t=%3.0f running=%3g waiting=%4g deferred=%4g to_start=%3g in_progress=%3g kv=%.2f ttft=%.3f queue=%.3f prefill=%.3f itl=%.1fms tpot=%.1fms gen/s=%.0f api_cpu=%.2f fds=%g acceptance=%.2f xfer_fail/s=%.2f error/s=%.2f",
				tc.name, v.now.Sub(epoch).Seconds(), s.values["vllm:num_requests_running"], s.values["vllm:num_requests_waiting"], s.values["vllm:num_requests_waiting_by_reason{reason=deferred}"],
				s.values["vllm:num_requests_kv_fetch_by_stage{stage=waiting_to_start}"], s.values["vllm:num_requests_kv_fetch_by_stage{stage=in_progress}"], s.values["vllm:kv_cache_usage_perc"],
				w.mean("vllm:time_to_first_token_seconds"), w.mean("vllm:request_queue_time_seconds"), w.mean("vllm:request_prefill_time_seconds"),
				1000*w.mean("vllm:inter_token_latency_seconds"), 1000*w.mean("vllm:request_time_per_output_token_seconds"), w.rate("vllm:generation_tokens_total"),
				w.rate("process_cpu_seconds_total"), s.values["process_open_fds"], acc, w.rate("vllm:nixl_num_failed_transfers_total"), w.rate("vllm:request_success_total{finished_reason=error}"))
		}
	}
}
