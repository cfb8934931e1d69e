package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/config"
	"github.com/vllm-responder/vllm-responder/dispatch"
	"github.com/vllm-responder/vllm-responder/handlers"
	"github.com/vllm-responder/vllm-responder/internal/secret"
	"github.com/vllm-responder/vllm-responder/internal/stack"
	"github.com/vllm-responder/vllm-responder/metrics"
	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/notify/incident"
	"github.com/vllm-responder/vllm-responder/notify/slack"
	"github.com/vllm-responder/vllm-responder/probe"
	"github.com/vllm-responder/vllm-responder/profile"
	"github.com/vllm-responder/vllm-responder/store"
)

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "configuration file (required)")
	listen := fs.String("listen", "", "listen address (overrides listen)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *cfgPath == "" {
		fmt.Fprintln(stderr, "responder serve: --config is required")
		return 2
	}
	var override func(*config.Config)
	if *listen != "" {
		override = func(c *config.Config) { c.Listen = *listen }
	}
	c, err := stack.LoadConfig(*cfgPath, override)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	log := stack.NewLogger(c.Log, stderr)
	for _, d := range c.Deprecated {
		log.Warn().Str("config", *cfgPath).Msg(d)
	}
	if err := serve(ctx, c, log, stdout); err != nil {
		log.Error().Err(err).Msg("responder stopped")
		return 1
	}
	return 0
}

// rangeQuerier adapts the v1 API (which also returns Infos) to the chart renderer's interface.
type rangeQuerier struct{ api v1.API }

func (r rangeQuerier) QueryRange(ctx context.Context, q string, rng v1.Range, opts ...v1.Option) (model.Value, v1.Warnings, error) {
	v, w, _, err := r.api.QueryRange(ctx, q, rng, opts...)
	return v, w, err
}

// serve wires the service and runs it until ctx ends, then drains.
func serve(ctx context.Context, c *config.Config, log zerolog.Logger, stdout io.Writer) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := metrics.New(reg)

	sk, err := stack.New(c, stack.Options{Logger: log, Playbooks: true, Observer: m, Store: true, ProbeMetrics: probe.NewMetrics(reg)})
	if err != nil {
		return err
	}
	defer sk.Close()
	set, st := sk.Playbooks, sk.Store
	if ms, ok := st.(*store.Memory); ok {
		metrics.RegisterMemoryStore(reg, ms, store.MemoryMaxBytes)
	}

	capt, err := startCaptures(ctx, c, sk, reg, log)
	if err != nil {
		return err
	}
	// The notifiers (notifiers.go): Slack when a bot token is set, Teams, the signed webhooks,
	// or the console when none is.
	sl, err := newSlack(c, sk, capt, reg, log)
	if err != nil {
		return err
	}
	fanout, err := newNotifier(c, sl, st, stdout, reg, m, log)
	if err != nil {
		return err
	}
	// Incidents (incidents:): the alerts of one model joined into one thread before delivery.
	var delivery notify.Notifier = fanout
	if c.Incidents.Enabled {
		if delivery, err = incident.New(fanout, incident.Options{Config: &c.Incidents, Store: st, Logger: log, Metrics: incident.NewMetrics(reg)}); err != nil {
			return err
		}
	}
	notifier := notify.RecordRecent(delivery, st, log)

	d := dispatch.New(set, sk.Engine, notifier, st, dispatch.Options{
		Workers: c.Dispatch.Workers, QueueSize: c.Dispatch.QueueSize, DedupWindow: c.Dispatch.DedupWindow,
		GroupCooldown: c.Dispatch.GroupCooldown, StormThreshold: c.Dispatch.StormThreshold,
		RunTimeout: c.Dispatch.RunTimeout, NotifyTimeout: c.Dispatch.NotifyTimeout,
		Logger: log, Metrics: m,
	})
	d.Start()

	routes, err := newRoutes(ctx, c, sk, d, sl, reg, m, log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := handlers.NewServer(c.Listen, handlers.Logging(log, handlers.NewMux(routes)))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info().Str("listen", ln.Addr().String()).Str("prometheus", secret.URL(c.Prometheus.URL).String()).Str("notifier", notifiersLine(c)).
		Str("store", sk.StoreKind).Int("playbooks", len(set.All())).Str("version", version).Msg("responder serving")
	if f, ok := stdout.(*os.File); ok && f == os.Stdout {
		_ = f.Sync()
	}

	select {
	case err := <-errc:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	return drain(c, log, d, capt, sl, srv)
}

// startCaptures starts the profile capture service and its janitor (which stops captures whose
// responder died); nil when profile.enabled is false.
func startCaptures(ctx context.Context, c *config.Config, sk *stack.Stack, reg prometheus.Registerer, log zerolog.Logger) (*profile.Service, error) {
	if !c.Profile.Enabled {
		return nil, nil
	}
	silencer, err := newSilencer(c)
	if err != nil {
		return nil, err
	}
	capt, err := profile.New(c.Profile, profile.Deps{Prometheus: sk.Prometheus, Store: sk.Store, Silencer: silencer, Metrics: profile.NewMetrics(reg), Logger: log, Naming: sk.Naming})
	if err != nil {
		return nil, err
	}
	go func() {
		if err := capt.RunJanitor(ctx); err != nil && !errors.Is(err, context.Canceled) {
			log.Error().Err(err).Msg("profile janitor stopped")
		}
	}()
	return capt, nil
}

// newSlack is the Slack integration when a bot token is set (nil otherwise), its capture
// button on when captures run.
func newSlack(c *config.Config, sk *stack.Stack, capt *profile.Service, reg prometheus.Registerer, log zerolog.Logger) (*slack.Slack, error) {
	if !c.Slack.Enabled() {
		return nil, nil
	}
	o := slack.Options{Config: &c.Slack, Store: sk.Store, Prometheus: rangeQuerier{sk.Prometheus}, StormThreshold: c.Dispatch.StormThreshold, Registerer: reg, Logger: log}
	if capt != nil {
		o.Capturer, o.MaxCapture = capturer{svc: capt}, c.Profile.MaxDuration
	}
	var err error
	if o.Silencer, err = newSilencer(c); err != nil {
		return nil, err
	}
	return slack.New(o)
}

// newRoutes are the HTTP endpoints: the webhook into the dispatcher, /metrics, the readiness
// checks, MCP, and Slack's command and buttons (answered by on-demand triage) when Slack is on.
func newRoutes(ctx context.Context, c *config.Config, sk *stack.Stack, d *dispatch.Dispatcher, sl *slack.Slack, reg *prometheus.Registry, m *metrics.Responder, log zerolog.Logger) (handlers.Routes, error) {
	routes := handlers.Routes{
		Webhook: &handlers.Webhook{Acceptor: d, Metrics: m, Logger: log, MaxBodyBytes: c.Webhook.MaxBodyBytes,
			Auth: handlers.WebhookAuth{BearerToken: c.Webhook.BearerToken.Reveal(), Username: c.Webhook.BasicAuth.Username,
				Password: c.Webhook.BasicAuth.Password.Reveal()}},
		Gatherer: reg,
		Ready: []handlers.Check{
			{Name: "prometheus", Required: false, Func: func(ctx context.Context) error { _, err := sk.Prometheus.Buildinfo(ctx); return err }},
			// Not required: without Redis the service still diagnoses (without deduplication, new
			// Slack messages rather than thread replies). Failing readiness would take every
			// replica sharing that Redis out of the Service and stop the webhooks altogether.
			{Name: "store", Required: false, Func: sk.Store.Ping},
		},
	}
	var err error
	if routes.MCP, err = mcpHandler(c, sk); err != nil {
		return routes, err
	}
	if sl != nil {
		if routes.SlackCommands, routes.SlackInteractions, err = sl.Start(ctx, sk.Triage); err != nil {
			return routes, err
		}
	}
	return routes, nil
}

// drain shuts down: new webhooks get 503 (Alertmanager retries elsewhere or later) while
// accepted work finishes within the drain deadline; then the HTTP server stops.
func drain(c *config.Config, log zerolog.Logger, d *dispatch.Dispatcher, capt *profile.Service, sl *slack.Slack, srv *http.Server) error {
	log.Info().Msg("shutting down: draining accepted work")
	drain, cancel := context.WithTimeout(context.Background(), c.Dispatch.DrainTimeout)
	defer cancel()
	derr := d.Shutdown(drain)
	if capt != nil {
		_ = capt.Shutdown(drain)
	}
	if sl != nil {
		_ = sl.Close(drain)
	}
	if err := srv.Shutdown(drain); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn().Err(err).Msg("http shutdown")
	}
	if derr != nil {
		return derr
	}
	log.Info().Msg("drained; bye")
	return nil
}
