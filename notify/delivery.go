package notify

import (
	"errors"
	"net/http"
	"time"

	promconfig "github.com/prometheus/common/config"

	"github.com/vllm-responder/vllm-responder/internal/configerr"
	"github.com/vllm-responder/vllm-responder/internal/httpconfig"
)

// HTTPDelivery is the part of a notifier's configuration section that says how it POSTs to its
// URL (teams, outbound_webhooks[i]), inline in the section: the HTTP client (prometheus/common's,
// as prometheus: takes it: proxy_url, tls_config, authorization, ...), the deadline of one
// request, and how the retry loop treats the peer's rate limits.
type HTTPDelivery struct {
	HTTP promconfig.HTTPClientConfig `yaml:",inline"`
	// RequestTimeout bounds one POST (default 10s); all attempts together are bounded by
	// dispatch.notify_timeout.
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// MaxRetries bounds the retries after a 429 (each after the peer's Retry-After; default 3);
	// a Retry-After above MaxRetryAfter (default 30s) ends them. Other transient failures (5xx,
	// timeouts) are retried with backoff until dispatch.notify_timeout.
	MaxRetries    int           `yaml:"max_retries"`
	MaxRetryAfter time.Duration `yaml:"max_retry_after"`
}

// DefaultHTTPDelivery is the defaults of HTTPDelivery.
func DefaultHTTPDelivery() HTTPDelivery {
	return HTTPDelivery{HTTP: promconfig.DefaultHTTPClientConfig, RequestTimeout: 10 * time.Second, MaxRetries: 3, MaxRetryAfter: 30 * time.Second}
}

// Validate checks the delivery settings (configerr: keys without the section's name).
func (d *HTTPDelivery) Validate() error {
	var errs []error
	if d.RequestTimeout <= 0 {
		errs = append(errs, configerr.New("request_timeout", "must be positive"))
	}
	if d.MaxRetries < 0 || d.MaxRetries > 10 {
		errs = append(errs, configerr.New("max_retries", "must be between 0 and 10"))
	}
	if d.MaxRetryAfter <= 0 {
		errs = append(errs, configerr.New("max_retry_after", "must be positive"))
	}
	return errors.Join(append(errs, httpconfig.Validate(&d.HTTP))...)
}

// RetryPolicy is how the retry loop treats this notifier's failures.
func (d *HTTPDelivery) RetryPolicy() Policy {
	p := Policy{RateLimitRetries: d.MaxRetries, MaxRetryAfter: d.MaxRetryAfter}
	if d.MaxRetries == 0 {
		p.RateLimitRetries = -1 // none
	}
	return p
}

// Client builds the HTTP client; name labels its connections.
func (d *HTTPDelivery) Client(name string) (*http.Client, error) {
	return promconfig.NewClientFromConfig(d.HTTP, name, httpconfig.Options()...)
}
