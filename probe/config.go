package probe

import (
	"errors"
	"fmt"
	"net/netip"
	"text/template"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/configerr"
	"github.com/vllm-responder/vllm-responder/internal/podendpoint"
	"github.com/vllm-responder/vllm-responder/internal/secret"
)

// Config is the `probe:` section of the responder's configuration. Off by default.
type Config struct {
	// Enabled sends the probe when a diagnosis is engine-stalled.
	Enabled bool `yaml:"enabled"`
	// URLTemplate renders the pod's OpenAI endpoint (its base URL) from the labels of its vLLM
	// series in Prometheus: {{.instance}}, {{.pod}}, {{.namespace}}. vLLM serves /metrics and
	// /v1 on one port, so the scraped address is the default.
	URLTemplate string `yaml:"url_template"`
	// AllowedNetworks, when set, are the only networks (CIDRs) the probe connects to, checked on
	// the resolved address of every connection.
	AllowedNetworks []string `yaml:"allowed_networks"`
	// APIKey is sent as "Authorization: Bearer ..." (vLLM's --api-key guards /v1); APIKeyFile is
	// its file twin.
	APIKey     secret.Secret `yaml:"api_key"`
	APIKeyFile string        `yaml:"api_key_file"`
	// Timeout bounds the request: a wedged engine never answers, so this is how long a stalled
	// diagnosis waits for the proof.
	Timeout time.Duration `yaml:"timeout"`
	// MinInterval is the per-pod rate limit, across replicas sharing the store: within it the last
	// result is shown again instead of a new request.
	MinInterval time.Duration `yaml:"min_interval"`

	// Compiled by Validate.
	urlTmpl  *template.Template
	networks []netip.Prefix
}

// SetDefaults fills the fields that are unset. Call it before decoding.
func (c *Config) SetDefaults() {
	if c.URLTemplate == "" {
		c.URLTemplate = podendpoint.DefaultURLTemplate
	}
	if c.Timeout == 0 {
		c.Timeout = 5 * time.Second
	}
	if c.MinInterval == 0 {
		c.MinInterval = time.Minute
	}
}

// The bounds of timeout: a probe shorter than a loaded engine's first token proves nothing, and
// one longer than a diagnosis may take is never waited for.
const (
	minTimeout = 500 * time.Millisecond
	maxTimeout = 20 * time.Second
)

// Validate checks the fields and compiles the template and networks. It returns every error,
// each naming its key inside the section (configerr); the caller adds "probe.".
func (c *Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) { errs = append(errs, configerr.New(key, format, args...)) }
	if c.Timeout < minTimeout || c.Timeout > maxTimeout {
		add("timeout", "must be between %s and %s, got %s", configerr.FormatDuration(minTimeout), configerr.FormatDuration(maxTimeout), configerr.FormatDuration(c.Timeout))
	}
	if c.MinInterval < c.Timeout {
		add("min_interval", "must be at least timeout (%s), got %s: a pod is probed at most once per interval", configerr.FormatDuration(c.Timeout), configerr.FormatDuration(c.MinInterval))
	}
	t, err := podendpoint.ParseURLTemplate("url_template", c.URLTemplate)
	if err != nil {
		add("url_template", "%w", err)
	}
	nets, bad := podendpoint.ParseNetworks(c.AllowedNetworks)
	for i := range c.AllowedNetworks {
		if e, ok := bad[i]; ok {
			add(fmt.Sprintf("allowed_networks[%d]", i), "%w", e)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	c.urlTmpl, c.networks = t, nets
	return nil
}

func (c *Config) compiled() bool { return c.urlTmpl != nil }
