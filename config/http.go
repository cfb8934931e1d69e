package config

import (
	"net/http"

	promconfig "github.com/prometheus/common/config"

	"github.com/vllm-responder/vllm-responder/internal/httpconfig"
)

// HTTPClientConfig is prometheus/common's HTTP client configuration, the http_config that
// Prometheus and Alertmanager themselves use: basic_auth, authorization, oauth2, tls_config,
// proxy_url (or proxy_from_environment), http_headers, follow_redirects, enable_http2, and the
// older bearer_token. Every secret has its file twin in it (password_file, credentials_file,
// client_secret_file, bearer_token_file, tls_config.key_file, http_headers.*.files), read on
// each connection or request, so a rotated Kubernetes Secret is picked up without a restart.
// Sections embed it inline (`prometheus: {url: ..., basic_auth: {...}}`).
type HTTPClientConfig = promconfig.HTTPClientConfig

// DefaultHTTPClientConfig is prometheus/common's default: follow redirects, HTTP/2 on.
func DefaultHTTPClientConfig() HTTPClientConfig { return promconfig.DefaultHTTPClientConfig }

// NewHTTPRoundTripper returns the round tripper for a section's HTTP client configuration:
// prometheus/common's, which adds the credentials and headers, reloads TLS files when they
// change, keeps up to 1000 idle connections per host (closed after httpconfig.IdleConnTimeout
// idle) and never asks for compression. name
// labels its connections. Any section of this configuration (prometheus, alertmanager, and
// others that take an HTTP client configuration) builds its client through this.
func NewHTTPRoundTripper(name string, h HTTPClientConfig) (http.RoundTripper, error) {
	return promconfig.NewRoundTripperFromConfig(h, name, httpconfig.Options()...)
}

// NewHTTPClient is NewHTTPRoundTripper as an *http.Client (redirects as follow_redirects says).
func NewHTTPClient(name string, h HTTPClientConfig) (*http.Client, error) {
	return promconfig.NewClientFromConfig(h, name, httpconfig.Options()...)
}
