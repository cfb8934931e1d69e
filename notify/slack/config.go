package slack

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"text/template"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/configerr"
	"github.com/vllm-responder/vllm-responder/internal/secret"
	"github.com/vllm-responder/vllm-responder/notify"
)

// Config is the `slack:` section of the responder's configuration.
type Config struct {
	// BotToken (xoxb-...) posts messages; empty means the console notifier is used instead.
	BotToken     secret.Secret `yaml:"bot_token"`
	BotTokenFile string        `yaml:"bot_token_file,omitempty"`
	// SigningSecret verifies requests to /slack/commands and /slack/interactions.
	SigningSecret     secret.Secret `yaml:"signing_secret"`
	SigningSecretFile string        `yaml:"signing_secret_file,omitempty"`
	// AppToken (xapp-...) is the app-level token Socket Mode connects with.
	AppToken     secret.Secret `yaml:"app_token"`
	AppTokenFile string        `yaml:"app_token_file,omitempty"`

	// Channel receives diagnoses: a name ("#vllm-incidents") or an id ("C0123456").
	Channel string `yaml:"channel"`
	// APIURL is the Slack Web API base URL; empty means Slack's own. Tests point it at a local server.
	APIURL string `yaml:"api_url"`
	// ResponseURLHosts are the hosts (host or host:port) whose response_url a command or a
	// button's answer may be posted to, besides Slack's own (https://hooks.slack.com) and
	// api_url's host. A response_url comes in the request: only Slack's hosts are called.
	ResponseURLHosts []string `yaml:"response_url_hosts,omitempty"`
	// SocketMode receives commands and button clicks over a WebSocket (needs app_token) instead of
	// the public HTTP endpoints.
	SocketMode bool `yaml:"socket_mode"`

	// GrafanaURLTemplate and TracesURLTemplate are Go templates for the links on a diagnosis.
	// Fields (all already URL-query-escaped): .Model .Pod .Namespace .Alertname, .Labels (map),
	// and the alert's time window: .From .To (RFC 3339), .FromMS .ToMS (Unix ms, Grafana),
	// .FromUS .ToUS (Unix µs, Jaeger), .FromUnix .ToUnix (Unix seconds).
	GrafanaURLTemplate string `yaml:"grafana_url_template,omitempty"`
	TracesURLTemplate  string `yaml:"traces_url_template,omitempty"`
	// TracesWindowBefore is how far before the alert's start the links' window opens.
	TracesWindowBefore time.Duration `yaml:"traces_window_before,omitempty"`

	// Who may silence alerts and capture profiles: Slack user ids (U.../W...), user group ids
	// (S...) and channel ids (C.../G...). A user passes if any list admits them. All three empty
	// lets everyone who can use the app.
	AllowedUsers      []string `yaml:"allowed_users,omitempty"`
	AllowedUsergroups []string `yaml:"allowed_usergroups,omitempty"`
	AllowedChannels   []string `yaml:"allowed_channels,omitempty"`

	// PostInterval paces posts and edits to one channel (Slack allows about one a second), across
	// every replica sharing Redis (a store.Pacer), within the process otherwise.
	PostInterval time.Duration `yaml:"post_interval,omitempty"`
	// RequestTimeout bounds every Slack API call.
	RequestTimeout time.Duration `yaml:"request_timeout,omitempty"`
	// MaxRetries bounds the retries of a rate-limited (HTTP 429) notification or reply, each
	// after Slack's Retry-After (notify.Retry waits); a Retry-After above MaxRetryAfter ends them.
	MaxRetries    int           `yaml:"max_retries,omitempty"`
	MaxRetryAfter time.Duration `yaml:"max_retry_after,omitempty"`
	// StormThreshold is deprecated: dispatch.storm_threshold, which every notifier and the
	// dispatcher read, takes its value when only it is set (0: not set).
	StormThreshold int `yaml:"storm_threshold,omitempty"`
	// ThreadTTL is how long a group's thread is remembered (in the store) for replies and resolution.
	ThreadTTL time.Duration `yaml:"thread_ttl,omitempty"`
	// ParentWait sets the lifetime of a replica's claim to create a group's parent message (twice
	// this, at least a minute); meanwhile the other replicas' notifications of the group are
	// retried by notify.Retry until the thread exists.
	ParentWait time.Duration `yaml:"parent_wait,omitempty"`
	// Charts turns the chart upload on (default true); ChartTimeout bounds querying, rendering and
	// uploading one chart.
	Charts       *bool         `yaml:"charts,omitempty"`
	ChartTimeout time.Duration `yaml:"chart_timeout,omitempty"`
	// SilenceDuration is the length of the "Silence" button's silence.
	SilenceDuration time.Duration `yaml:"silence_duration,omitempty"`

	grafanaTmpl *template.Template
	tracesTmpl  *template.Template
}

// SetDefaults fills the zero values with defaults.
func (c *Config) SetDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.PostInterval, time.Second)
	def(&c.RequestTimeout, 10*time.Second)
	def(&c.MaxRetryAfter, 30*time.Second)
	def(&c.ThreadTTL, 7*24*time.Hour)
	def(&c.ParentWait, 15*time.Second)
	def(&c.ChartTimeout, 30*time.Second)
	def(&c.TracesWindowBefore, 15*time.Minute)
	def(&c.SilenceDuration, time.Hour)
	if c.MaxRetries == 0 {
		c.MaxRetries = 3
	}
	if c.Charts == nil {
		t := true
		c.Charts = &t
	}
}

var (
	userIDRe      = regexp.MustCompile(`^[UW][A-Z0-9]{2,}$`)
	usergroupIDRe = regexp.MustCompile(`^S[A-Z0-9]{2,}$`)
	channelIDRe   = regexp.MustCompile(`^[CG][A-Z0-9]{2,}$`)
)

// Enabled reports whether Slack is configured at all (a bot token is set).
func (c *Config) Enabled() bool { return c.BotToken.IsSet() }

// interactive reports whether commands and buttons can reach the responder: over Socket Mode, or
// over the HTTP endpoints, whose requests need the signing secret to be verified.
func (c *Config) interactive() bool {
	return c.BotToken.IsSet() && (c.SocketMode || c.SigningSecret.IsSet())
}

// chartsEnabled reports whether charts are uploaded.
func (c *Config) chartsEnabled() bool { return c.Charts == nil || *c.Charts }

// Validate checks the fields against each other and compiles the URL templates. It returns every
// error, each naming its key inside the section (configerr); the caller adds "slack.". Call
// SetDefaults first.
func (c *Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) { errs = append(errs, configerr.New(key, format, args...)) }
	if c.BotToken.IsSet() && strings.TrimSpace(c.Channel) == "" {
		add("channel", "required when bot_token is set")
	}
	if !c.BotToken.IsSet() {
		if c.SigningSecret.IsSet() {
			add("bot_token", "required when signing_secret is set")
		}
		if c.SocketMode {
			add("bot_token", "required when socket_mode is true")
		}
	}
	if c.SocketMode {
		if !c.AppToken.IsSet() {
			add("app_token", "required when socket_mode is true")
		} else if !strings.HasPrefix(c.AppToken.Reveal(), "xapp-") {
			add("app_token", "must be an app-level token (xapp-...)")
		}
	}
	if c.BotToken.IsSet() && strings.HasPrefix(c.BotToken.Reveal(), "xapp-") {
		add("bot_token", "is an app-level token (xapp-...); put it in app_token and use the bot token (xoxb-...) here")
	}
	if c.APIURL != "" {
		if u, err := url.Parse(c.APIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("api_url", "must be an http(s) URL")
		}
	}
	var err error
	if c.grafanaTmpl, err = notify.ParseURLTemplate("grafana", c.GrafanaURLTemplate); err != nil {
		add("grafana_url_template", "%w", err)
	}
	if c.tracesTmpl, err = notify.ParseURLTemplate("traces", c.TracesURLTemplate); err != nil {
		add("traces_url_template", "%w", err)
	}
	for i, u := range c.AllowedUsers {
		if !userIDRe.MatchString(u) {
			add(fmt.Sprintf("allowed_users[%d]", i), "%q is not a Slack user id (U... or W...)", u)
		}
	}
	for i, g := range c.AllowedUsergroups {
		if !usergroupIDRe.MatchString(g) {
			add(fmt.Sprintf("allowed_usergroups[%d]", i), "%q is not a Slack user group id (S...)", g)
		}
	}
	for i, ch := range c.AllowedChannels {
		if !channelIDRe.MatchString(ch) {
			add(fmt.Sprintf("allowed_channels[%d]", i), "%q is not a Slack channel id (C... or G...)", ch)
		}
	}
	positive := func(field string, d time.Duration) {
		if d <= 0 {
			add(field, "must be positive")
		}
	}
	positive("request_timeout", c.RequestTimeout)
	positive("thread_ttl", c.ThreadTTL)
	positive("parent_wait", c.ParentWait)
	positive("chart_timeout", c.ChartTimeout)
	positive("silence_duration", c.SilenceDuration)
	if c.PostInterval < 0 {
		add("post_interval", "must not be negative")
	}
	if c.MaxRetries < 0 || c.MaxRetries > 10 {
		add("max_retries", "must be between 0 and 10")
	}
	if c.StormThreshold < 0 {
		add("storm_threshold", "must be at least 1")
	}
	return errors.Join(errs...)
}

// linkTemplates are the links every alert gets (Grafana, traces), in the view's terms.
func (c *Config) linkTemplates() []notify.LinkTemplate {
	var out []notify.LinkTemplate
	if c.grafanaTmpl != nil {
		out = append(out, notify.LinkTemplate{Title: "Grafana", Template: c.grafanaTmpl})
	}
	if c.tracesTmpl != nil {
		out = append(out, notify.LinkTemplate{Title: "Traces of slow requests", Template: c.tracesTmpl})
	}
	return out
}
