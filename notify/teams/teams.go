// Package teams is the Microsoft Teams integration: it posts each diagnosis as an Adaptive Card
// through a Teams Workflows webhook ("Post to a channel when a webhook request is received"; the
// retired Office 365 connectors are not used).
//
// Rendering (card.go) is a pure function of a notification, golden-tested, and every golden
// card is parsed and rendered by the Adaptive Cards JavaScript library (cardcheck/, run by
// `make test`). Delivery (this file) POSTs the message and says whether a failure is worth a
// retry (429 with Retry-After, 5xx, timeouts); the retry loop is notify.Retry, with this
// section's RetryPolicy. A webhook's message cannot be edited or threaded: a group that resolves
// gets a short card of its own that names the firing card, posted only when this responder
// posted that firing card (a record in the store says so).
package teams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/internal/configerr"
	"github.com/vllm-responder/vllm-responder/internal/secret"
	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/store"
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

// firingKeyPrefix is the store record of a group whose firing card this responder posted; a
// resolution is posted only for such a group.
const firingKeyPrefix = "teams:firing:"

// rememberFiring is how long the record of a posted firing card is kept (as Slack's thread_ttl):
// a group that resolves later than this after its firing card gets no resolution card.
const rememberFiring = 7 * 24 * time.Hour

// Options are what New needs. Config (validated, enabled) and Store are required.
type Options struct {
	Config *Config
	// Store remembers which groups have a firing card (shared through Redis by the replicas).
	Store store.Store
	// StormThreshold: a notification of more firing alerts than this is one storm summary
	// (dispatch.storm_threshold).
	StormThreshold int
	Logger         zerolog.Logger
}

// Notifier posts notifications to Teams. It implements notify.Notifier.
type Notifier struct {
	cfg    *Config
	client *http.Client
	store  store.Store
	view   notify.ViewOptions
	log    zerolog.Logger
}

var _ notify.Notifier = (*Notifier)(nil)

// New returns the notifier of a validated, enabled section.
func New(o Options) (*Notifier, error) {
	switch {
	case o.Config == nil || !o.Config.Enabled():
		return nil, errors.New("teams: webhook_url is not set")
	case o.Store == nil:
		return nil, errors.New("teams: no store")
	}
	client, err := o.Config.Client("teams")
	if err != nil {
		return nil, fmt.Errorf("teams: %w", err)
	}
	return &Notifier{cfg: o.Config, client: client, store: o.Store, view: notify.ViewOptions{StormThreshold: o.StormThreshold}, log: o.Logger}, nil
}

// Notify posts the notification's card: one POST, classified for the retry loop. A card with
// nothing firing closes the group's firing card, so it is posted only when this responder posted
// that card (it was not down, nor started after the firing): otherwise nothing is posted, as
// Slack posts nothing for a thread it never started. When the store cannot say, the card is
// posted and says so.
func (t *Notifier) Notify(ctx context.Context, n *notify.Notification) (bool, error) {
	if len(n.Items) == 0 {
		return false, nil
	}
	log := t.log.With().Str("group_key", n.GroupKey).Str("status", n.Status).Logger()
	v := notify.NewView(n, t.view)
	key := firingKeyPrefix + notify.GroupHash(n.GroupKey)
	unchecked := false
	if len(v.Firing) == 0 && n.GroupKey != "" {
		switch _, ok, err := t.store.Get(ctx, key); {
		case err != nil:
			log.Warn().Err(err).Msg("teams: whether the group's firing card was posted is unknown (store unavailable); posting the resolution saying so")
			unchecked = true
		case !ok:
			log.Info().Msg("teams: this responder posted no firing card for this group (it was down, or started after the firing); not posting its resolution")
			return false, nil
		}
	}
	body, err := json.Marshal(renderView(v, unchecked))
	if err != nil {
		return false, fmt.Errorf("teams: %w", err)
	}
	retry, err := notify.PostJSON(ctx, t.client, t.cfg.WebhookURL.Reveal(), body, nil, t.cfg.RequestTimeout)
	if err != nil {
		return retry, fmt.Errorf("teams: %w", err)
	}
	log.Debug().Int("items", len(n.Items)).Int("bytes", len(body)).Msg("teams card posted")
	if n.GroupKey == "" {
		return false, nil
	}
	rec, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	switch {
	case len(v.Firing) > 0:
		if err := t.store.Set(rec, key, []byte{1}, rememberFiring); err != nil {
			log.Warn().Err(err).Msg("teams: the firing card is posted but not recorded; its resolution will not be posted")
		}
	case n.Resolved():
		// The whole group resolved: its next firing is a new card, and a resolution without
		// one is not posted. (A notification of a still firing group whose only news is
		// resolved alerts keeps the record.)
		if err := t.store.Delete(rec, key); err != nil {
			log.Warn().Err(err).Msg("teams: dropping the record of the group's firing card")
		}
	}
	return false, nil
}
