package evidence

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/traces"
)

// TraceFinder finds the slowest traced requests of an alert's scope (*traces.Client). Slowest
// always returns a report; its Error says why it holds no requests when the lookup failed.
type TraceFinder interface {
	Slowest(ctx context.Context, labels map[string]string, start, end time.Time) (*traces.Report, error)
	// Timeout is the lookup's own deadline, within the run's.
	Timeout() time.Duration
}

// Trace lookup results for metrics: a small fixed set.
const (
	TracesFound   = "found"   // slowest requests listed
	TracesNone    = "none"    // Jaeger answered, no traced request matched
	TracesFailed  = "failed"  // Jaeger unreachable or refused, or the service could not be named
	TracesTimeout = "timeout" // the run's deadline passed first
)

// TraceObserver, when the Observer implements it too, receives one observation per trace lookup.
type TraceObserver interface {
	ObserveTraceLookup(result string)
}

// lookupTraces starts the trace lookup of a run, concurrently with its queries, under its own
// deadline (and the run's). The channel yields the report, nil when traces are off.
func (e *Engine) lookupTraces(ctx context.Context, p *playbooks.Playbook, labels map[string]string, at time.Time) <-chan *traces.Report {
	ch := make(chan *traces.Report, 1)
	if e.opt.Traces == nil {
		ch <- nil
		return ch
	}
	go func() {
		tctx, cancel := context.WithTimeoutCause(ctx, e.opt.Traces.Timeout(), errors.New("traces lookup deadline exceeded"))
		defer cancel()
		rep, err := e.opt.Traces.Slowest(tctx, labels, at.Add(-p.Window), at)
		if err != nil {
			e.opt.Logger.Warn().Err(err).Str("playbook", p.Name).Msg("slowest requests from traces not available")
		}
		ch <- rep
	}()
	return ch
}

// waitTraces waits for the lookup, never past the run's deadline, and notes why the diagnosis
// has no slowest requests when it has none.
func (e *Engine) waitTraces(ctx context.Context, ch <-chan *traces.Report) (rep *traces.Report, note string) {
	result := TracesFound
	select {
	case rep = <-ch:
	case <-ctx.Done():
		note = "slowest requests from traces: not available, the diagnosis deadline passed first"
		rep = &traces.Report{Operation: traces.Operation, Requests: []traces.Request{}, Error: "the diagnosis deadline passed before Jaeger answered"}
		result = TracesTimeout
	}
	switch {
	case rep == nil:
		return nil, ""
	case result == TracesTimeout:
	case rep.Error != "":
		note = "slowest requests from traces: not available, " + rep.Error
		result = TracesFailed
	case len(rep.Requests) == 0:
		note = "slowest requests from traces: none found; " + rep.Summary
		result = TracesNone
	}
	if o, ok := e.opt.Observer.(TraceObserver); ok {
		o.ObserveTraceLookup(result)
	}
	return rep, note
}

// markUntraced is rep with the requests of the window that ended untraced (the gate's `untraced`:
// a first token and no finish, absent under untraced_min; counted down, never up) counted in it (traces.Report.MarkUntraced), so that its list is
// said to be of the slowest traced requests; rep itself when there are none, or no list.
func markUntraced(rep *traces.Report, untraced *float64) *traces.Report {
	if rep == nil || rep.Error != "" || untraced == nil || *untraced < 1 {
		return rep
	}
	c := *rep
	c.MarkUntraced(int(math.Floor(*untraced)))
	return &c
}
