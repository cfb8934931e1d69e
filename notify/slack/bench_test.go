package slack

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/facts/sources"
	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

// benchDiagnosis is a full ttft-p99-high diagnosis (capacity past the knee), with the evidence
// and queries a run against Prometheus fills in.
func benchDiagnosis(b *testing.B) *playbooks.Diagnosis {
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
	labels := map[string]string{"alertname": "VLLMTimeToFirstTokenP99High", "namespace": "llm",
		"pod": "vllm-llama-7b-0", "model_name": "meta-llama/Llama-3.1-8B-Instruct"}
	raw := map[string]float64{"ttft_p99": 38, "queue_share": 0.94, "queue_mean": 21.5, "prefill_mean": 0.12,
		"prefill_base": 0.11, "waiting": 140, "waiting_before": 60, "running": 64, "kv_peak": 0.62,
		"preemptions": 0, "gen_tps": 2100}
	values := map[string]*float64{}
	for k, v := range raw {
		values[k] = &v
	}
	d := p.Judge(playbooks.Observation{Values: values, Labels: labels})
	for _, q := range p.Queries {
		if q.Hidden {
			continue
		}
		ev := playbooks.Evidence{Name: q.Name, Title: q.Title, Value: values[q.Name], Unit: q.Unit,
			Text: playbooks.FormatValue(values[q.Name], q.Unit), Query: p.Expand(q, labels)}
		if q.Baseline != "" {
			ev.Baseline = values[q.Baseline]
			ev.BaselineText = playbooks.FormatValue(ev.Baseline, q.Unit)
		}
		d.Evidence = append(d.Evidence, ev)
	}
	d.EvaluatedAt = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	return d
}

// BenchmarkDiagnosisBlocks renders one diagnosis as Block Kit blocks.
func BenchmarkDiagnosisBlocks(b *testing.B) {
	d := benchDiagnosis(b)
	b.ReportAllocs()
	for b.Loop() {
		if len(diagnosisBlocks(notify.NewDiagnosisView(d))) == 0 {
			b.Fatal("no blocks")
		}
	}
}

// BenchmarkDiagnosisBlocksJSON renders and encodes the blocks, as they go to chat.postMessage.
func BenchmarkDiagnosisBlocksJSON(b *testing.B) {
	d := benchDiagnosis(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(diagnosisBlocks(notify.NewDiagnosisView(d))); err != nil {
			b.Fatal(err)
		}
	}
}
