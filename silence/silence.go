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

// Silence is what Alertmanager's postableSilence carries.
type Silence struct {
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
	ctx, cancel := context.WithTimeoutCause(ctx, c.timeout, errTimeout)
	defer cancel()
	u := c.base.JoinPath("api", "v2", "silences")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // drop the URL: it may carry credentials
		}
		if cause := context.Cause(ctx); cause != nil {
			err = cause
		}
		return "", fmt.Errorf("creating silence at %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("creating silence at %s: HTTP %d: %s", u.Redacted(), resp.StatusCode, strings.TrimSpace(string(raw)))
	}
	var out struct {
		SilenceID string `json:"silenceID"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.SilenceID == "" {
		return "", fmt.Errorf("creating silence at %s: unexpected answer %q", u.Redacted(), truncate(string(raw), 200))
	}
	return out.SilenceID, nil
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
