package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/rs/zerolog"

	cfgpkg "github.com/vllm-responder/vllm-responder/config"
	"github.com/vllm-responder/vllm-responder/evidence"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/store"
	"github.com/vllm-responder/vllm-responder/traces"
)

// newLogger builds the zerolog logger the config asks for.
func newLogger(c cfgpkg.LogConfig, w io.Writer) zerolog.Logger {
	lvl, err := zerolog.ParseLevel(c.Level)
	if err != nil {
		lvl = zerolog.InfoLevel
	}
	if c.Format == "console" {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly, NoColor: !isTerminal(w)}
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger()
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// loadPlaybooks loads the built-ins, the user's directory and extra directories, applying the
// config's overrides.
func loadPlaybooks(c *cfgpkg.Config, extraDirs ...string) (*playbooks.Set, error) {
	builtin, err := playbooks.Builtin()
	if err != nil {
		return nil, fmt.Errorf("built-in playbooks: %w", err)
	}
	var user []*playbooks.Playbook
	dirs := extraDirs
	if c.Playbooks.Dir != "" {
		dirs = append([]string{c.Playbooks.Dir}, dirs...)
	}
	for _, dir := range dirs {
		pbs, err := playbooks.LoadDir(dir)
		if err != nil {
			return nil, err
		}
		user = append(user, pbs...)
	}
	if w := c.Playbooks.Window; w > 0 {
		for _, p := range append(builtin, user...) {
			p.Window = w
		}
	}
	naming := c.VLLM.Naming()
	return playbooks.NewSet(builtin, user, playbooks.SetOptions{Params: c.Playbooks.Params, Triage: c.Playbooks.Triage, Naming: &naming})
}

// newPrometheusAPI returns the v1 API client for the configured Prometheus.
// Its transport is prometheus/common's for the prometheus section's HTTP client configuration
// (credentials, TLS, proxy, headers such as X-Scope-OrgID), which, like
// evidence.PrometheusTransport, never asks for gzip and keeps an idle pool large enough for a
// playbook's concurrent queries.
func newPrometheusAPI(c *cfgpkg.Config) (v1.API, error) {
	rt, err := cfgpkg.NewHTTPRoundTripper("prometheus", c.Prometheus.HTTP)
	if err != nil {
		return nil, fmt.Errorf("prometheus: %w", err)
	}
	client, err := api.NewClient(api.Config{Address: c.Prometheus.URL, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("prometheus.url: %w", err)
	}
	return v1.NewAPI(client), nil
}

// newEngine returns the playbook engine on the configured Prometheus (and Jaeger, when traces
// are configured).
func newEngine(c *cfgpkg.Config, api v1.API, obs evidence.Observer, log zerolog.Logger) (*evidence.Engine, error) {
	opt := evidence.EngineOptions{
		QueryTimeout:      c.Prometheus.QueryTimeout,
		CacheTTL:          c.Prometheus.CacheTTL,
		MaxConcurrent:     c.Prometheus.MaxConcurrentQueries,
		QueriesPerRequest: c.Prometheus.QueriesPerRequest,
		Observer:          obs,
		PodScope:          playbooks.PodScope{Label: c.VLLM.PodLabel},
		MetricPrefix:      c.VLLM.MetricPrefix,
		Logger:            log,
	}
	if c.Traces.Enabled() {
		tc, err := traces.NewClient(&c.Traces)
		if err != nil {
			return nil, fmt.Errorf("traces: %w", err)
		}
		opt.Traces = tc
	}
	return evidence.NewEngine(evidence.PrometheusQuerier{API: api}, opt), nil
}

// newStore returns the Redis store when redis.url or redis.sentinel is set, the in-memory one
// otherwise.
func newStore(c *cfgpkg.Config) (store.Store, string, error) {
	if s := c.Redis.Sentinel; s.MasterName != "" {
		return store.NewRedisSentinel(s.MasterName, s.Addrs, s.DB, c.Redis.Password.Reveal(), s.Password.Reveal(), c.Redis.KeyPrefix), "redis", nil
	}
	if c.Redis.URL == "" {
		return store.NewMemory(), "memory", nil
	}
	s, err := store.NewRedis(c.Redis.URL.Reveal(), c.Redis.Password.Reveal(), c.Redis.KeyPrefix)
	if err != nil {
		return nil, "", err
	}
	return s, "redis", nil
}
