package profile

import (
	"fmt"
	"strings"
	"time"
)

// Report is the outcome of one capture: the audit trail (who asked, when, for how long) and where
// the traces are.
type Report struct {
	ID          string
	Pod         string
	Namespace   string
	Endpoint    string
	RequestedBy string
	Source      string
	Replica     string
	RequestedAt time.Time
	// StartedAt is when /start_profile answered; zero when profiling never started.
	StartedAt time.Time
	// Window is what was asked for; Profiled the time between start and stop.
	Window   time.Duration
	Profiled time.Duration
	// StopTook is how long /stop_profile took (the trace flush).
	StopTook time.Duration
	// TraceDir says where the traces are (for the pod's profiler kind); TraceLink is the
	// object-store console page when they go to one.
	TraceDir  string
	TraceLink string
	Kind      string
	// Silenced says an Alertmanager was configured to silence the pod's alerts; SilenceID and
	// SilencedUntil are the silence held (empty: none could be kept) and when it ends.
	Silenced      bool
	SilenceID     string
	SilenceURL    string
	SilencedUntil time.Time
	// Result is one of the Result* constants; Err says why when it is not ResultOK.
	Result string
	Err    error
	// Notes are things the reader should know (the window was cut short, the store was down).
	Notes []string
}

// String is the report for humans (terminal, Slack).
func (r *Report) String() string {
	var b strings.Builder
	pod := podName(r.Namespace, r.Pod)
	switch r.Result {
	case ResultOK:
		fmt.Fprintf(&b, "Profile of pod %s captured.\n", pod)
	case ResultStopTimeout:
		fmt.Fprintf(&b, "Profile of pod %s: stop_profile did not finish in time.\n", pod)
	default:
		fmt.Fprintf(&b, "Profile of pod %s failed (%s).\n", pod, r.Result)
	}
	if r.Err != nil {
		fmt.Fprintf(&b, "  error: %v\n", r.Err)
	}
	fmt.Fprintf(&b, "  requested by %s", orUnknown(r.RequestedBy))
	if r.Source != "" {
		fmt.Fprintf(&b, " via %s", r.Source)
	}
	fmt.Fprintf(&b, " at %s (capture %s, replica %s)\n", r.RequestedAt.UTC().Format(time.RFC3339), r.ID, r.Replica)
	if r.Endpoint != "" {
		fmt.Fprintf(&b, "  endpoint: %s\n", r.Endpoint)
	}
	if r.StartedAt.IsZero() {
		fmt.Fprintf(&b, "  window: %s requested; profiling did not start\n", r.Window)
	} else {
		fmt.Fprintf(&b, "  window: %s requested, profiled %s from %s\n", r.Window, r.Profiled.Round(time.Millisecond), r.StartedAt.UTC().Format(time.RFC3339))
	}
	if r.StopTook > 0 {
		fmt.Fprintf(&b, "  stop_profile took %s (the pod served nothing while the trace was flushed)\n", r.StopTook.Round(time.Millisecond))
	}
	switch {
	case !r.Silenced:
		fmt.Fprintf(&b, "  alerts: not silenced (no alertmanager.url); the pod's alerts may have fired during the capture\n")
	case r.SilenceID != "" && !r.SilencedUntil.IsZero():
		fmt.Fprintf(&b, "  alerts: silenced until %s (silence %s: %s)\n", r.SilencedUntil.UTC().Format(time.RFC3339), r.SilenceID, r.SilenceURL)
	}
	if r.Result == ResultOK && r.TraceDir != "" {
		fmt.Fprintf(&b, "  traces: %s\n", r.TraceDir)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	return b.String()
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// String is the record on one line, for /vllm status.
func (r Record) String() string {
	since := r.RequestedAt
	if !r.StartedAt.IsZero() {
		since = r.StartedAt
	}
	s := fmt.Sprintf("%s: %s for %s since %s (window %s, capture %s on %s)",
		podName(r.Namespace, r.Pod), r.State, orUnknown(r.RequestedBy), since.UTC().Format(time.RFC3339), r.Window, r.ID, r.Replica)
	if r.SilenceID != "" {
		s += fmt.Sprintf("; its alerts silenced until %s (silence %s)", r.SilencedUntil.UTC().Format(time.RFC3339), r.SilenceID)
	}
	if r.LastError != "" {
		s += "; last error: " + r.LastError
	}
	return s
}
