package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// GatewayKind is the component the gateway stand-in plays in front of a model's pods.
type GatewayKind string

// The gateways vllm-sim stands in for (docs/vllm-facts.md, "Requests held before the engine").
const (
	// GatewayProductionStack is vLLM production-stack's router (src/vllm_router): it sends each
	// request on at once, with no queue of its own, and exports prometheus_client series that
	// share the engines' names under a server label.
	GatewayProductionStack GatewayKind = "production-stack"
	// GatewayEPP is llm-d's Endpoint Picker behind an inference gateway (llm-d/llm-d-router's
	// pkg/epp) with flow control on: requests wait in the EPP and are dispatched while the
	// pool's saturation, computed from its own scrapes of the pods, is below 1.
	GatewayEPP GatewayKind = "llm-d-epp"
)

// ParseGatewayKind parses production-stack or llm-d-epp.
func ParseGatewayKind(s string) (GatewayKind, error) {
	switch k := GatewayKind(s); k {
	case GatewayProductionStack, GatewayEPP:
		return k, nil
	}
	return "", fmt.Errorf("gateway kind must be %s or %s, got %q", GatewayProductionStack, GatewayEPP, s)
}

// GatewayConfig is the stand-in's configuration.
type GatewayConfig struct {
	Kind      GatewayKind
	ModelName string // the model the clients ask for (model_name, model labels)
	// Pool is the InferencePool's name (the EPP's inference_pool and name labels).
	Pool string
	// Servers are the backend URLs production-stack labels its series with (server), one per
	// engine; Pods the endpoint names the EPP knows them by. Defaults: http://pod-<i>:8000, pod-<i>.
	Servers, Pods []string
	Seed          uint64

	// The EPP's utilization detector and flow control (llm-d-router's defaults).
	QueueDepthThreshold  int           // 5
	KVCacheUtilThreshold float64       // 0.8
	MetricsStaleness     time.Duration // 200 ms
	RefreshInterval      time.Duration // --refresh-metrics-interval, 50 ms
	RequestTTL           time.Duration // defaultRequestTTL, 60 s
}

func (c *GatewayConfig) setDefaults(n int) {
	if c.ModelName == "" {
		c.ModelName = DefaultConfig().ModelName
	}
	if c.Pool == "" {
		c.Pool = "vllm-sim"
	}
	for i := len(c.Servers); i < n; i++ {
		c.Servers = append(c.Servers, fmt.Sprintf("http://pod-%d:8000", i))
	}
	for i := len(c.Pods); i < n; i++ {
		c.Pods = append(c.Pods, fmt.Sprintf("pod-%d", i))
	}
	if c.QueueDepthThreshold <= 0 {
		c.QueueDepthThreshold = 5
	}
	if c.KVCacheUtilThreshold <= 0 {
		c.KVCacheUtilThreshold = 0.8
	}
	if c.MetricsStaleness <= 0 {
		c.MetricsStaleness = 200 * time.Millisecond
	}
	if c.RefreshInterval <= 0 {
		c.RefreshInterval = 50 * time.Millisecond
	}
	if c.RequestTTL <= 0 {
		c.RequestTTL = 60 * time.Second
	}
}

// GatewayScenario is a load that reaches the pods through the gateway: the clients, and what
// goes wrong in the gateway or the pods.
type GatewayScenario struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Load is the pod scenario whose request shapes the clients follow; RatePerPod x pods is
	// their total rate (Poisson), arriving at the gateway.
	Load       string  `json:"load"`
	RatePerPod float64 `json:"rate_per_pod"`
	// ScrapeFailAfter > 0 (the EPP only): from then on every scrape the EPP makes of the pods'
	// metrics fails (a port, path, TLS or auth change): its view of them goes stale.
	ScrapeFailAfter time.Duration `json:"scrape_fail_after,omitempty"`
	// HoldAfter > 0 (production-stack only): from then on the router counts each request it
	// sends (in prefill) and the request never reaches the engine, with no error, until its
	// client leaves (vllm-project/production-stack#706).
	HoldAfter time.Duration `json:"hold_after,omitempty"`
	// StallEvery wedges every pod's engine (the load still arrives).
	StallEvery bool `json:"stall_every,omitempty"`
	// Timeout: clients give up after it (default 120 s).
	Timeout time.Duration `json:"timeout,omitempty"`
}

// GatewayScenarios are the built-in loads through the gateway.
var GatewayScenarios = map[string]GatewayScenario{
	"gateway-healthy": {
		Name: "gateway-healthy", Description: "healthy's clients through the gateway, 4 req/s per pod: the gateway passes them on at once, its latency is the engines' e2e",
		Load: "healthy", RatePerPod: 4,
	},
	"gateway-held": {
		Name: "gateway-held", Description: "(llm-d-epp) gateway-healthy, then 20 s after the switch every scrape the EPP makes of the pods fails (llm-d-router#2100): stale endpoints score as saturated, the pool's saturation pins at exactly 1.0 and dispatch halts; requests wait in the EPP's flow-control queue until their 60 s TTL evicts them, while every engine has an empty queue, room and a free KV cache",
		Load: "healthy", RatePerPod: 4, ScrapeFailAfter: 20 * time.Second,
	},
	"gateway-router-held": {
		Name: "gateway-router-held", Description: "(production-stack) gateway-healthy, then 20 s after the switch the router logs each request as routed and it never reaches the engine, with no error (production-stack#706): the router's in-prefill count grows by every arrival (it never takes one off whose client leaves), its latency is observed at the clients' 120 s timeout, while every engine receives nothing",
		Load: "healthy", RatePerPod: 4, HoldAfter: 20 * time.Second,
	},
	"gateway-knee": {
		Name: "gateway-knee", Description: "overload's clients through the gateway, 70 req/s per pod (about twice capacity): the engines are past the knee (running pinned, KV in use); the EPP keeps each pod's queue near its threshold and holds the rest (saturation above 1, no stale endpoint); production-stack sends everything on and the engines' queues grow (the hard negative of gateway-held)",
		Load: "overload", RatePerPod: 70,
	},
	"gateway-stall": {
		Name: "gateway-stall", Description: "healthy's clients through the gateway while every pod's engine is wedged: requests are held in the engines (their queues grow, no token), not in the gateway (the hard negative of gateway-held)",
		Load: "healthy", RatePerPod: 4, StallEvery: true,
	},
}

// GatewayScenarioNames lists the gateway scenarios in a stable order.
func GatewayScenarioNames() []string {
	names := make([]string, 0, len(GatewayScenarios))
	for n := range GatewayScenarios {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Gateway is the stand-in: it owns the model's clients (their arrivals and request shapes), sends
// their requests to the engines as the component it plays would, and exports that component's
// series as its source writes them (names, labels, buckets). It is driven by explicit timestamps
// (Advance), as the engines are.
type Gateway struct {
	cfg     GatewayConfig
	engines []*Engine
	reg     *prometheus.Registry
	ps      *prodStackMetrics
	epp     *eppMetrics

	mu          sync.Mutex
	rng         *rand.Rand
	scenario    GatewayScenario
	load        Scenario
	switchedAt  time.Time
	last        time.Time // the latest Advance
	nextArrival time.Time
	queue       []*gwRequest // the EPP's flow-control queue, oldest first
	inflight    []*gwRequest // sent to an engine, not finished
	rr          int          // production-stack's round robin
	views       []endpointView
	nextScrape  time.Time
	sentSince   []int // requests sent to each endpoint since the EPP last scraped it
}

// gwRequest is one client's request as the gateway sees it.
type gwRequest struct {
	arrival, deadline, sentAt time.Time
	prompt, output            int
	pod                       int
	h                         *Handle
}

// endpointView is a pod's metrics as the EPP last scraped them.
type endpointView struct {
	waiting, running, kv float64
	at                   time.Time // zero: never scraped
}

// NewGateway builds the stand-in in front of engines (one per pod).
func NewGateway(cfg GatewayConfig, engines ...*Engine) (*Gateway, error) {
	if _, err := ParseGatewayKind(string(cfg.Kind)); err != nil {
		return nil, err
	}
	if len(engines) == 0 {
		return nil, fmt.Errorf("a gateway needs at least one engine behind it")
	}
	cfg.setDefaults(len(engines))
	if len(cfg.Servers) != len(engines) || len(cfg.Pods) != len(engines) {
		return nil, fmt.Errorf("%d servers and %d pods named for %d engines", len(cfg.Servers), len(cfg.Pods), len(engines))
	}
	g := &Gateway{
		cfg: cfg, engines: engines, reg: prometheus.NewRegistry(),
		rng:       rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x6a7e)),
		views:     make([]endpointView, len(engines)),
		sentSince: make([]int, len(engines)),
		load:      Scenarios["idle"],
	}
	switch cfg.Kind {
	case GatewayProductionStack:
		g.ps = newProdStackMetrics(g.reg, cfg)
	case GatewayEPP:
		g.epp = newEPPMetrics(g.reg, cfg)
		g.epp.saturation(cfg, 1, len(engines)) // no endpoint scraped yet: all missing, fail-closed
	}
	return g, nil
}

// Apply switches the gateway's clients (and the pods' state) to the named gateway scenario at
// now. Requests in flight and queued are dropped uncounted, as a pod scenario switch with reset
// drops its synthetic requests.
func (g *Gateway) Apply(name string, now time.Time) error {
	gs, ok := GatewayScenarios[strings.TrimSpace(name)]
	if !ok {
		return fmt.Errorf("unknown gateway scenario %q (known: %s)", name, strings.Join(GatewayScenarioNames(), ", "))
	}
	if gs.ScrapeFailAfter > 0 && g.cfg.Kind != GatewayEPP {
		return fmt.Errorf("gateway scenario %s needs --gateway-kind %s: production-stack's router has no queue of its own to hold requests in", gs.Name, GatewayEPP)
	}
	if gs.HoldAfter > 0 && g.cfg.Kind != GatewayProductionStack {
		return fmt.Errorf("gateway scenario %s needs --gateway-kind %s: it is that router's hold", gs.Name, GatewayProductionStack)
	}
	load, err := LookupScenario(gs.Load)
	if err != nil {
		return err
	}
	pod := load // what each engine sees: no clients of its own, the load's request shapes
	pod.Name, pod.ArrivalRate, pod.Burst, pod.LongRate = gs.Name, 0, 0, 0
	for _, e := range g.engines {
		sc := pod
		sc.EngineStalled = gs.StallEvery
		e.SetScenario(sc, true, now)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range g.inflight {
		if r.h != nil {
			g.engines[r.pod].forget(r.h)
		}
	}
	if g.ps != nil {
		g.ps.reset()
	}
	g.scenario, g.load, g.switchedAt = gs, load, now
	g.queue, g.inflight = nil, nil
	g.nextArrival = time.Time{}
	if rate := gs.RatePerPod * float64(len(g.engines)); rate > 0 {
		g.nextArrival = now.Add(g.expDuration(rate))
	}
	if g.last.IsZero() {
		g.last = now
	}
	g.updateGauges()
	return nil
}

func (g *Gateway) expDuration(rate float64) time.Duration { return expDuration(g.rng, rate) }

func (g *Gateway) lognormal(mean, sigma float64) int { return lognormalInt(g.rng, mean, sigma) }

// Advance runs the gateway up to now: the clients that arrived, the completions the engines
// reported, the EPP's scrapes and dispatch cycles, and the clients that gave up.
func (g *Gateway) Advance(now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if now.Before(g.last) {
		return
	}
	elapsed := now.Sub(g.last)
	g.last = now
	g.collect(now)
	for !g.nextArrival.IsZero() && !g.nextArrival.After(now) {
		at := g.nextArrival
		g.nextArrival = at.Add(g.expDuration(g.scenario.RatePerPod * float64(len(g.engines))))
		g.arrive(at)
	}
	g.giveUp(now)
	if g.cfg.Kind == GatewayEPP {
		g.scrape(now)
		g.dispatch(now, elapsed)
	}
	g.updateGauges()
}

// arrive is one client's request reaching the gateway at at.
func (g *Gateway) arrive(at time.Time) {
	l := g.load
	prompt := g.lognormal(l.PromptMean, l.PromptSigma)
	out := g.lognormal(l.OutputMean, l.OutputSigma)
	if l.MaxTokens > 0 {
		out = min(out, l.MaxTokens)
	}
	timeout := g.scenario.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	r := &gwRequest{arrival: at, deadline: at.Add(timeout), prompt: prompt, output: out, pod: -1}
	switch g.cfg.Kind {
	case GatewayProductionStack:
		g.ps.incoming.WithLabelValues(g.cfg.ModelName).Inc()
		g.send(r, g.rr%len(g.engines), at)
		g.rr++
	case GatewayEPP:
		g.queue = append(g.queue, r)
	}
}

// send hands r to engine pod at at. production-stack counts it sent first (on_new_request); while
// the scenario holds, it stays there and never reaches the engine.
func (g *Gateway) send(r *gwRequest, pod int, at time.Time) {
	r.pod, r.sentAt = pod, at
	if g.ps != nil {
		g.ps.prefill[pod]++
		if g.scenario.HoldAfter > 0 && !at.Before(g.switchedAt.Add(g.scenario.HoldAfter)) {
			g.inflight = append(g.inflight, r)
			return
		}
	}
	h, err := g.engines[pod].route(at, r.prompt, r.output)
	if err != nil {
		g.fail(r, at, err)
		return
	}
	r.h = h
	g.inflight = append(g.inflight, r)
	g.sentSince[pod]++
	if g.epp != nil {
		g.epp.dispatched(g.cfg)
	}
}

// collect settles the requests the engines finished by now.
func (g *Gateway) collect(now time.Time) {
	kept := g.inflight[:0]
	for _, r := range g.inflight {
		if r.h == nil { // held by the router: nothing comes back
			kept = append(kept, r)
			continue
		}
		select {
		case res := <-r.h.Done:
			g.finish(r, res)
		default:
			kept = append(kept, r)
		}
	}
	clear(g.inflight[len(kept):])
	g.inflight = kept
}

func (g *Gateway) finish(r *gwRequest, res Result) {
	switch {
	case res.Err != nil:
		g.fail(r, res.Finished, res.Err)
	case g.ps != nil:
		// A client that disconnects cancels process_request: asyncio.CancelledError is not an
		// Exception, so the router counts no error and its finally block observes the latency
		// with the status it had, success (request.py).
		// The stand-in's clients are not streaming: the first chunk is the whole answer, so the
		// router moves the request out of prefill and completes it at once; a client that left
		// (an abort) is never taken off.
		status := "success"
		if res.FinishReason == reasonError {
			status = "error"
		}
		if res.FinishReason != reasonAbort {
			g.ps.prefill[r.pod]--
		}
		g.ps.latency.WithLabelValues(g.cfg.Servers[r.pod], g.cfg.ModelName, status).Observe(res.Finished.Sub(r.sentAt).Seconds())
	case g.epp != nil && res.FinishReason != reasonAbort:
		// The EPP records a request's duration when its response completes (handlers/response.go);
		// a client that went away is in neither.
		g.epp.completed(g.cfg, res.Finished.Sub(r.arrival).Seconds())
	}
}

// fail is a request the engine refused (a queue limit's 503) or never answered (the server is
// down).
func (g *Gateway) fail(r *gwRequest, at time.Time, err error) {
	switch {
	case g.ps != nil:
		server := g.cfg.Servers[r.pod]
		if err == ErrServerDown {
			// the call raised: counted as an error and never taken off the router's prefill
			g.ps.errors.WithLabelValues(server, g.cfg.ModelName, "ClientConnectorError").Inc()
		} else {
			g.ps.prefill[r.pod]-- // a refusal is an answer (503): relayed and completed
		}
		g.ps.latency.WithLabelValues(server, g.cfg.ModelName, "error").Observe(at.Sub(r.sentAt).Seconds())
	case g.epp != nil:
		g.epp.failed(g.cfg, "ServiceUnavailable")
	}
}

// giveUp drops the clients whose timeout passed: queued in the EPP (evicted, the context
// cancelled) or in flight (the engine sees a disconnect and aborts the request).
func (g *Gateway) giveUp(now time.Time) {
	kept := g.queue[:0]
	for _, r := range g.queue {
		switch {
		case !r.deadline.After(now):
			g.epp.evicted(g.cfg, "EvictedContextCancelled", "ServiceUnavailable", now.Sub(r.arrival).Seconds())
		case now.Sub(r.arrival) >= g.cfg.RequestTTL:
			g.epp.evicted(g.cfg, "EvictedTTL", "ResourceExhausted", now.Sub(r.arrival).Seconds())
		default:
			kept = append(kept, r)
			continue
		}
	}
	clear(g.queue[len(kept):])
	g.queue = kept
	live := g.inflight[:0]
	for _, r := range g.inflight {
		if r.deadline.After(now) {
			live = append(live, r)
			continue
		}
		if r.h == nil { // held by the router: the client leaves, the router observes its latency
			g.ps.latency.WithLabelValues(g.cfg.Servers[r.pod], g.cfg.ModelName, "success").Observe(now.Sub(r.sentAt).Seconds())
			continue
		}
		g.engines[r.pod].Abort(r.h, now)
		select {
		case res := <-r.h.Done:
			g.finish(r, res)
		default:
		}
	}
	clear(g.inflight[len(live):])
	g.inflight = live
}

// scrape is the EPP's data layer polling each pod's /metrics every refresh interval; while the
// scenario makes it fail, the views keep their last values and age.
func (g *Gateway) scrape(now time.Time) {
	if now.Before(g.nextScrape) {
		return
	}
	g.nextScrape = now.Add(g.cfg.RefreshInterval)
	failing := g.scenario.ScrapeFailAfter > 0 && !now.Before(g.switchedAt.Add(g.scenario.ScrapeFailAfter))
	for i, e := range g.engines {
		if failing || e.Down() {
			g.epp.pollErrors.Inc()
			g.epp.pollErrorsOld.Inc()
			continue
		}
		p := e.Published()
		g.views[i] = endpointView{waiting: p.Waiting, running: p.Running, kv: p.KVUsage, at: now}
		g.sentSince[i] = 0
	}
}

// stale reports whether the EPP's view of endpoint i is missing or older than the staleness
// threshold at now.
func (g *Gateway) stale(i int, now time.Time) bool {
	v := g.views[i]
	return v.at.IsZero() || now.Sub(v.at) > g.cfg.MetricsStaleness
}

// score is the utilization detector's per-endpoint score: max(queue / queue threshold, KV / KV
// threshold), 1 for a stale endpoint (fail-closed).
func (g *Gateway) score(i int, now time.Time) float64 {
	if g.stale(i, now) {
		return 1
	}
	v := g.views[i]
	return max(v.waiting/float64(g.cfg.QueueDepthThreshold), v.kv/g.cfg.KVCacheUtilThreshold)
}

// saturation is the pool's: the mean of its endpoints' scores; stale counts those scored stale.
func (g *Gateway) saturation(now time.Time) (sat float64, stale int) {
	for i := range g.engines {
		sat += g.score(i, now)
		if g.stale(i, now) {
			stale++
		}
	}
	return sat / float64(len(g.engines)), stale
}

// dispatch runs the flow controller's dispatch cycles of the elapsed time (one request a
// millisecond at most): while the pool's saturation is below the usage limit (1.0), the oldest
// queued request goes to the endpoint the scheduler picks.
func (g *Gateway) dispatch(now time.Time, elapsed time.Duration) {
	sat, stale := g.saturation(now)
	g.epp.saturation(g.cfg, sat, stale)
	budget := max(1, int(elapsed/time.Millisecond))
	for ; budget > 0 && len(g.queue) > 0 && sat < 1; budget-- {
		r := g.queue[0]
		g.queue = g.queue[1:]
		g.epp.dequeued(g.cfg, now.Sub(r.arrival).Seconds())
		g.send(r, g.pick(now), now)
	}
}

// pick is the scheduler's choice: the endpoints under the detector's limits (not stale, queue
// below its threshold, KV below its), or all of them when none is (fail-open); among them the
// shortest queue, counting what was sent since the last scrape, then the fewest running.
func (g *Gateway) pick(now time.Time) int {
	best, bestQ, bestR := -1, 0.0, 0.0
	for pass := 0; pass < 2 && best < 0; pass++ {
		for i := range g.engines {
			v := g.views[i]
			if pass == 0 && (g.stale(i, now) || v.waiting >= float64(g.cfg.QueueDepthThreshold) || v.kv >= g.cfg.KVCacheUtilThreshold) {
				continue
			}
			q := v.waiting + float64(g.sentSince[i])
			if best < 0 || q < bestQ || (q == bestQ && v.running < bestR) {
				best, bestQ, bestR = i, q, v.running
			}
		}
	}
	return best
}

// updateGauges sets the gauges that describe the gateway's state now.
func (g *Gateway) updateGauges() {
	switch {
	case g.ps != nil:
		for i, s := range g.cfg.Servers {
			// in_decoding_requests is 0 between ticks: the first chunk is the last
			g.ps.running.WithLabelValues(s).Set(float64(g.ps.prefill[i]))
			g.ps.prefillG.WithLabelValues(s).Set(float64(g.ps.prefill[i]))
			g.ps.decoding.WithLabelValues(s).Set(0)
			healthy := 1.0
			if g.engines[i].Down() {
				healthy = 0
			}
			g.ps.healthy.WithLabelValues(s).Set(healthy)
		}
	case g.epp != nil:
		up := make([]bool, len(g.engines))
		for i, e := range g.engines {
			up[i] = !e.Down()
		}
		g.epp.state(g.cfg, len(g.queue), len(g.inflight), g.views, up)
	}
}

// GatewayStats is the gateway's state as GET /admin/gateway reports it.
type GatewayStats struct {
	Kind     GatewayKind `json:"kind"`
	Scenario string      `json:"scenario"`
	Queued   int         `json:"queued"`
	InFlight int         `json:"in_flight"`
}

// Stats returns the gateway's state.
func (g *Gateway) Stats() GatewayStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return GatewayStats{Kind: g.cfg.Kind, Scenario: g.scenario.Name, Queued: len(g.queue), InFlight: len(g.inflight)}
}

// Registry is the gateway's own metrics.
func (g *Gateway) Registry() *prometheus.Registry { return g.reg }

// Handler serves GET /metrics in the played component's exposition (prometheus_client's for
// production-stack, client_golang's for the EPP), GET /admin/gateway and POST /admin/gateway
// (body {"scenario":"gateway-held"} or ?name=...).
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	if g.cfg.Kind == GatewayProductionStack {
		mux.Handle("GET /metrics", metricsHandler(g.reg))
	} else {
		mux.Handle("GET /metrics", promhttp.HandlerFor(g.reg, promhttp.HandlerOpts{}))
	}
	mux.HandleFunc("GET /admin/gateway", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, g.Stats()) })
	mux.HandleFunc("POST /admin/gateway", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Scenario string `json:"scenario"`
		}
		if r.ContentLength != 0 {
			if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&body); err != nil && err != io.EOF {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid JSON body: " + err.Error()})
				return
			}
		}
		name := firstNonEmpty(body.Scenario, r.URL.Query().Get("name"), r.URL.Query().Get("scenario"))
		if err := g.Apply(name, time.Now()); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, g.Stats())
	})
	return mux
}

// Run drives the gateway in real time until done is closed, every 10 ms.
func (g *Gateway) Run(done <-chan struct{}) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			g.Advance(now)
		}
	}
}

// PublishedGauges are an engine's gauges as a scraper of its /metrics reads them now: set from
// the engine's stats after each step, frozen while its core makes none.
type PublishedGauges struct{ Running, Waiting, KVUsage float64 }

// Published returns the engine's gauges as last published.
func (e *Engine) Published() PublishedGauges {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.pub
}

// route is a request a gateway sends to the server at at: prompt tokens in, output tokens to
// generate (it stops then). It goes through the API server as any HTTP request (the queue limits
// may refuse it: ErrQueueFull, ErrQueuedTokensFull), and is counted in http_requests_total.
func (e *Engine) route(at time.Time, prompt, output int) (*Handle, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.life.down {
		return nil, ErrServerDown
	}
	prompt = max(1, min(prompt, e.cfg.MaxModelLen-1))
	output = max(1, min(output, e.cfg.MaxModelLen-prompt))
	r := &request{
		synthetic: true, arrival: at, promptLen: prompt,
		targetOutput: output, targetReason: reasonStop, done: make(chan Result, 1),
	}
	switch e.accept(r, at, e.scenario.TemplateCost) {
	case admissionMaxReqs:
		return nil, ErrQueueFull
	case admissionMaxTokens:
		return nil, ErrQueuedTokensFull
	}
	e.poke()
	return &Handle{r: r, Done: r.done}, nil
}

// forget removes a gateway's request from the server without counting it anywhere: a gateway
// scenario switch drops its old clients, as a pod scenario switch with reset drops its own.
func (e *Engine) forget(h *Handle) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := h.r
	if !e.removeHeld(r) && !e.removeWaiting(r) {
		n := len(e.running)
		e.removeRunning(r)
		if len(e.running) == n {
			return // finished already
		}
	}
	e.freeBlocks(r)
	if !r.deadline.IsZero() {
		e.withTimeout--
	}
}
