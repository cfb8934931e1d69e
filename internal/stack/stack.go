// Package stack builds, in one place, what the responder's subcommands run on from a loaded
// configuration: the logger, the vLLM naming, the playbooks, the Prometheus client, the
// evidence engine, on-demand triage and the store. `serve`, `triage`, `mcp` and `profile` ask
// for the parts they need and get them built the same way.
package stack

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/config"
	"github.com/vllm-responder/vllm-responder/evidence"
	"github.com/vllm-responder/vllm-responder/facts/sources"
	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
	"github.com/vllm-responder/vllm-responder/notify/incident"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/probe"
	"github.com/vllm-responder/vllm-responder/store"
	"github.com/vllm-responder/vllm-responder/traces"
	"github.com/vllm-responder/vllm-responder/triage"
)

// Options choose the parts beyond the logger, the naming and the Prometheus client, which every
// stack has.
type Options struct {
	// Logs is where the logger the log section asks for writes; nil: Logger is used as given
	// (its zero value logs nothing).
	Logs   io.Writer
	Logger zerolog.Logger
	// Playbooks loads the playbooks and builds the engine and on-demand triage on them.
	Playbooks bool
	// Observer receives the engine's query observations (serve's metrics); may be nil.
	Observer evidence.Observer
	// Store opens the store: Redis when redis.url or redis.sentinel is set, in memory otherwise.
	// With Playbooks and probe.enabled it is opened anyway (the probe takes the pod's lock).
	// On-demand triage then names the open incident of its scope (incidents:).
	Store bool
	// ProbeMetrics receives the probe's series (serve's registry); may be nil.
	ProbeMetrics *probe.Metrics
}

// Stack is what a subcommand runs on. Parts not asked for are nil.
type Stack struct {
	Config     *config.Config
	Log        zerolog.Logger
	Naming     vllmnames.Naming
	Prometheus v1.API
	Playbooks  *playbooks.Set
	Engine     *evidence.Engine
	Triage     *triage.Service
	Store      store.Store
	// StoreKind is "redis" or "memory" (with Store).
	StoreKind string
}

// New builds the stack of c. Close it when done (it closes the store).
func New(c *config.Config, o Options) (*Stack, error) {
	s := &Stack{Config: c, Log: o.Logger, Naming: c.VLLM.Naming()}
	if o.Logs != nil {
		s.Log = NewLogger(c.Log, o.Logs)
	}
	var err error
	if s.Prometheus, err = newPrometheusAPI(c); err != nil {
		return nil, err
	}
	// The probe takes the pod's lock in the store, so it opens the store even where the command
	// itself needs none (triage).
	if o.Store || (o.Playbooks && c.Probe.Enabled) {
		store.SetRedisLogger(s.Log)
		if s.Store, s.StoreKind, err = newStore(c); err != nil {
			return nil, err
		}
	}
	if o.Playbooks {
		if s.Playbooks, err = LoadPlaybooks(c); err != nil {
			return nil, err
		}
		var prober evidence.StallProber
		if c.Probe.Enabled {
			p, err := probe.New(c.Probe, probe.Deps{Prometheus: s.Prometheus, Store: s.Store, Naming: s.Naming, Metrics: o.ProbeMetrics, Logger: s.Log})
			if err != nil {
				return nil, err
			}
			prober = p
		}
		if s.Engine, err = newEngine(c, s.Naming, s.Prometheus, o.Observer, prober, s.Log); err != nil {
			return nil, err
		}
		to := triage.Options{Set: s.Playbooks, Engine: s.Engine, Querier: evidence.PrometheusQuerier{API: s.Prometheus},
			Naming: s.Naming, PrometheusURL: c.Prometheus.URL, Namespaces: c.Triage.Namespaces}
		if s.Store != nil && c.Incidents.Enabled {
			// A triage of a scope with an open incident names it.
			to.Incidents = incident.NewFinder(&c.Incidents, s.Store)
		}
		s.Triage, err = triage.New(to)
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Close closes the store.
func (s *Stack) Close() error {
	if s.Store == nil {
		return nil
	}
	return s.Store.Close()
}

// LoadConfig loads the configuration file with the command line's overrides applied (each may
// be nil) and validated again.
func LoadConfig(path string, overrides ...func(*config.Config)) (*config.Config, error) {
	c, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	changed := false
	for _, o := range overrides {
		if o != nil {
			o(c)
			changed = true
		}
	}
	if changed {
		if err := c.Validate(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// PrometheusURL is the override of --prometheus: url in place of prometheus.url; nil when url
// is empty.
func PrometheusURL(url string) func(*config.Config) {
	if url == "" {
		return nil
	}
	return func(c *config.Config) { c.Prometheus.URL = url }
}

// NewLogger builds the zerolog logger the log section asks for, writing to w.
func NewLogger(c config.LogConfig, w io.Writer) zerolog.Logger {
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

// LoadPlaybooks loads the built-ins, playbooks.dir and extra directories (`playbooks test`),
// compiled against the facts of every source (facts/sources), applying the config's window,
// params and vLLM naming.
func LoadPlaybooks(c *config.Config, extraDirs ...string) (*playbooks.Set, error) {
	builtin, err := playbooks.Builtin(sources.Catalog())
	if err != nil {
		return nil, fmt.Errorf("built-in playbooks: %w", err)
	}
	var user []*playbooks.Playbook
	dirs := extraDirs
	if c.Playbooks.Dir != "" {
		dirs = append([]string{c.Playbooks.Dir}, dirs...)
	}
	for _, dir := range dirs {
		pbs, err := playbooks.LoadDir(dir, sources.Catalog())
		if err != nil {
			return nil, err
		}
		user = append(user, pbs...)
	}
	naming := c.VLLM.Naming()
	return playbooks.NewSet(builtin, user, playbooks.SetOptions{Params: c.Playbooks.Params, Window: c.Playbooks.Window,
		Triage: c.Playbooks.Triage, Naming: &naming})
}

// newPrometheusAPI returns the v1 API client for the configured Prometheus. Its transport is
// prometheus/common's for the prometheus section's HTTP client configuration (credentials,
// TLS, proxy, headers such as X-Scope-OrgID), which, like evidence.PrometheusTransport, never
// asks for gzip and keeps an idle pool large enough for a playbook's concurrent queries.
func newPrometheusAPI(c *config.Config) (v1.API, error) {
	rt, err := config.NewHTTPRoundTripper("prometheus", c.Prometheus.HTTP)
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
// are configured), with the fact sources (facts/sources: kube-state-metrics' series unless
// kubernetes.enabled is false, vLLM's LoRA series), and the stall probe, when probe.enabled.
func newEngine(c *config.Config, n vllmnames.Naming, promAPI v1.API, obs evidence.Observer, prober evidence.StallProber, log zerolog.Logger) (*evidence.Engine, error) {
	opt := evidence.EngineOptions{
		Probe:             prober,
		QueryTimeout:      c.Prometheus.QueryTimeout,
		CacheTTL:          c.Prometheus.CacheTTL,
		MaxConcurrent:     c.Prometheus.MaxConcurrentQueries,
		QueriesPerRequest: c.Prometheus.QueriesPerRequest,
		Observer:          obs,
		Naming:            n,
		Facts:             sources.List(sources.Config{Kubernetes: &c.Kubernetes, GPU: &c.GPU}),
		Logger:            log,
		// The playbooks' recorded forms (the stall history) where the shipped recording rules
		// run (deploy/prometheus, group vllm-responder-stall-history), their raw forms elsewhere.
		Alternatives: evidence.Recorded,
	}
	if c.Traces.Enabled() {
		tc, err := traces.NewClient(&c.Traces)
		if err != nil {
			return nil, fmt.Errorf("traces: %w", err)
		}
		opt.Traces = tc
	}
	return evidence.NewEngine(evidence.PrometheusQuerier{API: promAPI}, opt), nil
}

// newStore returns the Redis store when redis.url or redis.sentinel is set, the in-memory one
// otherwise, and which it is.
func newStore(c *config.Config) (store.Store, string, error) {
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
