package profile

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"text/template"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/configerr"
	"github.com/vllm-responder/vllm-responder/internal/podendpoint"
	"github.com/vllm-responder/vllm-responder/internal/secret"
)

// Config is the `profile:` section of the responder's configuration.
type Config struct {
	// Enabled turns chat-ops and CLI captures on. Off, every capture is refused; the janitor
	// still runs, so a capture recorded before the switch is still stopped.
	Enabled bool `yaml:"enabled"`
	// URLTemplate renders a pod's vLLM base URL from the labels of its vLLM series in Prometheus:
	// {{.instance}}, {{.pod}}, {{.namespace}}. Only what Prometheus scrapes can be profiled, so a
	// chat user cannot point the responder at an arbitrary host.
	URLTemplate string `yaml:"url_template"`
	// AllowedNetworks, when set, are the only networks (CIDRs) the responder connects to for
	// profiling, checked on the resolved address of every connection.
	AllowedNetworks []string `yaml:"allowed_networks"`
	// BearerToken is sent as "Authorization: Bearer ..." for gateways in front of vLLM (vLLM
	// itself does not guard the profiler endpoints). BearerTokenFile is its file twin.
	BearerToken     secret.Secret `yaml:"bearer_token"`
	BearerTokenFile string        `yaml:"bearer_token_file"`
	// DefaultDuration is the profiling window when the request names none; MaxDuration bounds
	// what a request may ask for.
	DefaultDuration time.Duration `yaml:"default_duration"`
	MaxDuration     time.Duration `yaml:"max_duration"`
	// StartTimeout bounds POST /start_profile; StopTimeout bounds POST /stop_profile, which
	// returns only once the traces are flushed (minutes on big models).
	StartTimeout time.Duration `yaml:"start_timeout"`
	StopTimeout  time.Duration `yaml:"stop_timeout"`
	// Cooldown is the time after a capture during which the same pod cannot be profiled again.
	Cooldown time.Duration `yaml:"cooldown"`
	// LockTTL is the TTL of a pod's lock, refreshed while the capture runs: the longest a pod
	// stays locked after the responder holding it died.
	LockTTL time.Duration `yaml:"lock_ttl"`
	// JanitorInterval is how often each replica looks for captures past their deadline (whose
	// responder died) and stops their profiler.
	JanitorInterval time.Duration `yaml:"janitor_interval"`
	// TraceDirHint tells the report's reader where the traces are; same template data as
	// URLTemplate.
	TraceDirHint string `yaml:"trace_dir_hint"`
	// Kinds say, per deployment, which profiler its vLLM servers run (their --profiler-config)
	// and where the traces land; the first entry whose match fits the pod wins. A pod no entry
	// matches runs torch with the trace_dir_hint.
	Kinds []KindConfig `yaml:"kinds"`
	// Silence is the Alertmanager silence of the pod's vLLM alerts held while a capture runs
	// (with alertmanager.url set).
	Silence SilenceConfig `yaml:"silence"`

	// Compiled by Validate.
	urlTmpl   *template.Template
	traceTmpl *template.Template
	networks  []netip.Prefix
	kinds     []kind
	alertRE   *regexp.Regexp
}

// SilenceConfig is profile.silence.
type SilenceConfig struct {
	// Alertnames is the regex (anchored, as in Alertmanager) of the alert names silenced on the
	// captured pod: the vLLM alerts, not everything else that pod may raise.
	Alertnames string `yaml:"alertnames"`
	// Margin is kept after the flush ends: the alerts' rate and averaging windows still hold the
	// stall for that long.
	Margin time.Duration `yaml:"margin"`
	// ExpectedFlush is the flush assumed for a pod with no measured one (the silence is extended
	// anyway while stop_profile runs).
	ExpectedFlush time.Duration `yaml:"expected_flush"`
}

// Defaults.
const (
	DefaultURLTemplate  = "http://{{.instance}}"
	DefaultTraceDirHint = "the torch_profiler_dir of the vLLM server on pod {{.pod}} (its --profiler-config), one rank*.pt.trace.json.gz per worker rank and (vLLM 0.32) the API server's *.async_llm.*.pt.trace.json.gz; open them in Perfetto"
	// DefaultSilencedAlerts matches the built-in alerts (VLLMTimeToFirstTokenP99High, ...).
	DefaultSilencedAlerts = "VLLM.+"
)

// SetDefaults fills the fields that are unset. Call it before decoding, so that a value set
// explicitly (cooldown: 0s) wins.
func (c *Config) SetDefaults() {
	setDur := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.URLTemplate == "" {
		c.URLTemplate = DefaultURLTemplate
	}
	if c.TraceDirHint == "" {
		c.TraceDirHint = DefaultTraceDirHint
	}
	setDur(&c.DefaultDuration, 10*time.Second)
	setDur(&c.MaxDuration, time.Minute)
	setDur(&c.StartTimeout, 10*time.Second)
	setDur(&c.StopTimeout, 15*time.Minute)
	setDur(&c.Cooldown, 10*time.Minute)
	setDur(&c.LockTTL, time.Minute)
	setDur(&c.JanitorInterval, 30*time.Second)
	if c.Silence.Alertnames == "" {
		c.Silence.Alertnames = DefaultSilencedAlerts
	}
	setDur(&c.Silence.Margin, 5*time.Minute)
	setDur(&c.Silence.ExpectedFlush, 2*time.Minute)
}

// Validate checks the fields against each other and compiles the templates and networks. It
// returns every error, each naming its key inside the section (configerr); the caller adds
// "profile.".
func (c *Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) { errs = append(errs, configerr.New(key, format, args...)) }
	for _, f := range []struct {
		key string
		d   time.Duration
	}{
		{"default_duration", c.DefaultDuration}, {"max_duration", c.MaxDuration},
		{"start_timeout", c.StartTimeout}, {"stop_timeout", c.StopTimeout},
		{"lock_ttl", c.LockTTL}, {"janitor_interval", c.JanitorInterval},
	} {
		if f.d <= 0 {
			add(f.key, "must be positive, got %s", configerr.FormatDuration(f.d))
		}
	}
	if c.Cooldown < 0 {
		add("cooldown", "must not be negative, got %s", configerr.FormatDuration(c.Cooldown))
	}
	if c.DefaultDuration > c.MaxDuration {
		add("default_duration", "%s exceeds max_duration %s", configerr.FormatDuration(c.DefaultDuration), configerr.FormatDuration(c.MaxDuration))
	}
	if c.LockTTL > 0 && c.LockTTL < time.Second {
		add("lock_ttl", "must be at least 1s (it is refreshed every third of it), got %s", configerr.FormatDuration(c.LockTTL))
	}

	t, err := checkTemplate("url_template", c.URLTemplate, func(s string) error {
		if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("must render an http(s) URL with a host, got %q", s)
		}
		return nil
	})
	if err != nil {
		add("url_template", "%w", err)
	}
	th, err := checkTemplate("trace_dir_hint", c.TraceDirHint, nil)
	if err != nil {
		add("trace_dir_hint", "%w", err)
	}

	nets := make([]netip.Prefix, 0, len(c.AllowedNetworks))
	for i, s := range c.AllowedNetworks {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			add(fmt.Sprintf("allowed_networks[%d]", i), "%q is not a CIDR (10.0.0.0/8, fd00::/8)", s)
			continue
		}
		nets = append(nets, p.Masked())
	}
	if c.Silence.Margin < 0 {
		add("silence.margin", "must not be negative, got %s", configerr.FormatDuration(c.Silence.Margin))
	}
	if c.Silence.ExpectedFlush <= 0 {
		add("silence.expected_flush", "must be positive, got %s", configerr.FormatDuration(c.Silence.ExpectedFlush))
	}
	var are *regexp.Regexp
	if _, err := regexp.Compile(c.Silence.Alertnames); err != nil {
		add("silence.alertnames", "%w", err)
	} else {
		are = regexp.MustCompile("^(?:" + c.Silence.Alertnames + ")$") // anchored, as in Alertmanager
	}
	kinds := make([]kind, 0, len(c.Kinds))
	for i, kc := range c.Kinds {
		k, err := kc.compile()
		if err != nil {
			errs = append(errs, configerr.Prefix(fmt.Sprintf("kinds[%d]", i), err))
			continue
		}
		kinds = append(kinds, k)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	c.urlTmpl, c.traceTmpl, c.networks, c.kinds, c.alertRE = t, th, nets, kinds, are
	return nil
}

// checkTemplate compiles a template of the section and executes it once on sample data, so that
// a label it names and a pod does not have fails at load; check, when set, judges the result.
func checkTemplate(name, text string, check func(string) error) (*template.Template, error) {
	t, err := template.New(name).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, podendpoint.TemplateData("10.0.0.1:8000", "vllm-0", "default")); err != nil {
		return nil, err
	}
	if check != nil {
		if err := check(buf.String()); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (c *Config) compiled() bool { return c.urlTmpl != nil }

func (c *Config) render(t *template.Template, instance, pod, namespace string) (string, error) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, podendpoint.TemplateData(instance, pod, namespace)); err != nil {
		return "", err
	}
	return buf.String(), nil
}
