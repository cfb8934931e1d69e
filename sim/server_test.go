package sim

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"
)

func gatherNames(t *testing.T, e *Engine) map[string]dto.MetricType {
	t.Helper()
	v := &vclock{t: t, e: e, now: epoch}
	return v.snap().types
}

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		name    string
		names   MetricNames
		present []string
		absent  []string
	}{
		{
			name:  "current names are exported by default",
			names: NamesNew,
			present: []string{"vllm:kv_cache_usage_perc", "vllm:inter_token_latency_seconds", "vllm:request_time_per_output_token_seconds",
				"vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total"},
			absent: []string{"vllm:gpu_cache_usage_perc", "vllm:time_per_output_token_seconds", "vllm:gpu_prefix_cache_queries_total", "vllm:gpu_prefix_cache_hits_total"},
		},
		{
			name:    "legacy names replace them with --metric-names=legacy",
			names:   NamesLegacy,
			present: []string{"vllm:gpu_cache_usage_perc", "vllm:time_per_output_token_seconds", "vllm:gpu_prefix_cache_queries_total", "vllm:gpu_prefix_cache_hits_total"},
			absent:  []string{"vllm:kv_cache_usage_perc", "vllm:inter_token_latency_seconds", "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total"},
		},
		{
			name:  "old and new names at once with --metric-names=both, as 0.9.2 to 0.11",
			names: NamesBoth,
			present: []string{"vllm:gpu_cache_usage_perc", "vllm:time_per_output_token_seconds", "vllm:gpu_prefix_cache_queries_total", "vllm:gpu_prefix_cache_hits_total",
				"vllm:kv_cache_usage_perc", "vllm:inter_token_latency_seconds", "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.MetricNames = tc.names
			e, err := NewEngine(cfg)
			if err != nil {
				t.Fatal(err)
			}
			names := gatherNames(t, e)
			for _, n := range tc.present {
				if _, ok := names[n]; !ok {
					t.Errorf("%s missing", n)
				}
			}
			for _, n := range tc.absent {
				if _, ok := names[n]; ok {
					t.Errorf("%s should not be exported", n)
				}
			}
		})
	}
}

// wantFamilies are the names, types and bucket boundaries vLLM exports (vllm/v1/metrics/loggers.py;
// internal/realvllm compares vllm-sim with a real vLLM family by family).
var wantFamilies = map[string]struct {
	typ     dto.MetricType
	buckets []float64
}{
	"vllm:num_requests_running":                  {dto.MetricType_GAUGE, nil},
	"vllm:num_requests_waiting":                  {dto.MetricType_GAUGE, nil},
	"vllm:num_requests_waiting_by_reason":        {dto.MetricType_GAUGE, nil},
	"vllm:kv_cache_usage_perc":                   {dto.MetricType_GAUGE, nil},
	"vllm:cache_config_info":                     {dto.MetricType_GAUGE, nil},
	"vllm:num_preemptions_total":                 {dto.MetricType_COUNTER, nil},
	"vllm:request_success_total":                 {dto.MetricType_COUNTER, nil},
	"vllm:prompt_tokens_total":                   {dto.MetricType_COUNTER, nil},
	"vllm:generation_tokens_total":               {dto.MetricType_COUNTER, nil},
	"vllm:prefix_cache_queries_total":            {dto.MetricType_COUNTER, nil},
	"vllm:prefix_cache_hits_total":               {dto.MetricType_COUNTER, nil},
	"vllm:time_to_first_token_seconds":           {dto.MetricType_HISTOGRAM, []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}},
	"vllm:inter_token_latency_seconds":           {dto.MetricType_HISTOGRAM, []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}},
	"vllm:request_time_per_output_token_seconds": {dto.MetricType_HISTOGRAM, []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}},
	"vllm:e2e_request_latency_seconds":           {dto.MetricType_HISTOGRAM, phaseBuckets},
	"vllm:request_queue_time_seconds":            {dto.MetricType_HISTOGRAM, phaseBuckets},
	"vllm:request_prefill_time_seconds":          {dto.MetricType_HISTOGRAM, phaseBuckets},
	"vllm:request_decode_time_seconds":           {dto.MetricType_HISTOGRAM, phaseBuckets},
	"vllm:request_inference_time_seconds":        {dto.MetricType_HISTOGRAM, phaseBuckets},
	"vllm:request_prompt_tokens":                 {dto.MetricType_HISTOGRAM, []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000}},
	"vllm:request_generation_tokens":             {dto.MetricType_HISTOGRAM, []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000}},
	"vllm:iteration_tokens_total":                {dto.MetricType_HISTOGRAM, []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}},
}

var phaseBuckets = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}

// startServer runs the real HTTP server on a loopback port with the engine
// driven in real time.
func startServer(t *testing.T, cfg Config, scenario string, prof *Profiler) (string, *Engine) {
	t.Helper()
	e, err := NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := LookupScenario(scenario)
	e.SetScenario(sc, true, time.Now())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: NewServer(e, prof, zerolog.Nop())}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.Run(ctx) }()
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		cancel()
		_ = hs.Close()
		<-done
	})
	return "http://" + ln.Addr().String(), e
}

func TestRealServerExportsVLLMMetricsOverHTTP(t *testing.T) {
	url, e := startServer(t, DefaultConfig(), "healthy", nil)

	// Wait (polling, with a deadline) until the engine has finished requests,
	// so the histograms have samples.
	deadline := time.Now().Add(20 * time.Second)
	var fams map[string]*dto.MetricFamily
	for {
		resp, err := http.Get(url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err = p.TextToMetricFamilies(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("parse /metrics: %v", err)
		}
		if e2e := fams["vllm:e2e_request_latency_seconds"]; e2e != nil && e2e.GetMetric()[0].GetHistogram().GetSampleCount() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no request finished within 20s")
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-t.Context().Done():
			return
		}
	}
	_ = e
	for name, want := range wantFamilies {
		f := fams[name]
		if f == nil {
			t.Errorf("%s missing from /metrics", name)
			continue
		}
		if f.GetType() != want.typ {
			t.Errorf("%s has type %v, want %v", name, f.GetType(), want.typ)
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if name == "vllm:cache_config_info" {
				if _, ok := labels["model_name"]; ok {
					t.Errorf("cache_config_info must not carry model_name")
				}
				for _, k := range []string{"block_size", "num_gpu_blocks", "gpu_memory_utilization"} {
					if labels[k] == "" {
						t.Errorf("cache_config_info lacks label %s", k)
					}
				}
				if labels["num_gpu_blocks"] != "14000" || labels["block_size"] != "16" {
					t.Errorf("cache_config_info labels %v", labels)
				}
				continue
			}
			if labels["model_name"] != "meta-llama/Llama-3.1-8B-Instruct" || labels["engine"] != "0" {
				t.Errorf("%s labels %v lack model_name/engine", name, labels)
			}
			if name == "vllm:request_success_total" && !slices.Contains([]string{"stop", "length", "abort", "error", "repetition"}, labels["finished_reason"]) {
				t.Errorf("unexpected finished_reason %q", labels["finished_reason"])
			}
			if want.buckets != nil {
				var got []float64
				for _, b := range m.GetHistogram().GetBucket() {
					got = append(got, b.GetUpperBound())
				}
				// The text format carries +Inf as a last bucket.
				if n := len(got); n > 0 && got[n-1] > 1e300 {
					got = got[:n-1]
				}
				if !slices.Equal(got, want.buckets) {
					t.Errorf("%s buckets %v, want %v", name, got, want.buckets)
				}
			}
		}
	}
	reasons := map[string]bool{}
	for _, m := range fams["vllm:request_success_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "finished_reason" {
				reasons[l.GetValue()] = true
			}
		}
	}
	for _, r := range []string{"stop", "length", "abort", "error", "repetition"} {
		if !reasons[r] {
			t.Errorf("request_success_total{finished_reason=%q} should exist from the start", r)
		}
	}
}

func TestHTTPSurface(t *testing.T) {
	url, e := startServer(t, DefaultConfig(), "idle", nil)
	get := func(path string) (int, string) {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	post := func(path, body string) (int, string) {
		resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	t.Run("health answers 200", func(t *testing.T) {
		if code, _ := get("/health"); code != 200 {
			t.Fatalf("status %d", code)
		}
	})
	t.Run("models lists the served model", func(t *testing.T) {
		code, body := get("/v1/models")
		if code != 200 || !strings.Contains(body, `"id":"meta-llama/Llama-3.1-8B-Instruct"`) {
			t.Fatalf("status %d body %s", code, body)
		}
	})
	t.Run("a completion runs through the engine and is counted", func(t *testing.T) {
		code, body := post("/v1/completions", `{"model":"meta-llama/Llama-3.1-8B-Instruct","prompt":"Say hello to the on-call engineer","max_tokens":5}`)
		if code != 200 {
			t.Fatalf("status %d body %s", code, body)
		}
		var out struct {
			Choices []struct {
				FinishReason string `json:"finish_reason"`
			}
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			t.Fatal(err)
		}
		if out.Usage.CompletionTokens < 1 || out.Usage.CompletionTokens > 5 || len(out.Choices) != 1 {
			t.Fatalf("unexpected completion %s", body)
		}
		v := &vclock{t: t, e: e}
		s := v.snap()
		if s.values["vllm:request_success_total{finished_reason="+out.Choices[0].FinishReason+"}"] < 1 {
			t.Fatalf("the finished request is not in request_success_total")
		}
	})
	t.Run("a chat completion answers in the chat format", func(t *testing.T) {
		code, body := post("/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":3}`)
		if code != 200 || !strings.Contains(body, `"object":"chat.completion"`) {
			t.Fatalf("status %d body %s", code, body)
		}
	})
	t.Run("an unknown model is 404", func(t *testing.T) {
		if code, _ := post("/v1/completions", `{"model":"nope","prompt":"x"}`); code != 404 {
			t.Fatalf("status %d", code)
		}
	})
	t.Run("the scenario switches at run time by body or query", func(t *testing.T) {
		if code, body := post("/admin/scenario", `{"scenario":"overload"}`); code != 200 || !strings.Contains(body, `"name":"overload"`) {
			t.Fatalf("status %d body %s", code, body)
		}
		if code, body := get("/admin/scenario"); code != 200 || !strings.Contains(body, `"name":"overload"`) {
			t.Fatalf("GET: status %d body %s", code, body)
		}
		if code, _ := post("/admin/scenario?name=idle", ""); code != 200 || e.Scenario().Name != "idle" {
			t.Fatalf("query switch: status %d scenario %s", code, e.Scenario().Name)
		}
		if code, _ := post("/admin/scenario", `{"scenario":"nope"}`); code != 400 {
			t.Fatalf("unknown scenario: status %d", code)
		}
	})
	t.Run("profile endpoints are 404 without a profiler directory", func(t *testing.T) {
		for _, p := range []string{"/start_profile", "/stop_profile"} {
			if code, _ := post(p, ""); code != 404 {
				t.Errorf("%s: status %d, want 404", p, code)
			}
		}
	})
}

func TestProfiler(t *testing.T) {
	dir := t.TempDir()
	e, err := NewEngine(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	prof := NewProfiler(dir, 20*time.Millisecond, 2, zerolog.Nop())
	srv := httptest.NewServer(NewServer(e, prof, zerolog.Nop()))
	defer srv.Close()
	post := func(path string) (int, string) {
		resp, err := http.Post(srv.URL+path, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	state := func() ProfilerState {
		resp, err := http.Get(srv.URL + "/admin/profile")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var s ProfilerState
		if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}

	t.Run("a stop without a start is ignored", func(t *testing.T) {
		if code, body := post("/stop_profile"); code != 200 || body != "" {
			t.Fatalf("status %d body %q", code, body)
		}
		if s := state(); s.Stops != 0 || len(s.Traces) != 0 {
			t.Fatalf("state %+v", s)
		}
	})
	t.Run("start answers 200 with an empty body and a second start 409, as vLLM 0.32 does", func(t *testing.T) {
		if code, body := post("/start_profile"); code != 200 || body != "" {
			t.Fatalf("status %d body %q", code, body)
		}
		if code, body := post("/start_profile"); code != 409 || !strings.Contains(body, "already active") {
			t.Fatalf("second start: status %d body %q, want 409", code, body)
		}
		if s := state(); !s.Active || s.Starts != 1 {
			t.Fatalf("state %+v, want active with one start", s)
		}
	})
	// The engine runs some steps (in virtual time) while the profiler is on.
	sc := Scenarios["healthy"]
	now := time.Now()
	e.SetScenario(sc, true, now)
	steps := 0
	for end := now.Add(5 * time.Second); now.Before(end); {
		r := e.Step(now)
		if r.Busy {
			steps++
		}
		now = now.Add(r.Duration)
	}
	t.Run("stop writes one gzipped Chrome trace per rank with the profiled steps", func(t *testing.T) {
		if code, body := post("/stop_profile"); code != 200 || body != "" {
			t.Fatalf("status %d body %q", code, body)
		}
		s := state()
		if s.Active || s.Stops != 1 || len(s.Traces) != 2 {
			t.Fatalf("state %+v, want inactive, one stop, two traces", s)
		}
		for rank, path := range s.Traces {
			if filepath.Dir(path) != dir || !strings.HasSuffix(path, ".pt.trace.json.gz") {
				t.Errorf("trace %s not named <x>.pt.trace.json.gz in %s", path, dir)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			zr, err := gzip.NewReader(f)
			if err != nil {
				t.Fatalf("%s is not gzip: %v", path, err)
			}
			var tr struct {
				TraceEvents []struct {
					Name string         `json:"name"`
					Ph   string         `json:"ph"`
					Ts   float64        `json:"ts"`
					Dur  float64        `json:"dur"`
					Pid  int            `json:"pid"`
					Tid  int            `json:"tid"`
					Args map[string]any `json:"args"`
				} `json:"traceEvents"`
			}
			if err := json.NewDecoder(zr).Decode(&tr); err != nil {
				t.Fatalf("%s is not JSON: %v", path, err)
			}
			f.Close()
			n := 0
			for _, ev := range tr.TraceEvents {
				if ev.Name == "EngineCore.step" {
					n++
					if ev.Ph != "X" || ev.Dur <= 0 || ev.Ts <= 0 || ev.Pid != rank || ev.Args["num_running"] == nil {
						t.Fatalf("bad step event %+v", ev)
					}
				}
			}
			if n != steps {
				t.Errorf("rank %d trace has %d step events, the engine ran %d steps", rank, n, steps)
			}
		}
	})
	t.Run("a new capture can start after a stop", func(t *testing.T) {
		post("/start_profile")
		post("/stop_profile")
		if s := state(); s.Starts != 2 || s.Stops != 2 || len(s.Traces) != 4 {
			t.Fatalf("state %+v", s)
		}
	})
}

// Over HTTP, a hung engine core is what an SRE sees on vLLM: /health 200, /metrics answers, a
// request is accepted and held by the API server, and answered once the hang ends.
func TestAHungEngineStillAnswersHealthAndMetricsAndHoldsRequests(t *testing.T) {
	url, e := startServer(t, DefaultConfig(), "idle", nil)
	post := func(path, body string) int {
		resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	if code := post("/admin/hang", `{}`); code != 200 {
		t.Fatalf("POST /admin/hang: %d", code)
	}
	done := make(chan int, 1)
	go func() {
		resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"hello","max_tokens":3}`))
		if err != nil {
			done <- -1
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	waitFor(t, 30*time.Second, "the API server to hold the request", func() bool { return e.Stats().Held == 1 })
	for _, p := range []string{"/health", "/metrics"} {
		resp, err := http.Get(url + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s answered %d while the engine core is stopped, want 200", p, resp.StatusCode)
		}
	}
	select {
	case code := <-done:
		t.Fatalf("the request was answered (%d) while the engine core was stopped", code)
	default:
	}
	if code := post("/admin/hang", `{"release":true}`); code != 200 {
		t.Fatalf("release: %d", code)
	}
	if code := <-done; code != 200 {
		t.Fatalf("the held request was answered %d after the hang, want 200", code)
	}
}

// A server that is down (a crash) closes connections without an answer; it comes back empty
// with a new process start time.
func TestARestartedServerComesBackEmpty(t *testing.T) {
	url, e := startServer(t, DefaultConfig(), "healthy", nil)
	sample := func(name string) string {
		_, body := scrape(t, url, "")
		m := regexp.MustCompile(`\n` + regexp.QuoteMeta(name) + `(?:\{[^}]*\})? (\S+)\n`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no %s", name)
		}
		return m[1]
	}
	waitFor(t, 30*time.Second, "requests to finish", func() bool {
		return counterValue(t, e, "vllm:request_success_total{finished_reason=stop}")+counterValue(t, e, "vllm:request_success_total{finished_reason=length}") > 0
	})
	before, created := sample("process_start_time_seconds"), sample("vllm:prompt_tokens_created")
	resp, err := http.Post(url+"/admin/restart", "application/json", strings.NewReader(`{"down":"1h"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := http.Get(url + "/metrics"); err == nil {
		t.Fatal("/metrics answered while the server is down; want the connection dropped")
	}
	resp, err = http.Post(url+"/admin/restart", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if after := sample("process_start_time_seconds"); after == before {
		t.Errorf("process_start_time_seconds %s did not change across a restart", after)
	}
	if after := sample("vllm:prompt_tokens_created"); after == created {
		t.Errorf("the counters were not created anew by the restart (prompt_tokens_created %s)", after)
	}
	if st := e.Stats(); st.Restarts != 1 || st.Down {
		t.Errorf("after one restart: %+v", st)
	}
}
