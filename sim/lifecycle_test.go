package sim

import (
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// sleep: an operator puts the engine to sleep (vLLM 0.32: /sleep?level=1, mode abort). The
// requests in flight are aborted by the engine (counted, unlike client aborts), the gauges read
// 0, engine_sleep_state{awake} turns 0 once the weights are offloaded, and new requests are
// accepted and queued but never scheduled, so no gauge counts them.
func TestSleepAbortsTheRequestsInFlightAndQueuesTheNewOnesUncounted(t *testing.T) {
	v := newVirtual(t, DefaultConfig(), "sleep")
	v.run(19 * time.Second)
	before := v.snap()
	if before.values["vllm:engine_sleep_state{sleep_state=awake}"] != 1 {
		t.Fatal("awake before the sleep")
	}
	v.run(2 * time.Second) // the sleep starts at 20 s and takes 2 s
	mid := v.snap()
	if got := mid.values["vllm:sleep_mode_operations_in_flight{operation=sleep}"]; got != 1 {
		t.Errorf("sleep_mode_operations_in_flight{sleep} = %g during the sleep, want 1", got)
	}
	if got := mid.values["vllm:engine_sleep_state{sleep_state=awake}"]; got != 1 {
		t.Errorf("awake = %g while the sleep is in flight: vLLM records the state when it completes", got)
	}
	v.run(2 * time.Second)
	a := v.snap()
	for k, want := range map[string]float64{
		"vllm:engine_sleep_state{sleep_state=awake}":             0,
		"vllm:engine_sleep_state{sleep_state=weights_offloaded}": 1,
		"vllm:engine_sleep_state{sleep_state=discard_all}":       0,
		"vllm:sleep_mode_operations_in_flight{operation=sleep}":  0,
		"vllm:num_requests_running":                              0,
		"vllm:num_requests_waiting":                              0,
	} {
		if got := a.values[k]; got != want {
			t.Errorf("%s = %g asleep, want %g", k, got, want)
		}
	}
	if d := a.hists["vllm:sleep_mode_operation_duration_seconds{operation=sleep}"]; d.GetSampleCount() != 1 || math.Abs(d.GetSampleSum()-2) > 0.1 {
		t.Errorf("sleep duration histogram: %d samples, sum %g; want one of the 2 s sleep", d.GetSampleCount(), d.GetSampleSum())
	}
	aborted := a.values["vllm:request_success_total{finished_reason=abort}"] - before.values["vllm:request_success_total{finished_reason=abort}"]
	if aborted < 3 {
		t.Errorf("%g requests counted as aborted by the sleep: want the batch in flight (engine-side aborts are counted)", aborted)
	}
	v.run(30 * time.Second)
	b := v.snap()
	if diff := changed(vllmSamples(a), vllmSamples(b)); len(diff) > 0 {
		t.Errorf("vllm: series changed while asleep: %v", diff[:min(len(diff), 8)])
	}
	if q := v.e.Stats().Waiting; q < 80 {
		t.Errorf("%d requests queued in the sleeping engine after 30 s at 4 req/s: want them accepted and waiting", q)
	}
	if !v.e.Sleeping() {
		t.Error("/is_sleeping should say true")
	}

	c := v.snap()
	v.e.WakeUp(v.now)
	v.run(4 * time.Second) // the wake-up takes 3 s
	if s := v.snap(); s.values["vllm:engine_sleep_state{sleep_state=awake}"] != 1 || s.values["vllm:engine_sleep_state{sleep_state=weights_offloaded}"] != 0 {
		t.Error("not recorded awake after the wake-up")
	}
	v.run(10 * time.Second)
	w := window{c, v.snap()}
	if r := w.rate("vllm:generation_tokens_total"); r == 0 {
		t.Error("no tokens after the wake-up")
	}
	if ttft := w.mean("vllm:time_to_first_token_seconds"); ttft < 10 {
		t.Errorf("TTFT %.1fs after the wake-up: the requests queued during the sleep wait it out", ttft)
	}
}

// weight-update: an RL trainer pauses generation with mode keep (nothing scheduled, the gauges
// frozen where they were, running above 0) and updates the weights; only the in-flight gauge of
// the update tells it from a hang, and engine_sleep_state stays awake (a pause is not a sleep).
func TestAWeightUpdatePauseFreezesTheGaugesWithOnlyTheUpdateInFlight(t *testing.T) {
	v := newVirtual(t, DefaultConfig(), "weight-update")
	v.run(19 * time.Second)
	if _, ok := v.snap().values["vllm:rl_weight_update_operations_in_flight{operation=update}"]; ok {
		t.Error("the weight-update metrics exist before the first update: vLLM creates them on first use")
	}
	v.run(2 * time.Second)
	a := v.snap()
	v.run(10 * time.Second)
	b := v.snap()
	diff := changed(vllmSamples(a), vllmSamples(b))
	if len(diff) > 0 {
		t.Errorf("vllm: series changed during the update: %v", diff[:min(len(diff), 8)])
	}
	if got := b.values["vllm:rl_weight_update_operations_in_flight{operation=update}"]; got != 1 {
		t.Errorf("update in flight = %g during the update, want 1", got)
	}
	if r := b.values["vllm:num_requests_running"]; r == 0 {
		t.Error("a keep-mode pause leaves the running requests (and their gauge) where they were")
	}
	if b.values["vllm:engine_sleep_state{sleep_state=awake}"] != 1 {
		t.Error("a pause is not a sleep: engine_sleep_state stays awake")
	}
	v.run(6 * time.Second) // the update ends at 35 s
	c := v.snap()
	v.run(10 * time.Second)
	w := window{c, v.snap()}
	if got := c.values["vllm:rl_weight_update_operations_in_flight{operation=update}"]; got != 0 {
		t.Errorf("update in flight = %g after it, want 0", got)
	}
	if d := c.hists["vllm:rl_weight_update_operation_duration_seconds{operation=update}"]; d.GetSampleCount() != 1 || math.Abs(d.GetSampleSum()-15) > 0.1 {
		t.Errorf("update duration: %d samples, sum %g; want one of 15 s", d.GetSampleCount(), d.GetSampleSum())
	}
	if w.rate("vllm:generation_tokens_total") == 0 {
		t.Error("generation did not resume after the update")
	}
}

// restart-loop: the server dies 40 s after each start, is down 15 s, and starts empty.
func TestARestartLoopResetsTheCountersAndTheProcessStartTime(t *testing.T) {
	v := newVirtual(t, DefaultConfig(), "restart-loop")
	v.run(39 * time.Second)
	a := v.snap()
	if a.values["vllm:prompt_tokens_total"] == 0 {
		t.Fatal("no tokens before the first crash")
	}
	v.run(5 * time.Second)
	if !v.e.Down() {
		t.Fatal("the server should be down 40 s after the start")
	}
	v.run(12 * time.Second) // up again at 55 s
	b := v.snap()
	if v.e.Down() {
		t.Fatal("still down 16 s after the crash")
	}
	if got, want := b.values["process_start_time_seconds"], float64(epoch.Add(55*time.Second).Unix()); got != want {
		t.Errorf("process_start_time_seconds = %.2f, want the restart at %.0f", got, want)
	}
	if b.values["vllm:prompt_tokens_total"] >= a.values["vllm:prompt_tokens_total"] {
		t.Errorf("prompt_tokens_total %g one second after the restart, %g before: want the counter reset", b.values["vllm:prompt_tokens_total"], a.values["vllm:prompt_tokens_total"])
	}
	if cpu := b.values["process_cpu_seconds_total"]; cpu > a.values["process_cpu_seconds_total"] {
		t.Errorf("process_cpu_seconds_total %g after the restart, %g before: a new process starts from its start-up CPU", cpu, a.values["process_cpu_seconds_total"])
	}
	v.run(40 * time.Second)
	if st := v.e.Stats(); !st.Down || st.Restarts != 1 {
		t.Errorf("40 s after the restart: %+v; want down again after one restart", st)
	}
	if v.e.PodName() != DefaultConfig().PodName {
		t.Errorf("a container restart keeps the pod name, got %q", v.e.PodName())
	}
}

// rollout replaces every pod by a new one: new names of one new ReplicaSet, empty engines, a
// new process start time each; GET /admin/targets follows.
func TestARolloutGivesEveryPodANewNameAndNoHistory(t *testing.T) {
	var clocks []*vclock
	var engines []*Engine
	for i := range 3 {
		cfg := DefaultConfig()
		cfg.Seed, cfg.PodName = uint64(i+1), "vllm-demo-"+string(rune('0'+i))
		v := newVirtual(t, cfg, "healthy")
		clocks, engines = append(clocks, v), append(engines, v.e)
	}
	f := NewFleet(engines...)
	f.SetTargets([]string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}, map[string]string{"namespace": "demo"})
	for _, v := range clocks {
		v.run(20 * time.Second)
	}
	switched := clocks[0].now
	if err := f.Apply("rollout", true, switched); err != nil {
		t.Fatal(err)
	}
	for _, v := range clocks {
		v.run(35 * time.Second)
	}
	hashes := map[string]bool{}
	for i, v := range clocks {
		name := v.e.PodName()
		parts := strings.Split(name, "-")
		if name == "vllm-demo-"+string(rune('0'+i)) || len(parts) != 4 || parts[0] != "vllm" || parts[1] != "sim" {
			t.Errorf("pod %d is now %q: want vllm-sim-<replicaset hash>-<suffix>", i, name)
			continue
		}
		hashes[parts[2]] = true
		want := float64(switched.Add(time.Duration(i+1)*10*time.Second).UnixNano()) / 1e9
		if got := v.snap().values["process_start_time_seconds"]; math.Abs(got-want) > 0.01 {
			t.Errorf("pod %d started at %.2f, want %.2f (10 s apart)", i, got, want)
		}
	}
	if len(hashes) != 1 {
		t.Errorf("the new pods belong to %d ReplicaSets, want one", len(hashes))
	}
	for i, tg := range f.Targets() {
		if tg.Labels["pod"] != engines[i].PodName() || tg.Labels["namespace"] != "demo" {
			t.Errorf("target %d: %+v", i, tg)
		}
	}
}

// A queue limit (--max-num-queued-reqs) refuses requests at the API server, which counts them
// in vllm:admission_rejections_total itself: so that counter moves even while the engine core
// is stopped.
func TestAQueueLimitRefusesRequestsAndCountsThemEvenDuringAHang(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxNumQueuedReqs = 300
	v := newVirtual(t, cfg, "overload")
	v.run(30 * time.Second)
	st := v.e.Stats()
	if n := st.Running + st.Waiting + st.Held; n > 300 {
		t.Errorf("%d requests in the server with a limit of 300", n)
	}
	a := v.snap()
	if a.values["vllm:admission_rejections_total{reason=max_num_queued_reqs}"] == 0 {
		t.Fatal("no rejection at twice the capacity with a queue limit")
	}
	if a.values["vllm:admission_rejections_total{reason=max_num_queued_tokens}"] != 0 {
		t.Error("no token limit was set")
	}
	v.e.Hang(v.now, 0)
	v.run(5 * time.Second)
	b := v.snap()
	diff := changed(vllmSamples(a), vllmSamples(b))
	if len(diff) != 1 || !strings.HasPrefix(diff[0], "vllm:admission_rejections_total{reason=max_num_queued_reqs}") {
		t.Errorf("during a hang only the API server's rejection counter moves; changed: %v", diff)
	}
	if _, err := v.e.Submit(v.now, "/v1/completions", "", 10, 10, 0); err != ErrQueueFull {
		t.Errorf("a request over the limit: %v, want ErrQueueFull", err)
	}
}

// vLLM's development endpoints (VLLM_SERVER_DEV_MODE=1) answer as vLLM 0.32's do, and are 404
// without dev mode.
func TestDevEndpointsAnswerAsVLLMs(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SleepTime, cfg.WakeTime, cfg.WeightUpdateTime = 10*time.Millisecond, 10*time.Millisecond, 10*time.Millisecond
	url, e := startServer(t, cfg, "idle", nil)
	call := func(method, path string) (int, string) {
		req, _ := http.NewRequest(method, url+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	if code, _ := call("POST", "/sleep"); code != 404 {
		t.Fatalf("/sleep without dev mode: %d, want 404", code)
	}
	devURL := startDevServer(t, e)
	url = devURL
	for _, tc := range []struct{ method, path, want string }{
		{"POST", "/sleep?level=1", `{"level":1,"status":"sleeping"}`},
		{"GET", "/is_sleeping", `{"is_sleeping":true}`},
		{"POST", "/wake_up", `{"status":"awake","tags":null}`},
		{"GET", "/is_sleeping", `{"is_sleeping":false}`},
		{"POST", "/pause?mode=keep", `{"status":"paused"}`},
		{"GET", "/is_paused", `{"is_paused":true}`},
		{"POST", "/update_weights", `{"message":"Weights updated"}`},
		{"POST", "/resume", `{"status":"resumed"}`},
		{"GET", "/is_paused", `{"is_paused":false}`},
	} {
		if code, body := call(tc.method, tc.path); code != 200 || body != tc.want {
			t.Errorf("%s %s: %d %s, want 200 %s", tc.method, tc.path, code, body, tc.want)
		}
	}
	if code, _ := call("POST", "/pause?mode=nope"); code != 400 {
		t.Errorf("an invalid pause mode: %d, want 400", code)
	}
	_, body := scrape(t, url, "")
	for _, want := range []string{
		`vllm:sleep_mode_operations_in_flight{operation="sleep"} 0.0`,
		`vllm:sleep_mode_operations_in_flight{operation="wake"} 0.0`,
		`vllm:rl_weight_update_operations_in_flight{operation="update"} 0.0`,
		`vllm:sleep_mode_operation_duration_seconds_count{operation="sleep"} 1.0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// startDevServer serves e with the development endpoints on a second loopback listener.
func startDevServer(t *testing.T, e *Engine) string {
	t.Helper()
	srv := NewServer(e, nil, zerolog.Nop())
	srv.EnableDevEndpoints()
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return hs.URL
}

// At the queue limit the API server answers 503 with vLLM's message.
func TestAQueueLimitAnswers503(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxNumQueuedReqs = 1
	url, e := startServer(t, cfg, "idle", nil)
	e.Hang(time.Now(), 0)
	first := make(chan int, 1)
	go func() {
		resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"a","max_tokens":2}`))
		if err != nil {
			first <- -1
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	waitFor(t, 30*time.Second, "the first request to be held", func() bool { return e.Stats().Held == 1 })
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"b","max_tokens":2}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(b), "The engine is currently busy and cannot accept new requests") || !strings.Contains(string(b), `"type":"Service Unavailable"`) {
		t.Errorf("over the limit: %d %s", resp.StatusCode, b)
	}
	e.Release()
	if code := <-first; code != 200 {
		t.Errorf("the held request: %d", code)
	}
	_, body := scrape(t, url, "")
	if !strings.Contains(body, `http_requests_total{handler="/v1/completions",method="POST",status="5xx"} 1.0`) {
		t.Error("the 503 is not in http_requests_total")
	}
}
