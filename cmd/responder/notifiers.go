package main

import (
	"io"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/config"
	"github.com/vllm-responder/vllm-responder/metrics"
	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/notify/console"
	"github.com/vllm-responder/vllm-responder/notify/slack"
	"github.com/vllm-responder/vllm-responder/notify/teams"
	outbound "github.com/vllm-responder/vllm-responder/notify/webhook"
	"github.com/vllm-responder/vllm-responder/store"
	"github.com/vllm-responder/vllm-responder/triage"
)

// The notifiers, in one list: Slack (slack.bot_token), Teams (teams.webhook_url), each
// outbound_webhooks entry, and the console when none of them is configured. Each runs in its
// own retry loop with its own policy; several run side by side through one notify.Fanout.

// notifierEntry is one configured notifier: its target name (logs, metrics, delivery records),
// what `responder check` says of it, and how it is built.
type notifierEntry struct {
	name, detail string
	build        func() (notify.Notifier, notify.Policy, error)
}

// notifierTable lists the notifiers c turns on, in delivery order; sl is the Slack integration
// and st the store (nil when only describing).
func notifierTable(c *config.Config, sl *slack.Slack, st store.Store, stdout io.Writer, log zerolog.Logger) []notifierEntry {
	var out []notifierEntry
	if c.Slack.Enabled() {
		out = append(out, notifierEntry{"slack", c.Slack.Channel, func() (notify.Notifier, notify.Policy, error) {
			return sl, c.Slack.RetryPolicy(), nil
		}})
	}
	if c.Teams.Enabled() {
		out = append(out, notifierEntry{"teams", "Workflows webhook", func() (notify.Notifier, notify.Policy, error) {
			n, err := teams.New(teams.Options{Config: &c.Teams, Store: st, StormThreshold: c.Dispatch.StormThreshold, Logger: log})
			return n, c.Teams.RetryPolicy(), err
		}})
	}
	for i := range c.OutboundWebhooks {
		w := &c.OutboundWebhooks[i]
		out = append(out, notifierEntry{"webhook/" + w.Name, w.URL.String(), func() (notify.Notifier, notify.Policy, error) {
			n, err := outbound.New(w, triage.Encode, log)
			return n, w.RetryPolicy(), err
		}})
	}
	if len(out) == 0 {
		out = append(out, notifierEntry{"console", "", func() (notify.Notifier, notify.Policy, error) {
			return console.New(stdout, notify.ViewOptions{StormThreshold: c.Dispatch.StormThreshold}), notify.Policy{}, nil
		}})
	}
	return out
}

// notifiersLine is the notifiers as one line: "slack (#vllm-incidents), teams (Workflows
// webhook)", or "console".
func notifiersLine(c *config.Config) string {
	var parts []string
	for _, e := range notifierTable(c, nil, nil, nil, zerolog.Nop()) {
		if e.detail == "" {
			parts = append(parts, e.name)
		} else {
			parts = append(parts, e.name+" ("+e.detail+")")
		}
	}
	return strings.Join(parts, ", ")
}

// newNotifier builds every configured notifier, each in its own retry loop, behind one Fanout
// that keeps one post per group state for each of them; sl is the Slack integration when Slack
// is on.
func newNotifier(c *config.Config, sl *slack.Slack, st store.Store, stdout io.Writer, reg prometheus.Registerer, m *metrics.Responder, log zerolog.Logger) (notify.Notifier, error) {
	retryMetrics := notify.NewRetryMetrics(reg)
	var targets []notify.Target
	var names []string
	for _, e := range notifierTable(c, sl, st, stdout, log) {
		n, policy, err := e.build()
		if err != nil {
			return nil, err
		}
		targets = append(targets, notify.Target{Name: e.name, Notifier: &notify.Retrying{Notifier: n, Policy: policy,
			Logger: log.With().Str("notifier", e.name).Logger(), Metrics: retryMetrics,
			Observe: func(r string) { m.Notifications.WithLabelValues(r).Inc() }}})
		names = append(names, e.name)
	}
	return &notify.Fanout{Targets: targets, Store: st, Remember: c.Dispatch.DedupWindow, Logger: log,
		Metrics: notify.NewFanoutMetrics(reg, names...)}, nil
}
