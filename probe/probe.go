// Package probe confirms a stall before the responder calls it one: one completion request of
// max_tokens 1 to the pod's own OpenAI endpoint, bounded by a timeout. vLLM's /health keeps
// answering 200 while its engine core hangs (docs/vllm-facts.md), and its metrics freeze; a
// request that must pass through the engine does not lie: a wedged engine never answers it, a
// busy but healthy one answers within a step or two. NVIDIA Dynamo's canary health checks probe
// idle workers the same way.
//
// Opt-in (probe.enabled). The pod is found as profile captures find it (internal/podendpoint:
// the address Prometheus scrapes, an allowlist of networks); it is never probed while paused on
// purpose (sleep mode, an RL weight update: requests wait unscheduled there, a timeout would read
// as a stall), never while a profile capture or another probe holds the pod's lock in the store,
// and at most once per probe.min_interval (across the replicas sharing the store: the last result
// is shown again). The cost: one request with a ~1-token prompt and 1 generated token, and on a
// wedged engine one connection the API server holds until the client gives up (probe.timeout).
package probe

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/internal/configerr"
	"github.com/vllm-responder/vllm-responder/internal/podendpoint"
	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
	"github.com/vllm-responder/vllm-responder/store"
)

// Outcomes of a probe: Result.Outcome and the label values of vllm_responder_probes_total.
const (
	// OutcomeAnswered: the server answered the request within the timeout.
	OutcomeAnswered = "answered"
	// OutcomeTimedOut: no answer within the timeout.
	OutcomeTimedOut = "timed_out"
	// OutcomeFailed: the server refused the request or could not be reached (an HTTP error, a
	// refused connection): no proof either way.
	OutcomeFailed = "failed"
	// OutcomeSkipped: not sent (the engine paused on purpose, the pod held by a capture or another
	// probe, the pod or the store unknown or unreachable).
	OutcomeSkipped = "skipped"
	// OutcomeRecent: not sent, the pod was probed within probe.min_interval: Previous holds that
	// probe's result.
	OutcomeRecent = "recent"
)

var allOutcomes = []string{OutcomeAnswered, OutcomeTimedOut, OutcomeFailed, OutcomeSkipped, OutcomeRecent}

// Result is what one probe found: the evidence a stall diagnosis shows.
type Result struct {
	Pod     string        `json:"pod"` // namespace/pod
	Outcome string        `json:"outcome"`
	Took    time.Duration `json:"took"`
	Timeout time.Duration `json:"timeout"`
	// Status is the HTTP status of an answer that was not a success.
	Status int `json:"status,omitempty"`
	// Detail says why the probe failed or was not sent.
	Detail string `json:"detail,omitempty"`
	// Endpoint is the host the request went to (never the whole URL).
	Endpoint string    `json:"endpoint,omitempty"`
	At       time.Time `json:"at"`
	// Previous is the last probe of the pod, for OutcomeRecent.
	Previous *Result `json:"previous,omitempty"`
}

// Sent reports whether the probe's request went out (now or, for OutcomeRecent, recently).
func (r Result) Sent() bool {
	switch r.Outcome {
	case OutcomeAnswered, OutcomeTimedOut, OutcomeFailed:
		return true
	case OutcomeRecent:
		return r.Previous != nil && r.Previous.Sent()
	}
	return false
}

// Stalled reports whether the probe is evidence of a stall: no answer within the timeout (now,
// or at the recent probe it repeats).
func (r Result) Stalled() bool {
	if r.Outcome == OutcomeRecent && r.Previous != nil {
		return r.Previous.Stalled()
	}
	return r.Outcome == OutcomeTimedOut
}

// Text says what the probe found, as the evidence shows it: "a 1-token request timed out after
// 5 s", "a 1-token request answered in 40 ms: not a stall".
func (r Result) Text() string {
	switch r.Outcome {
	case OutcomeAnswered:
		return "a 1-token request answered in " + formatDuration(r.Took) + ": not a stall"
	case OutcomeTimedOut:
		return "a 1-token request timed out after " + formatDuration(r.Timeout)
	case OutcomeFailed:
		return "a 1-token request failed (" + r.Detail + "): no proof either way"
	case OutcomeRecent:
		if r.Previous == nil {
			return "not sent: probed within probe.min_interval"
		}
		age := "just now"
		if a := r.At.Sub(r.Previous.At).Round(time.Second); a > 0 {
			age = formatDuration(a) + " ago"
		}
		return "probed " + age + ": " + r.Previous.Text()
	}
	return "not sent: " + r.Detail
}

// formatDuration is 40 ms, 1.2 s, 5 s.
func formatDuration(d time.Duration) string {
	if d < time.Second {
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	}
	return strconv.FormatFloat(d.Round(100*time.Millisecond).Seconds(), 'f', -1, 64) + " s"
}

// Deps are what a Prober needs besides its configuration.
type Deps struct {
	Prometheus podendpoint.Querier
	Store      store.Store
	Naming     vllmnames.Naming
	Metrics    *Metrics
	Logger     zerolog.Logger
}

// Prober sends probes.
type Prober struct {
	cfg     Config
	res     podendpoint.Resolver
	prom    podendpoint.Querier
	naming  vllmnames.Naming
	store   store.Store
	http    *http.Client
	metrics *Metrics
	log     zerolog.Logger
}

// ErrEndpointNotAllowed: the pod's endpoint is outside probe.allowed_networks.
var ErrEndpointNotAllowed = errors.New("endpoint outside probe.allowed_networks")

// Store keys (the Redis store namespaces them further).
const lastPrefix = "probe:last:"

// overhead bounds what a probe does besides its request: two Prometheus queries and a few store
// operations.
const overhead = 5 * time.Second

// New returns a Prober. cfg must have been defaulted; New validates it.
func New(cfg Config, d Deps) (*Prober, error) {
	if !cfg.compiled() {
		if err := cfg.Validate(); err != nil {
			return nil, configerr.Prefix("probe", err)
		}
	}
	if d.Prometheus == nil || d.Store == nil {
		return nil, errors.New("probe.New: Prometheus and Store are required")
	}
	if d.Metrics == nil {
		d.Metrics = NewMetrics(nil)
	}
	return &Prober{
		cfg: cfg,
		res: podendpoint.Resolver{Prom: d.Prometheus, Naming: d.Naming, URL: cfg.urlTmpl, URLKey: "probe.url_template",
			Networks: cfg.networks, NotAllowed: ErrEndpointNotAllowed},
		prom: d.Prometheus, naming: d.Naming, store: d.Store, metrics: d.Metrics,
		http: &http.Client{
			Transport:     podendpoint.Transport(cfg.networks, ErrEndpointNotAllowed),
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		log: d.Logger.With().Str("component", "probe").Logger(),
	}, nil
}

// Timeout bounds a whole probe: its request's timeout and what it does around it.
func (p *Prober) Timeout() time.Duration { return p.cfg.Timeout + overhead }

// Probe sends one probe to the pod (namespace may be empty), unless it must not (Outcome says
// why). It never returns an error: what went wrong is the result.
func (p *Prober) Probe(ctx context.Context, pod, namespace string) Result {
	r := p.probe(ctx, pod, namespace)
	p.metrics.probes.WithLabelValues(r.Outcome).Inc()
	ev := p.log.Info()
	if r.Outcome == OutcomeFailed {
		ev = p.log.Warn()
	}
	ev.Str("pod", r.Pod).Str("outcome", r.Outcome).Dur("took", r.Took).Str("detail", r.Detail).Str("endpoint", r.Endpoint).Msg("probe")
	return r
}

func (p *Prober) probe(ctx context.Context, pod, namespace string) Result {
	now := time.Now()
	r := Result{Pod: podendpoint.Name(namespace, pod), Timeout: p.cfg.Timeout, At: now}
	skip := func(format string, args ...any) Result {
		r.Outcome, r.Detail = OutcomeSkipped, fmt.Sprintf(format, args...)
		return r
	}
	if !podendpoint.NamePattern.MatchString(pod) || (namespace != "" && !podendpoint.NamePattern.MatchString(namespace)) {
		return skip("%q is not a pod name", r.Pod)
	}
	t, err := p.res.Resolve(ctx, pod, namespace)
	if err != nil {
		return skip("%v", err)
	}
	r.Pod, r.Endpoint = t.Name(), podendpoint.HostOf(t.Endpoint)
	if why, err := p.paused(ctx, t); err != nil {
		return skip("whether the engine is paused could not be read: %v", err)
	} else if why != "" {
		return skip("the engine is paused on purpose (%s): requests wait unscheduled there, a timeout would prove nothing", why)
	}
	if prev, ok := p.last(ctx, t.Name()); ok && now.Sub(prev.At) < p.cfg.MinInterval {
		r.Outcome, r.Previous = OutcomeRecent, &prev
		return r
	}
	lock, err := p.store.Lock(ctx, podendpoint.LockPrefix+t.Name(), p.cfg.Timeout+overhead,
		store.LockHolder{ID: "probe-" + newID(), Name: "the stall probe (one 1-token request)", Since: now})
	var locked *store.LockedError
	switch {
	case errors.As(err, &locked):
		return skip("%s holds the pod since %s (a profile capture stalls the engine while it stops; a probe then proves nothing)",
			orSomeone(locked.Holder.Name), locked.Holder.Since.UTC().Format(time.RFC3339))
	case err != nil:
		return skip("the store is unavailable, and the pod's lock with it: %v", err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = lock.Release(rctx)
	}()
	r = p.send(ctx, t, r)
	if b, err := json.Marshal(r); err == nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if err := p.store.Set(sctx, lastPrefix+t.Name(), b, p.cfg.MinInterval); err != nil {
			p.log.Warn().Err(err).Str("pod", t.Name()).Msg("the probe's result could not be kept: the next diagnosis may probe again")
		}
	}
	return r
}

func orSomeone(name string) string {
	if name == "" {
		return "someone"
	}
	return name
}

// last is the pod's last probe, kept for min_interval.
func (p *Prober) last(ctx context.Context, name string) (Result, bool) {
	b, ok, err := p.store.Get(ctx, lastPrefix+name)
	if err != nil || !ok {
		return Result{}, false
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return Result{}, false
	}
	return r, true
}

// paused says why the pod's engine is paused on purpose now (empty: it is not, as far as its
// series say): asleep (engine_sleep_state{sleep_state="awake"} 0), or a sleep, wake or RL
// weight-update operation in flight, read from the series of the pod's scrape target.
func (p *Prober) paused(ctx context.Context, t podendpoint.Target) (string, error) {
	inst := "instance=" + strconv.Quote(t.Instance)
	q := fmt.Sprintf(`label_replace(%s == 0, "why", "asleep", "", "") or label_replace(%s > 0, "why", "a sleep or wake operation in flight", "", "") or label_replace(%s > 0, "why", "an RL weight update in flight", "", "")`,
		p.naming.Selector("engine_sleep_state", `sleep_state="awake",`+inst),
		p.naming.Selector("sleep_mode_operations_in_flight", inst),
		p.naming.Selector("rl_weight_update_operations_in_flight", inst))
	val, _, _, err := p.prom.Query(ctx, q, time.Now())
	if err != nil {
		return "", err
	}
	vec, ok := val.(model.Vector)
	if !ok || len(vec) == 0 {
		return "", nil
	}
	return string(vec[0].Metric["why"]), nil
}

// completion is the request body: the smallest request that must go through the engine.
type completion struct {
	Model       string  `json:"model"`
	Prompt      string  `json:"prompt"`
	MaxTokens   int     `json:"max_tokens"`
	Temperature float64 `json:"temperature"`
	Stream      bool    `json:"stream"`
}

// send posts the probe and waits for its answer, at most the timeout.
func (p *Prober) send(ctx context.Context, t podendpoint.Target, r Result) Result {
	body, _ := json.Marshal(completion{Model: t.Model, Prompt: "ping", MaxTokens: 1})
	rctx, cancel := context.WithTimeoutCause(ctx, p.cfg.Timeout, errProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, strings.TrimSuffix(t.Endpoint, "/")+"/v1/completions", bytes.NewReader(body))
	if err != nil {
		r.Outcome, r.Detail = OutcomeFailed, err.Error()
		return r
	}
	req.Header.Set("Content-Type", "application/json")
	if p.cfg.APIKey.IsSet() {
		req.Header.Set("Authorization", "Bearer "+p.cfg.APIKey.Reveal())
	}
	start := time.Now()
	resp, err := p.http.Do(req)
	if err == nil {
		_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // the answer is the whole body
		resp.Body.Close()
	}
	r.Took = time.Since(start)
	switch {
	case errors.Is(context.Cause(rctx), errProbeTimeout):
		r.Outcome, r.Took = OutcomeTimedOut, p.cfg.Timeout
	case ctx.Err() != nil:
		r.Outcome, r.Detail = OutcomeSkipped, "the diagnosis' deadline passed first"
	case err != nil:
		r.Outcome, r.Detail = OutcomeFailed, describe(err)
	case resp.StatusCode/100 != 2:
		r.Outcome, r.Status, r.Detail = OutcomeFailed, resp.StatusCode, "HTTP "+resp.Status+statusHint(resp.StatusCode)
	default:
		r.Outcome = OutcomeAnswered
	}
	return r
}

var errProbeTimeout = errors.New("probe timed out")

// describe is a connection error without the URL it repeats.
func describe(err error) string {
	switch {
	case errors.Is(err, ErrEndpointNotAllowed):
		return err.Error()
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused: nothing listens, the server is down or restarting"
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Error()
	}
	return err.Error()
}

func statusHint(code int) string {
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden:
		return ": vLLM's --api-key or a gateway guards /v1; set probe.api_key"
	case http.StatusNotFound:
		return ": the model name of the pod's series is not what it serves, or the path is not vLLM's"
	case http.StatusServiceUnavailable:
		return ": refused at a queue limit (--max-num-queued-reqs) or shutting down"
	}
	return ""
}

func newID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Metrics are the probe's own series.
type Metrics struct {
	probes *prometheus.CounterVec
}

// NewMetrics creates the series (at 0) and registers them with reg; a nil reg registers nothing.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{probes: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vllm_responder_probes_total",
		Help: "Stall probes (one 1-token request to a pod diagnosed engine-stalled) by outcome.",
	}, []string{"outcome"})}
	for _, o := range allOutcomes {
		m.probes.WithLabelValues(o)
	}
	if reg != nil {
		reg.MustRegister(m.probes)
	}
	return m
}
