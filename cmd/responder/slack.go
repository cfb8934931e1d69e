package main

import (
	"context"
	"fmt"
	"time"

	"github.com/vllm-responder/vllm-responder/config"
	"github.com/vllm-responder/vllm-responder/notify/slack"
	"github.com/vllm-responder/vllm-responder/profile"
	"github.com/vllm-responder/vllm-responder/silence"
)

// silencer is what the Silence button (slack.Silencer) and a capture's silence
// (profile.Silencer) both need of Alertmanager.
type silencer interface {
	slack.Silencer
	profile.Silencer
}

// newSilencer is the one Alertmanager client (alertmanager.url with its http_config: auth, TLS,
// proxy) behind the Silence button and a capture's silence; nil without alertmanager.url (a
// capture's alerts then fire, and the requester is told so).
func newSilencer(c *config.Config) (silencer, error) {
	s, err := newAlertmanagerClient(c)
	if s == nil {
		return nil, err // a nil *silence.Client would be a non-nil interface
	}
	return s, nil
}

func newAlertmanagerClient(c *config.Config) (*silence.Client, error) {
	if c.Alertmanager.URL == "" {
		return nil, nil
	}
	hc, err := config.NewHTTPClient("alertmanager", c.Alertmanager.HTTP)
	if err != nil {
		return nil, fmt.Errorf("alertmanager: %w", err)
	}
	s, err := silence.New(c.Alertmanager.URL, hc, 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("alertmanager.url: %w", err)
	}
	return s, nil
}

// capturer adapts profile.Service to the Slack app's Capturer.
type capturer struct{ svc *profile.Service }

func (c capturer) StartCapture(ctx context.Context, pod string, d time.Duration, by string, done func(string, error)) (string, error) {
	n, err := c.svc.Begin(ctx, profile.Request{Pod: pod, Duration: d, RequestedBy: by, Source: "slack"}, func(r *profile.Report) {
		done(r.String(), r.Err)
	})
	if err != nil {
		return "", err
	}
	return n.String(), nil
}

func (c capturer) Running(ctx context.Context) ([]string, error) {
	recs, err := c.svc.Running(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.String())
	}
	return out, nil
}
