package sim

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// maxProfiledSteps bounds the memory a forgotten profile can take.
const maxProfiledSteps = 200000

// Profiler models vLLM's torch profiler wrapper: POST /start_profile starts
// recording the engine steps, POST /stop_profile stops, waits the flush delay
// and writes one Chrome-trace file per rank, <dir>/<worker>.<ms>.pt.trace.json.gz.
// Like vLLM's, whose stop runs inside the engine core's busy loop, a stop stalls
// the engine it is attached to (AttachEngine) for the whole flush: no step, no
// token, gauges frozen at their last values; arrivals queue up meanwhile.
type Profiler struct {
	dir        string
	flushDelay time.Duration
	ranks      int
	log        zerolog.Logger
	engine     *Engine

	mu      sync.Mutex
	active  bool
	started time.Time
	steps   []StepRecord
	starts  int
	stops   int
	traces  []string
	flushes sync.WaitGroup
	// flushing counts the stops writing traces.
	flushing int
}

// ProfilerState is what GET /admin/profile returns.
type ProfilerState struct {
	Enabled bool   `json:"enabled"`
	Dir     string `json:"dir"`
	Active  bool   `json:"active"`
	// Flushing: a stop_profile is writing the traces (the engine loop is stalled).
	Flushing bool     `json:"flushing"`
	Starts   int      `json:"starts"`
	Stops    int      `json:"stops"`
	Traces   []string `json:"traces"`
}

// NewProfiler returns a profiler writing to dir; an empty dir disables it
// (the endpoints are then 404, as in vLLM without a profiler config).
func NewProfiler(dir string, flushDelay time.Duration, ranks int, log zerolog.Logger) *Profiler {
	return &Profiler{dir: dir, flushDelay: flushDelay, ranks: max(ranks, 1), log: log}
}

// AttachEngine makes every stop stall e's loop while the traces are flushed.
func (p *Profiler) AttachEngine(e *Engine) {
	p.mu.Lock()
	p.engine = e
	p.mu.Unlock()
}

// engineStall holds an engine loop: while held, Run takes no step.
type engineStall struct {
	mu   sync.Mutex
	held int
	free chan struct{} // closed when the last holder lets go
}

func (g *engineStall) hold() (release func()) {
	g.mu.Lock()
	if g.held == 0 {
		g.free = make(chan struct{})
	}
	g.held++
	g.mu.Unlock()
	return sync.OnceFunc(func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.held--; g.held == 0 {
			close(g.free)
		}
	})
}

// wait returns once nobody holds the loop (at once when nobody does) or ctx ends.
func (g *engineStall) wait(ctx context.Context) {
	g.mu.Lock()
	if g.held == 0 {
		g.mu.Unlock()
		return
	}
	free := g.free
	g.mu.Unlock()
	select {
	case <-free:
	case <-ctx.Done():
	}
}

// Enabled reports whether a profiler directory is configured.
func (p *Profiler) Enabled() bool { return p != nil && p.dir != "" }

// Record is the engine's step observer.
func (p *Profiler) Record(s StepRecord) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.active && len(p.steps) < maxProfiledSteps {
		p.steps = append(p.steps, s)
	}
}

// ErrProfileActive is vLLM's answer to a start while a session is active (409, vLLM 0.32:
// vllm/exceptions.py, docs/vllm-facts.md).
var ErrProfileActive = errors.New("A profiling session is already active. Call /stop_profile before starting another session.")

// Start begins a capture; a second start while active is refused with ErrProfileActive.
func (p *Profiler) Start(now time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.active {
		p.log.Warn().Msg("start_profile received when profiler is already active")
		return ErrProfileActive
	}
	p.active = true
	p.started = now
	p.steps = nil
	p.starts++
	p.log.Info().Str("profiler_dir", p.dir).Int("profile_starts", p.starts).Msg("profiler started")
	return nil
}

// Stop ends a capture and returns after the traces are written (after the
// flush delay). A stop without a start is ignored.
func (p *Profiler) Stop(ctx context.Context, now time.Time) error {
	p.mu.Lock()
	if !p.active {
		p.mu.Unlock()
		p.log.Warn().Msg("profiler is not running; stop_profile ignored")
		return nil
	}
	p.active = false
	steps, started := p.steps, p.started
	p.steps = nil
	p.stops++
	release := func() {}
	if p.engine != nil {
		// Held before flushing shows, so a step seen while flushing is a step run stalled.
		release = p.engine.stall.hold()
	}
	p.flushing++
	p.flushes.Add(1)
	p.mu.Unlock()
	defer release()
	defer p.flushes.Done()
	defer func() {
		p.mu.Lock()
		p.flushing--
		p.mu.Unlock()
	}()

	p.log.Info().Int("profiled_steps", len(steps)).Dur("flush_delay", p.flushDelay).Msg("profiler stopping, flushing traces")
	t := time.NewTimer(p.flushDelay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		// The client went away; vLLM still finishes the flush, and so do we.
	case <-t.C:
	}
	select {
	case <-t.C:
	default:
	}

	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return fmt.Errorf("profiler dir: %w", err)
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "vllm-sim"
	}
	var written []string
	for rank := 0; rank < p.ranks; rank++ {
		name := filepath.Join(p.dir, fmt.Sprintf("%s_rank%d.%d.pt.trace.json.gz", host, rank, now.UnixNano()))
		if err := writeTrace(name, rank, started, steps); err != nil {
			return err
		}
		written = append(written, name)
	}
	p.mu.Lock()
	p.traces = append(p.traces, written...)
	p.mu.Unlock()
	p.log.Info().Strs("trace_files", written).Int("profiled_steps", len(steps)).Msg("profiler stopped, traces written")
	return nil
}

// State returns the profiler state for tests and operators.
func (p *Profiler) State() ProfilerState {
	p.mu.Lock()
	defer p.mu.Unlock()
	return ProfilerState{
		Enabled: p.dir != "", Dir: p.dir, Active: p.active, Flushing: p.flushing > 0,
		Starts: p.starts, Stops: p.stops, Traces: append([]string{}, p.traces...),
	}
}

// TraceEvent is one Chrome trace event (the format torch.profiler exports).
type TraceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"` // microseconds
	Dur  float64        `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// Trace is the top-level Chrome trace object.
type Trace struct {
	TraceEvents     []TraceEvent `json:"traceEvents"`
	DisplayTimeUnit string       `json:"displayTimeUnit,omitempty"`
}

const (
	tidCPU    = 1 // EngineCore thread
	tidStream = 7 // CUDA stream 7
)

func writeTrace(name string, rank int, started time.Time, steps []StepRecord) error {
	us := func(t time.Time) float64 { return float64(t.UnixNano()) / 1e3 }
	dus := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	ev := []TraceEvent{
		{Name: "process_name", Ph: "M", Pid: rank, Tid: 0, Args: map[string]any{"name": fmt.Sprintf("vllm-sim rank %d", rank)}},
		{Name: "thread_name", Ph: "M", Pid: rank, Tid: tidCPU, Args: map[string]any{"name": "EngineCore"}},
		{Name: "thread_name", Ph: "M", Pid: rank, Tid: tidStream, Args: map[string]any{"name": "stream 7"}},
	}
	for i, s := range steps {
		ts, dur := us(s.Start), dus(s.Duration)
		sched := min(dur*0.03, 500)
		ev = append(ev,
			TraceEvent{Name: "EngineCore.step", Cat: "user_annotation", Ph: "X", Ts: ts, Dur: dur, Pid: rank, Tid: tidCPU, Args: map[string]any{
				"step": i, "scheduled_requests": s.Scheduled, "prefill_tokens": s.PrefillTokens, "decode_tokens": s.DecodeTokens,
				"context_tokens": s.ContextTokens, "preemptions": s.Preemptions, "admitted": s.Admitted, "finished": s.Finished,
				"num_running": s.Running, "num_waiting": s.Waiting, "kv_cache_usage": s.KVUsage,
			}},
			TraceEvent{Name: "Scheduler.schedule", Cat: "cpu_op", Ph: "X", Ts: ts, Dur: sched, Pid: rank, Tid: tidCPU},
			TraceEvent{Name: "GPUModelRunner.execute_model", Cat: "cpu_op", Ph: "X", Ts: ts + sched, Dur: dur - sched, Pid: rank, Tid: tidCPU},
		)
		// GPU side: prefill (compute-bound) then decode attention (memory-bound).
		gpuTs, gpuDur := ts+sched, dur-sched
		total := float64(s.PrefillTokens) + float64(s.ContextTokens)/20 + 1
		pre := gpuDur * float64(s.PrefillTokens) / total
		if s.PrefillTokens > 0 {
			ev = append(ev, TraceEvent{Name: "flash_attn_varlen_fwd (prefill)", Cat: "kernel", Ph: "X", Ts: gpuTs, Dur: pre, Pid: rank, Tid: tidStream,
				Args: map[string]any{"tokens": s.PrefillTokens}})
		}
		ev = append(ev, TraceEvent{Name: "paged_attention (decode)", Cat: "kernel", Ph: "X", Ts: gpuTs + pre, Dur: gpuDur - pre, Pid: rank, Tid: tidStream,
			Args: map[string]any{"decode_tokens": s.DecodeTokens, "context_tokens": s.ContextTokens}})
	}
	ev = append(ev, TraceEvent{Name: "profiler window start", Ph: "i", Ts: us(started), Pid: rank, Tid: tidCPU, Args: map[string]any{"s": "p"}})

	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("create trace: %w", err)
	}
	zw := gzip.NewWriter(f)
	enc := json.NewEncoder(zw)
	if err := enc.Encode(Trace{TraceEvents: ev, DisplayTimeUnit: "ms"}); err != nil {
		f.Close()
		return fmt.Errorf("write trace: %w", err)
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return fmt.Errorf("write trace: %w", err)
	}
	return f.Close()
}
