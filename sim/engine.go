package sim

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Result is how a request submitted with Submit ended.
type Result struct {
	// Err is set when the request got no answer: the server went down (ErrServerDown).
	Err              error
	FinishReason     string
	PromptTokens     int
	CompletionTokens int
	Finished         time.Time
}

// request is one request's state in the engine (vLLM's Request).
type request struct {
	id        string
	synthetic bool
	handler   string    // the HTTP route it came in on ("" for synthetic clients: /v1/chat/completions)
	arrival   time.Time // the API server received it (TTFT and e2e start here)
	readyAt   time.Time // the API server has tokenized it and sent it to the engine core
	queuedAt  time.Time // the engine core queued it (QUEUED event; queue time starts here)
	deadline  time.Time // client timeout; zero = none

	promptLen    int
	targetOutput int    // tokens until the request finishes
	targetReason string // finished_reason when targetOutput is reached

	numComputed int // num_computed_tokens (reset to 0 by preemption)
	output      int // generated tokens
	blocks      int // KV blocks held

	scheduled    bool // ever scheduled
	scheduledAt  time.Time
	firstTokenAt time.Time // engine core timestamp of the first token
	firstSeenAt  time.Time // the API server processed the first token (TTFT ends here)
	lastTokenAt  time.Time
	preemptions  int
	uniquePrefix bool // the prompt starts with something unique: no prefix-cache hit
	lookedUp     bool // prefix cache (and KV connector) consulted at its first scheduling
	localHits    int  // prompt tokens found in the prefix cache
	external     int  // prompt tokens loaded from the KV connector
	deferred     bool // skipped by the scheduler since it last waited (LoRA slot, KV load)
	adapter      string
	acceptance   float64   // draft tokens' acceptance probability for this request's text
	grammarAt    time.Time // its structured-output grammar is compiled (zero: no grammar)

	remote      bool // its prompt was prefilled elsewhere (KV consumer): load the KV
	fetch       fetchStage
	fetchStart  time.Time
	fetchDoneAt time.Time     // the load completes (zero: never, while the prefill side hangs)
	fetchFailAt time.Time     // the load fails (zero: it does not)
	fetchPost   time.Duration // NIXL post time
	fetchXfer   time.Duration // NIXL transfer time
	// uncounted preemptions: the scheduler's PREEMPTED events ride on the request's next output,
	// so vllm:num_preemptions_total counts them when it emits its next token after recompute,
	// and never if its client gives up first (scheduler.py, stats.py)
	uncounted int

	done chan Result // nil for synthetic requests
}

func (r *request) numTokens() int { return r.promptLen + r.output }

// StepRecord describes one engine step; the profiler turns it into trace events.
type StepRecord struct {
	Start         time.Time
	Duration      time.Duration
	Scheduled     int // requests that ran in the step
	PrefillTokens int
	DecodeTokens  int
	ContextTokens int
	Preemptions   int
	Admitted      int
	Finished      int
	Running       int
	Waiting       int
	KVUsage       float64
}

// StepResult tells the driver when to call Step again.
type StepResult struct {
	// Duration is how long the step took on the simulated GPU; when Busy is false
	// it is how long the engine may sleep (until the next synthetic arrival).
	Duration time.Duration
	Busy     bool
}

// Stats is a consistent snapshot of the engine's state.
type Stats struct {
	Scenario    string  `json:"scenario"`
	Running     int     `json:"running"`
	Waiting     int     `json:"waiting"`
	UsedBlocks  int     `json:"used_blocks"`
	KVUsage     float64 `json:"kv_usage"`
	Preemptions int64   `json:"preemptions"`
	Steps       int64   `json:"steps"`
	Dropped     int64   `json:"dropped_arrivals"`
	// Held: requests the API server accepted and the engine core has not read (tokenizing, or
	// sent to a hung engine core).
	Held int `json:"held"`
	// Connections: client connections open (requests not answered), one descriptor each.
	Connections int `json:"connections"`
	State
}

// Engine is the simulated vLLM V1 engine core: scheduler, KV block pool, model
// runner cost model and the output processor's metrics. It is safe for
// concurrent use; time only moves through the timestamps passed to Step.
type Engine struct {
	cfg Config
	m   *metrics

	mu          sync.Mutex
	rng         *rand.Rand
	scenario    Scenario
	scenarioAt  time.Time // when the scenario started
	nextArrival time.Time // zero = no synthetic arrivals
	nextLong    time.Time // the long clients' next arrival (zero = none; thirdring.go)
	// admissionWedged: the scheduler admits nothing any more (AdmissionWedge; thirdring.go)
	admissionWedged bool
	pub             PublishedGauges // the gauges as last published (gateway.go reads them)
	waiting         []*request
	running         []*request
	usedBlocks      int
	withTimeout     int // requests in the engine that have a deadline
	nextID          int64
	steps           int64
	preemptions     int64
	dropped         int64 // synthetic arrivals dropped by the MaxWaiting cap
	onStep          func(StepRecord)
	onFinish        func(FinishedRequest) // see SetFinishObserver (tracing.go)
	wake            chan struct{}
	stall           engineStall // held by a flushing profiler (sim/profiler.go)

	clock    time.Time // the latest time the engine was stepped at: the server's "now"
	boot     time.Time // the host's boot: vLLM's engine timestamps count from it (monotonic)
	loraView loraView  // the API server's view of LoRA requests (lora.go)
	api      apiServer // the API server process in front of the engine core (apiserver.go)
	life     lifecycle // hangs, sleep, pauses, crashes and restarts (lifecycle.go)
}

// NewEngine builds an engine with its own metrics registry.
func NewEngine(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Engine == "" {
		cfg.Engine = "0"
	}
	if cfg.MaxWaiting <= 0 {
		cfg.MaxWaiting = 50000
	}
	start := cfg.Start
	if start.IsZero() {
		start = time.Now()
	}
	e := &Engine{
		cfg:   cfg,
		rng:   rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		wake:  make(chan struct{}, 1),
		clock: start,
		boot:  start.Add(-cfg.HostUptime),
	}
	e.life.podName = cfg.PodName
	e.startProcess(start)
	e.scenario = Scenarios["idle"]
	return e, nil
}

// startProcess starts the server process afresh at now: an empty engine, a new API server
// process (its start time, no CPU used but its start-up), and new metrics, every counter at 0.
func (e *Engine) startProcess(now time.Time) {
	e.api = apiServer{start: now}
	e.m = newMetrics(e.cfg)
	e.m.reg.MustRegister(newProcessCollector(e))
	e.waiting, e.running = nil, nil
	e.usedBlocks, e.withTimeout = 0, 0
	e.loraView = loraView{}
	e.admissionWedged = false
}

// Registry is the server's Prometheus registry: vLLM's metrics and the API server process's
// series. A restart replaces it.
func (e *Engine) Registry() *prometheus.Registry {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.m.reg
}

// Gatherer gathers whichever registry the server has at the time (a restart replaces it).
func (e *Engine) Gatherer() prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return e.Registry().Gather() })
}

// Config returns the engine configuration.
func (e *Engine) Config() Config { return e.cfg }

// SetStepObserver installs a function called (under the engine lock) after each busy step.
func (e *Engine) SetStepObserver(f func(StepRecord)) {
	e.mu.Lock()
	e.onStep = f
	e.mu.Unlock()
}

// Scenario returns the current load.
func (e *Engine) Scenario() Scenario {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.scenario
}

// SetScenario switches the synthetic load at time now. With reset, the
// synthetic requests of the previous load (waiting and running) vanish without
// being counted, as if their clients had never existed, so the new scenario's
// signature is not hidden behind the old one's backlog. Requests submitted over
// HTTP are always kept.
func (e *Engine) SetScenario(s Scenario, reset bool, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.scenario, e.scenarioAt = s, now
	e.planLife(s, now)
	e.admissionWedged = e.admissionWedged && s.AdmissionWedge
	if reset {
		e.api.held = e.dropSynthetic(e.api.held)
		e.waiting = e.dropSynthetic(e.waiting)
		e.running = e.dropSynthetic(e.running)
		if e.coreReports() {
			e.publishGauges()
		}
	}
	for range s.Burst {
		e.addSynthetic(now)
	}
	e.nextArrival = time.Time{}
	if s.ArrivalRate > 0 {
		e.nextArrival = now.Add(e.expDuration(s.ArrivalRate))
	}
	e.planLong(s, now)
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

func (e *Engine) dropSynthetic(rs []*request) []*request {
	kept := rs[:0]
	for _, r := range rs {
		if r.synthetic && r.done == nil { // a gateway's requests (done set) have clients: kept, as HTTP ones
			e.freeBlocks(r)
			if !r.deadline.IsZero() {
				e.withTimeout--
			}
			continue
		}
		kept = append(kept, r)
	}
	clear(rs[len(kept):])
	return kept
}

// Stats returns a snapshot of the engine state.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return Stats{
		Scenario:    e.scenario.Name,
		Running:     len(e.running),
		Waiting:     len(e.waiting),
		UsedBlocks:  e.usedBlocks,
		KVUsage:     e.kvUsage(),
		Preemptions: e.preemptions,
		Steps:       e.steps,
		Dropped:     e.dropped,
		Held:        len(e.api.held),
		Connections: e.openConnections(),
		State:       e.life.state(),
	}
}

// Handle is a submitted request.
type Handle struct {
	r    *request
	Done <-chan Result
}

// Submit is a client's request for model (the served model, or a LoRA adapter's name; "" is
// the served model) reaching the API server at now (its arrival) on the HTTP route handler;
// timeout 0 means the client waits forever. The API server may refuse it: an unknown model
// (ErrUnknownModel), a queue limit (ErrQueueFull, ErrQueuedTokensFull), or it is down
// (ErrServerDown).
func (e *Engine) Submit(now time.Time, handler, model string, promptTokens, maxTokens int, timeout time.Duration) (*Handle, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.life.down {
		return nil, ErrServerDown
	}
	adapter := ""
	if model != "" && model != e.cfg.ModelName {
		if !e.cfg.EnableLoRA || !slices.Contains(e.cfg.LoRAModules, model) {
			return nil, ErrUnknownModel
		}
		adapter = model
	}
	promptTokens = max(1, min(promptTokens, e.cfg.MaxModelLen-1))
	if maxTokens <= 0 || promptTokens+maxTokens > e.cfg.MaxModelLen {
		maxTokens = e.cfg.MaxModelLen - promptTokens
	}
	natural := e.lognormalInt(e.scenarioOrHealthy().OutputMean, e.scenarioOrHealthy().OutputSigma)
	r := &request{
		arrival: now, handler: handler, promptLen: promptTokens, adapter: adapter,
		targetOutput: min(natural, maxTokens), targetReason: reasonStop,
		done: make(chan Result, 1),
	}
	if natural >= maxTokens {
		r.targetReason = reasonLength
	}
	if timeout > 0 {
		r.deadline = now.Add(timeout)
	}
	switch e.accept(r, now, 0) {
	case admissionMaxReqs:
		return nil, ErrQueueFull
	case admissionMaxTokens:
		return nil, ErrQueuedTokensFull
	}
	select {
	case e.wake <- struct{}{}:
	default:
	}
	return &Handle{r: r, Done: r.done}, nil
}

// Abort removes a submitted request (the client went away) as vLLM does on
// client disconnect.
func (e *Engine) Abort(h *Handle, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.abort(h.r, now)
}

func (e *Engine) scenarioOrHealthy() Scenario {
	if e.scenario.OutputMean > 0 {
		return e.scenario
	}
	return Scenarios["healthy"]
}

// enqueue puts r straight into the engine core's queue (tests that drive the scheduler by hand).
func (e *Engine) enqueue(r *request) {
	e.nextID++
	r.id = "cmpl-" + strconv.FormatInt(e.nextID, 10)
	if r.queuedAt.IsZero() {
		r.queuedAt = r.arrival
	}
	if r.readyAt.IsZero() {
		r.readyAt = r.arrival
	}
	e.enqueueCore(r)
}

// enqueueCore is the engine core's add_request: the request joins the waiting queue; on a KV
// consumer a request prefilled elsewhere is counted as waiting to start its KV load at once.
func (e *Engine) enqueueCore(r *request) {
	if r.remote && e.cfg.KVRole == KVConsumer {
		r.fetch = fetchWaiting
	} else {
		r.remote = false
	}
	e.waiting = append(e.waiting, r)
}

// generate adds the synthetic arrivals due by now.
func (e *Engine) generate(now time.Time) {
	for !e.nextArrival.IsZero() && !e.nextArrival.After(now) {
		at := e.nextArrival
		e.nextArrival = at.Add(e.expDuration(e.scenario.ArrivalRate))
		e.addSynthetic(at)
	}
	e.generateLong(now)
}

// addSynthetic draws one client of the current scenario arriving at at.
func (e *Engine) addSynthetic(at time.Time) {
	s := e.scenario
	prompt := min(e.lognormalInt(s.PromptMean, s.PromptSigma), e.cfg.MaxModelLen-1)
	maxTok := s.MaxTokens
	if maxTok <= 0 || prompt+maxTok > e.cfg.MaxModelLen {
		maxTok = e.cfg.MaxModelLen - prompt
	}
	natural := e.lognormalInt(s.OutputMean, s.OutputSigma)
	var deadline time.Time
	if s.TimeoutShare > 0 && e.rng.Float64() < s.TimeoutShare {
		span := s.TimeoutMax - s.TimeoutMin
		deadline = at.Add(s.TimeoutMin + time.Duration(e.rng.Float64()*float64(span)))
	}
	if len(e.waiting)+len(e.api.held) >= e.cfg.MaxWaiting || e.life.down {
		e.dropped++ // a safety cap; or the server is down: the client cannot connect
		return
	}
	r := &request{
		synthetic: true, arrival: at, deadline: deadline, promptLen: prompt,
		targetOutput: min(natural, maxTok), targetReason: reasonStop,
	}
	if s.UniquePrefixShare > 0 && !at.Before(e.scenarioAt.Add(s.UniquePrefixAfter)) {
		r.uniquePrefix = e.rng.Float64() < s.UniquePrefixShare
	}
	if natural >= maxTok {
		r.targetReason = reasonLength
	}
	r.adapter, r.remote, r.acceptance = e.drawAdapter(s), s.RemotePrefill, s.DraftAcceptance
	r.grammarAt = e.drawGrammar(s, at)
	if s.DraftAcceptanceLater > 0 && !at.Before(e.scenarioAt.Add(s.DraftAcceptanceAfter)) {
		r.acceptance = s.DraftAcceptanceLater
	}
	e.accept(r, at, s.TemplateCost)
}

// expireTimeouts aborts requests whose clients gave up by now.
func (e *Engine) expireTimeouts(now time.Time) {
	if e.withTimeout == 0 {
		return
	}
	var expired []*request
	for _, q := range [][]*request{e.waiting, e.running} {
		for _, r := range q {
			if !r.deadline.IsZero() && !r.deadline.After(now) {
				expired = append(expired, r)
			}
		}
	}
	for _, r := range expired {
		e.abort(r, now)
	}
}

// Step runs one engine step starting at now: expire timeouts, admit arrivals,
// schedule, "execute" the batch (its cost gives the step duration) and process
// the outputs, timestamped at now+duration.
func (e *Engine) Step(now time.Time) StepResult {
	e.mu.Lock()
	defer e.mu.Unlock()

	e.clock = now
	e.life.advance(e, now)
	if e.life.down {
		// The server process is gone: nothing listens, clients cannot connect.
		e.generate(now)
		return StepResult{Duration: e.idleFor(now, e.life.nextEvent)}
	}
	e.generate(now)
	if e.life.hung {
		// The engine core is stopped (a hang in a step, a GPU fault, a collective hang): the API
		// server accepts and tokenizes requests and sends them on, but nothing reads them; the
		// core neither steps nor sends stats, so no vllm: series moves. Clients that give up are
		// dropped by the API server; the core sees their aborts when it runs again.
		e.dropGoneClients(now)
		return StepResult{Duration: e.idleFor(now, e.life.nextEvent)}
	}
	e.intake(now)
	if e.scenario.EngineStalled {
		// Wedged: arrivals queue up, the gauges are still published, but no step runs (nor
		// the client timeouts, which the engine loop would process).
		e.publishGauges()
		return StepResult{Duration: e.idleFor(now, time.Time{})}
	}
	e.expireTimeouts(now)
	e.kvProgress(now)
	if !e.coreSteps() {
		// Paused or asleep on purpose: the core reads its input (new requests queue, client
		// aborts are processed) but makes no step and sends no stats.
		return StepResult{Duration: e.idleFor(now, e.life.nextEvent)}
	}
	if len(e.running) == 0 && len(e.waiting) == 0 {
		e.publishGauges()
		return StepResult{Duration: e.idleFor(now, e.life.nextEvent)}
	}

	batch, preempted, admitted := e.schedule(now)
	if len(batch) == 0 {
		// Nothing could run (every waiting request waits for its KV transfer or a LoRA slot):
		// vLLM's loop keeps stepping with empty schedules and sends stats.
		e.publishGauges()
		return StepResult{Duration: e.idleFor(now, e.nextTransferEvent())}
	}
	dur, work := e.execute(batch)
	end := now.Add(dur)
	finished := e.updateFromOutput(batch, now, end)
	e.steps++
	e.publishGauges()
	if e.onStep != nil {
		e.onStep(StepRecord{
			Start: now, Duration: dur, Scheduled: len(batch),
			PrefillTokens: work.prefill, DecodeTokens: work.decode, ContextTokens: work.context,
			Preemptions: preempted, Admitted: admitted, Finished: finished,
			Running: len(e.running), Waiting: len(e.waiting), KVUsage: e.kvUsage(),
		})
	}
	return StepResult{Duration: dur, Busy: true}
}

// idleFor is how long an idle engine loop may sleep from now: until the next synthetic arrival,
// the next request the API server hands over, or event (zero: none), and at most 50 ms.
func (e *Engine) idleFor(now, event time.Time) time.Duration {
	idle := 50 * time.Millisecond
	for _, t := range []time.Time{e.nextArrival, e.nextLong, event} {
		if !t.IsZero() {
			idle = min(idle, max(t.Sub(now), time.Millisecond))
		}
	}
	if len(e.api.held) > 0 && !e.life.hung {
		idle = min(idle, max(e.api.held[0].readyAt.Sub(now), time.Millisecond))
	}
	return idle
}

func (e *Engine) blocksFor(tokens int) int { return (tokens + e.cfg.BlockSize - 1) / e.cfg.BlockSize }

func (e *Engine) canAllocate(r *request, chunk int) bool {
	need := e.blocksFor(r.numComputed+chunk) - r.blocks
	return need <= e.cfg.NumGPUBlocks-e.usedBlocks
}

func (e *Engine) allocate(r *request, chunk int) {
	need := e.blocksFor(r.numComputed+chunk) - r.blocks
	if need > 0 {
		r.blocks += need
		e.usedBlocks += need
	}
}

func (e *Engine) freeBlocks(r *request) {
	e.usedBlocks -= r.blocks
	r.blocks = 0
}

func (e *Engine) preempt(r *request) {
	e.freeBlocks(r)
	r.numComputed = 0
	r.preemptions++
	r.uncounted++
	e.preemptions++
	e.waiting = append(e.waiting, nil)
	copy(e.waiting[1:], e.waiting)
	e.waiting[0] = r
}

func (e *Engine) removeRunning(r *request) {
	for i, x := range e.running {
		if x == r {
			copy(e.running[i:], e.running[i+1:])
			e.running[len(e.running)-1] = nil
			e.running = e.running[:len(e.running)-1]
			return
		}
	}
}

func (e *Engine) removeHeld(r *request) bool {
	for i, x := range e.api.held {
		if x == r {
			e.api.held = append(e.api.held[:i], e.api.held[i+1:]...)
			return true
		}
	}
	return false
}

func (e *Engine) removeWaiting(r *request) bool {
	for i, x := range e.waiting {
		if x == r {
			copy(e.waiting[i:], e.waiting[i+1:])
			e.waiting[len(e.waiting)-1] = nil
			e.waiting = e.waiting[:len(e.waiting)-1]
			return true
		}
	}
	return false
}

// abort removes r wherever it is, as vLLM does when a client disconnects. It is not recorded as
// finished: every V1 release drops a client-aborted request's state without counting it in
// request_success_total{finished_reason="abort"} or any finished-request histogram
// (vllm/v1/engine/output_processor.py); what it got so far stays in prompt_tokens_total, TTFT,
// ITL and generation_tokens_total.
func (e *Engine) abort(r *request, now time.Time) {
	if e.removeHeld(r) {
		if !r.deadline.IsZero() {
			e.withTimeout--
		}
		if r.done != nil {
			r.done <- Result{FinishReason: reasonAbort, PromptTokens: r.promptLen, Finished: now}
		}
		return
	}
	if !e.removeWaiting(r) {
		n := len(e.running)
		e.removeRunning(r)
		if len(e.running) == n {
			return // already finished
		}
	}
	e.freeBlocks(r)
	if !r.deadline.IsZero() {
		e.withTimeout--
	}
	if !r.firstTokenAt.IsZero() {
		e.loraView.remove(r.adapter)
	}
	if r.done != nil {
		r.done <- Result{FinishReason: reasonAbort, PromptTokens: r.promptLen, CompletionTokens: r.output, Finished: now}
	}
}

// finish records a finished request the way vLLM's output processor does; at is when the API
// server processed its final output.
func (e *Engine) finish(r *request, reason string, at time.Time) {
	if r.firstTokenAt.IsZero() {
		e.finishUnstarted(r, reason, at, false)
		return
	}
	e.settle(r, reason, at)
	e.m.e2e.Observe(at.Sub(r.arrival).Seconds())
	e.m.queue.Observe(r.scheduledAt.Sub(r.queuedAt).Seconds())
	e.m.prefill.Observe(r.firstTokenAt.Sub(r.scheduledAt).Seconds())
	e.m.decode.Observe(r.lastTokenAt.Sub(r.firstTokenAt).Seconds())
	e.m.inference.Observe(r.lastTokenAt.Sub(r.scheduledAt).Seconds())
	if e.m.tpotRequest != nil {
		tpot := 0.0 // vLLM observes 0 for a request with a single token
		if r.output > 1 {
			tpot = r.lastTokenAt.Sub(r.firstTokenAt).Seconds() / float64(r.output-1)
		}
		e.m.tpotRequest.Observe(tpot)
	}
}

// finishUnstarted records a request the engine finishes before its first token: aborted by a
// pause or a sleep (mode abort), or failed (a KV load that failed). vLLM 0.32's output processor
// takes that final output for the request's first (it is still "prefilling"): it observes a TTFT,
// and computes the phase intervals from engine timestamps it never received, which are 0. So
// the queue time is 0 minus the QUEUED timestamp when the output carried the request's events
// (an error output does; a pause's abort output does not), and the prefill and inference times
// are the engine's monotonic clock, the host's uptime: days, in the +Inf bucket, as vLLM does.
func (e *Engine) finishUnstarted(r *request, reason string, at time.Time, events bool) {
	e.settle(r, reason, at)
	mono := func(t time.Time) float64 { return t.Sub(e.boot).Seconds() }
	queued, scheduled := 0.0, 0.0
	if events {
		queued = mono(r.queuedAt)
		if r.scheduled {
			scheduled = mono(r.scheduledAt)
		}
	}
	e.m.ttft.Observe(at.Sub(r.arrival).Seconds())
	e.m.e2e.Observe(at.Sub(r.arrival).Seconds())
	e.m.queue.Observe(scheduled - queued)
	e.m.prefill.Observe(mono(at) - scheduled)
	e.m.decode.Observe(0)
	e.m.inference.Observe(mono(at) - scheduled)
	if e.m.tpotRequest != nil {
		e.m.tpotRequest.Observe(0)
	}
}

// settle ends r: its blocks freed, its client answered, its finish counted.
func (e *Engine) settle(r *request, reason string, at time.Time) {
	e.freeBlocks(r)
	if !r.deadline.IsZero() {
		e.withTimeout--
	}
	if r.done != nil {
		r.done <- Result{FinishReason: reason, PromptTokens: r.promptLen, CompletionTokens: r.output, Finished: at}
	}
	if !r.firstTokenAt.IsZero() {
		e.loraView.remove(r.adapter)
	}
	e.observeFinish(r, reason, at)
	e.m.success.WithLabelValues(reason).Inc()
	if reason == reasonError {
		e.countSynthetic(r, "5xx")
	} else {
		e.countSynthetic(r, "2xx")
	}
	e.m.reqPromptTokens.Observe(float64(r.promptLen))
	e.m.reqGenTokens.Observe(float64(r.output))
}

func (e *Engine) kvUsage() float64 {
	return float64(e.usedBlocks) / float64(e.cfg.NumGPUBlocks)
}

// publishGauges is the API server setting the gauges from the engine's scheduler stats.
func (e *Engine) publishGauges() {
	e.m.running.Set(float64(len(e.running)))
	e.m.waiting.Set(float64(len(e.waiting)))
	deferred := 0
	var stages [fetchDone + 1]int
	for _, r := range e.waiting {
		if r.deferred {
			deferred++
		}
		stages[r.fetch]++
	}
	if e.m.waitingCapacity != nil {
		e.m.waitingCapacity.Set(float64(len(e.waiting) - deferred))
		e.m.waitingDeferred.Set(float64(deferred))
	}
	for st, g := range e.m.kvFetch {
		g.Set(float64(stages[st]))
	}
	e.m.kvUsage.Set(e.kvUsage())
	e.pub = PublishedGauges{Running: float64(len(e.running)), Waiting: float64(len(e.waiting)), KVUsage: e.kvUsage()}
}

func (e *Engine) expDuration(rate float64) time.Duration { return expDuration(e.rng, rate) }

func (e *Engine) lognormalInt(mean, sigma float64) int { return lognormalInt(e.rng, mean, sigma) }

// expDuration draws the wait until the next event of a Poisson stream of rate per second.
func expDuration(rng *rand.Rand, rate float64) time.Duration {
	return time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
}

// lognormalInt draws a positive integer from a lognormal with the given mean
// and sigma of the underlying normal.
func lognormalInt(rng *rand.Rand, mean, sigma float64) int {
	if mean <= 0 {
		return 1
	}
	mu := math.Log(mean) - sigma*sigma/2
	return max(1, int(math.Round(math.Exp(mu+sigma*rng.NormFloat64()))))
}

// Run drives the engine in real time until ctx is done: each step starts when
// the previous one would have finished on the GPU; an idle engine sleeps until
// the next synthetic arrival or a submitted request.
func (e *Engine) Run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	next := time.Now()
	for {
		e.stall.wait(ctx) // no step while stop_profile flushes, as in vLLM's engine core loop
		now := time.Now()
		if now.Before(next) {
			now = next
		}
		res := e.Step(now)
		next = now.Add(res.Duration)
		timer.Reset(max(time.Until(next), 0))
		if res.Busy {
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-e.wake:
			next = time.Now()
		}
	}
}
