package profile

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
	"github.com/vllm-responder/vllm-responder/sim"
	"github.com/vllm-responder/vllm-responder/store"
)

// staticProm answers the resolve query from a fixed pod -> series table, and fails the test on
// any other query.
type staticProm struct {
	t      testing.TB
	series []model.Metric // each with pod, namespace, instance
	mu     sync.Mutex
	seen   []string
}

func (p *staticProm) Query(_ context.Context, q string, _ time.Time, _ ...v1.Option) (model.Value, v1.Warnings, v1.Infos, error) {
	p.mu.Lock()
	p.seen = append(p.seen, q)
	p.mu.Unlock()
	var vec model.Vector
	for _, m := range p.series {
		if resolveQuery(vllmnames.Naming{}, "pod", string(m["pod"]), string(m["namespace"])) == q || resolveQuery(vllmnames.Naming{}, "pod", string(m["pod"]), "") == q {
			vec = append(vec, &model.Sample{Metric: model.Metric{"namespace": m["namespace"], "instance": m["instance"], "model_name": m["model_name"]}, Value: 1})
		}
	}
	if vec == nil && !strings.HasPrefix(q, "group by (namespace, instance, model_name) (vllm:num_requests_running{pod=") &&
		!strings.HasPrefix(q, "group by (namespace, instance, model_name) (vllm:num_requests_running{instance=") {
		p.t.Errorf("unexpected query %q", q)
	}
	return vec, nil, nil, nil
}

// pods maps "namespace/pod" to the instance of each.
func newProm(t testing.TB, pods map[string]string) *staticProm {
	p := &staticProm{t: t}
	for k, inst := range pods {
		ns, pod, _ := strings.Cut(k, "/")
		p.series = append(p.series, model.Metric{"namespace": model.LabelValue(ns), "pod": model.LabelValue(pod), "instance": model.LabelValue(inst)})
	}
	return p
}

// simVLLM is vllm-sim's HTTP server, profiler on, in this process.
type simVLLM struct {
	Addr string
	Prof *sim.Profiler
	Dir  string
}

func startSim(t testing.TB, flushDelay time.Duration) *simVLLM {
	t.Helper()
	eng, err := sim.NewEngine(sim.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	prof := sim.NewProfiler(dir, flushDelay, 2, zerolog.Nop())
	srv := httptest.NewServer(sim.NewServer(eng, prof, zerolog.Nop()))
	t.Cleanup(srv.Close)
	return &simVLLM{Addr: strings.TrimPrefix(srv.URL, "http://"), Prof: prof, Dir: dir}
}

// fakeVLLM is a vLLM stand-in whose stop can be made to hang, for the failure modes vllm-sim does
// not model. It records every request.
type fakeVLLM struct {
	Addr string
	srv  *httptest.Server

	mu        sync.Mutex
	active    bool
	starts    int
	stops     int
	auth      []string
	startCode int           // 0: 200
	stopHang  chan struct{} // non-nil: stop waits for it (or the client leaving)
}

func startFake(t testing.TB) *fakeVLLM {
	t.Helper()
	f := &fakeVLLM{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /start_profile", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		code := f.startCode
		if code == 0 {
			f.active = true
			f.starts++
			code = 200
		}
		f.mu.Unlock()
		w.WriteHeader(code)
	})
	mux.HandleFunc("POST /stop_profile", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		f.stops++
		f.active = false
		hang := f.stopHang
		f.mu.Unlock()
		if hang != nil {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		}
		w.WriteHeader(200)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("unexpected request %s %s", r.Method, r.URL)
		http.NotFound(w, r)
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	f.Addr = strings.TrimPrefix(f.srv.URL, "http://")
	return f
}

func (f *fakeVLLM) state() (active bool, starts, stops int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.active, f.starts, f.stops
}

// testConfig is a valid config with test-sized durations.
func testConfig() Config {
	var c Config
	c.SetDefaults()
	c.Enabled = true
	c.DefaultDuration = 100 * time.Millisecond
	c.StartTimeout = 2 * time.Second
	c.StopTimeout = 5 * time.Second
	c.Cooldown = 0
	c.LockTTL = time.Second
	c.JanitorInterval = 50 * time.Millisecond
	c.Silence.Margin = 0 // expired as soon as the flush ends
	c.Silence.ExpectedFlush = 100 * time.Millisecond
	return c
}

// redisStore is a Redis store on the test's Redis, in a key namespace of its own.
func redisStore(t testing.TB, addr, prefix string) *store.Redis {
	t.Helper()
	r, err := store.NewRedis("redis://"+addr+"/0", "", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func uniquePrefix(t testing.TB) string {
	return fmt.Sprintf("profiletest-%d-%d:", os.Getpid(), time.Now().UnixNano())
}

func newService(t testing.TB, cfg Config, prom Querier, st store.Store, replica string) *Service {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, Deps{Prometheus: prom, Store: st, Replica: replica, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	s.grace = 100 * time.Millisecond
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return s
}

func testLogger(t testing.TB) zerolog.Logger {
	if testing.Verbose() {
		return zerolog.New(zerolog.NewTestWriter(t)).With().Timestamp().Logger()
	}
	return zerolog.Nop()
}

// waitReport waits for a report from done with a deadline.
func waitReport(t testing.TB, ch <-chan *Report, d time.Duration) *Report {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(d):
		t.Fatalf("no report within %s", d)
		return nil
	}
}

func reportChan() (chan *Report, func(*Report)) {
	ch := make(chan *Report, 4)
	return ch, func(r *Report) { ch <- r }
}

func zerologTo(w *strings.Builder) zerolog.Logger {
	return zerolog.New(&lockedWriter{w: w})
}

type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func collectOne(c prometheus.Collector) *dto.Metric {
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	var m dto.Metric
	if err := (<-ch).Write(&m); err != nil {
		panic(err)
	}
	return &m
}

func counterValue(c prometheus.Collector) float64 {
	m := collectOne(c)
	if m.Counter != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

func histogramCount(h prometheus.Histogram) uint64 {
	return collectOne(h).GetHistogram().GetSampleCount()
}
