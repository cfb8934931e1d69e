package profile

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

// CLIFlags are the flags of `responder profile` that this package reads. The command defines
// them on its own flag set (beside its --config) with Register and parses that set once.
type CLIFlags struct {
	Pod, Namespace, RequestedBy string
	Duration                    time.Duration
}

// CLIUsage is the usage line of `responder profile`.
const CLIUsage = "usage: responder profile --config FILE --pod POD [--namespace NS] [--duration 10s] [--requested-by NAME]"

// Register defines the flags on fs.
func (f *CLIFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Pod, "pod", "", "pod to profile (its vLLM series in Prometheus must carry this pod label)")
	fs.StringVar(&f.Namespace, "namespace", "", "namespace of the pod (needed when the pod name is not unique)")
	fs.DurationVar(&f.Duration, "duration", 0, "profiling window (default: profile.default_duration; at most profile.max_duration)")
	fs.StringVar(&f.RequestedBy, "requested-by", os.Getenv("USER"), "who asks, for the audit and for whoever is refused meanwhile")
}

// RunCLI is `responder profile` once its flags are parsed (f.Pod set): it runs one capture,
// waits for it (the stop can take minutes) and prints the report. Exit status: 0 captured, 1
// refused or failed. An interrupt cuts the window short; the profiler is still stopped before
// it returns.
func RunCLI(ctx context.Context, svc *Service, f CLIFlags, stdout, stderr io.Writer) int {
	req := Request{Pod: f.Pod, Namespace: f.Namespace, Duration: f.Duration, RequestedBy: f.RequestedBy, Source: "cli"}
	w := req.Duration
	if w == 0 {
		w = svc.cfg.DefaultDuration
	}
	fmt.Fprintf(stderr, "profiling pod %s for %s, then waiting for stop_profile to flush the traces (at most %s)...\n",
		podName(req.Namespace, req.Pod), w, svc.cfg.StopTimeout)
	rep, err := svc.capture(ctx, req, func(n Notice) { fmt.Fprintln(stdout, n.String()) })
	if rep == nil {
		fmt.Fprintf(stderr, "profile: %v\n", err)
		return 1
	}
	fmt.Fprint(stdout, rep.String())
	if err != nil {
		return 1
	}
	return 0
}
