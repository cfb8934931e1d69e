package playbooks_test

import (
	"fmt"
	"testing"

	"github.com/vllm-responder/vllm-responder/facts/sources"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

// benchPlaybook returns the built-in ttft-p99-high playbook, the one `make bench` times end to end.
func benchPlaybook(b *testing.B) *playbooks.Playbook {
	b.Helper()
	builtin, err := playbooks.Builtin(sources.Catalog())
	if err != nil {
		b.Fatal(err)
	}
	set, err := playbooks.NewSet(builtin, nil, playbooks.SetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	p, ok := set.Get("ttft-p99-high")
	if !ok {
		b.Fatal("no ttft-p99-high playbook")
	}
	return p
}

var benchLabels = map[string]string{"alertname": "VLLMTimeToFirstTokenP99High", "namespace": "llm",
	"pod": "vllm-llama-7b-0", "model_name": "meta-llama/Llama-3.1-8B-Instruct", "severity": "critical"}

func f(v float64) *float64 { return &v }

// BenchmarkDecide evaluates the verdicts over recorded values (capacity past the knee, the
// fixture in tests/ttft-p99-high_test.yaml): conditions and templates, no Prometheus.
func BenchmarkDecide(b *testing.B) {
	p := benchPlaybook(b)
	values := map[string]*float64{"ttft_p99": f(38), "queue_share": f(0.94), "queue_mean": f(21.5),
		"prefill_mean": f(0.12), "prefill_base": f(0.11), "waiting": f(140), "waiting_before": f(60),
		"running": f(64), "kv_peak": f(0.62), "preemptions": f(0), "gen_tps": f(2100)}
	b.ReportAllocs()
	for b.Loop() {
		d := p.Judge(playbooks.Observation{Values: values, Labels: benchLabels})
		if d.Verdict != "capacity-past-knee" {
			b.Fatalf("verdict %s", d.Verdict)
		}
	}
}

// BenchmarkExpand templates every query of the playbook for one alert (what one run sends).
func BenchmarkExpand(b *testing.B) {
	p := benchPlaybook(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, q := range p.Queries {
			_ = p.Expand(q, benchLabels)
		}
	}
}

// BenchmarkScopeMatchers builds the escaped $scope matchers of one alert.
func BenchmarkScopeMatchers(b *testing.B) {
	scope := []string{"namespace", "pod", "model_name"}
	b.ReportAllocs()
	for b.Loop() {
		_, _, _ = playbooks.ScopeMatchers(scope, benchLabels)
	}
}

// BenchmarkDecideFleet50 is BenchmarkDecide with the sibling comparison of a model on 50 pods
// of two data-parallel engines each (one pod favoured by the router): the work a diagnosis adds
// in the responder per pod, after the one fleet request.
func BenchmarkDecideFleet50(b *testing.B) {
	p := benchPlaybook(b)
	values := map[string]*float64{"ttft_p99": f(38), "queue_share": f(0.94), "queue_mean": f(21.5),
		"prefill_mean": f(0.12), "prefill_base": f(0.11), "waiting": f(140), "waiting_before": f(60),
		"running": f(256), "kv_peak": f(0.62), "preemptions": f(0), "gen_tps": f(2100)}
	fleet := playbooks.FleetValues{"waiting": {}, "running": {}, "kv": {}, "arrivals": {}, "tokens": {}}
	for i := range 50 {
		for e := range 2 {
			k := fmt.Sprintf("vllm-llama-7b-%d#%d", i, e)
			fleet["waiting"][k], fleet["running"][k], fleet["kv"][k], fleet["arrivals"][k], fleet["tokens"][k] = 0, 10, 0.3, 1, 900
		}
	}
	fleet["waiting"]["vllm-llama-7b-0#0"], fleet["waiting"]["vllm-llama-7b-0#1"] = 70, 70
	fleet["arrivals"]["vllm-llama-7b-0#0"], fleet["arrivals"]["vllm-llama-7b-0#1"] = 20, 20
	b.ReportAllocs()
	for b.Loop() {
		d := p.Judge(playbooks.Observation{Values: values, Fleet: fleet, Labels: benchLabels})
		if d.Verdict != "load-imbalance" || d.Fleet.Pods != 50 {
			b.Fatalf("verdict %s", d.Verdict)
		}
	}
}
