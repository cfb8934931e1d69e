package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrometheusHTTPClientConfig: prometheus and alertmanager take prometheus/common's HTTP
// client configuration inline; bearer_token (and its file twin) keeps working, secrets print
// redacted. (Its errors are pinned with the others in testdata/bad.)
func TestPrometheusHTTPClientConfig(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "tok")
	if err := os.WriteFile(tok, []byte("file-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PROM_TOKEN", "env-token-123")
	c, err := Parse("c.yaml", []byte(`
prometheus:
  url: https://thanos.example.com
  bearer_token: ${PROM_TOKEN}
  http_headers: {X-Scope-OrgID: {values: [tenant-a]}}
  proxy_url: http://proxy.example.com:3128
alertmanager:
  url: http://am:9093
  bearer_token_file: `+tok+`
`))
	if err != nil {
		t.Fatal(err)
	}
	if a := c.Prometheus.HTTP.Authorization; a == nil || a.Type != "Bearer" || string(a.Credentials) != "env-token-123" {
		t.Errorf("prometheus.bearer_token did not become the authorization: %+v", a)
	}
	if a := c.Alertmanager.HTTP.Authorization; a == nil || a.CredentialsFile != tok {
		t.Errorf("alertmanager.bearer_token_file did not become the authorization: %+v", a)
	}
	if !c.Prometheus.HTTP.FollowRedirects || !c.Prometheus.HTTP.EnableHTTP2 {
		t.Error("prometheus/common's defaults (follow_redirects, enable_http2) are not set")
	}
	red := c.Redacted()
	if strings.Contains(red, "env-token-123") || !strings.Contains(red, "X-Scope-OrgID") {
		t.Errorf("redacted config:\n%s", red)
	}
	if _, err := NewHTTPClient("prometheus", c.Prometheus.HTTP); err != nil {
		t.Fatal(err)
	}

}
