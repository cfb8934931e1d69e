package sim

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// vLLM runs stop_profile inside the engine core's busy loop: while the traces are written,
// the engine makes no step. So does the sim.
func TestStopProfileStallsTheEngineLoopForTheWholeFlush(t *testing.T) {
	e, err := NewEngine(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	prof := NewProfiler(t.TempDir(), 2*time.Second, 1, zerolog.Nop())
	prof.AttachEngine(e)
	var steps, stalledSteps atomic.Int64
	e.SetStepObserver(func(s StepRecord) {
		prof.Record(s)
		steps.Add(1)
		if prof.State().Flushing {
			stalledSteps.Add(1)
		}
	})
	e.SetScenario(Scenarios["healthy"], false, time.Now())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.Run(ctx)
	waitFor(t, 30*time.Second, "the engine to serve", func() bool { return steps.Load() > 20 })

	prof.Start(time.Now())
	waitFor(t, 30*time.Second, "steps to be profiled", func() bool { return steps.Load() > 40 })
	before := steps.Load()
	start := time.Now()
	if err := prof.Stop(context.Background(), time.Now()); err != nil {
		t.Fatal(err)
	}
	flush := time.Since(start)
	// At most the step already in flight when the stop began; a serving engine makes a step
	// every few milliseconds, so a 2s flush without the stall would show hundreds.
	if n := stalledSteps.Load(); n > 1 {
		t.Fatalf("%d engine steps ran during the %s flush; want none", n, flush.Round(time.Millisecond))
	}
	if flush < 2*time.Second {
		t.Fatalf("the flush took %s, want the configured 2s", flush)
	}
	waitFor(t, 30*time.Second, "the engine to step again after the flush", func() bool { return steps.Load() > before+20 })
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
