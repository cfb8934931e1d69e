package sim

import (
	"testing"
	"time"
)

// Each scenario is measured over the window 30-60 s after switching from a
// healthy steady state (what Prometheus would see a minute after the switch)
// and compared with healthy measured the same way.
func TestScenarioSignatures(t *testing.T) {
	const settle, span = 30 * time.Second, 30 * time.Second
	base, _ := measure(t, DefaultConfig(), "healthy", settle, span)
	t.Logf("%-16s %s", "healthy", base)

	type check struct {
		what string
		ok   func(s signature) bool
	}
	noPreemption := check{"no preemption", func(s signature) bool { return s.SchedPreemptPerSec == 0 }}
	for _, tc := range []struct {
		scenario string
		checks   []check
	}{
		{"healthy", []check{
			{"the queue is empty", func(s signature) bool { return s.Waiting <= 2 && s.QueueMean < 0.1 }},
			{"ITL mean is 15-30 ms", func(s signature) bool { return s.ITLMean > 0.015 && s.ITLMean < 0.030 }},
			{"TTFT p99 is under 0.25 s", func(s signature) bool { return s.TTFTp99 < 0.25 }},
			{"KV usage is low", func(s signature) bool { return s.KV < 0.2 }},
			{"nothing is aborted", func(s signature) bool { return s.AbortShare < 0.05 }},
			noPreemption,
		}},
		{"overload", []check{
			{"running is pinned at max_num_seqs", func(s signature) bool { return s.Running >= 0.9*256 }},
			{"hundreds are waiting", func(s signature) bool { return s.Waiting > 500 }},
			{"TTFT p99 is past 10 s", func(s signature) bool { return s.TTFTp99 > 10 }},
			{"queueing dominates TTFT", func(s signature) bool { return s.QueueMean > 10*s.PrefillMean && s.QueueMean > 2 }},
			{"prefill stays short", func(s signature) bool { return s.PrefillMean < 0.3 }},
			{"KV usage leaves room", func(s signature) bool { return s.KV < 0.8 }},
			noPreemption,
		}},
		{"kv-pressure", []check{
			{"KV usage is at least 0.95", func(s signature) bool { return s.KV >= 0.95 }},
			{"the scheduler preempts more than 0.2/s", func(s signature) bool { return s.SchedPreemptPerSec > 0.2 }},
			// as in vLLM, a preemption is counted only when its request resumes: the victims wait
			// behind a full KV pool, so the counter lags far behind
			{"the preemption counter lags the scheduler", func(s signature) bool { return s.PreemptPerSec < 0.5*s.SchedPreemptPerSec }},
			{"ITL inflates", func(s signature) bool { return s.ITLMean > 3*base.ITLMean }},
		}},
		{"long-prompts", []check{
			{"prefill time is at least 4x healthy", func(s signature) bool { return s.PrefillMean > 4*base.PrefillMean }},
			{"TTFT p99 is at least 2x healthy", func(s signature) bool { return s.TTFTp99 > 2*base.TTFTp99 }},
			{"the queue stays short", func(s signature) bool { return s.QueueMean < 0.1 && s.Waiting <= 2 }},
			noPreemption,
		}},
		{"wide-batch", []check{
			{"the running batch is at least 100 wide", func(s signature) bool { return s.Running >= 100 }},
			{"ITL mean is at least 4x healthy", func(s signature) bool { return s.ITLMean > 4*base.ITLMean }},
			{"ITL p99 is at least 3x healthy", func(s signature) bool { return s.ITLp99 > 3*base.ITLp99 }},
			{"decode time is at least 4x healthy", func(s signature) bool { return s.DecodeMean > 4*base.DecodeMean }},
			{"TTFT p99 stays under 1 s", func(s signature) bool { return s.TTFTp99 < 1 }},
			{"the queue stays short", func(s signature) bool { return s.Waiting < 20 }},
			{"KV usage leaves room", func(s signature) bool { return s.KV < 0.85 }},
			noPreemption,
		}},
		{"client-timeouts", []check{
			{"more than 20% of the requests that got a first token never finish", func(s signature) bool { return s.AbortShare > 0.2 }},
			{"e2e latency is normal", func(s signature) bool { return s.E2EMean < 1.5*base.E2EMean }},
			{"TTFT p99 is normal", func(s signature) bool { return s.TTFTp99 < 2*base.TTFTp99 }},
			{"ITL is normal", func(s signature) bool { return s.ITLMean < 1.5*base.ITLMean }},
			noPreemption,
		}},
	} {
		t.Run(tc.scenario+" shows its signature within a minute of switching", func(t *testing.T) {
			s, _ := measure(t, DefaultConfig(), tc.scenario, settle, span)
			t.Logf("%-16s %s", tc.scenario, s)
			for _, c := range tc.checks {
				if !c.ok(s) {
					t.Errorf("%s: %s", c.what, s)
				}
			}
		})
	}
}

func TestOverloadQueueGrowsWhileITLStaysFlat(t *testing.T) {
	v := newVirtual(t, DefaultConfig(), "overload")
	v.run(30 * time.Second)
	a := v.snap()
	v.run(30 * time.Second)
	b := v.snap()
	v.run(30 * time.Second)
	c := v.snap()
	first, second := window{a, b}.signature(), window{b, c}.signature()
	if second.Waiting < first.Waiting+300 {
		t.Errorf("waiting should keep growing: %v then %v", first.Waiting, second.Waiting)
	}
	if second.QueueMean < 1.3*first.QueueMean {
		t.Errorf("queue time should keep growing: %.1fs then %.1fs", first.QueueMean, second.QueueMean)
	}
	if r := second.ITLMean / first.ITLMean; r < 0.9 || r > 1.1 {
		t.Errorf("ITL should stay flat: %.1fms then %.1fms", first.ITLMean*1000, second.ITLMean*1000)
	}
	if r := second.PrefillMean / first.PrefillMean; r < 0.8 || r > 1.25 {
		t.Errorf("prefill time should stay flat: %.3fs then %.3fs", first.PrefillMean, second.PrefillMean)
	}
	if r := second.GenTokensPerSec / first.GenTokensPerSec; r < 0.9 || r > 1.1 {
		t.Errorf("generation throughput should plateau: %.0f then %.0f tokens/s", first.GenTokensPerSec, second.GenTokensPerSec)
	}
}

func TestSwitchingWithResetDropsTheOldLoadUncounted(t *testing.T) {
	v := newVirtual(t, DefaultConfig(), "overload")
	v.run(20 * time.Second)
	before := v.snap()
	if v.e.Stats().Waiting == 0 {
		t.Fatal("overload should have built a queue")
	}
	v.switchTo("healthy")
	if st := v.e.Stats(); st.Waiting != 0 || st.Running != 0 || st.UsedBlocks != 0 {
		t.Fatalf("reset should drop the synthetic requests: %+v", st)
	}
	after := v.snap()
	for _, k := range []string{"vllm:request_success_total{finished_reason=abort}", "vllm:prompt_tokens_total", "vllm:num_preemptions_total"} {
		if before.values[k] != after.values[k] {
			t.Fatalf("dropped synthetic requests must not change %s", k)
		}
	}
}

func TestKVPressurePreemptionsAreCountedOnceTheVictimsResume(t *testing.T) {
	v := newVirtual(t, DefaultConfig(), "healthy")
	v.run(30 * time.Second)
	v.switchTo("kv-pressure")
	v.run(120 * time.Second)
	a := v.snap()
	v.run(60 * time.Second)
	s := window{a, v.snap()}.signature()
	if s.PreemptPerSec < 0.2 {
		t.Errorf("two minutes in, the resumed victims should be counted: %s", s)
	}
}
