package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrometheusHTTPClientConfig: prometheus and alertmanager take prometheus/common's HTTP
// client configuration inline; bearer_token (and its file twin) keeps working, secrets print
// redacted, and prometheus/common's own rules apply with the section named.
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

	for _, bad := range []struct{ yaml, want string }{
		{"prometheus: {url: http://p, bearer_token: a, basic_auth: {username: u, password: p}}",
			"c.yaml: prometheus: at most one of basic_auth, oauth2, bearer_token & bearer_token_file must be configured"},
		{"prometheus: {url: http://p, basic_auth: {username: u, password_file: /nonexistent/pw}}",
			"c.yaml: prometheus.basic_auth.password_file: open /nonexistent/pw: no such file or directory"},
		{"alertmanager: {url: http://a, tls_config: {ca_file: /nonexistent/ca.pem}}",
			"c.yaml: alertmanager.tls_config.ca_file: open /nonexistent/ca.pem: no such file or directory"},
		{"prometheus: {url: http://p, basic_auth: {usernme: u}}", `unknown key "usernme"`},
	} {
		_, err := Parse("c.yaml", []byte(bad.yaml))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s:\n got %v\nwant %s", bad.yaml, err, bad.want)
		}
	}
}
