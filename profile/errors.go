package profile

import (
	"errors"
	"fmt"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/podendpoint"
)

var (
	// ErrUnknownPod: Prometheus has no vLLM series for the pod, so there is no endpoint the
	// responder is allowed to profile.
	ErrUnknownPod = podendpoint.ErrUnknownPod
	// ErrProfilerDisabled: the vLLM server answered 404 on /start_profile.
	ErrProfilerDisabled = errors.New(`profiling is not enabled on this vLLM server; start it with --profiler-config '{"profiler": "torch", "torch_profiler_dir": "/path/to/traces"}' (older versions: VLLM_TORCH_PROFILER_DIR=/path/to/traces)`)
	// ErrProfilerBusy: the vLLM server answered 409 on /start_profile: a profiling session started
	// by someone else (vLLM 0.32 refuses a second start, docs/vllm-facts.md) is active. It is left
	// alone: stopping it would end the other session.
	ErrProfilerBusy = errors.New("a profiling session is already active on this vLLM server, started outside this capture (vLLM answered 409); it was left running: whoever started it must stop it (POST /stop_profile)")
	// ErrCapturesDisabled: profile.enabled is false in the responder's configuration.
	ErrCapturesDisabled = errors.New("profile captures are disabled in the responder's configuration (profile.enabled)")
	// ErrInvalidRequest: the request itself is wrong (pod name, duration).
	ErrInvalidRequest = errors.New("invalid profile request")
	// ErrEndpointNotAllowed: the pod's endpoint is outside profile.allowed_networks.
	ErrEndpointNotAllowed = errors.New("endpoint outside profile.allowed_networks")
	// ErrStopTimeout: /stop_profile did not answer within profile.stop_timeout.
	ErrStopTimeout = errors.New("stop_profile timed out")
	// ErrStartTimeout: /start_profile did not answer within profile.start_timeout.
	ErrStartTimeout = errors.New("start_profile timed out")
)

// BusyError refuses a capture on a pod that another capture holds.
type BusyError struct {
	Pod    string // namespace/pod
	Holder string // who asked for the running capture
	Since  time.Time
}

func (e *BusyError) Error() string {
	if e.Holder == "" {
		return fmt.Sprintf("pod %s is already being profiled", e.Pod)
	}
	return fmt.Sprintf("pod %s is already being profiled by %s since %s (%s ago)",
		e.Pod, e.Holder, e.Since.UTC().Format(time.RFC3339), time.Since(e.Since).Round(time.Second))
}

// CooldownError refuses a capture on a pod that was profiled too recently (profile.cooldown).
type CooldownError struct {
	Pod   string
	Until time.Time
}

func (e *CooldownError) Error() string {
	return fmt.Sprintf("pod %s was profiled recently; next capture allowed at %s (in %s, profile.cooldown)",
		e.Pod, e.Until.UTC().Format(time.RFC3339), time.Until(e.Until).Round(time.Second))
}
