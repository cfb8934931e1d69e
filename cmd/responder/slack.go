package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	cfgpkg "github.com/vllm-responder/vllm-responder/config"
	"github.com/vllm-responder/vllm-responder/dispatch"
	"github.com/vllm-responder/vllm-responder/handlers"
	slacknotify "github.com/vllm-responder/vllm-responder/notify/slack"
	"github.com/vllm-responder/vllm-responder/profile"
	"github.com/vllm-responder/vllm-responder/silence"
)

// mountSlack wires the Slack app (the /vllm command and the buttons) when Slack is configured:
// on the HTTP endpoints, or over Socket Mode when slack.socket_mode is set. It returns a function
// that waits for the app's background work on shutdown.
func mountSlack(ctx context.Context, c *cfgpkg.Config, routes *handlers.Routes, api *slacknotify.API, d *dispatch.Dispatcher,
	capt *profile.Service, incidents slacknotify.Incidents, log zerolog.Logger) (func(context.Context) error, error) {
	if api == nil || !c.Slack.Interactive() {
		return func(context.Context) error { return nil }, nil
	}
	o := slacknotify.AppOptions{Config: &c.Slack, API: api, Triager: d, Incidents: incidents, Logger: log}
	if r, ok := incidents.(slacknotify.Records); ok {
		o.Records = r // the notifier keeps the diagnosis records the Wrong verdict? select names
	}
	if capt != nil {
		o.Capturer = capturer{svc: capt}
		o.MaxCapture = c.Profile.MaxDuration
	}
	if c.Alertmanager.URL != "" {
		hc, err := cfgpkg.NewHTTPClient("alertmanager", c.Alertmanager.HTTP)
		if err != nil {
			return nil, fmt.Errorf("alertmanager: %w", err)
		}
		s, err := silence.New(c.Alertmanager.URL, hc, 10*time.Second)
		if err != nil {
			return nil, fmt.Errorf("alertmanager.url: %w", err)
		}
		o.Silencer = s
	}
	app, err := slacknotify.NewApp(o)
	if err != nil {
		return nil, err
	}
	if c.Slack.SocketMode {
		go func() {
			if err := app.RunSocketMode(ctx); err != nil && !errors.Is(err, context.Canceled) {
				log.Error().Err(err).Msg("slack socket mode stopped")
			}
		}()
	} else {
		routes.SlackCommands = app.CommandsHandler()
		routes.SlackInteractions = app.InteractionsHandler()
	}
	return app.Close, nil
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
