package profile

import (
	"context"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/store"
)

func TestTheCLIRunsACaptureAndPrintsTheReport(t *testing.T) {
	vllm := startSim(t, 0)
	fake := startFake(t)
	fake.startCode = 404
	st := store.NewMemory()
	s := newService(t, testConfig(), newProm(t, map[string]string{"llm/vllm-0": vllm.Addr, "llm/nopro": fake.Addr}), st, "r1")
	t.Setenv("USER", "carol")

	run := func(args ...string) (int, string, string) {
		var out, errb strings.Builder
		fs := flag.NewFlagSet("profile", flag.ContinueOnError)
		var f CLIFlags
		f.Register(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		code := RunCLI(context.Background(), s, f, &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, errOut := run("--pod", "vllm-0", "--duration", "50ms")
	if code != 0 || !strings.Contains(out, "Profile of pod llm/vllm-0 captured") || !strings.Contains(out, "requested by carol via cli") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.HasPrefix(out, "Cost: pod llm/vllm-0 stops serving while vLLM flushes the trace") ||
		!strings.Contains(out, "No alertmanager.url is configured: the pod's alerts will fire during the capture.") {
		t.Fatalf("the answer does not start with the cost:\n%s", out)
	}
	if !strings.Contains(errOut, "profiling pod vllm-0 for 50ms") {
		t.Fatalf("stderr: %s", errOut)
	}

	code, out, _ = run("--pod", "nopro", "--requested-by", "dave")
	if code != 1 || !strings.Contains(out, "--profiler-config") || !strings.Contains(out, "requested by dave") {
		t.Fatalf("server without profiler: exit %d\n%s", code, out)
	}

	l, err := st.Lock(context.Background(), lockPrefix+"llm/vllm-0", time.Minute, store.LockHolder{Name: "erin", Since: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(context.Background())
	code, out, errOut = run("--pod", "vllm-0")
	if code != 1 || out != "" || !strings.Contains(errOut, "profile: pod llm/vllm-0 is already being profiled by erin since") {
		t.Fatalf("busy: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

func TestReportTextForFailures(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	r := &Report{
		ID: "abc", Pod: "vllm-0", Namespace: "llm", Endpoint: "http://10.0.0.1:8000", RequestedBy: "alice", Source: "slack",
		Replica: "r1", RequestedAt: at, StartedAt: at.Add(time.Second), Window: 10 * time.Second, Profiled: 10 * time.Second,
		StopTook: 15 * time.Minute, Result: ResultStopTimeout, Err: errors.New("stop_profile did not answer within profile.stop_timeout 15m0s"),
		Notes:    []string{"the pod stays locked until profile.lock_ttl (1m0s) lapses; a janitor will call stop_profile again"},
		Silenced: true, SilenceID: "s-1", SilenceURL: "http://am:9093/#/silences/s-1", SilencedUntil: at.Add(20 * time.Minute),
	}
	want := `Profile of pod llm/vllm-0: stop_profile did not finish in time.
  error: stop_profile did not answer within profile.stop_timeout 15m0s
  requested by alice via slack at 2026-03-04T05:06:07Z (capture abc, replica r1)
  endpoint: http://10.0.0.1:8000
  window: 10s requested, profiled 10s from 2026-03-04T05:06:08Z
  stop_profile took 15m0s (the pod served nothing while the trace was flushed)
  alerts: silenced until 2026-03-04T05:26:07Z (silence s-1: http://am:9093/#/silences/s-1)
  note: the pod stays locked until profile.lock_ttl (1m0s) lapses; a janitor will call stop_profile again
`
	if got := r.String(); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	r = &Report{Pod: "vllm-0", RequestedAt: at, Window: time.Second, Result: ResultDisabled, Err: ErrProfilerDisabled, ID: "x", Replica: "r"}
	if got := r.String(); !strings.Contains(got, "failed (disabled)") || !strings.Contains(got, "profiling did not start") || !strings.Contains(got, "requested by unknown") ||
		!strings.Contains(got, "alerts: not silenced (no alertmanager.url)") {
		t.Fatalf("got:\n%s", got)
	}
}

func TestARecordPrintsOnOneLine(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	r := Record{ID: "abc", Pod: "vllm-0", Namespace: "llm", RequestedBy: "alice", Replica: "r1", RequestedAt: at, StartedAt: at.Add(time.Second), Window: 10 * time.Second, State: StateProfiling}
	want := "llm/vllm-0: profiling for alice since 2026-03-04T05:06:08Z (window 10s, capture abc on r1)"
	if got := r.String(); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	r.SilenceID, r.SilencedUntil = "s-1", at.Add(10*time.Minute)
	want += "; its alerts silenced until 2026-03-04T05:16:07Z (silence s-1)"
	if got := r.String(); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
