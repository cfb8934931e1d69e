package profile

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/vllm-responder/vllm-responder/internal/secret"
	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
	"github.com/vllm-responder/vllm-responder/store"
)

func TestACaptureStartsWaitsTheWindowStopsAndReports(t *testing.T) {
	vllm := startSim(t, 50*time.Millisecond)
	st := store.NewMemory()
	reg := prometheus.NewRegistry()
	cfg := testConfig()
	cfg.TraceDirHint = "{{.pod}}:" + vllm.Dir
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, Deps{Prometheus: newProm(t, map[string]string{"llm/vllm-0": vllm.Addr}), Store: st, Metrics: NewMetrics(reg), Replica: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := s.Capture(context.Background(), Request{Pod: "vllm-0", Duration: 200 * time.Millisecond, RequestedBy: "alice", Source: "cli"})
	if err != nil {
		t.Fatalf("capture: %v\n%s", err, rep)
	}
	if rep.Result != ResultOK || rep.Namespace != "llm" || rep.RequestedBy != "alice" || rep.Endpoint != "http://"+vllm.Addr {
		t.Fatalf("report = %+v", rep)
	}
	if rep.Profiled < 200*time.Millisecond || rep.StopTook < 50*time.Millisecond {
		t.Fatalf("profiled %s (want >= 200ms), stop took %s (want >= the 50ms flush)", rep.Profiled, rep.StopTook)
	}
	ps := vllm.Prof.State()
	if ps.Active || ps.Starts != 1 || ps.Stops != 1 || len(ps.Traces) != 2 {
		t.Fatalf("profiler state = %+v, want one start, one stop, two rank traces", ps)
	}
	for _, tr := range ps.Traces {
		if filepath.Dir(tr) != vllm.Dir {
			t.Fatalf("trace %s not in %s", tr, vllm.Dir)
		}
	}
	text := rep.String()
	for _, want := range []string{"Profile of pod llm/vllm-0 captured", "requested by alice via cli", "window: 200ms requested", "stop_profile took", "traces: vllm-0:" + vllm.Dir} {
		if !strings.Contains(text, want) {
			t.Errorf("report text lacks %q:\n%s", want, text)
		}
	}
	if recs, err := s.Running(context.Background()); err != nil || len(recs) != 0 {
		t.Fatalf("records after the capture: %v, %v; want none", recs, err)
	}
	if _, err := st.Lock(context.Background(), lockPrefix+"llm/vllm-0", time.Second, store.LockHolder{}); err != nil {
		t.Fatalf("the pod's lock must be released: %v", err)
	}
	if got := counterValue(s.metrics.captures.WithLabelValues(ResultOK)); got != 1 {
		t.Fatalf("captures{result=ok} = %v", got)
	}
	if n := histogramCount(s.metrics.stopDuration); n != 1 {
		t.Fatalf("stop duration histogram: %d observations, want 1", n)
	}
}

func TestStartReturnsBeforeTheWindowAndTheStopFlush(t *testing.T) {
	vllm := startFake(t)
	vllm.stopHang = make(chan struct{})
	s := newService(t, testConfig(), newProm(t, map[string]string{"llm/vllm-0": vllm.Addr}), store.NewMemory(), "r1")
	ch, done := reportChan()
	begin := time.Now()
	if err := s.Start(context.Background(), Request{Pod: "vllm-0", Duration: 300 * time.Millisecond, RequestedBy: "alice"}, done); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(begin); took > 300*time.Millisecond {
		t.Fatalf("Start took %s: it must not wait for the window", took)
	}
	testenv.WaitFor(t, 5*time.Second, "stop_profile to be called", func() bool { _, _, stops := vllm.state(); return stops == 1 })
	select {
	case r := <-ch:
		t.Fatalf("report before the stop finished: %s", r)
	default:
	}
	recs, err := s.Running(context.Background())
	if err != nil || len(recs) != 1 || recs[0].State != StateStopping || recs[0].RequestedBy != "alice" {
		t.Fatalf("running = %+v, %v; want alice's capture stopping", recs, err)
	}
	close(vllm.stopHang)
	if r := waitReport(t, ch, 5*time.Second); r.Result != ResultOK {
		t.Fatalf("report: %s", r)
	}
}

func TestASecondCaptureOnThePodIsRefusedWithTheHolderAndOtherPodsRunInParallel(t *testing.T) {
	vllm := startFake(t)
	vllm.stopHang = make(chan struct{})
	defer close(vllm.stopHang)
	prom := newProm(t, map[string]string{"llm/vllm-0": vllm.Addr, "llm/vllm-1": vllm.Addr})
	addr := testenv.RedisAddr(t)
	prefix := uniquePrefix(t)
	a := newService(t, testConfig(), prom, redisStore(t, addr, prefix), "replica-a")
	b := newService(t, testConfig(), prom, redisStore(t, addr, prefix), "replica-b")

	_, doneA := reportChan()
	before := time.Now()
	if err := a.Start(context.Background(), Request{Pod: "vllm-0", Namespace: "llm", Duration: 2 * time.Second, RequestedBy: "alice"}, doneA); err != nil {
		t.Fatal(err)
	}
	err := b.Start(context.Background(), Request{Pod: "vllm-0", Namespace: "llm", RequestedBy: "bob"}, nil)
	var busy *BusyError
	if !errors.As(err, &busy) {
		t.Fatalf("second start: got %v, want *BusyError", err)
	}
	if busy.Holder != "alice" || busy.Since.Before(before.Add(-time.Second)) || busy.Since.After(time.Now()) || busy.Pod != "llm/vllm-0" {
		t.Fatalf("busy = %+v", busy)
	}
	if !strings.Contains(err.Error(), "pod llm/vllm-0 is already being profiled by alice since") {
		t.Fatalf("message: %v", err)
	}
	if got := counterValue(b.metrics.contention); got != 1 {
		t.Fatalf("lock contention = %v", got)
	}
	if got := counterValue(b.metrics.captures.WithLabelValues(ResultBusy)); got != 1 {
		t.Fatalf("captures{result=busy} = %v", got)
	}
	if err := b.Start(context.Background(), Request{Pod: "vllm-1", Namespace: "llm", Duration: 2 * time.Second, RequestedBy: "bob"}, nil); err != nil {
		t.Fatalf("another pod must be free: %v", err)
	}
	recs, err := a.Running(context.Background())
	if err != nil || len(recs) != 2 {
		t.Fatalf("running = %+v, %v; want both captures", recs, err)
	}
}

func TestCooldownRefusesTheNextCaptureOnThePod(t *testing.T) {
	vllm := startFake(t)
	cfg := testConfig()
	cfg.Cooldown = time.Hour
	s := newService(t, cfg, newProm(t, map[string]string{"llm/vllm-0": vllm.Addr, "llm/vllm-1": vllm.Addr}), store.NewMemory(), "r1")
	if _, err := s.Capture(context.Background(), Request{Pod: "vllm-0", RequestedBy: "alice"}); err != nil {
		t.Fatal(err)
	}
	err := s.Start(context.Background(), Request{Pod: "vllm-0", RequestedBy: "bob"}, nil)
	var cool *CooldownError
	if !errors.As(err, &cool) {
		t.Fatalf("got %v, want *CooldownError", err)
	}
	if d := time.Until(cool.Until); d < 59*time.Minute || d > time.Hour {
		t.Fatalf("cooldown until %s (in %s), want about an hour", cool.Until, d)
	}
	if _, err := s.Capture(context.Background(), Request{Pod: "vllm-1", RequestedBy: "bob"}); err != nil {
		t.Fatalf("another pod has no cooldown: %v", err)
	}
	// The refusal released the lock it took to check.
	if _, err := s.store.Lock(context.Background(), lockPrefix+"llm/vllm-0", time.Second, store.LockHolder{}); err != nil {
		t.Fatalf("lock held after a cooldown refusal: %v", err)
	}
}

func TestAServerWithoutProfilerIsReportedWithTheFlagToSet(t *testing.T) {
	vllm := startFake(t)
	vllm.startCode = 404
	cfg := testConfig()
	cfg.Cooldown = time.Hour
	s := newService(t, cfg, newProm(t, map[string]string{"llm/vllm-0": vllm.Addr}), store.NewMemory(), "r1")
	rep, err := s.Capture(context.Background(), Request{Pod: "vllm-0", RequestedBy: "alice"})
	if !errors.Is(err, ErrProfilerDisabled) || rep.Result != ResultDisabled {
		t.Fatalf("got %v (result %s), want ErrProfilerDisabled", err, rep.Result)
	}
	if !strings.Contains(rep.String(), "profiling is not enabled on this vLLM server; start it with --profiler-config") {
		t.Fatalf("report:\n%s", rep)
	}
	if _, _, stops := vllm.state(); stops != 0 {
		t.Fatalf("%d stops on a server without profiler", stops)
	}
	// No cooldown, no record, no lock: the next try (after enabling it) goes through.
	vllm.mu.Lock()
	vllm.startCode = 0
	vllm.mu.Unlock()
	if _, err := s.Capture(context.Background(), Request{Pod: "vllm-0", RequestedBy: "alice"}); err != nil {
		t.Fatalf("capture after enabling the profiler: %v", err)
	}
}

// vLLM 0.32 answers a start during someone else's session with 409 (docs/vllm-facts.md): the
// capture is refused as busy and that session is not stopped.
func TestAStartRefusedWith409LeavesTheOtherSessionRunning(t *testing.T) {
	vllm := startFake(t)
	vllm.startCode = 409
	s := newService(t, testConfig(), newProm(t, map[string]string{"llm/vllm-0": vllm.Addr}), store.NewMemory(), "r1")
	rep, err := s.Capture(context.Background(), Request{Pod: "vllm-0", RequestedBy: "alice"})
	if !errors.Is(err, ErrProfilerBusy) || rep.Result != ResultBusy {
		t.Fatalf("got %v (result %s), want ErrProfilerBusy", err, rep.Result)
	}
	if !strings.Contains(rep.String(), "already active on this vLLM server") {
		t.Fatalf("report:\n%s", rep)
	}
	if _, _, stops := vllm.state(); stops != 0 {
		t.Fatalf("%d stops: the other session was stopped", stops)
	}
	// No record and no lock left: once the other session ends, a capture goes through.
	vllm.mu.Lock()
	vllm.startCode = 0
	vllm.mu.Unlock()
	if _, err := s.Capture(context.Background(), Request{Pod: "vllm-0", RequestedBy: "alice"}); err != nil {
		t.Fatalf("capture after the other session: %v", err)
	}
}

func TestRequestsThatCannotBeServedAreRefused(t *testing.T) {
	vllm := startFake(t)
	prom := newProm(t, map[string]string{"llm/vllm-0": vllm.Addr, "a/dup": vllm.Addr, "b/dup": "127.0.0.1:1"})
	cfg := testConfig()
	s := newService(t, cfg, prom, store.NewMemory(), "r1")
	for _, tc := range []struct {
		name string
		req  Request
		is   error
		msg  string
	}{
		{"a pod Prometheus does not know", Request{Pod: "vllm-9"}, ErrUnknownPod, `no vllm:num_requests_running series with pod="vllm-9"`},
		{"a pod in the wrong namespace", Request{Pod: "vllm-0", Namespace: "other"}, ErrUnknownPod, `namespace="other"`},
		{"a pod name with PromQL in it", Request{Pod: `x"} or vector(1) #`}, ErrInvalidRequest, "is not a pod name"},
		{"a pod name in two namespaces", Request{Pod: "dup"}, ErrInvalidRequest, "pass the namespace"},
		{"a window over the maximum", Request{Pod: "vllm-0", Duration: 2 * time.Minute}, ErrInvalidRequest, "profile.max_duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Start(context.Background(), tc.req, func(r *Report) { t.Errorf("capture ran: %s", r) })
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want %v containing %q", err, tc.is, tc.msg)
			}
		})
	}
	if got := counterValue(s.metrics.captures.WithLabelValues(ResultUnknownPod)); got != 2 {
		t.Fatalf("captures{result=unknown_pod} = %v", got)
	}
	cfg.Enabled = false
	off := newService(t, cfg, prom, store.NewMemory(), "r1")
	if err := off.Start(context.Background(), Request{Pod: "vllm-0"}, nil); !errors.Is(err, ErrCapturesDisabled) {
		t.Fatalf("disabled: %v", err)
	}
}

func TestPodLabelValuesAreQuotedInPromQL(t *testing.T) {
	got := resolveQuery(vllmnames.Naming{}, "pod", `a"b\c`, "n\ns")
	want := `group by (namespace, instance, model_name) (vllm:num_requests_running{pod="a\"b\\c",namespace="n\ns"})`
	if got != want {
		t.Fatalf("query\n got %s\nwant %s", got, want)
	}
	// A value that lost characters to invalid UTF-8 (U+FFFD in their place) is quoted as the
	// playbooks quote it: Prometheus's lexer refuses U+FFFD raw ("invalid UTF-8 rune").
	got = resolveQuery(vllmnames.Naming{}, "pod", "vllm-\uFFFD", "l\uFFFDm")
	if _, err := parser.NewParser(parser.Options{}).ParseExpr(got); err != nil {
		t.Fatalf("Prometheus would refuse %s: %v", got, err)
	}
	// Renamed metrics, router series excluded, pods named by instance.
	got = resolveQuery(vllmnames.Naming{Prefix: "kserve_vllm:", RouterLabel: "server"}, "instance", "10.0.0.5:8000", "")
	want = `group by (namespace, instance, model_name) (kserve_vllm:num_requests_running{server="",instance="10.0.0.5:8000"})`
	if got != want {
		t.Fatalf("query\n got %s\nwant %s", got, want)
	}
}

func TestEndpointsOutsideTheAllowedNetworksAreRefused(t *testing.T) {
	vllm := startFake(t)
	_, port, _ := strings.Cut(vllm.Addr, ":")
	cfg := testConfig()
	cfg.AllowedNetworks = []string{"10.0.0.0/8"}

	s := newService(t, cfg, newProm(t, map[string]string{"llm/vllm-0": vllm.Addr}), store.NewMemory(), "r1")
	if err := s.Start(context.Background(), Request{Pod: "vllm-0"}, nil); !errors.Is(err, ErrEndpointNotAllowed) {
		t.Fatalf("IP literal outside the allowlist: got %v", err)
	}
	// A name is checked on the address it resolves to, when connecting.
	s2 := newService(t, cfg, newProm(t, map[string]string{"llm/vllm-0": "localhost:" + port}), store.NewMemory(), "r1")
	rep, err := s2.Capture(context.Background(), Request{Pod: "vllm-0"})
	if !errors.Is(err, ErrEndpointNotAllowed) || rep.Result != ResultError {
		t.Fatalf("name resolving outside the allowlist: got %v, %+v", err, rep)
	}
	if _, starts, stops := vllm.state(); starts+stops != 0 {
		t.Fatalf("the server was reached: %d starts, %d stops", starts, stops)
	}
	cfg.AllowedNetworks = []string{"127.0.0.0/8", "::1/128"}
	s3 := newService(t, cfg, newProm(t, map[string]string{"llm/vllm-0": "localhost:" + port}), store.NewMemory(), "r1")
	if _, err := s3.Capture(context.Background(), Request{Pod: "vllm-0"}); err != nil {
		t.Fatalf("inside the allowlist: %v", err)
	}
}

func TestTheBearerTokenIsSentAndNeverLogged(t *testing.T) {
	vllm := startFake(t)
	cfg := testConfig()
	cfg.BearerToken = secret.Secret("s3cr3t-token")
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	s, err := New(cfg, Deps{Prometheus: newProm(t, map[string]string{"llm/vllm-0": vllm.Addr}), Store: store.NewMemory(), Logger: zerologTo(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Capture(context.Background(), Request{Pod: "vllm-0", RequestedBy: "alice"}); err != nil {
		t.Fatal(err)
	}
	vllm.mu.Lock()
	auth := append([]string(nil), vllm.auth...)
	vllm.mu.Unlock()
	if len(auth) != 2 || auth[0] != "Bearer s3cr3t-token" || auth[1] != "Bearer s3cr3t-token" {
		t.Fatalf("authorization headers = %q", auth)
	}
	if strings.Contains(logs.String(), "s3cr3t") || !strings.Contains(logs.String(), `"capture_id"`) {
		t.Fatalf("logs leak the token or lack fields:\n%s", logs.String())
	}
}

func TestAStopThatTimesOutIsReportedKeepsThePodLockedAndTheJanitorRetries(t *testing.T) {
	vllm := startFake(t)
	vllm.stopHang = make(chan struct{})
	cfg := testConfig()
	cfg.StopTimeout = 300 * time.Millisecond
	// The pod stays locked for lock_ttl after the failed stop: 3 s, so that the checks right
	// after the timeout still see it locked on a loaded machine (testConfig's 1 s once lapsed
	// between them), and the janitor retries only once it lapses.
	cfg.LockTTL = 3 * time.Second
	st := store.NewMemory()
	s := newService(t, cfg, newProm(t, map[string]string{"llm/vllm-0": vllm.Addr}), st, "r1")

	rep, err := s.Capture(context.Background(), Request{Pod: "vllm-0", RequestedBy: "alice"})
	if !errors.Is(err, ErrStopTimeout) || rep.Result != ResultStopTimeout {
		t.Fatalf("got %v, result %q; want a stop timeout", err, rep.Result)
	}
	if !strings.Contains(rep.String(), "stop_profile did not finish in time") || !strings.Contains(rep.String(), "a janitor will call stop_profile again") {
		t.Fatalf("report:\n%s", rep)
	}
	var busy *BusyError
	if err := s.Start(context.Background(), Request{Pod: "vllm-0", RequestedBy: "bob"}, nil); !errors.As(err, &busy) || busy.Holder != "alice" {
		t.Fatalf("right after the timeout the pod stays locked: got %v", err)
	}
	recs, _ := s.Running(context.Background())
	if len(recs) != 1 || recs[0].State != StateStopFailed {
		t.Fatalf("records = %+v, want one stop_failed", recs)
	}
	close(vllm.stopHang) // the server answers again
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.RunJanitor(ctx)
	testenv.WaitFor(t, 30*time.Second, "the janitor to stop the profiler again and clear the record", func() bool {
		recs, err := s.Running(context.Background())
		_, _, stops := vllm.state()
		return err == nil && len(recs) == 0 && stops == 2
	})
	if got := counterValue(s.metrics.janitorStops.WithLabelValues("ok")); got != 1 {
		t.Fatalf("janitor stops ok = %v", got)
	}
	if _, err := s.Capture(context.Background(), Request{Pod: "vllm-0", RequestedBy: "bob"}); err != nil {
		t.Fatalf("the pod is free after the janitor: %v", err)
	}
}

func TestAStartThatFailsAmbiguouslyIsStillBracketedByAStop(t *testing.T) {
	vllm := startFake(t)
	vllm.startCode = 500
	s := newService(t, testConfig(), newProm(t, map[string]string{"llm/vllm-0": vllm.Addr}), store.NewMemory(), "r1")
	rep, err := s.Capture(context.Background(), Request{Pod: "vllm-0"})
	if err == nil || rep.Result != ResultError || !strings.Contains(err.Error(), "500") {
		t.Fatalf("got %v, %+v", err, rep)
	}
	if _, _, stops := vllm.state(); stops != 1 {
		t.Fatalf("stops = %d, want 1 (in case the start took effect)", stops)
	}
}

func TestInterruptingACaptureCutsTheWindowButStillStops(t *testing.T) {
	vllm := startSim(t, 0)
	s := newService(t, testConfig(), newProm(t, map[string]string{"llm/vllm-0": vllm.Addr}), store.NewMemory(), "r1")
	ctx, cancel := context.WithCancel(context.Background())
	go func() { // cancel once profiling runs (polling: WaitFor may not fail the test from here)
		defer cancel()
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && !vllm.Prof.State().Active; {
			time.Sleep(10 * time.Millisecond)
		}
	}()
	rep, err := s.Capture(ctx, Request{Pod: "vllm-0", Duration: 30 * time.Second})
	if err != nil || rep.Profiled > 10*time.Second {
		t.Fatalf("got %v, profiled %s", err, rep.Profiled)
	}
	if ps := vllm.Prof.State(); ps.Active || ps.Stops != 1 {
		t.Fatalf("profiler = %+v, want stopped", ps)
	}
	if !strings.Contains(rep.String(), "window cut short: interrupted") {
		t.Fatalf("report:\n%s", rep)
	}
}

func TestShutdownStopsRunningCaptures(t *testing.T) {
	vllm := startSim(t, 0)
	s := newService(t, testConfig(), newProm(t, map[string]string{"llm/vllm-0": vllm.Addr}), store.NewMemory(), "r1")
	ch, done := reportChan()
	if err := s.Start(context.Background(), Request{Pod: "vllm-0", Duration: 30 * time.Second}, done); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 5*time.Second, "profiling to start", func() bool { return vllm.Prof.State().Active })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if vllm.Prof.State().Active {
		t.Fatal("profiling left on after Shutdown")
	}
	if r := waitReport(t, ch, time.Second); r.Result != ResultOK {
		t.Fatalf("report: %s", r)
	}
	if err := s.Start(context.Background(), Request{Pod: "vllm-0"}, nil); err == nil {
		t.Fatal("start accepted after Shutdown")
	}
}

func TestMetricsExistAtZero(t *testing.T) {
	reg := prometheus.NewRegistry()
	NewMetrics(reg)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, mf := range mfs {
		got[mf.GetName()] = len(mf.GetMetric())
	}
	want := map[string]int{
		"vllm_responder_profile_captures_total":        9,
		"vllm_responder_profile_lock_contention_total": 1,
		"vllm_responder_profile_stop_duration_seconds": 1,
		"vllm_responder_profile_janitor_stops_total":   2,
		"vllm_responder_profile_captures_running":      1,
		"vllm_responder_profile_silence_ops_total":     6,
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d series, want %d", k, got[k], n)
		}
	}
}
