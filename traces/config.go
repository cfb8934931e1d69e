package traces

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"text/template"
	"time"

	promconfig "github.com/prometheus/common/config"

	"github.com/vllm-responder/vllm-responder/internal/configerr"
	"github.com/vllm-responder/vllm-responder/internal/httpconfig"
)

// Operation is the span name vLLM gives every request (vllm/v1/engine/output_processor.py).
const Operation = "llm_request"

// Config is the `traces:` section. An empty URL turns the lookup off.
type Config struct {
	// URL is the base URL of Jaeger's query service (its HTTP API: /api/traces).
	URL string `yaml:"url"`
	// HTTPClientConfig authenticates to it (authorization, basic_auth, oauth2, tls_config,
	// proxy_url, http_headers, ...), as Prometheus' own http_config does.
	HTTPClientConfig promconfig.HTTPClientConfig `yaml:",inline"`
	// UIURL is the base URL of the Jaeger UI for the trace links (default: URL).
	UIURL string `yaml:"ui_url"`
	// Service names the OTEL_SERVICE_NAME of a model's vLLM pods: a Go template over the alert's
	// labels (vLLM sets no service name and no model attribute, so the deployment must).
	Service string `yaml:"service"`
	// Services maps a model_name to its service name; a model listed here ignores Service.
	Services map[string]string `yaml:"services"`
	// Tags narrows the search to spans (or resources) with these tags, e.g.
	// {k8s.pod.name: "{{ .pod }}"} when OTEL_RESOURCE_ATTRIBUTES carries the pod; values are
	// templates over the alert's labels.
	Tags map[string]string `yaml:"tags"`
	// Limit is how many of the slowest requests a diagnosis lists (default 5).
	Limit int `yaml:"limit"`
	// MinDuration skips requests faster than this (Jaeger's minDuration; default 1s).
	MinDuration time.Duration `yaml:"min_duration"`
	// Lookback also searches requests that started this long before the window and ended in it
	// (default 10m).
	Lookback time.Duration `yaml:"lookback"`
	// SearchLimit is how many matching traces are fetched to pick the slowest from (Jaeger returns
	// the most recent ones first; default 500).
	SearchLimit int `yaml:"search_limit"`
	// Timeout bounds the lookup; it runs beside the Prometheus queries and must end well within
	// dispatch.run_timeout (default 5s).
	Timeout time.Duration `yaml:"timeout"`

	service *template.Template
	tags    map[string]*template.Template
}

// SetDefaults fills what the file left out.
func (c *Config) SetDefaults() {
	c.HTTPClientConfig = promconfig.DefaultHTTPClientConfig
	c.Service = "vllm-{{ .model_name }}"
	c.Limit = 5
	c.MinDuration = time.Second
	c.SearchLimit = 500
	c.Lookback = 10 * time.Minute
	c.Timeout = 5 * time.Second
}

// Enabled reports whether traces are looked up.
func (c *Config) Enabled() bool { return c.URL != "" }

// Validate checks the section, its HTTP client configuration included, and compiles its
// templates. It returns every error, each naming its key inside the section (configerr); the
// caller adds "traces.".
func (c *Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) { errs = append(errs, configerr.New(key, format, args...)) }
	for _, f := range []struct{ key, url string }{{"url", c.URL}, {"ui_url", c.UIURL}} {
		if f.url == "" {
			continue
		}
		p, err := url.Parse(f.url)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			add(f.key, "must be an http:// or https:// URL")
		}
	}
	var err error
	if c.service, err = parseTemplate(c.Service); err != nil {
		add("service", "%v", err)
	} else if c.Service == "" && c.Enabled() {
		add("service", "required (the OTEL_SERVICE_NAME of the model's vLLM pods, e.g. \"vllm-{{ .model_name }}\")")
	}
	for _, model := range sortedKeys(c.Services) {
		if strings.TrimSpace(c.Services[model]) == "" {
			add(fmt.Sprintf("services[%q]", model), "empty service name")
		}
	}
	c.tags = map[string]*template.Template{}
	for _, k := range sortedKeys(c.Tags) {
		t, err := parseTemplate(c.Tags[k])
		if err != nil {
			add(fmt.Sprintf("tags[%q]", k), "%v", err)
			continue
		}
		c.tags[k] = t
	}
	if c.Limit <= 0 || c.Limit > 50 {
		add("limit", "must be between 1 and 50")
	}
	if c.MinDuration < 0 {
		add("min_duration", "must not be negative")
	}
	if c.Lookback < 0 {
		add("lookback", "must not be negative")
	}
	if c.SearchLimit < c.Limit {
		add("search_limit", "must be at least limit (%d)", c.Limit)
	}
	if c.Timeout <= 0 {
		add("timeout", "must be positive")
	}
	return errors.Join(append(errs, httpconfig.Validate(&c.HTTPClientConfig))...)
}

func parseTemplate(src string) (*template.Template, error) {
	t, err := template.New("").Option("missingkey=error").Parse(src)
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "template: :"))
	}
	return t, nil
}

// ServiceFor returns the service name of the alert's vLLM pods: services[model_name], else the
// service template over the labels. It fails when the template needs a label the alert lacks.
func (c *Config) ServiceFor(labels map[string]string) (string, error) {
	if s, ok := c.Services[labels["model_name"]]; ok && labels["model_name"] != "" {
		return s, nil
	}
	return execute(c.service, c.Service, labels)
}

// TagsFor returns the search tags for the alert's labels.
func (c *Config) TagsFor(labels map[string]string) (map[string]string, error) {
	if len(c.tags) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(c.tags))
	for k, t := range c.tags {
		v, err := execute(t, c.Tags[k], labels)
		if err != nil {
			return nil, fmt.Errorf("tags[%q]: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}

func execute(t *template.Template, src string, labels map[string]string) (string, error) {
	if t == nil {
		var err error
		if t, err = parseTemplate(src); err != nil {
			return "", err
		}
	}
	var b bytes.Buffer
	if err := t.Execute(&b, labels); err != nil {
		if strings.Contains(err.Error(), "map has no entry for key") {
			i := strings.Index(err.Error(), "map has no entry for key")
			return "", fmt.Errorf("%q needs a label the alert does not have (%s)", src, err.Error()[i+len("map has no entry for "):])
		}
		return "", fmt.Errorf("%q: %w", src, err)
	}
	s := strings.TrimSpace(b.String())
	if s == "" {
		return "", fmt.Errorf("%q renders empty for these labels", src)
	}
	return s, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
