package config

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestTracesConfig(t *testing.T) {
	c, err := Parse("t.yaml", []byte(`
traces:
  url: http://jaeger-query:16686
  authorization: {credentials: jaeger-t0ken-123}
  tls_config: {insecure_skip_verify: false}
  services: {"meta-llama/Llama-3.1-8B-Instruct": vllm-llama-8b}
  tags: {k8s.pod.name: "{{ .pod }}"}
  min_duration: 2s
`))
	if err != nil {
		t.Fatal(err)
	}
	tr := &c.Traces
	if !tr.Enabled() || tr.Limit != 5 || tr.MinDuration != 2*time.Second || tr.HTTPClientConfig.Authorization == nil {
		t.Fatalf("traces config not loaded with its defaults: %+v", tr)
	}
	svc, err := tr.ServiceFor(map[string]string{"model_name": "meta-llama/Llama-3.1-8B-Instruct"})
	if err != nil || svc != "vllm-llama-8b" {
		t.Errorf("mapped service %q, %v", svc, err)
	}
	svc, err = tr.ServiceFor(map[string]string{"model_name": "qwen"})
	if err != nil || svc != "vllm-qwen" {
		t.Errorf("templated service %q, %v (default template vllm-{{ .model_name }})", svc, err)
	}
	j, _ := json.Marshal(c)
	for _, out := range []string{c.Redacted(), string(j)} {
		if strings.Contains(out, "jaeger-t0ken-123") {
			t.Fatalf("rendered config leaks the Jaeger credentials:\n%s", out)
		}
	}

	off, err := Parse("t.yaml", []byte("listen: :8080\n"))
	if err != nil || off.Traces.Enabled() {
		t.Fatalf("traces must be off without a url: %v %+v", err, off.Traces)
	}
}
