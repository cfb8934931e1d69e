// Package silence creates Alertmanager silences through its v2 API (POST /api/v2/silences).
// It is a few lines of JSON, so it does not pull in Alertmanager's generated OpenAPI client.
package silence

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Matcher is one label matcher of a silence.
type Matcher struct {
	Name    string `json:"name"`
	Value   string `json:"value"`
	IsRegex bool   `json:"isRegex"`
	IsEqual bool   `json:"isEqual"`
}

// Silence is what Alertmanager's postableSilence carries. ID is empty for a new silence; set, the
// post updates that silence (Alertmanager may replace it by a new one and answer a new id).
type Silence struct {
	ID        string    `json:"id,omitempty"`
	Matchers  []Matcher `json:"matchers"`
	StartsAt  time.Time `json:"startsAt"`
	EndsAt    time.Time `json:"endsAt"`
	CreatedBy string    `json:"createdBy"`
	Comment   string    `json:"comment"`
}

// ForLabels is a silence of exactly the alert with these labels (every label an equality
// matcher), from start for d.
func ForLabels(labels map[string]string, start time.Time, d time.Duration, createdBy, comment string) Silence {
	s := Silence{StartsAt: start, EndsAt: start.Add(d), CreatedBy: createdBy, Comment: comment}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if labels[k] == "" {
			continue // an empty value matches a missing label; leave it out
		}
		s.Matchers = append(s.Matchers, Matcher{Name: k, Value: labels[k], IsEqual: true})
	}
	return s
}

var errTimeout = errors.New("alertmanager request timed out")

// Client talks to one Alertmanager.
type Client struct {
	base    *url.URL
	http    *http.Client
	timeout time.Duration
}

// New returns a client for the Alertmanager at baseURL (the config's alertmanager.url).
// httpClient may be nil; timeout bounds each request (0 means 10s).
func New(baseURL string, httpClient *http.Client, timeout time.Duration) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("alertmanager url: must be an http(s) URL")
	}
	if httpClient == nil {
		httpClient = &http.Client{}
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	return &Client{base: u, http: httpClient, timeout: timeout}, nil
}

// Create posts the silence and returns its id.
func (c *Client) Create(ctx context.Context, s Silence) (string, error) {
	if len(s.Matchers) == 0 {
		return "", errors.New("silence: no matchers (it would silence everything)")
	}
	body, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	what := "creating silence"
	if s.ID != "" {
		what = "updating silence " + s.ID
	}
	raw, err := c.do(ctx, http.MethodPost, c.base.JoinPath("api", "v2", "silences"), body, what)
	if err != nil {
		return "", err
	}
	var out struct {
		SilenceID string `json:"silenceID"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.SilenceID == "" {
		return "", fmt.Errorf("%s: unexpected answer %q", what, truncate(string(raw), 200))
	}
	return out.SilenceID, nil
}

// State is a silence as Alertmanager reports it (GET /api/v2/silence/{id}).
type State struct {
	Silence
	// Status is active, pending or expired.
	Status string
}

// Silence states.
const (
	StateActive  = "active"
	StatePending = "pending"
	StateExpired = "expired"
)

// ErrNotFound: Alertmanager knows no silence with this id (it was garbage-collected, or the
// Alertmanager lost its state).
var ErrNotFound = errors.New("silence not found")

// Get returns the silence with this id.
func (c *Client) Get(ctx context.Context, id string) (State, error) {
	raw, err := c.do(ctx, http.MethodGet, c.base.JoinPath("api", "v2", "silence", id), nil, "reading silence "+id)
	if err != nil {
		return State{}, err
	}
	var out struct {
		Silence
		Status struct {
			State string `json:"state"`
		} `json:"status"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return State{}, fmt.Errorf("reading silence %s: unexpected answer %q", id, truncate(string(raw), 200))
	}
	return State{Silence: out.Silence, Status: out.Status.State}, nil
}

// Expire ends the silence now. A silence already expired or unknown is not an error.
func (c *Client) Expire(ctx context.Context, id string) error {
	_, err := c.do(ctx, http.MethodDelete, c.base.JoinPath("api", "v2", "silence", id), nil, "expiring silence "+id)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil && strings.Contains(err.Error(), "already expired") {
		return nil
	}
	return err
}

// SetEnd moves the end of an active or pending silence to end (an end not in the future expires
// it) and returns the silence's id, which Alertmanager may have changed (it replaces a silence it
// cannot update in place). A silence that is no longer active (expired by someone, or unknown)
// is left alone: "" and no error.
func (c *Client) SetEnd(ctx context.Context, id string, end time.Time) (string, error) {
	cur, err := c.Get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return id, err
	}
	if cur.Status != StateActive && cur.Status != StatePending {
		return "", nil
	}
	if !end.After(time.Now()) {
		return "", c.Expire(ctx, id)
	}
	s := cur.Silence
	s.ID, s.EndsAt = id, end
	return c.Create(ctx, s)
}

// do sends one request and returns the answer's body on a 200.
func (c *Client) do(ctx context.Context, method string, u *url.URL, body []byte, what string) ([]byte, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, c.timeout, errTimeout)
	defer cancel()
	var rd io.Reader = http.NoBody
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // drop the URL: it may carry credentials
		}
		if cause := context.Cause(ctx); cause != nil {
			err = cause
		}
		return nil, fmt.Errorf("%s at %s: %w", what, u.Redacted(), err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode == http.StatusNotFound && method != http.MethodPost:
		return nil, fmt.Errorf("%s at %s: %w", what, u.Redacted(), ErrNotFound)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%s at %s: HTTP %d: %s", what, u.Redacted(), resp.StatusCode, strings.TrimSpace(string(raw)))
	}
	return raw, nil
}

// URL is the Alertmanager page of a silence, for links in Slack.
func (c *Client) URL(id string) string {
	u := *c.base
	u.User = nil
	return strings.TrimSuffix(u.String(), "/") + "/#/silences/" + url.PathEscape(id)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
