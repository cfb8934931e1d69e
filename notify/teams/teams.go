// Package teams is the Microsoft Teams integration: it posts each diagnosis as an Adaptive Card
// through a Teams Workflows webhook ("Post to a channel when a webhook request is received"; the
// retired Office 365 connectors are not used).
//
// Rendering (card.go) is a pure function of a notification, golden-tested, and every golden
// card is parsed and rendered by the Adaptive Cards JavaScript library (cardcheck/, run by
// `make test`). Delivery (this file) POSTs the message and says whether a failure is worth a
// retry (429 with Retry-After, 5xx, timeouts); the retry loop is notify.Retry, with this
// section's RetryPolicy. A webhook's message cannot be edited or threaded: a group that resolves
// gets a short card of its own that names the firing card.
package teams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/internal/configerr"
	"github.com/vllm-responder/vllm-responder/internal/secret"
	"github.com/vllm-responder/vllm-responder/notify"
)

// Config is the `teams:` section. An empty webhook URL turns Teams off.
type Config struct {
	// WebhookURL is the Workflows trigger's HTTP URL. It carries its credential (the sig query
	// parameter), so it is a secret, with its _file twin.
	WebhookURL     secret.Secret `yaml:"webhook_url"`
	WebhookURLFile string        `yaml:"webhook_url_file,omitempty"`
	// Delivery: the HTTP client (proxy_url for a proxied egress, tls_config ...), the request
	// timeout and the rate-limit retries.
	notify.HTTPDelivery `yaml:",inline"`
}

// SetDefaults fills what the file left out.
func (c *Config) SetDefaults() { c.HTTPDelivery = notify.DefaultHTTPDelivery() }

// Enabled reports whether diagnoses are posted to Teams.
func (c *Config) Enabled() bool { return c.WebhookURL.IsSet() }

// Validate checks the section (configerr: keys without "teams."). Its errors never show the URL.
func (c *Config) Validate() error {
	var errs []error
	if c.WebhookURL.IsSet() {
		u, err := url.Parse(c.WebhookURL.Reveal())
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, configerr.New("webhook_url", "must be an http(s) URL: the Workflows trigger's HTTP URL (the value is not shown: it carries a signature)"))
		}
	}
	return errors.Join(append(errs, c.HTTPDelivery.Validate())...)
}

// Notifier posts notifications to Teams. It implements notify.Notifier.
type Notifier struct {
	cfg    *Config
	client *http.Client
	log    zerolog.Logger
}

var _ notify.Notifier = (*Notifier)(nil)

// New returns the notifier of a validated, enabled section.
func New(cfg *Config, log zerolog.Logger) (*Notifier, error) {
	if cfg == nil || !cfg.Enabled() {
		return nil, errors.New("teams: webhook_url is not set")
	}
	client, err := cfg.Client("teams")
	if err != nil {
		return nil, fmt.Errorf("teams: %w", err)
	}
	return &Notifier{cfg: cfg, client: client, log: log}, nil
}

// Notify posts the notification's card: one POST, classified for the retry loop.
func (t *Notifier) Notify(ctx context.Context, n *notify.Notification) (bool, error) {
	if len(n.Items) == 0 {
		return false, nil
	}
	body, err := json.Marshal(Render(n))
	if err != nil {
		return false, fmt.Errorf("teams: %w", err)
	}
	retry, err := notify.PostJSON(ctx, t.client, t.cfg.WebhookURL.Reveal(), body, nil, t.cfg.RequestTimeout)
	if err != nil {
		return retry, fmt.Errorf("teams: %w", err)
	}
	t.log.Debug().Str("group_key", n.GroupKey).Str("status", n.Status).Int("items", len(n.Items)).Int("bytes", len(body)).Msg("teams card posted")
	return false, nil
}
