package profile

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// RunCLI is `responder profile --pod P [--namespace N] [--duration 10s] [--requested-by NAME]`:
// it runs one capture, waits for it (the stop can take minutes) and prints the report. Exit
// status: 0 captured, 1 refused or failed, 2 usage error. An interrupt cuts the window short;
// the profiler is still stopped before it returns.
func RunCLI(ctx context.Context, svc *Service, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("profile", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pod := fs.String("pod", "", "pod to profile (its vLLM series in Prometheus must carry this pod label)")
	namespace := fs.String("namespace", "", "namespace of the pod (needed when the pod name is not unique)")
	duration := fs.Duration("duration", 0, "profiling window (default: profile.default_duration; at most profile.max_duration)")
	requestedBy := fs.String("requested-by", os.Getenv("USER"), "who asks, for the audit and for whoever is refused meanwhile")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: responder profile --pod POD [--namespace NS] [--duration 10s] [--requested-by NAME]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *pod == "" || fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	req := Request{Pod: *pod, Namespace: *namespace, Duration: *duration, RequestedBy: *requestedBy, Source: "cli"}
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
