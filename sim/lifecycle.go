package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Errors of Submit.
var (
	// ErrUnknownModel: neither the served model nor one of its LoRA adapters.
	ErrUnknownModel = errors.New("the model does not exist")
	// ErrServerDown: the server process is gone (crashed, restarting): nothing listens.
	ErrServerDown = errors.New("the server is down")
	// ErrQueueFull is vLLM's QueueOverflowError (503) at --max-num-queued-reqs.
	ErrQueueFull = errors.New("The engine is currently busy and cannot accept new requests. Please try again later or on a different instance.")
	// ErrQueuedTokensFull is vLLM's MaxQueuedTokensError (503) at --max-num-queued-tokens.
	ErrQueuedTokensFull = errors.New("The engine has reached its prefill token backlog limit. Please try again later or on a different instance.")
)

// The reasons of vllm:admission_rejections_total (vllm/v1/metrics/loggers.py ADMISSION_REASONS).
const (
	admissionMaxReqs   = "max_num_queued_reqs"
	admissionMaxTokens = "max_num_queued_tokens"
)

// pauseState is the scheduler's PauseState (vllm/v1/core/sched/interface.py).
type pauseState int

const (
	pauseNone pauseState = iota
	// pauseNew (PAUSED_NEW): new requests queue but are not scheduled; running ones drain.
	pauseNew
	// pauseAll (PAUSED_ALL, pause mode "keep"): nothing is scheduled; requests stay where they are.
	pauseAll
)

func (p pauseState) String() string {
	return [...]string{"", "paused_new", "paused_all"}[p]
}

// Operation names of vLLM's sleep-mode and RL weight-transfer in-flight gauges
// (vllm/entrypoints/serve/dev/sleep/metrics.py, vllm/entrypoints/rl/online/metrics.py).
const (
	opSleep  = "sleep"
	opWake   = "wake"
	opUpdate = "update"
)

// lifecycle is what happens to the server beyond its load: an engine core that hangs, a sleep or
// an RL weight update on purpose, a crash and restart, a rollout to a new pod. Scenarios plan it;
// the admin and vLLM endpoints drive it by hand.
type lifecycle struct {
	podName  string
	revision int // the rollout the pod belongs to (its name's ReplicaSet hash)
	restarts int

	// the engine core stopped: no step, no stats
	hung      bool
	hungSince time.Time
	hangAt    time.Time // planned start (zero: none)
	hangEnd   time.Time // planned end (zero: until released)
	hangIdle  bool      // the planned hang waits for a moment the engine holds nothing

	pause  pauseState
	asleep bool
	level  int // sleep level while asleep

	// an operation the API server awaits (sleep, wake, weight update)
	op      string
	opStart time.Time
	opEnd   time.Time
	// planned operations
	sleepAt, wakeAt  time.Time
	sleepLevel       int
	updateEvery      time.Duration
	updateFor        time.Duration
	nextUpdate       time.Time
	resumeAfterOpEnd bool

	// the server process gone: nothing listens
	down     bool
	downTill time.Time
	crashAt  time.Time
	upFor    time.Duration // a restart loop: up this long after each start, then crash
	downFor  time.Duration
	renameAt time.Time // a rollout: replaced by a new pod (new name) at this time
	// renameOnUp: the restart that ends this down time starts a new pod (Restart with rename)
	renameOnUp bool

	nextEvent time.Time // the earliest planned event, so an idle loop wakes for it
}

// State is the lifecycle as /admin/stats reports it.
type State struct {
	Pod        string `json:"pod"`
	Restarts   int    `json:"restarts"`
	Down       bool   `json:"down"`
	Hung       bool   `json:"hung"`
	HungSince  string `json:"hung_since,omitempty"`
	Paused     string `json:"paused,omitempty"`
	Asleep     bool   `json:"asleep"`
	SleepLevel int    `json:"sleep_level,omitempty"`
	Operation  string `json:"operation,omitempty"`
}

func (l *lifecycle) state() State {
	s := State{Pod: l.podName, Restarts: l.restarts, Down: l.down, Hung: l.hung, Paused: l.pause.String(),
		Asleep: l.asleep, Operation: l.op}
	if l.hung {
		s.HungSince = l.hungSince.UTC().Format(time.RFC3339Nano)
	}
	if l.asleep {
		s.SleepLevel = l.level
	}
	return s
}

// planLife ends whatever the previous scenario left (a hang is released, a sleeping or paused
// engine resumes at once, a server that is down comes back) and plans s's events from now.
func (e *Engine) planLife(s Scenario, now time.Time) {
	l := &e.life
	if l.down {
		e.restart(now, false)
	}
	l.hung, l.hangAt, l.hangEnd, l.hangIdle = false, time.Time{}, time.Time{}, false
	if l.asleep || l.pause != pauseNone || l.op != "" {
		e.endOperation(now)
		l.asleep, l.pause = false, pauseNone
		e.recordSleepState()
	}
	l.sleepAt, l.wakeAt, l.nextUpdate, l.crashAt, l.renameAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}, time.Time{}
	l.upFor, l.downFor, l.updateEvery = 0, 0, 0
	if s.Hang {
		l.hangAt, l.hangIdle = now.Add(s.HangAfter), s.HangIdle
		if s.HangFor > 0 {
			l.hangEnd = l.hangAt.Add(s.HangFor)
		}
	}
	if s.Sleep {
		l.sleepAt, l.sleepLevel = now.Add(s.SleepAfter), s.SleepLevel
		if s.SleepFor > 0 {
			l.wakeAt = l.sleepAt.Add(s.SleepFor)
		}
	}
	if s.WeightUpdateEvery > 0 {
		l.updateEvery, l.updateFor = s.WeightUpdateEvery, s.WeightUpdateFor
		l.nextUpdate = now.Add(s.WeightUpdateAfter)
	}
	if s.CrashAfter > 0 {
		l.upFor, l.downFor = s.CrashAfter, s.DownFor
		l.crashAt = now.Add(s.CrashAfter)
	}
	if s.Replace {
		l.renameAt = now.Add(s.ReplaceAfter)
		l.revision = s.Revision
	}
	e.planGPU(s, now)
	l.schedule()
}

// schedule recomputes the next planned event.
func (l *lifecycle) schedule() {
	l.nextEvent = time.Time{}
	for _, t := range []time.Time{l.hangAt, l.hangEnd, l.opEnd, l.sleepAt, l.wakeAt, l.nextUpdate, l.downTill, l.crashAt, l.renameAt} {
		if !t.IsZero() && (l.nextEvent.IsZero() || t.Before(l.nextEvent)) {
			l.nextEvent = t
		}
	}
}

// advance runs the events due by now, in time order.
func (l *lifecycle) advance(e *Engine, now time.Time) {
	for !l.nextEvent.IsZero() && !l.nextEvent.After(now) {
		at := l.nextEvent
		switch {
		case l.down && !l.downTill.IsZero() && !l.downTill.After(at):
			e.restart(l.downTill, l.renameOnUp)
		case !l.renameAt.IsZero() && !l.renameAt.After(at):
			l.renameAt = time.Time{}
			e.crash(at)
			e.restart(at, true)
		case !l.crashAt.IsZero() && !l.crashAt.After(at):
			l.crashAt = time.Time{}
			e.crash(at)
			l.downTill = at.Add(l.downFor)
			if l.downFor == 0 {
				e.restart(at, false)
			}
		case !l.opEnd.IsZero() && !l.opEnd.After(at):
			e.endOperation(at)
		case !l.hangAt.IsZero() && !l.hangAt.After(at) && l.hangIdle && len(e.running)+len(e.waiting) > 0:
			// an idle hang waits for the engine to hold nothing: the next step boundary
			l.hangAt = at.Add(idleHangRetry)
			if !l.hangEnd.IsZero() {
				l.hangEnd = l.hangEnd.Add(idleHangRetry)
			}
			if l.hangAt.After(now) {
				l.schedule()
				return
			}
		case !l.hangAt.IsZero() && !l.hangAt.After(at):
			l.hangAt = time.Time{}
			e.hang(at)
		case l.hung && !l.hangEnd.IsZero() && !l.hangEnd.After(at):
			e.release()
		case !l.sleepAt.IsZero() && !l.sleepAt.After(at):
			l.sleepAt = time.Time{}
			e.sleep(at, l.sleepLevel, "abort")
		case !l.wakeAt.IsZero() && !l.wakeAt.After(at):
			l.wakeAt = time.Time{}
			e.wakeUp(at)
		case !l.nextUpdate.IsZero() && !l.nextUpdate.After(at):
			l.nextUpdate = at.Add(l.updateEvery)
			e.pauseGeneration(at, pauseAll)
			e.startOperation(at, opUpdate, l.updateFor)
			l.resumeAfterOpEnd = true
		default:
			// an event time left behind by one that was cancelled
			l.hangEnd = keepIf(l.hangEnd, l.hung)
			l.downTill = keepIf(l.downTill, l.down)
		}
		l.schedule()
	}
}

// idleHangRetry is how long an idle hang (Scenario.HangIdle) waits again while the engine holds
// requests: about a step.
const idleHangRetry = 10 * time.Millisecond

func keepIf(t time.Time, ok bool) time.Time {
	if ok {
		return t
	}
	return time.Time{}
}

// coreSteps reports whether the engine core makes steps now (and so sends stats): not while
// paused with nothing to drain, as vLLM's busy loop sees no unfinished request then.
func (e *Engine) coreSteps() bool {
	switch e.life.pause {
	case pauseAll:
		return false
	case pauseNew:
		return len(e.running) > 0
	}
	return true
}

// coreReports reports whether the engine core is running and sending stats.
func (e *Engine) coreReports() bool { return !e.life.hung && !e.life.down && e.coreSteps() }

// hang stops the engine core at at (as SIGSTOP of EngineCore does).
func (e *Engine) hang(at time.Time) {
	if e.life.hung {
		return
	}
	e.life.hung, e.life.hungSince = true, at
}

// release ends a hang: the requests the API server sent meanwhile reach the engine core at once.
func (e *Engine) release() {
	e.life.hung, e.life.hangEnd = false, time.Time{}
}

// Hang stops the engine core now, for d (0: until Release).
func (e *Engine) Hang(now time.Time, d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.hang(now)
	e.life.hangEnd = time.Time{}
	if d > 0 {
		e.life.hangEnd = now.Add(d)
	}
	e.life.schedule()
}

// Release ends a hang now.
func (e *Engine) Release() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.release()
	e.life.schedule()
	e.poke()
}

func (e *Engine) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// crash ends the server process at at: every request in flight is lost (its client sees the
// connection drop), nothing listens until restart.
func (e *Engine) crash(at time.Time) {
	for _, q := range [][]*request{e.api.held, e.waiting, e.running} {
		for _, r := range q {
			if r.done != nil {
				r.done <- Result{Err: ErrServerDown, PromptTokens: r.promptLen, CompletionTokens: r.output, Finished: at}
			}
		}
	}
	e.api.held, e.waiting, e.running = nil, nil, nil
	e.usedBlocks, e.withTimeout = 0, 0
	e.life.down, e.life.hung = true, false
	e.life.pause, e.life.asleep, e.life.op, e.life.opEnd = pauseNone, false, "", time.Time{}
}

// restart starts the server process again at at: an empty engine, every counter at 0, a new
// process start time; with rename, as a new pod of a new rollout revision (a new pod name).
func (e *Engine) restart(at time.Time, rename bool) {
	e.life.down, e.life.downTill = false, time.Time{}
	rename = rename || e.life.renameOnUp
	e.life.renameOnUp = false
	e.life.restarts++
	if rename {
		e.life.podName = newPodName(e.cfg.PodNamePrefix, e.cfg.Seed, e.life.revision)
	}
	e.startProcess(at)
	if e.life.upFor > 0 {
		e.life.crashAt = at.Add(e.life.upFor)
	}
	e.poke()
}

// Restart crashes the server now and starts it again after down (0: at once); with rename the
// new process is a new pod of a new rollout revision.
func (e *Engine) Restart(now time.Time, down time.Duration, rename bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.life.down {
		e.crash(now)
	}
	if rename {
		e.life.revision++
	}
	if down <= 0 {
		e.restart(now, rename)
	} else {
		e.life.downTill, e.life.renameOnUp = now.Add(down), rename
	}
	e.life.schedule()
}

// Down reports whether the server process is gone.
func (e *Engine) Down() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.life.down
}

// PodName is the pod this server runs as (its scrape target's pod label).
func (e *Engine) PodName() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.life.podName
}

// newPodName is a Deployment pod's name: prefix, the ReplicaSet's hash (one per revision),
// and a random suffix, in Kubernetes' alphabet.
func newPodName(prefix string, seed uint64, revision int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	pick := func(r *rand.Rand, n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	hash := pick(rand.New(rand.NewPCG(uint64(revision), 0x5eed)), 9)
	suffix := pick(rand.New(rand.NewPCG(seed, uint64(revision))), 5)
	if prefix == "" {
		prefix = "vllm-sim"
	}
	return fmt.Sprintf("%s-%s-%s", prefix, hash, suffix)
}

// ---- sleep mode and pauses (vllm/v1/engine/core.py, vllm/entrypoints/serve/dev/sleep/,
// vllm/entrypoints/rl/online/) ----

// abortAll finishes every request in the engine core as aborted by the engine (pause mode
// "abort"): unlike a client's disconnect, vLLM counts these in finished_reason="abort".
func (e *Engine) abortAll(at time.Time) {
	for _, q := range [][]*request{e.waiting, e.running} {
		for _, r := range q {
			e.finish(r, reasonAbort, at)
		}
	}
	e.waiting, e.running = nil, nil
	e.usedBlocks = 0
}

// pauseGeneration is the engine core's pause_scheduler: "abort" aborts everything and queues new
// requests (PAUSED_NEW), "wait" lets the running ones drain (PAUSED_NEW), "keep" freezes
// everything where it is (PAUSED_ALL).
func (e *Engine) pauseGeneration(at time.Time, p pauseState) {
	e.life.pause = p
}

func (e *Engine) pauseAbort(at time.Time) {
	e.abortAll(at)
	e.life.pause = pauseNew
	e.publishGauges() // the abort outputs ride on one more step's stats
}

// sleep is /sleep: pause with mode, then offload the weights (level 1) or discard everything
// (level 2); the API server records the sleep state when the operation completes.
func (e *Engine) sleep(at time.Time, level int, mode string) time.Time {
	switch mode {
	case "keep":
		e.pauseGeneration(at, pauseAll)
	case "wait":
		e.pauseGeneration(at, pauseNew)
	default:
		e.pauseAbort(at)
	}
	e.life.level = level
	dur := e.cfg.SleepTime
	if level == 0 {
		dur = 0
	}
	return e.startOperation(at, opSleep, dur)
}

// wakeUp is /wake_up: reload, then resume scheduling and record the engine awake.
func (e *Engine) wakeUp(at time.Time) time.Time {
	dur := e.cfg.WakeTime
	if !e.life.asleep || e.life.level == 0 {
		dur = 0
	}
	return e.startOperation(at, opWake, dur)
}

// startOperation makes op in flight from at for d; it ends (endOperation) at at+d.
func (e *Engine) startOperation(at time.Time, op string, d time.Duration) time.Time {
	if e.life.op != "" {
		e.endOperation(at)
	}
	e.life.op, e.life.opStart, e.life.opEnd = op, at, at.Add(d)
	e.opInFlight(op).Set(1)
	if d == 0 {
		e.endOperation(at)
	}
	e.life.schedule()
	return at.Add(d)
}

// endOperation completes the operation in flight at at.
func (e *Engine) endOperation(at time.Time) {
	l := &e.life
	if l.op == "" {
		l.opEnd = time.Time{}
		return
	}
	op := l.op
	e.opInFlight(op).Set(0)
	e.opDuration(op).Observe(at.Sub(l.opStart).Seconds())
	l.op, l.opEnd = "", time.Time{}
	switch op {
	case opSleep:
		l.asleep = true
		e.recordSleepState()
	case opWake:
		l.asleep, l.pause = false, pauseNone
		e.recordSleepState()
		e.poke()
	case opUpdate:
		if l.resumeAfterOpEnd {
			l.resumeAfterOpEnd = false
			l.pause = pauseNone
			e.poke()
		}
	}
}

// recordSleepState is the API server's record_sleep_state after a sleep or a full wake-up.
func (e *Engine) recordSleepState() {
	if e.m.sleepState == nil {
		return // legacy names: no such family
	}
	awake, offloaded, discarded := 1.0, 0.0, 0.0
	if e.life.asleep {
		awake = 0
		switch e.life.level {
		case 1:
			offloaded = 1
		case 2:
			discarded = 1
		}
	}
	e.m.sleepState.WithLabelValues("awake").Set(awake)
	e.m.sleepState.WithLabelValues("weights_offloaded").Set(offloaded)
	e.m.sleepState.WithLabelValues("discard_all").Set(discarded)
}

// opInFlight and opDuration are vLLM's lazily created operation metrics: the families appear
// when the first operation of their kind is called, with only the operations used so far.
func (e *Engine) opInFlight(op string) prometheus.Gauge {
	m := e.m.operations(op == opUpdate)
	return m.inFlight.WithLabelValues(op)
}

func (e *Engine) opDuration(op string) prometheus.Observer {
	m := e.m.operations(op == opUpdate)
	return m.duration.WithLabelValues(op)
}

// Sleep is vLLM's POST /sleep?level=&mode=: it returns when the operation will be complete.
func (e *Engine) Sleep(now time.Time, level int, mode string) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sleep(now, level, mode)
}

// WakeUp is vLLM's POST /wake_up: it returns when the engine will be awake.
func (e *Engine) WakeUp(now time.Time) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.wakeUp(now)
}

// Pause is vLLM's POST /pause?mode= (abort, wait or keep).
func (e *Engine) Pause(now time.Time, mode string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch mode {
	case "", "abort":
		e.pauseAbort(now)
	case "wait":
		e.pauseGeneration(now, pauseNew)
	case "keep":
		e.pauseGeneration(now, pauseAll)
	default:
		return fmt.Errorf("Invalid pause mode: %s", mode)
	}
	return nil
}

// Resume is vLLM's POST /resume.
func (e *Engine) Resume() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.life.pause = pauseNone
	e.poke()
}

// UpdateWeights is vLLM's POST /update_weights: the transfer is in flight for the configured
// weight-update time; it returns when it will be done.
func (e *Engine) UpdateWeights(now time.Time) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.startOperation(now, opUpdate, e.cfg.WeightUpdateTime)
}

// CatchUp runs the planned events due by now (an operation's end), as the engine loop would
// at its next step: a handler that awaited an operation answers after its effects.
func (e *Engine) CatchUp(now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if now.After(e.clock) {
		e.life.advance(e, now)
	}
}

// Sleeping is vLLM's /is_sleeping: the scheduler paused or the executor asleep.
func (e *Engine) Sleeping() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.life.asleep || e.life.pause != pauseNone || e.life.op == opSleep
}

// Paused is vLLM's /is_paused.
func (e *Engine) Paused() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.life.pause != pauseNone
}
