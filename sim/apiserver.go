package sim

import (
	"math"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// apiServer is vLLM's API server process, apart from the engine core it feeds: it accepts the
// HTTP request (the request's arrival, where TTFT and e2e start), checks the queue limits, renders
// and tokenizes the prompt, sends it to the engine core over IPC, and turns the engine's outputs
// into responses (detokenization) and into the Prometheus metrics it serves on /metrics. It runs
// on one asyncio event loop, so on one core: tokenization, output processing and the idle loop
// share it, first come first served. Its own process series (process_cpu_seconds_total,
// process_open_fds, ...) are prometheus_client's process collector on that process.
type apiServer struct {
	start     time.Time     // process start (process_start_time_seconds)
	busyUntil time.Time     // the event loop's core is busy until then
	charged   time.Duration // CPU work given to the core since start (tokenization, outputs)
	// ahead are the stretches of work queued on the core that may not be done yet, in order:
	// work is queued at its own time (a step's outputs at the step's end, a request's
	// tokenization at its arrival), which can be ahead of the clock, with idle gaps between.
	ahead []span
	// held are the requests the API server accepted and has not handed to the engine core yet:
	// being tokenized (readyAt in the future), or sent to an engine core that does not read its
	// input (a hung EngineCore). Ordered by readyAt.
	held []*request
}

// span is a stretch of time the event loop's core works.
type span struct{ from, to time.Time }

// work queues cost on the event loop's core from at and returns when it is done.
func (a *apiServer) work(at time.Time, cost time.Duration) time.Time {
	start := at
	if a.busyUntil.After(start) {
		start = a.busyUntil
	}
	a.busyUntil = start.Add(cost)
	a.charged += cost
	if n := len(a.ahead); n > 0 && a.ahead[n-1].to.Equal(start) {
		a.ahead[n-1].to = a.busyUntil
	} else {
		a.ahead = append(a.ahead, span{start, a.busyUntil})
	}
	return a.busyUntil
}

// pending is the work queued on the core and not done by now; the stretches done by then are
// forgotten.
func (a *apiServer) pending(now time.Time) time.Duration {
	done := 0
	for done < len(a.ahead) && !a.ahead[done].to.After(now) {
		done++
	}
	a.ahead = a.ahead[done:]
	var left time.Duration
	for _, s := range a.ahead {
		from := s.from
		if now.After(from) {
			from = now
		}
		left += s.to.Sub(from)
	}
	return left
}

// cpuSeconds is process_cpu_seconds_total at now: the start-up CPU, the work done by now, and
// the idle loop's share of the rest. It never goes down while now does not.
func (a *apiServer) cpuSeconds(cfg Config, now time.Time) float64 {
	if now.Before(a.start) {
		return cfg.APIStartupCPU.Seconds()
	}
	busy := max(a.charged-a.pending(now), 0)
	wall := now.Sub(a.start)
	idle := max(wall-busy, 0)
	cpu := cfg.APIStartupCPU.Seconds() + busy.Seconds() + cfg.APIIdleShare*idle.Seconds()
	return math.Floor(cpu*100) / 100 // clock ticks, as /proc/<pid>/stat counts them
}

// API server process constants: what `ps` shows for a vLLM 0.32 API server process holding the
// tokenizer (torch, transformers and the tokenizer imported), and the descriptors it holds
// without clients (sockets, ZMQ, the model files).
const (
	apiBaseOpenFDs     = 36
	apiMaxFDs          = 1048576
	apiBaseRSS         = 1_150_000_000
	apiRSSPerRequest   = 48 << 10
	apiBaseVirtual     = 9_800_000_000
	apiVirtualOverhead = 120_000_000
)

// Excluded from http_requests_total as vLLM's Instrumentator is configured
// (vllm/entrypoints/serve/instrumentator/metrics.py).
var instrumentatorExcluded = map[string]bool{
	"/metrics": true, "/health": true, "/load": true, "/ping": true, "/version": true, "/server_info": true,
}

// handlerChat is the path synthetic clients use.
const handlerChat = "/v1/chat/completions"

// processCollector exports the API server process's series as prometheus_client's
// ProcessCollector does (process_collector.py): from the simulated process, not from vllm-sim's
// own Go process. Counters without a _created sample, as CounterMetricFamily renders them.
type processCollector struct {
	e                                      *Engine
	vmem, rss, start, cpu, openFDs, maxFDs *prometheus.Desc
}

func newProcessCollector(e *Engine) *processCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &processCollector{
		e:       e,
		vmem:    d("process_virtual_memory_bytes", "Virtual memory size in bytes."),
		rss:     d("process_resident_memory_bytes", "Resident memory size in bytes."),
		start:   d("process_start_time_seconds", "Start time of the process since unix epoch in seconds."),
		cpu:     d("process_cpu_seconds_total", "Total user and system CPU time spent in seconds."),
		openFDs: d("process_open_fds", "Number of open file descriptors."),
		maxFDs:  d("process_max_fds", "Maximum number of open file descriptors."),
	}
}

func (c *processCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.vmem, c.rss, c.start, c.cpu, c.openFDs, c.maxFDs} {
		ch <- d
	}
}

func (c *processCollector) Collect(ch chan<- prometheus.Metric) {
	p := c.e.processStats()
	ch <- prometheus.MustNewConstMetric(c.vmem, prometheus.GaugeValue, p.vmem)
	ch <- prometheus.MustNewConstMetric(c.rss, prometheus.GaugeValue, p.rss)
	ch <- prometheus.MustNewConstMetric(c.start, prometheus.GaugeValue, p.start)
	ch <- prometheus.MustNewConstMetric(c.cpu, prometheus.CounterValue, p.cpu)
	ch <- prometheus.MustNewConstMetric(c.openFDs, prometheus.GaugeValue, p.openFDs)
	ch <- prometheus.MustNewConstMetric(c.maxFDs, prometheus.GaugeValue, apiMaxFDs)
}

type processStats struct{ vmem, rss, start, cpu, openFDs float64 }

// processStats reads the API server process at the engine's clock. Each client connection of a
// request not answered yet holds a descriptor (the HTTP socket): whether the request waits in the
// API server, in the engine's queue or runs.
func (e *Engine) processStats() processStats {
	e.mu.Lock()
	defer e.mu.Unlock()
	conns := e.openConnections()
	start := float64(e.api.start.UnixNano()) / 1e9
	return processStats{
		vmem:    float64(apiBaseVirtual + apiVirtualOverhead + conns*apiRSSPerRequest),
		rss:     float64(apiBaseRSS + conns*apiRSSPerRequest),
		start:   math.Round(start*100) / 100,
		cpu:     e.api.cpuSeconds(e.cfg, e.clock),
		openFDs: float64(apiBaseOpenFDs + conns),
	}
}

// openConnections counts the requests whose client still waits for an answer.
func (e *Engine) openConnections() int {
	n := 0
	for _, q := range [][]*request{e.api.held, e.waiting, e.running} {
		for _, r := range q {
			if r.deadline.IsZero() || r.deadline.After(e.clock) {
				n++
			}
		}
	}
	return n
}

// accept is the API server taking a request in at: the queue limits (max_num_queued_reqs counts
// every unfinished request, wherever it is; max_num_queued_tokens the prompts not prefilled yet),
// then rendering and tokenization on the event loop. It returns the admission reason it was
// refused for, "" when accepted.
func (e *Engine) accept(r *request, at time.Time, templateCost time.Duration) string {
	if n := e.cfg.MaxNumQueuedReqs; n > 0 && len(e.api.held)+len(e.waiting)+len(e.running)+1 > n {
		e.countRejection(admissionMaxReqs)
		e.countSynthetic(r, "5xx")
		return admissionMaxReqs
	}
	if n := e.cfg.MaxNumQueuedTokens; n > 0 && e.queuedPromptTokens() >= n {
		e.countRejection(admissionMaxTokens)
		e.countSynthetic(r, "5xx")
		return admissionMaxTokens
	}
	cost := e.cfg.APIPerRequest + templateCost + time.Duration(r.promptLen)*e.cfg.APIPerPromptToken
	r.readyAt = e.api.work(at, cost)
	e.nextID++
	r.id = "cmpl-" + strconv.FormatInt(e.nextID, 10)
	if !r.deadline.IsZero() {
		e.withTimeout++
	}
	e.api.held = append(e.api.held, r)
	return ""
}

func (e *Engine) countRejection(reason string) {
	if e.m.admissionRejections != nil {
		e.m.admissionRejections.WithLabelValues(reason).Inc()
	}
}

// queuedPromptTokens is what vLLM's max_num_queued_tokens compares: the whole prompt of every
// request still in prefill (no first token yet), as the API server counts it.
func (e *Engine) queuedPromptTokens() int {
	n := 0
	for _, q := range [][]*request{e.api.held, e.waiting, e.running} {
		for _, r := range q {
			if r.firstTokenAt.IsZero() {
				n += r.promptLen
			}
		}
	}
	return n
}

// intake hands the engine core the requests the API server sent it by now: an engine core
// reads its input between steps and records their QUEUED event then.
func (e *Engine) intake(now time.Time) {
	n := 0
	for _, r := range e.api.held {
		if r.readyAt.After(now) {
			break
		}
		r.queuedAt = now
		e.enqueueCore(r)
		n++
	}
	clear(e.api.held[:n])
	e.api.held = e.api.held[n:]
}

// dropGoneClients removes from the API server the held requests whose client gave up (vLLM's
// output processor drops their state at once; the engine core sees the abort when it reads its
// input again).
func (e *Engine) dropGoneClients(now time.Time) {
	kept := e.api.held[:0]
	for _, r := range e.api.held {
		if !r.deadline.IsZero() && !r.deadline.After(now) {
			e.withTimeout--
			if r.done != nil {
				r.done <- Result{FinishReason: reasonAbort, PromptTokens: r.promptLen, Finished: now}
			}
			continue
		}
		kept = append(kept, r)
	}
	clear(e.api.held[len(kept):])
	e.api.held = kept
}

// processOutputs is the API server's output handler for one engine step that produced tokens
// tokens at end: it runs on the event loop after whatever is queued there, and vLLM stamps TTFT
// and e2e with the time it runs (IterationStats' timestamp), not the engine's.
func (e *Engine) processOutputs(end time.Time, tokens int) time.Time {
	return e.api.work(end, e.cfg.APIPerStep+time.Duration(tokens)*e.cfg.APIPerOutputToken)
}

// countSynthetic counts a synthetic client's answered request in http_requests_total (the
// server counts the HTTP ones it answers, CountHTTP).
func (e *Engine) countSynthetic(r *request, status string) {
	if r.synthetic {
		e.m.httpRequests.WithLabelValues(handlerChat, "POST", status).Inc()
	}
}

// CountHTTP counts a request the server answered in http_requests_total, as vLLM's
// Instrumentator does: by route, method and status class (2xx, 4xx, 5xx), the probes and
// /metrics excluded.
func (e *Engine) CountHTTP(handler, method string, status int) {
	if instrumentatorExcluded[handler] {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.life.down {
		return
	}
	e.m.httpRequests.WithLabelValues(handler, method, strconv.Itoa(status/100)+"xx").Inc()
}
