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
	if !tr.Enabled() || tr.Limit != 5 || time.Duration(tr.MinDuration) != 2*time.Second || tr.HTTPClientConfig.Authorization == nil {
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

func TestTracesConfigErrorsNameTheirKey(t *testing.T) {
	cases := map[string]struct{ yaml, want string }{
		"bad url":          {"traces: {url: 'jaeger:16686'}\n", "t.yaml: traces.url: must be an http:// or https:// URL"},
		"bad template":     {"traces: {url: 'http://j', service: 'vllm-{{ .model_name'}\n", `t.yaml: traces.service: 1: unclosed action`},
		"bad tag template": {"traces: {url: 'http://j', tags: {k8s.pod.name: '{{ .pod'}}\n", `t.yaml: traces.tags["k8s.pod.name"]: 1: unclosed action`},
		"empty mapping":    {"traces: {url: 'http://j', services: {m: ''}}\n", `t.yaml: traces.services["m"]: empty service name`},
		"limit":            {"traces: {url: 'http://j', limit: 0}\n", "t.yaml: traces.limit: must be between 1 and 50"},
		"search limit":     {"traces: {url: 'http://j', limit: 10, search_limit: 5}\n", "t.yaml: traces.search_limit: must be at least limit (10)"},
		"timeout too long": {"traces: {url: 'http://j', timeout: 30s}\n", "t.yaml: traces.timeout: must be shorter than dispatch.run_timeout (30s)"},
		"unknown key":      {"traces: {url: 'http://j', servise: x}\n", `unknown key "traces.servise"`},
		"two auth kinds":   {"traces: {url: 'http://j', authorization: {credentials: a}, basic_auth: {username: u, password: p}}\n", "t.yaml: traces: at most one of basic_auth, oauth2 & authorization must be configured"},
		"missing secret file": {"traces: {url: 'http://j', authorization: {credentials_file: /nonexistent/jaeger-token}}\n",
			"t.yaml: traces.authorization.credentials_file: open /nonexistent/jaeger-token"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
