// Package httpconfig checks prometheus/common's HTTP client configuration (the http_config of
// Prometheus and Alertmanager), which several sections of the responder's configuration take
// inline: prometheus, alertmanager, traces.
package httpconfig

import (
	"errors"
	"maps"
	"os"
	"slices"
	"time"

	promconfig "github.com/prometheus/common/config"

	"github.com/vllm-responder/vllm-responder/internal/configerr"
)

// Validate checks h with prometheus/common's own rules (one authentication method, well-formed
// proxy and headers; bearer_token becomes authorization) and that every file it names can be
// read now, so a missing Secret fails at load, not at the first incident. Its errors follow
// configerr: a file's error names its key (basic_auth.password_file), prometheus/common's own
// words are the section's.
func Validate(h *promconfig.HTTPClientConfig) error {
	if err := h.Validate(); err != nil {
		return err
	}
	var errs []error
	check := func(key, path string) {
		if path == "" {
			return
		}
		if _, err := os.ReadFile(path); err != nil {
			errs = append(errs, configerr.New(key, "%w", err))
		}
	}
	if a := h.BasicAuth; a != nil {
		check("basic_auth.username_file", a.UsernameFile)
		check("basic_auth.password_file", a.PasswordFile)
	}
	if a := h.Authorization; a != nil {
		check("authorization.credentials_file", a.CredentialsFile)
	}
	if o := h.OAuth2; o != nil {
		check("oauth2.client_secret_file", o.ClientSecretFile)
		check("oauth2.client_certificate_key_file", o.ClientCertificateKeyFile)
	}
	check("tls_config.ca_file", h.TLSConfig.CAFile)
	check("tls_config.cert_file", h.TLSConfig.CertFile)
	check("tls_config.key_file", h.TLSConfig.KeyFile)
	if h.HTTPHeaders != nil {
		for _, name := range slices.Sorted(maps.Keys(h.HTTPHeaders.Headers)) {
			for _, f := range h.HTTPHeaders.Headers[name].Files {
				check("http_headers."+name+".files", f)
			}
		}
	}
	return errors.Join(errs...)
}

// IdleConnTimeout closes a pooled connection idle this long: Go's and client_golang's default.
// prometheus/common's own (5 minutes) kept every connection of a storm's peak open, two
// goroutines each (up to prometheus.max_concurrent_queries of them to Prometheus), for five
// minutes after it ended.
const IdleConnTimeout = 90 * time.Second

// Options are the client options of every HTTP client built from such a configuration: the
// responder's user agent and IdleConnTimeout.
func Options() []promconfig.HTTPClientOption {
	return []promconfig.HTTPClientOption{promconfig.WithUserAgent("vllm-responder"), promconfig.WithIdleConnTimeout(IdleConnTimeout)}
}
