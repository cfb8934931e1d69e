// Package webhook is the signed generic webhook: each notification is POSTed as JSON (the
// diagnoses exactly as `responder triage --output json` prints them, with the Alertmanager group
// they answer) to a configured URL, signed as the Standard Webhooks specification says, so that
// incident tools (and their existing verifier libraries) can check where it came from.
//
// The scheme (docs/deploy.md, "Signed webhooks"): three headers on every attempt,
//
//	webhook-id:        msg_<32 hex>, the same for every delivery of one group state (retries,
//	                   re-sends, replicas): receivers deduplicate on it
//	webhook-timestamp: Unix seconds of this attempt
//	webhook-signature: v1,<base64 of HMAC-SHA256(key, id + "." + timestamp + "." + body)>
//
// where key is the secret's bytes (the secret is "whsec_" + base64). A receiver recomputes the
// signature over the raw body, compares it in constant time, refuses a timestamp more than five
// minutes from its clock (the replay window) and an id it has already accepted (a replay inside
// the window). Delivery goes through notify.Retry (429 with Retry-After, 5xx, timeouts).
package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/alertmanager/template"
	"github.com/rs/zerolog"
	"gopkg.in/yaml.v3"

	"github.com/vllm-responder/vllm-responder/internal/configerr"
	"github.com/vllm-responder/vllm-responder/internal/secret"
	"github.com/vllm-responder/vllm-responder/internal/strictyaml"
	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

// Headers of the scheme (Standard Webhooks).
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix starts every signing secret; base64 of 24 to 64 random bytes follows.
const SecretPrefix = "whsec_"

// ReplayWindow is how far from the receiver's clock a timestamp may be (the spec's tolerance).
const ReplayWindow = 5 * time.Minute

// Payload types.
const (
	TypeFiring   = "diagnosis.firing"
	TypeResolved = "diagnosis.resolved"
)

// Config is one entry of `outbound_webhooks:`.
type Config struct {
	// Name labels the target in logs, metrics (notifier="webhook/NAME") and delivery records.
	Name string `yaml:"name"`
	// URL receives the POSTs. Incident tools often put a token in its path or query string, so
	// it prints, logs and marshals as its scheme and host only (secret.TokenURL).
	URL secret.TokenURL `yaml:"url"`
	// Secret signs every request: "whsec_" + base64 of 24 to 64 random bytes
	// (echo "whsec_$(openssl rand -base64 32)"). Required.
	Secret     secret.Secret `yaml:"secret"`
	SecretFile string        `yaml:"secret_file,omitempty"`
	// Delivery: the HTTP client (authorization, tls_config, proxy_url ...), the request timeout
	// and the rate-limit retries.
	notify.HTTPDelivery `yaml:",inline"`
}

// UnmarshalYAML decodes an entry over the delivery defaults (a list entry has no other place
// to get them from), strictly: an unknown key is named with its line, as everywhere in the config.
func (c *Config) UnmarshalYAML(n *yaml.Node) error {
	type plain Config
	p := plain{HTTPDelivery: notify.DefaultHTTPDelivery()}
	if err := strictyaml.Decode(n, &p); err != nil {
		return err
	}
	*c = Config(p)
	return nil
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// Validate checks one entry (configerr: keys without the list's name). Its errors never show
// the secret.
func (c *Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) { errs = append(errs, configerr.New(key, format, args...)) }
	if !nameRE.MatchString(c.Name) {
		add("name", "%q must be 1 to 32 of a-z, 0-9, _ and - (it labels metrics)", c.Name)
	}
	if u, err := url.Parse(c.URL.Reveal()); c.URL == "" {
		add("url", "required")
	} else if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		add("url", "must be an http(s) URL")
	}
	if !c.Secret.IsSet() {
		add("secret", "required (or secret_file): %s followed by base64 of 24 to 64 random bytes", SecretPrefix)
	} else if _, err := Key(c.Secret.Reveal()); err != nil {
		add("secret", "%w", err)
	}
	return errors.Join(append(errs, c.HTTPDelivery.Validate())...)
}

// Key is the HMAC key of a secret: the bytes of its base64 part.
func Key(s string) ([]byte, error) {
	b64, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("must start with %s (the value is not shown)", SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, errors.New("is not " + SecretPrefix + " followed by standard base64 (the value is not shown)")
	}
	if len(key) < 24 || len(key) > 64 {
		return nil, fmt.Errorf("decodes to %d bytes; want 24 to 64", len(key))
	}
	return key, nil
}

// Sign is the webhook-signature of a request: v1,<base64 HMAC-SHA256 of id.timestamp.body>.
func Sign(key []byte, id string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(strconv.FormatInt(ts, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Payload is the body of a request, in the Standard Webhooks shape (type, timestamp, data).
type Payload struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      Data      `json:"data"`
}

// Data is what a delivery is about: the Alertmanager group (its alerts in this delivery only:
// new firing ones, or those that resolved) and their diagnoses.
type Data struct {
	// Group is the Alertmanager webhook message's own fields, named as Alertmanager names them.
	Group Group `json:"group"`
	// Diagnoses are the distinct diagnoses of the group's alerts, each the JSON of
	// `responder triage --output json`; an alert refers to its own by index (alerts of a storm
	// share one group-wide diagnosis).
	Diagnoses []json.RawMessage `json:"diagnoses"`
	// Source is where the notification came from (alertmanager).
	Source notify.Source `json:"source"`
	// Incident is the incident the alerts belong to (the alerts of one model joined across
	// alert names, pods and groups), as it stands after them: omitted with incidents off and
	// for alerts without its key labels.
	Incident *notify.Incident `json:"incident,omitempty"`
}

// Group is an Alertmanager group as its webhook (version 4) sends it.
type Group struct {
	Receiver          string            `json:"receiver"`
	Status            string            `json:"status"`
	Alerts            []Alert           `json:"alerts"`
	GroupLabels       map[string]string `json:"groupLabels"`
	CommonLabels      map[string]string `json:"commonLabels"`
	CommonAnnotations map[string]string `json:"commonAnnotations"`
	ExternalURL       string            `json:"externalURL"`
	GroupKey          string            `json:"groupKey"`
	TruncatedAlerts   uint64            `json:"truncatedAlerts"`
}

// Alert is one alert as Alertmanager sends it (status, labels, annotations, startsAt, endsAt,
// generatorURL, fingerprint) and the index of its diagnosis in Data.Diagnoses: null when it has
// none (it resolved, or no playbook matches it: Unmatched).
type Alert struct {
	template.Alert
	Diagnosis *int `json:"diagnosis"`
	Unmatched bool `json:"unmatched,omitempty"`
}

// EncodeFunc is the one encoder of `responder triage --output json`. It may set the empty lists
// of the diagnosis it is given (it gets a copy).
type EncodeFunc func(*playbooks.Diagnosis) ([]byte, error)

// Body renders the request body of a notification: a pure function of it and the encoder.
// The group's and each alert's URL (externalURL, generatorURL) is sent only when it is an
// http(s) URL, as every integration makes links only of those (notify.HTTPURL): a receiver that
// renders it as a link cannot be handed a javascript: one. Labels and annotations go as they
// are: they are data the receiver matches on.
func Body(n *notify.Notification, encode EncodeFunc) ([]byte, error) {
	p := Payload{Type: TypeResolved, Timestamp: n.ReceivedAt.UTC(), Data: Data{Source: n.Source, Diagnoses: []json.RawMessage{}, Incident: n.Incident,
		Group: Group{Receiver: n.Receiver, Status: n.Status, Alerts: []Alert{}, GroupLabels: n.GroupLabels, CommonLabels: n.CommonLabels,
			CommonAnnotations: n.CommonAnnotations, ExternalURL: notify.HTTPURL(n.ExternalURL), GroupKey: n.GroupKey, TruncatedAlerts: n.TruncatedAlerts}}}
	index := map[*playbooks.Diagnosis]int{}
	for _, it := range n.Items {
		a := Alert{Alert: it.Alert, Unmatched: it.Unmatched}
		a.GeneratorURL = notify.HTTPURL(a.GeneratorURL)
		if a.Status == "" {
			a.Status = n.Status
		}
		if a.Status != notify.StatusResolved {
			p.Type = TypeFiring
		}
		if d := it.Diagnosis; d != nil {
			i, ok := index[d]
			if !ok {
				cp := *d // the encoder may fill in empty lists; other notifiers read d meanwhile
				b, err := encode(&cp)
				if err != nil {
					return nil, fmt.Errorf("encoding the diagnosis: %w", err)
				}
				i = len(p.Data.Diagnoses)
				index[d] = i
				p.Data.Diagnoses = append(p.Data.Diagnoses, json.RawMessage(b))
			}
			a.Diagnosis = &i
		}
		p.Data.Group.Alerts = append(p.Data.Group.Alerts, a)
	}
	return json.Marshal(p)
}

// Notifier POSTs signed notifications to one URL. It implements notify.Notifier.
type Notifier struct {
	cfg    *Config
	key    []byte
	client *http.Client
	encode EncodeFunc
	log    zerolog.Logger
	now    func() time.Time
}

var _ notify.Notifier = (*Notifier)(nil)

// New returns the notifier of a validated entry; encode is the triage JSON encoder.
func New(cfg *Config, encode EncodeFunc, log zerolog.Logger) (*Notifier, error) {
	if cfg == nil || encode == nil {
		return nil, errors.New("webhook: no config or no encoder")
	}
	key, err := Key(cfg.Secret.Reveal())
	if err != nil {
		return nil, fmt.Errorf("webhook %s: secret %w", cfg.Name, err)
	}
	client, err := cfg.Client("webhook_" + cfg.Name)
	if err != nil {
		return nil, fmt.Errorf("webhook %s: %w", cfg.Name, err)
	}
	if cfg.HTTP.FollowRedirects {
		client.CheckRedirect = sameOrigin
	}
	return &Notifier{cfg: cfg, key: key, client: client, encode: encode, log: log, now: time.Now}, nil
}

// maxRedirects bounds the redirects followed on the receiver's own origin (net/http's default).
const maxRedirects = 10

// sameOrigin follows a redirect only to the origin (scheme, host and port) of the configured URL.
// A signed delivery carries its body and its webhook-* headers along a redirect, and the copy
// verifies with the receiver's secret for the whole replay window: sent to another host, it could
// be replayed to the receiver, which never accepted that id. Not followed, the redirect is the
// answer: a 3xx the retry loop does not retry, logged with the host it pointed to.
func sameOrigin(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	if req.URL.Scheme != first.Scheme || !strings.EqualFold(req.URL.Host, first.Host) || len(via) >= maxRedirects {
		return http.ErrUseLastResponse
	}
	return nil
}

// MessageID is the webhook-id of a notification: the same for every delivery of one group state.
func MessageID(n *notify.Notification) string { return "msg_" + notify.StateHash(n) }

// Notify signs and POSTs one attempt (a fresh timestamp and signature each time).
func (w *Notifier) Notify(ctx context.Context, n *notify.Notification) (bool, error) {
	if len(n.Items) == 0 {
		return false, nil
	}
	body, err := Body(n, w.encode)
	if err != nil {
		return false, fmt.Errorf("webhook %s: %w", w.cfg.Name, err)
	}
	id, ts := MessageID(n), w.now().Unix()
	h := http.Header{}
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	h.Set(HeaderSignature, Sign(w.key, id, ts, body))
	retry, err := notify.PostJSON(ctx, w.client, w.cfg.URL.Reveal(), body, h, w.cfg.RequestTimeout)
	if err != nil {
		return retry, fmt.Errorf("webhook %s: %w", w.cfg.Name, err)
	}
	w.log.Debug().Str("webhook", w.cfg.Name).Str("webhook_id", id).Str("group_key", n.GroupKey).Int("bytes", len(body)).Msg("webhook delivered")
	return false, nil
}
