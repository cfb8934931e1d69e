package prometheus

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKServeAndStaticProfilesFireOnTheirSeries: the kserve profile's rules fire on kserve_vllm:
// series (KServe's PodMonitor renames) and the static profile's on series with only job and
// instance, grouped and annotated by instance; promtool checks and tests both.
func TestKServeAndStaticProfilesFireOnTheirSeries(t *testing.T) {
	dir := t.TempDir()
	for _, profile := range []string{"kserve", "static"} {
		b, err := RenderProfile(profile)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, profile+".rules.yml"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	kserve := mustRules(t, "kserve")
	for _, r := range kserve {
		if strings.Contains(strings.ReplaceAll(r.Expr, "kserve_vllm:", ""), "vllm:") {
			t.Errorf("%s: a vllm: name is left in the kserve rules:\n%s", r.Alert, r.Expr)
		}
	}
	for _, r := range mustRules(t, "static") {
		if strings.Contains(r.Expr, "pod") {
			t.Errorf("%s: the static rules still group by pod:\n%s", r.Alert, r.Expr)
		}
	}
	test := `rule_files: [kserve.rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'kserve_vllm:num_requests_waiting{namespace="llm", pod="llama-predictor-0", model_name="llama", engine="0"}'
        values: '60x20'
      - series: 'vllm:num_requests_waiting{namespace="llm", pod="other-0", model_name="llama", engine="0"}'
        values: '60x20'
    alert_rule_test:
      - eval_time: 12m
        alertname: VLLMQueueDepthHigh
        exp_alerts:
          - exp_labels: {namespace: llm, pod: llama-predictor-0, model_name: llama, severity: warning}
            exp_annotations:
              summary: 'vLLM queue depth is 60 for llama on llm/llama-predictor-0'
              description: '60 requests of llama on pod llama-predictor-0 have been waiting for capacity on average over 2m (threshold 50). Requests deferred for their KV transfer or a LoRA slot are not counted where vLLM exports the split (num_requests_waiting_by_reason); older vLLM counts them. A growing queue with the running batch at its cap is capacity ("past the knee"): add replicas or shed load. With KV cache near full, preempted requests are re-queued.'
              runbook_url: 'https://github.com/vllm-responder/vllm-responder/blob/main/docs/playbooks/queue-depth-high.md'
`
	static := `rule_files: [static.rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'vllm:num_requests_waiting{job="vllm", instance="10.0.0.1:8000", model_name="llama", engine="0"}'
        values: '60x20'
      - series: 'vllm:num_requests_waiting{job="vllm", instance="10.0.0.2:8000", model_name="llama", engine="0"}'
        values: '10x20'
    alert_rule_test:
      - eval_time: 12m
        alertname: VLLMQueueDepthHigh
        exp_alerts:
          - exp_labels: {instance: "10.0.0.1:8000", model_name: llama, severity: warning}
            exp_annotations:
              summary: 'vLLM queue depth is 60 for llama on /10.0.0.1:8000'
              description: '60 requests of llama on pod 10.0.0.1:8000 have been waiting for capacity on average over 2m (threshold 50). Requests deferred for their KV transfer or a LoRA slot are not counted where vLLM exports the split (num_requests_waiting_by_reason); older vLLM counts them. A growing queue with the running batch at its cap is capacity ("past the knee"): add replicas or shed load. With KV cache near full, preempted requests are re-queued.'
              runbook_url: 'https://github.com/vllm-responder/vllm-responder/blob/main/docs/playbooks/queue-depth-high.md'
`
	for name, body := range map[string]string{"kserve_test.yml": test, "static_test.yml": static} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runPromtool(t, "check", "rules", filepath.Join(dir, "kserve.rules.yml"), filepath.Join(dir, "static.rules.yml"))
	runPromtool(t, "test", "rules", filepath.Join(dir, "kserve_test.yml"), filepath.Join(dir, "static_test.yml"))
}
