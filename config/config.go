// Package config loads the responder's YAML configuration. Every section goes through the same
// steps: defaults (Default, and the SetDefaults of the sections other packages own), ${VAR}
// expansion, a strict decode of the parsed document by internal/strictyaml (an unknown key, a
// value of the wrong type or a duration that does not parse is an error with its line and full
// key; all of them at once), secrets from their *_file twins, then the section's Validate,
// which returns all of its errors without the section's name (internal/configerr).
// Config.Validate adds that name once and checks sections against each other. Every error names
// its place: "config.yaml: prometheus.url: ...", and each is pinned in testdata/bad. Durations
// are time.Duration, written in Prometheus' syntax (90s, 1d). An empty file is an error ("write
// {} to take every default"): with --config required, it is a mistake far more often than a
// wish.
package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/vllm-responder/vllm-responder/gpu"
	"github.com/vllm-responder/vllm-responder/internal/configerr"
	"github.com/vllm-responder/vllm-responder/internal/httpconfig"
	"github.com/vllm-responder/vllm-responder/internal/secret"
	"github.com/vllm-responder/vllm-responder/internal/strictyaml"
	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
	"github.com/vllm-responder/vllm-responder/kube"
	"github.com/vllm-responder/vllm-responder/notify/incident"
	"github.com/vllm-responder/vllm-responder/notify/slack"
	"github.com/vllm-responder/vllm-responder/notify/teams"
	"github.com/vllm-responder/vllm-responder/notify/webhook"
	"github.com/vllm-responder/vllm-responder/probe"
	"github.com/vllm-responder/vllm-responder/profile"
	"github.com/vllm-responder/vllm-responder/traces"
)

// Config is the whole configuration file.
type Config struct {
	// Listen is the address `responder serve` listens on.
	Listen       string             `yaml:"listen"`
	Log          LogConfig          `yaml:"log"`
	Prometheus   PrometheusConfig   `yaml:"prometheus"`
	Alertmanager AlertmanagerConfig `yaml:"alertmanager"`
	Webhook      WebhookConfig      `yaml:"webhook"`
	Slack        slack.Config       `yaml:"slack"`
	Redis        RedisConfig        `yaml:"redis"`
	Playbooks    PlaybooksConfig    `yaml:"playbooks"`
	Dispatch     DispatchConfig     `yaml:"dispatch"`
	Profile      profile.Config     `yaml:"profile"`
	// Probe confirms a stall with one 1-token request to the pod before the diagnosis says so
	// (off by default).
	Probe probe.Config `yaml:"probe"`
	VLLM  VLLMConfig   `yaml:"vllm"`
	// Traces finds the slowest requests of every diagnosis in Jaeger (off when its url is empty).
	Traces traces.Config `yaml:"traces"`
	// MCP serves the read-only MCP tools on /mcp of `responder serve`.
	MCP MCPConfig `yaml:"mcp"`
	// Triage bounds on-demand triage (`responder triage`, the MCP triage tool, `/vllm triage`,
	// the Re-run triage button).
	Triage TriageConfig `yaml:"triage"`
	// Teams posts every diagnosis to a Teams channel through a Workflows webhook (off when its
	// webhook_url is empty), beside Slack or instead of it.
	Teams teams.Config `yaml:"teams"`
	// OutboundWebhooks POST every diagnosis, signed, to incident tools: a list, one entry per
	// receiver with its own URL and secret. (`webhook:` is the inbound Alertmanager webhook.)
	OutboundWebhooks []webhook.Config `yaml:"outbound_webhooks"`
	// Kubernetes reads kube-state-metrics' series for the pod of every diagnosis: its workload,
	// the autoscaler that scales it, pending pods, node, restart reasons (on by default).
	Kubernetes kube.Config `yaml:"kubernetes"`
	// Incidents joins the alerts of one model (by default) into one incident: one thread for
	// all its alert names, pods and groups, cause before symptom.
	Incidents incident.Config `yaml:"incidents"`
	// GPU reads dcgm-exporter's series for the GPUs of the pod of every diagnosis: faults (XIDs,
	// row remapping, NVLink, a lost GPU) and throttling (on by default; nothing where the
	// series are absent).
	GPU gpu.Config `yaml:"gpu"`

	// Deprecated says, one line each, which deprecated keys the file set and what to set
	// instead (`responder check` prints them, `responder serve` logs them).
	Deprecated []string `yaml:"-"`
}

// takeDeprecated moves what deprecated keys set (root is the parsed file) to their new keys,
// noting each in Deprecated, and refuses a file that sets both to different values.
func (c *Config) takeDeprecated(root *yaml.Node) error {
	if s := c.Slack.StormThreshold; s > 0 {
		if d := c.Dispatch.StormThreshold; setIn(root, "dispatch", "storm_threshold") && d != s {
			return configerr.New("slack.storm_threshold", "deprecated, and it differs from dispatch.storm_threshold (%d, %d): set only dispatch.storm_threshold", s, d)
		}
		c.Dispatch.StormThreshold = s
		c.Deprecated = append(c.Deprecated, "slack.storm_threshold is deprecated: set dispatch.storm_threshold, which every notifier and the dispatcher read")
	}
	return nil
}

// setIn reports whether the mapping at root sets the key at path.
func setIn(root *yaml.Node, path ...string) bool {
	n := root
	for _, key := range path {
		if n == nil || n.Kind != yaml.MappingNode {
			return false
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				next = n.Content[i+1]
			}
		}
		n = next
	}
	return n != nil
}

// MCPConfig is the MCP endpoint of `responder serve` (`responder mcp` serves stdio without it).
type MCPConfig struct {
	// Enabled serves streamable HTTP on /mcp.
	Enabled bool `yaml:"enabled"`
	// BearerToken is required with enabled: clients send "Authorization: Bearer ...". It is its
	// own token, not the webhook's.
	BearerToken     secret.Secret `yaml:"bearer_token"`
	BearerTokenFile string        `yaml:"bearer_token_file"`
}

// TriageConfig bounds on-demand triage. Alerts are diagnosed whatever their namespace.
type TriageConfig struct {
	// Namespaces, when set, are the only namespaces a triage reads: a request naming another is
	// refused, one naming none is about the models of these only. Empty: whoever can triage (the
	// MCP token, the Slack app, the CLI) can triage any namespace Prometheus holds.
	Namespaces []string `yaml:"namespaces"`
}

// namespaceRE is a Kubernetes namespace name (a DNS-1123 label).
var namespaceRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Validate checks the triage section.
func (t *TriageConfig) Validate() error {
	var errs []error
	for i, ns := range t.Namespaces {
		key := fmt.Sprintf("namespaces[%d]", i)
		switch {
		case !namespaceRE.MatchString(ns):
			errs = append(errs, configerr.New(key, "%q is not a Kubernetes namespace name", ns))
		case slices.Index(t.Namespaces, ns) < i:
			errs = append(errs, configerr.New(key, "%q is listed twice", ns))
		}
	}
	return errors.Join(errs...)
}

// VLLMConfig says how vLLM's series are named and labelled in Prometheus.
type VLLMConfig struct {
	// MetricPrefix replaces "vllm:" in every playbook query ("kserve_vllm:" on KServe and
	// OpenShift AI, whose PodMonitor renames the metrics).
	MetricPrefix string `yaml:"metric_prefix"`
	// RouterLabel is the label only the production-stack router's series carry ("server"):
	// queries exclude series that have it. Empty turns the exclusion off.
	RouterLabel string `yaml:"router_label"`
	// PodLabel is the series label that names a pod ("pod"); where an alert or a series has
	// none, "instance" stands in (static scrape configs have only job and instance).
	PodLabel string `yaml:"pod_label"`
	// RoleLabel is the series label that names a pod's role in disaggregated prefill/decode
	// serving ("llm_isvc_role", KServe's LLMInferenceService; llm-d's pods carry
	// llm-d.ai/role, which a scrape maps to a label of its choosing): the sibling comparison
	// splits into prefill and decode pools. Empty turns the split off.
	RoleLabel string `yaml:"role_label"`
}

// Naming is how vLLM's series are named and labelled: the one value the playbooks, the engine,
// triage and profile captures read.
func (v VLLMConfig) Naming() vllmnames.Naming {
	return vllmnames.Naming{Prefix: v.MetricPrefix, RouterLabel: v.RouterLabel, PodLabel: v.PodLabel, RoleLabel: v.RoleLabel}
}

// LogConfig sets the log level and format.
type LogConfig struct {
	Level  string `yaml:"level"`  // debug, info, warn, error
	Format string `yaml:"format"` // json (default) or console
}

// PrometheusConfig is where evidence comes from.
type PrometheusConfig struct {
	URL string `yaml:"url"`
	// HTTP is the HTTP client configuration, inline (basic_auth, authorization, oauth2,
	// tls_config, proxy_url, http_headers such as X-Scope-OrgID, bearer_token[_file]).
	HTTP         HTTPClientConfig `yaml:",inline"`
	QueryTimeout time.Duration    `yaml:"query_timeout"`
	// CacheTTL shares the result of an identical query for this long (alert storms).
	CacheTTL time.Duration `yaml:"cache_ttl"`
	// MaxConcurrentQueries bounds queries in flight to Prometheus.
	MaxConcurrentQueries int `yaml:"max_concurrent_queries"`
	// QueriesPerRequest is how many of a playbook's queries one request carries at most (the
	// answers labelled by label_replace and joined with or); 1 sends each alone.
	QueriesPerRequest int `yaml:"queries_per_request"`
}

// AlertmanagerConfig is used for silences.
type AlertmanagerConfig struct {
	URL string `yaml:"url"`
	// HTTP is the HTTP client configuration, inline, as for prometheus.
	HTTP HTTPClientConfig `yaml:",inline"`
}

// WebhookConfig protects POST /alertmanager.
type WebhookConfig struct {
	// BearerToken, when set, must be sent as "Authorization: Bearer ..." (Alertmanager's
	// http_config.authorization). Empty means no auth.
	BearerToken     secret.Secret `yaml:"bearer_token"`
	BearerTokenFile string        `yaml:"bearer_token_file"`
	// BasicAuth is the alternative (http_config.basic_auth).
	BasicAuth struct {
		Username     string        `yaml:"username"`
		Password     secret.Secret `yaml:"password"`
		PasswordFile string        `yaml:"password_file"`
	} `yaml:"basic_auth"`
	// MaxBodyBytes bounds a webhook body (default 1 MiB).
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
}

// RedisConfig selects the shared store. Empty URL: in-memory store (single replica).
type RedisConfig struct {
	URL          secret.URL    `yaml:"url"`
	Password     secret.Secret `yaml:"password"`
	PasswordFile string        `yaml:"password_file"`
	// KeyPrefix namespaces every key (default "vllm-responder:").
	KeyPrefix string `yaml:"key_prefix"`
	// Sentinel, when master_name is set, finds the master through Redis Sentinel instead of url.
	Sentinel SentinelConfig `yaml:"sentinel"`
}

// SentinelConfig selects a Redis master through Sentinel (go-redis' failover client).
type SentinelConfig struct {
	MasterName string   `yaml:"master_name"`
	Addrs      []string `yaml:"addrs"` // host:port of the sentinels
	DB         int      `yaml:"db"`
	// Password is the sentinels' own password (requirepass on the sentinels), if any; the
	// master's password is redis.password.
	Password     secret.Secret `yaml:"password"`
	PasswordFile string        `yaml:"password_file"`
}

// RedisEnabled reports whether the shared store is Redis (by URL or through Sentinel).
func (r RedisConfig) RedisEnabled() bool { return r.URL != "" || r.Sentinel.MasterName != "" }

// PlaybooksConfig adds the user's playbooks and overrides thresholds.
type PlaybooksConfig struct {
	// Dir holds the user's own playbooks (*.yaml); one named like a built-in replaces it.
	Dir string `yaml:"dir"`
	// Params overrides playbook params: playbook name -> param -> value.
	Params map[string]map[string]float64 `yaml:"params"`
	// Window, when set, replaces every playbook's window (short windows for demos and tests).
	Window time.Duration `yaml:"window"`
	// Triage names the on-demand playbook (default "triage").
	Triage string `yaml:"triage"`
}

// DispatchConfig sizes the background work.
type DispatchConfig struct {
	Workers   int `yaml:"workers"`
	QueueSize int `yaml:"queue_size"`
	// GroupCooldown: a notification of a group diagnosed less than this long ago is held, merged
	// with any newer ones of the group, until it has passed (0 disables; a group's first
	// notification is never held).
	GroupCooldown time.Duration `yaml:"group_cooldown"`
	// DedupWindow: a firing alert already diagnosed (same group, fingerprint, startsAt) is not
	// diagnosed again within it, however often Alertmanager re-sends the group.
	DedupWindow time.Duration `yaml:"dedup_window"`
	// RunTimeout bounds one diagnosis (all queries of a playbook).
	RunTimeout time.Duration `yaml:"run_timeout"`
	// NotifyTimeout bounds one notification, retries included.
	NotifyTimeout time.Duration `yaml:"notify_timeout"`
	// DrainTimeout is how long shutdown waits for accepted work to finish.
	DrainTimeout time.Duration `yaml:"drain_timeout"`
	// StormThreshold: a notification with more firing alerts than this is a storm: the
	// dispatcher diagnoses it once per playbook from group-wide queries, and every notifier
	// shows it as one summary. It was slack.storm_threshold, which still works, deprecated.
	StormThreshold int `yaml:"storm_threshold"`
}

// Default returns a configuration with every default set.
func Default() *Config {
	c := &Config{
		Listen: ":8080",
		Log:    LogConfig{Level: "info", Format: "json"},
		Prometheus: PrometheusConfig{URL: "http://localhost:9090", HTTP: DefaultHTTPClientConfig(), QueryTimeout: 10 * time.Second, CacheTTL: 10 * time.Second, MaxConcurrentQueries: 16,
			QueriesPerRequest: 10},
		Alertmanager: AlertmanagerConfig{HTTP: DefaultHTTPClientConfig()},
		Webhook:      WebhookConfig{MaxBodyBytes: 1 << 20},
		Redis:        RedisConfig{KeyPrefix: "vllm-responder:"},
		Playbooks:    PlaybooksConfig{Triage: "triage"},
		Dispatch: DispatchConfig{Workers: 4, QueueSize: 256, DedupWindow: 4 * time.Hour, GroupCooldown: time.Second,
			RunTimeout: 30 * time.Second, NotifyTimeout: 60 * time.Second, DrainTimeout: 30 * time.Second, StormThreshold: 5},
	}
	c.VLLM = VLLMConfig{MetricPrefix: vllmnames.DefaultPrefix, RouterLabel: vllmnames.DefaultRouterLabel, PodLabel: vllmnames.DefaultPodLabel,
		RoleLabel: vllmnames.DefaultRoleLabel}
	c.Slack.SetDefaults()
	c.Profile.SetDefaults()
	c.Probe.SetDefaults()
	c.Traces.SetDefaults()
	c.Teams.SetDefaults()
	c.Kubernetes.SetDefaults()
	c.Incidents.SetDefaults()
	c.GPU.SetDefaults()
	return c
}

// Load reads, decodes and validates a configuration file.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse decodes and validates configuration bytes; source names them in errors.
func Parse(source string, data []byte) (*Config, error) {
	root, err := strictyaml.Parse(data)
	if errors.Is(err, strictyaml.ErrEmpty) {
		// Most likely a mistake (a ConfigMap key that did not match, a truncated file) rather
		// than a wish for every default: say so, and how to ask for the defaults.
		return nil, fmt.Errorf("%s: %w: write {} to take every default", source, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	expandEnv(root)
	c := Default()
	if err := strictyaml.Decode(root, c); err != nil {
		return nil, inSource(source, err)
	}
	if err := readSecretFiles(reflect.ValueOf(c).Elem(), ""); err != nil {
		return nil, inSource(source, err)
	}
	if err := c.takeDeprecated(root); err != nil {
		return nil, inSource(source, err)
	}
	if err := c.Validate(); err != nil {
		return nil, inSource(source, err)
	}
	return c, nil
}

// inSource names the file before each of err's errors.
func inSource(source string, err error) error {
	var errs []error
	for _, e := range configerr.List(err) {
		errs = append(errs, fmt.Errorf("%s: %w", source, e))
	}
	return errors.Join(errs...)
}

var envRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expandEnv replaces ${VAR} and ${VAR:-default} in every scalar value (not in keys) of the
// parsed document, before it is decoded, so a value from the environment can never change the
// YAML structure. An unset variable expands to its default, or to empty (an empty secret means
// "not configured"). A value expanded into a string field stays a string, never YAML (a token
// "null" or "~" is that token, not a null that would turn auth off); into any other field (a
// number, a duration, a bool) it is resolved for that type.
func expandEnv(root *yaml.Node) {
	strictyaml.EachScalar(root, reflect.TypeOf(Config{}), func(n *yaml.Node, t reflect.Type) {
		if !strings.Contains(n.Value, "${") {
			return
		}
		n.Value = envRE.ReplaceAllStringFunc(n.Value, func(m string) string {
			sub := envRE.FindStringSubmatch(m)
			if v, ok := os.LookupEnv(sub[1]); ok && v != "" {
				return v
			}
			return sub[3]
		})
		if t != nil && t.Kind() == reflect.String {
			n.Tag, n.Style = "!!str", yaml.DoubleQuotedStyle
			return
		}
		// Let the decoder resolve it for the field's type (a port number, a duration).
		n.Tag, n.Style = "", 0
	})
}

var secretType = reflect.TypeOf(secret.Secret(""))

// readSecretFiles fills every Secret field from its *_file twin, walking the whole struct.
func readSecretFiles(v reflect.Value, path string) error {
	t := v.Type()
	var errs []error
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		fv := v.Field(i)
		tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if tag == "" || tag == "-" {
			continue
		}
		p := tag
		if path != "" {
			p = path + "." + tag
		}
		switch {
		case f.Type == secretType:
			twin := findField(v, tag+"_file")
			if !twin.IsValid() || twin.String() == "" {
				continue
			}
			if fv.String() != "" {
				errs = append(errs, fmt.Errorf("%s: set either %s or %s_file, not both", p, tag, tag))
				continue
			}
			b, err := os.ReadFile(twin.String())
			if err != nil {
				errs = append(errs, fmt.Errorf("%s_file: %w", p, err))
				continue
			}
			fv.SetString(strings.TrimRight(string(b), "\r\n"))
		case f.Type.Kind() == reflect.Struct && f.Type.PkgPath() != "time" && !strings.HasPrefix(f.Type.PkgPath(), "github.com/prometheus"):
			if err := readSecretFiles(fv, p); err != nil {
				errs = append(errs, err)
			}
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct && !strings.HasPrefix(f.Type.Elem().PkgPath(), "github.com/prometheus"):
			for j := 0; j < fv.Len(); j++ {
				if err := readSecretFiles(fv.Index(j), fmt.Sprintf("%s[%d]", p, j)); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

func findField(v reflect.Value, tag string) reflect.Value {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0] == tag && t.Field(i).Type.Kind() == reflect.String {
			return v.Field(i)
		}
	}
	return reflect.Value{}
}

// Upper bounds of the sizes (see Validate). No deployment needs to pass them: past them a typo
// becomes memory or goroutines.
const (
	maxBodyBytes         = 64 << 20
	maxWorkers           = 256
	maxQueueSize         = 100_000
	maxConcurrentQueries = 1024
	maxQueriesPerRequest = 100
	maxOutboundWebhooks  = 10
	maxStormThreshold    = 10_000
)

// Validate checks every section, then the sections against each other. It returns every error,
// each naming its full key ("prometheus.url: ..."); every section's own Validate returns its
// errors without the section's name, which is added here, once (see internal/configerr).
func (c *Config) Validate() error {
	var errs []error
	if c.Listen == "" {
		errs = append(errs, configerr.New("listen", "required"))
	}
	for _, s := range []struct {
		name    string
		section interface{ Validate() error }
	}{
		{"log", &c.Log}, {"prometheus", &c.Prometheus}, {"alertmanager", &c.Alertmanager},
		{"webhook", &c.Webhook}, {"slack", &c.Slack}, {"redis", &c.Redis}, {"dispatch", &c.Dispatch},
		{"profile", &c.Profile}, {"probe", &c.Probe}, {"vllm", &c.VLLM}, {"traces", &c.Traces}, {"mcp", &c.MCP}, {"triage", &c.Triage}, {"teams", &c.Teams},
		{"kubernetes", &c.Kubernetes}, {"incidents", &c.Incidents}, {"gpu", &c.GPU},
	} {
		errs = append(errs, configerr.Prefix(s.name, s.section.Validate()))
	}
	errs = append(errs, c.validateOutboundWebhooks())
	if c.Dispatch.RunTimeout < c.Prometheus.QueryTimeout {
		errs = append(errs, configerr.New("dispatch.run_timeout", "must be at least prometheus.query_timeout (%s)", configerr.FormatDuration(c.Prometheus.QueryTimeout)))
	}
	if c.Probe.Enabled && c.Probe.Timeout >= c.Dispatch.RunTimeout {
		errs = append(errs, configerr.New("probe.timeout", "must be shorter than dispatch.run_timeout (%s): a stalled diagnosis waits for the probe", configerr.FormatDuration(c.Dispatch.RunTimeout)))
	}
	if c.Traces.Enabled() && c.Traces.Timeout >= c.Dispatch.RunTimeout {
		errs = append(errs, configerr.New("traces.timeout", "must be shorter than dispatch.run_timeout (%s): the diagnosis is posted without traces rather than late", configerr.FormatDuration(c.Dispatch.RunTimeout)))
	}
	return errors.Join(errs...)
}

// validateOutboundWebhooks checks every entry of outbound_webhooks, and their names against
// each other (a name labels metrics and delivery records).
func (c *Config) validateOutboundWebhooks() error {
	var errs []error
	if len(c.OutboundWebhooks) > maxOutboundWebhooks {
		errs = append(errs, configerr.New("outbound_webhooks", "at most %d entries, got %d", maxOutboundWebhooks, len(c.OutboundWebhooks)))
	}
	seen := map[string]int{}
	for i := range c.OutboundWebhooks {
		w := &c.OutboundWebhooks[i]
		key := fmt.Sprintf("outbound_webhooks[%d]", i)
		errs = append(errs, configerr.Prefix(key, w.Validate()))
		if j, dup := seen[w.Name]; dup && w.Name != "" {
			errs = append(errs, configerr.New(key+".name", "%q is already the name of outbound_webhooks[%d]", w.Name, j))
		}
		seen[w.Name] = i
	}
	return errors.Join(errs...)
}

// Validate checks the log section.
func (l *LogConfig) Validate() error {
	var errs []error
	switch l.Level {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, configerr.New("level", "%q is not one of debug, info, warn, error", l.Level))
	}
	switch l.Format {
	case "json", "console":
	default:
		errs = append(errs, configerr.New("format", "%q is not one of json, console", l.Format))
	}
	return errors.Join(errs...)
}

// Validate checks the prometheus section, its HTTP client configuration included.
func (p *PrometheusConfig) Validate() error {
	errs := []error{checkURL(p.URL, true), httpconfig.Validate(&p.HTTP),
		inRange("max_concurrent_queries", int64(p.MaxConcurrentQueries), 1, maxConcurrentQueries),
		inRange("queries_per_request", int64(p.QueriesPerRequest), 1, maxQueriesPerRequest)}
	if p.QueryTimeout <= 0 {
		errs = append(errs, configerr.New("query_timeout", "must be positive"))
	}
	return errors.Join(errs...)
}

// Validate checks the alertmanager section, its HTTP client configuration included.
func (a *AlertmanagerConfig) Validate() error {
	return errors.Join(checkURL(a.URL, false), httpconfig.Validate(&a.HTTP))
}

// Validate checks the webhook section.
func (w *WebhookConfig) Validate() error {
	var errs []error
	if w.BearerToken.IsSet() && w.BasicAuth.Username != "" {
		errs = append(errs, errors.New("set bearer_token or basic_auth, not both"))
	}
	if w.BasicAuth.Username != "" && !w.BasicAuth.Password.IsSet() {
		errs = append(errs, configerr.New("basic_auth.password", "required with a username"))
	}
	return errors.Join(append(errs, inRange("max_body_bytes", w.MaxBodyBytes, 1, maxBodyBytes))...)
}

// Validate checks the redis section. Its errors never show the URL: it may hold a password.
func (r *RedisConfig) Validate() error {
	var errs []error
	if r.URL != "" && r.Sentinel.MasterName != "" {
		errs = append(errs, errors.New("set url or sentinel, not both"))
	}
	if r.Sentinel.MasterName != "" && len(r.Sentinel.Addrs) == 0 {
		errs = append(errs, configerr.New("sentinel.addrs", "required with master_name (host:port of each sentinel)"))
	}
	if r.URL != "" {
		u, err := url.Parse(r.URL.Reveal())
		if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
			errs = append(errs, configerr.New("url", "must look like redis://host:6379/0 (the value is not shown: it may hold a password)"))
		}
	}
	return errors.Join(errs...)
}

// Validate checks the dispatch section's sizes (its timeouts are checked against other
// sections by Config.Validate).
func (d *DispatchConfig) Validate() error {
	return errors.Join(
		inRange("workers", int64(d.Workers), 1, maxWorkers),
		inRange("queue_size", int64(d.QueueSize), 1, maxQueueSize),
		inRange("storm_threshold", int64(d.StormThreshold), 1, maxStormThreshold))
}

// Validate checks the vllm section.
func (v *VLLMConfig) Validate() error {
	err := v.Naming().Validate()
	if v.PodLabel == "" {
		err = errors.Join(err, configerr.New("pod_label", "%q is not a valid label name", v.PodLabel))
	}
	return err
}

// Validate checks the mcp section.
func (m *MCPConfig) Validate() error {
	if m.Enabled && !m.BearerToken.IsSet() {
		return configerr.New("bearer_token", "required with mcp.enabled (or mcp.bearer_token_file)")
	}
	return nil
}

func inRange(key string, v, lo, hi int64) error {
	if v < lo || v > hi {
		return configerr.New(key, "must be between %d and %d, got %d", lo, hi, v)
	}
	return nil
}

// checkURL checks a section's url key.
func checkURL(s string, required bool) error {
	if s == "" {
		if required {
			return configerr.New("url", "required")
		}
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return configerr.New("url", "must be an http:// or https:// URL")
	}
	return nil
}

// Redacted renders the configuration as YAML with every secret shown as <secret> and the Redis
// URL's password removed: what `responder check` prints.
func (c *Config) Redacted() string {
	cp := *c
	// Plain URL fields may still carry a password (http://user:pw@host): redact it too.
	cp.Prometheus.URL = secret.URL(cp.Prometheus.URL).String()
	cp.Alertmanager.URL = secret.URL(cp.Alertmanager.URL).String()
	cp.Traces.URL = secret.URL(cp.Traces.URL).String()
	cp.Traces.UIURL = secret.URL(cp.Traces.UIURL).String()
	b, err := strictyaml.Marshal(&cp)
	if err != nil {
		return fmt.Sprintf("(cannot render config: %v)", err)
	}
	return string(b)
}
