package profile

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/silence"
	"github.com/vllm-responder/vllm-responder/store"
)

const amNullConfig = `
route: {receiver: "null"}
receivers: [{name: "null"}]
`

func amClient(t testing.TB, am *testenv.AMServer) *silence.Client {
	t.Helper()
	c, err := silence.New(am.URL, nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func silenceState(t testing.TB, c *silence.Client, id string) silence.State {
	t.Helper()
	st, err := c.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("silence %s: %v", id, err)
	}
	return st
}

// postAlert fires an alert in Alertmanager as Prometheus would.
func postAlert(t testing.TB, am *testenv.AMServer, labels map[string]string) {
	t.Helper()
	b, _ := json.Marshal([]map[string]any{{"labels": labels, "startsAt": time.Now().Add(-time.Minute), "endsAt": time.Now().Add(time.Hour)}})
	resp, err := http.Post(am.URL+"/api/v2/alerts", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("posting an alert: %s", resp.Status)
	}
}

// amAlert is an alert as GET /api/v2/alerts returns it.
type amAlert struct {
	Labels map[string]string `json:"labels"`
	Status struct {
		State      string   `json:"state"`
		SilencedBy []string `json:"silencedBy"`
	} `json:"status"`
}

func amAlerts(t testing.TB, am *testenv.AMServer) []amAlert {
	t.Helper()
	resp, err := http.Get(am.URL + "/api/v2/alerts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []amAlert
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func alertState(alerts []amAlert, alertname, pod string) (string, []string) {
	for _, a := range alerts {
		if a.Labels["alertname"] == alertname && a.Labels["pod"] == pod {
			return a.Status.State, a.Status.SilencedBy
		}
	}
	return "", nil
}

func TestACaptureSilencesThePodsVLLMAlertsInTheRealAlertmanagerUntilItEnds(t *testing.T) {
	am := testenv.Alertmanager(t, amNullConfig)
	amc := amClient(t, am)
	vllm := startSim(t, 500*time.Millisecond)
	cfg := testConfig()
	cfg.DefaultDuration = 2 * time.Second
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, Deps{Prometheus: newProm(t, map[string]string{"llm/vllm-0": vllm.Addr, "llm/vllm-1": "127.0.0.1:1"}),
		Store: store.NewMemory(), Silencer: amc, Replica: "r1", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ch, done := reportChan()
	n, err := s.Begin(context.Background(), Request{Pod: "vllm-0", RequestedBy: "slack:alice (U1)", Source: "slack"}, done)
	if err != nil {
		t.Fatal(err)
	}
	if n.SilenceID == "" || !strings.Contains(n.String(), "Its vLLM alerts are silenced until") || !strings.Contains(n.String(), n.SilenceURL) ||
		!strings.Contains(n.String(), "No flush was measured on this pod yet") || !strings.Contains(n.String(), "stops serving") {
		t.Fatalf("notice: %s", n)
	}
	recs, _ := s.Running(context.Background())
	if len(recs) != 1 || recs[0].SilenceID != n.SilenceID {
		t.Fatalf("records %+v: the silence id must be recorded with the capture", recs)
	}
	sil := silenceState(t, amc, n.SilenceID)
	wantMatchers := []silence.Matcher{
		{Name: "alertname", Value: DefaultSilencedAlerts, IsRegex: true, IsEqual: true},
		{Name: "namespace", Value: "llm", IsEqual: true},
		{Name: "pod", Value: "vllm-0", IsEqual: true},
	}
	slices.SortFunc(sil.Matchers, func(a, b silence.Matcher) int { return strings.Compare(a.Name, b.Name) })
	if sil.Status != silence.StateActive || !slices.Equal(sil.Matchers, wantMatchers) ||
		!strings.Contains(sil.Comment, "capture "+recs[0].ID) || !strings.Contains(sil.Comment, "slack:alice (U1)") {
		t.Fatalf("silence in Alertmanager: %+v", sil)
	}

	// The pod's vLLM alerts are suppressed; its other alerts and the other pods' are not.
	postAlert(t, am, map[string]string{"alertname": "VLLMQueueDepthHigh", "pod": "vllm-0", "namespace": "llm"})
	postAlert(t, am, map[string]string{"alertname": "VLLMQueueDepthHigh", "pod": "vllm-1", "namespace": "llm"})
	postAlert(t, am, map[string]string{"alertname": "KubePodCrashLooping", "pod": "vllm-0", "namespace": "llm"})
	testenv.WaitFor(t, 10*time.Second, "Alertmanager to suppress the captured pod's alert", func() bool {
		st, by := alertState(amAlerts(t, am), "VLLMQueueDepthHigh", "vllm-0")
		return st == "suppressed" && slices.Contains(by, n.SilenceID)
	})
	alerts := amAlerts(t, am)
	if st, _ := alertState(alerts, "VLLMQueueDepthHigh", "vllm-1"); st != "active" {
		t.Errorf("the other pod's alert is %q, want active", st)
	}
	if st, _ := alertState(alerts, "KubePodCrashLooping", "vllm-0"); st != "active" {
		t.Errorf("the pod's non-vLLM alert is %q, want active", st)
	}

	rep := waitReport(t, ch, 30*time.Second)
	if rep.Err != nil || rep.SilenceID == "" {
		t.Fatalf("report: %v\n%s", rep.Err, rep)
	}
	if st := silenceState(t, amc, rep.SilenceID).Status; st != silence.StateExpired {
		t.Fatalf("after the capture the silence is %s, want expired", st)
	}
	if !strings.Contains(rep.String(), "alerts: silenced until") {
		t.Errorf("report:\n%s", rep)
	}

	// The flush just measured is the cost the next requester is told.
	f, ok := s.lastFlush(context.Background(), "llm/vllm-0")
	if !ok || f.Took < 500*time.Millisecond {
		t.Fatalf("measured flush = %+v, %v; want the sim's 500ms flush", f, ok)
	}
	n2, err := s.Begin(context.Background(), Request{Pod: "vllm-0", Duration: 10 * time.Millisecond, RequestedBy: "bob"}, done)
	if err != nil {
		t.Fatal(err)
	}
	if n2.LastFlush != f.Took || !strings.Contains(n2.String(), "The last measured flush on this pod took "+f.Took.Round(time.Millisecond).String()) {
		t.Fatalf("second notice: %s", n2)
	}
	waitReport(t, ch, 30*time.Second)
	for _, op := range []string{silenceCreate, silenceEnd} {
		if got := counterValue(s.metrics.silences.WithLabelValues(op, "ok")); got != 2 {
			t.Errorf("silence ops %s ok = %v, want 2", op, got)
		}
	}
}

func TestAFlushThatOutlastsTheSilenceExtendsIt(t *testing.T) {
	am := testenv.Alertmanager(t, amNullConfig)
	amc := amClient(t, am)
	vllm := startSim(t, 8*time.Second) // far longer than the expected flush of 100ms
	cfg := testConfig()
	cfg.StartTimeout = time.Second
	cfg.StopTimeout = time.Minute
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, Deps{Prometheus: newProm(t, map[string]string{"llm/vllm-0": vllm.Addr}),
		Store: store.NewMemory(), Silencer: amc, Replica: "r1", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ch, done := reportChan()
	n, err := s.Begin(context.Background(), Request{Pod: "vllm-0", RequestedBy: "alice"}, done)
	if err != nil {
		t.Fatal(err)
	}
	planned := n.SilencedUntil
	testenv.WaitFor(t, 20*time.Second, "the flush to outlast the silence first planned", func() bool {
		return vllm.Prof.State().Flushing && time.Now().After(planned.Add(500*time.Millisecond))
	})
	recs, err := s.Running(context.Background())
	if err != nil || len(recs) != 1 {
		t.Fatalf("records %+v, %v", recs, err)
	}
	sil := silenceState(t, amc, recs[0].SilenceID)
	if sil.Status != silence.StateActive || !sil.EndsAt.After(time.Now()) {
		t.Fatalf("during the flush, past its planned end %s, the silence is %+v", planned, sil)
	}
	rep := waitReport(t, ch, time.Minute)
	if rep.Err != nil {
		t.Fatal(rep.Err)
	}
	if st := silenceState(t, amc, rep.SilenceID).Status; st != silence.StateExpired {
		t.Fatalf("after the capture the silence is %s, want expired", st)
	}
}

func TestWithoutAlertmanagerTheRequesterIsToldThePodsAlertsWillFire(t *testing.T) {
	vllm := startSim(t, 0)
	s := newService(t, testConfig(), newProm(t, map[string]string{"llm/vllm-0": vllm.Addr}), store.NewMemory(), "r1")
	ch, done := reportChan()
	n, err := s.Begin(context.Background(), Request{Pod: "vllm-0", RequestedBy: "alice"}, done)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(n.String(), "No alertmanager.url is configured: the pod's alerts will fire during the capture.") {
		t.Fatalf("notice: %s", n)
	}
	rep := waitReport(t, ch, 30*time.Second)
	if !strings.Contains(rep.String(), "alerts: not silenced (no alertmanager.url)") {
		t.Fatalf("report:\n%s", rep)
	}
}

func TestACaptureWhoseSilenceFailsIsRefusedAndLeavesNothingBehind(t *testing.T) {
	vllm := startSim(t, 0)
	amc, err := silence.New("http://127.0.0.1:1", nil, time.Second) // nothing listens
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory()
	cfg := testConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, Deps{Prometheus: newProm(t, map[string]string{"llm/vllm-0": vllm.Addr}), Store: st, Silencer: amc, Replica: "r1", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Start(context.Background(), Request{Pod: "vllm-0", RequestedBy: "alice"}, nil)
	if err == nil || !strings.Contains(err.Error(), "could not be silenced") || resultOf(err) != ResultSilenceFailed {
		t.Fatalf("err = %v", err)
	}
	if ps := vllm.Prof.State(); ps.Starts != 0 {
		t.Fatalf("profiler started without a silence: %+v", ps)
	}
	if recs, _ := s.Running(context.Background()); len(recs) != 0 {
		t.Fatalf("records left: %+v", recs)
	}
	l, err := st.Lock(context.Background(), lockPrefix+"llm/vllm-0", time.Second, store.LockHolder{Name: "x"})
	if err != nil {
		t.Fatalf("the pod's lock was not released: %v", err)
	}
	_ = l.Release(context.Background())
}

func TestTheJanitorExpiresTheSilenceOfAResponderKilledMidCapture(t *testing.T) {
	am := testenv.Alertmanager(t, amNullConfig)
	amc := amClient(t, am)
	vllm := startSim(t, 0)
	redisAddr, prefix := testenv.RedisAddr(t), uniquePrefix(t)
	// The holder expects an hour-long flush: its silence would last an hour on its own.
	holder := startHelper(t, "holder", "PROFILE_TEST_REDIS="+redisAddr, "PROFILE_TEST_PREFIX="+prefix, "PROFILE_TEST_AM="+am.URL,
		"PROFILE_TEST_VLLM="+vllm.Addr, "PROFILE_TEST_NAME=alice", "PROFILE_TEST_WINDOW=1s", "PROFILE_TEST_LOCK_TTL=3s",
		"PROFILE_TEST_EXPECTED_FLUSH=1h")
	line := holder.next(t, 10*time.Second)
	if !strings.HasPrefix(line, "started ") {
		t.Fatalf("holder said %q", line)
	}
	other, err := New(func() Config { c := testConfig(); _ = c.Validate(); return c }(), Deps{
		Prometheus: newProm(t, map[string]string{"llm/vllm-0": vllm.Addr}), Store: redisStore(t, redisAddr, prefix),
		Silencer: amc, Replica: "replica-b", Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	other.grace = 100 * time.Millisecond
	var rec Record
	testenv.WaitFor(t, 10*time.Second, "the holder's record in the profiling state", func() bool {
		recs, err := other.Running(context.Background())
		if err == nil && len(recs) == 1 && recs[0].State == StateProfiling {
			rec = recs[0]
		}
		return rec.ID != ""
	})
	if rec.SilenceID == "" {
		t.Fatalf("record %+v has no silence id", rec)
	}
	sil := silenceState(t, amc, rec.SilenceID)
	if sil.Status != silence.StateActive || time.Until(sil.EndsAt) < 50*time.Minute {
		t.Fatalf("holder's silence: %+v, want active for about an hour", sil)
	}
	if err := holder.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = holder.cmd.Wait()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go other.RunJanitor(ctx)
	testenv.WaitFor(t, 30*time.Second, "the janitor to expire the dead holder's silence", func() bool {
		return silenceState(t, amc, rec.SilenceID).Status == silence.StateExpired
	})
	if vllm.Prof.State().Active {
		t.Fatal("silence expired while the profiler is still on")
	}
	testenv.WaitFor(t, 10*time.Second, "the record to be cleared", func() bool {
		recs, err := other.Running(context.Background())
		return err == nil && len(recs) == 0
	})
	ctxS, cancelS := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelS()
	_ = other.Shutdown(ctxS)
}
