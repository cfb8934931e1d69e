package probe

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/internal/podendpoint"
	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/sim"
	"github.com/vllm-responder/vllm-responder/store"
)

// pod is a vllm-sim server in this process, scraped by the test's Prometheus as pod name in
// namespace llm.
type pod struct {
	name string
	eng  *sim.Engine
	addr string
}

func startPod(t *testing.T, name, scenario string) *pod {
	t.Helper()
	eng, err := sim.NewEngine(sim.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	sc, err := sim.LookupScenario(scenario)
	if err != nil {
		t.Fatal(err)
	}
	eng.SetScenario(sc, true, time.Now())
	ctx, cancel := context.WithCancel(context.Background())
	go eng.Run(ctx)
	srv := httptest.NewServer(sim.NewServer(eng, nil, zerolog.Nop()))
	t.Cleanup(func() { srv.Close(); cancel() })
	return &pod{name: name, eng: eng, addr: strings.TrimPrefix(srv.URL, "http://")}
}

// setup starts a Prometheus scraping the pods and returns a Prober on it and a Redis store.
func setup(t *testing.T, cfg Config, pods ...*pod) (*Prober, store.Store, *prometheus.Registry) {
	t.Helper()
	var targets []testenv.Target
	for _, p := range pods {
		targets = append(targets, testenv.Target{Addr: p.addr, Labels: map[string]string{"pod": p.name, "namespace": "llm"}})
	}
	prom := testenv.Prometheus(t, testenv.PromOptions{ScrapeInterval: 200 * time.Millisecond, ScrapeTargets: targets})
	client, err := api.NewClient(api.Config{Address: prom.URL})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.NewRedis("redis://"+testenv.RedisAddr(t)+"/0", "", fmt.Sprintf("probetest-%d-%d:", os.Getpid(), time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	reg := prometheus.NewRegistry()
	cfg.SetDefaults()
	p, err := New(cfg, Deps{Prometheus: v1.NewAPI(client), Store: st, Metrics: NewMetrics(reg)})
	if err != nil {
		t.Fatal(err)
	}
	res := podendpoint.Resolver{Prom: v1.NewAPI(client), URL: p.cfg.urlTmpl, URLKey: "probe.url_template", NotAllowed: ErrEndpointNotAllowed}
	testenv.WaitFor(t, 20*time.Second, "Prometheus to scrape every pod", func() bool {
		for _, q := range pods {
			if _, err := res.Resolve(context.Background(), q.name, "llm"); err != nil {
				return false
			}
		}
		return true
	})
	return p, st, reg
}

// A hung engine core (SIGSTOP's stand-in: every series frozen, /health 200) never answers: the
// probe times out. A busy but healthy pod (a wide batch) answers within its timeout.
func TestAHungEngineTimesOutAndABusyOneAnswers(t *testing.T) {
	hung := startPod(t, "vllm-hung", "healthy")
	busy := startPod(t, "vllm-busy", "wide-batch")
	p, _, reg := setup(t, Config{Enabled: true, Timeout: 2 * time.Second, MinInterval: time.Minute}, hung, busy)
	hung.eng.Hang(time.Now(), 0)
	defer hung.eng.Release()

	r := p.Probe(context.Background(), "vllm-hung", "llm")
	if r.Outcome != OutcomeTimedOut || !r.Stalled() || r.Text() != "a 1-token request timed out after 2 s" {
		t.Errorf("hung pod: %+v (%q)", r, r.Text())
	}
	if r.Pod != "llm/vllm-hung" || r.Endpoint != hung.addr {
		t.Errorf("probed %s at %s, want llm/vllm-hung at %s", r.Pod, r.Endpoint, hung.addr)
	}
	testenv.WaitFor(t, 10*time.Second, "the busy pod's batch to widen", func() bool { return busy.eng.Stats().Running >= 50 })
	r = p.Probe(context.Background(), "vllm-busy", "llm")
	if r.Outcome != OutcomeAnswered || r.Stalled() || !strings.HasSuffix(r.Text(), ": not a stall") || r.Took <= 0 || r.Took >= 2*time.Second {
		t.Errorf("busy pod (%d running): %+v (%q)", busy.eng.Stats().Running, r, r.Text())
	}
	got := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{OutcomeAnswered: 1, OutcomeTimedOut: 1, OutcomeFailed: 0, OutcomeSkipped: 0, OutcomeRecent: 0}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("vllm_responder_probes_total by outcome: %v, want %v (every outcome from the start)", got, want)
	}
}

// Within min_interval the pod is not probed again: the last result is shown, with its age, to
// every replica sharing the store.
func TestAPodIsProbedOncePerInterval(t *testing.T) {
	busy := startPod(t, "vllm-0", "healthy")
	p, st, _ := setup(t, Config{Enabled: true, Timeout: 2 * time.Second, MinInterval: time.Minute}, busy)
	first := p.Probe(context.Background(), "vllm-0", "llm")
	if first.Outcome != OutcomeAnswered {
		t.Fatalf("first probe: %+v", first)
	}
	other, err := New(p.cfg, Deps{Prometheus: p.prom, Store: st}) // another replica, the same store
	if err != nil {
		t.Fatal(err)
	}
	again := other.Probe(context.Background(), "vllm-0", "llm")
	if again.Outcome != OutcomeRecent || again.Previous == nil || again.Previous.Outcome != OutcomeAnswered || again.Stalled() {
		t.Fatalf("second probe within min_interval: %+v", again)
	}
	if !strings.HasPrefix(again.Text(), "probed just now: a 1-token request answered in ") {
		t.Errorf("text %q", again.Text())
	}
}

// Never beside a profile capture (its stop stalls the engine: a probe then proves nothing) nor
// another probe: the pod's lock is the capture's. Never on an engine paused on purpose.
func TestAProbeIsNotSentWhileThePodIsHeldOrPaused(t *testing.T) {
	held := startPod(t, "vllm-held", "healthy")
	asleep := startPod(t, "vllm-asleep", "healthy")
	p, st, _ := setup(t, Config{Enabled: true, Timeout: 2 * time.Second, MinInterval: time.Minute}, held, asleep)

	lock, err := st.Lock(context.Background(), podendpoint.LockPrefix+"llm/vllm-held", time.Minute, store.LockHolder{Name: "alice", Since: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	r := p.Probe(context.Background(), "vllm-held", "llm")
	if r.Outcome != OutcomeSkipped || r.Sent() || !strings.Contains(r.Detail, "alice holds the pod") {
		t.Errorf("a held pod: %+v", r)
	}
	if err := lock.Release(context.Background()); err != nil {
		t.Fatal(err)
	}

	asleep.eng.Sleep(time.Now(), 1, "abort")
	tg, err := p.res.Resolve(context.Background(), "vllm-asleep", "llm")
	if err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 20*time.Second, "Prometheus to see the engine asleep", func() bool {
		why, err := p.paused(context.Background(), tg)
		return err == nil && why == "asleep"
	})
	before := asleep.eng.Stats().Connections
	r = p.Probe(context.Background(), "vllm-asleep", "llm")
	if r.Outcome != OutcomeSkipped || !strings.Contains(r.Detail, "paused on purpose (asleep)") || r.Sent() {
		t.Errorf("an engine asleep: %+v", r)
	}
	if c := asleep.eng.Stats().Connections; c != before {
		t.Errorf("connections to the sleeping pod went from %d to %d: the probe was sent", before, c)
	}

	if r := p.Probe(context.Background(), "vllm-9", "llm"); r.Outcome != OutcomeSkipped || !strings.Contains(r.Detail, "pod unknown to Prometheus") {
		t.Errorf("a pod Prometheus does not scrape: %+v", r)
	}
	if r := p.Probe(context.Background(), "vllm 0; drop", ""); r.Outcome != OutcomeSkipped || !strings.Contains(r.Detail, "is not a pod name") {
		t.Errorf("a name that is no pod's: %+v", r)
	}
}

// The allowlist is checked before anything is sent.
func TestAnEndpointOutsideTheAllowedNetworksIsNotProbed(t *testing.T) {
	pd := startPod(t, "vllm-0", "healthy")
	p, _, _ := setup(t, Config{Enabled: true, Timeout: 2 * time.Second, MinInterval: time.Minute, AllowedNetworks: []string{"10.0.0.0/8"}}, pd)
	r := p.Probe(context.Background(), "vllm-0", "llm")
	if r.Outcome != OutcomeSkipped || !strings.Contains(r.Detail, "endpoint outside probe.allowed_networks: 127.0.0.1") {
		t.Errorf("%+v", r)
	}
}

func TestResultTexts(t *testing.T) {
	at := time.Date(2026, 9, 1, 3, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		r    Result
		want string
	}{
		{Result{Outcome: OutcomeAnswered, Took: 40 * time.Millisecond}, "a 1-token request answered in 40 ms: not a stall"},
		{Result{Outcome: OutcomeAnswered, Took: 1234 * time.Millisecond}, "a 1-token request answered in 1.2 s: not a stall"},
		{Result{Outcome: OutcomeTimedOut, Timeout: 5 * time.Second}, "a 1-token request timed out after 5 s"},
		{Result{Outcome: OutcomeFailed, Detail: "HTTP 503 Service Unavailable"}, "a 1-token request failed (HTTP 503 Service Unavailable): no proof either way"},
		{Result{Outcome: OutcomeSkipped, Detail: "the store is unavailable"}, "not sent: the store is unavailable"},
		{Result{Outcome: OutcomeRecent, At: at, Previous: &Result{Outcome: OutcomeTimedOut, Timeout: 5 * time.Second, At: at.Add(-12 * time.Second)}},
			"probed 12 s ago: a 1-token request timed out after 5 s"},
	} {
		if got := tc.r.Text(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.r, got, tc.want)
		}
	}
}
