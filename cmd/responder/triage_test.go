package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/evidence"
	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

// startRecordedPrometheus starts a real Prometheus holding 20 minutes of every scenario pod of
// testenv.ScenarioLoads (one per diagnosis), and the same pods healthy one day earlier.
func startRecordedPrometheus(t *testing.T) *testenv.PromServer {
	t.Helper()
	return testenv.RecordedPrometheus(t, testenv.ScenarioLoads())
}

// promConfig is the config text for a responder on the Prometheus at promURL.
func promConfig(promURL string) string {
	return fmt.Sprintf("prometheus: {url: %q}\nlog: {level: error}\n", promURL)
}

func writeConfig(t *testing.T, promURL string, extra string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(promConfig(promURL)+extra), 0o644); err != nil {
		t.Fatal(err)
	}
	if at, ok := testenv.RecordedAtOf(promURL); ok {
		configRecordedAt.Store(p, at)
	}
	return p
}

// configRecordedAt maps a config file written by writeConfig for a recorded Prometheus
// (testenv.RecordedPrometheus) to the time its recording was made for.
var configRecordedAt sync.Map

// withRecordedAt adds --at to triage's arguments when the config points at a recorded Prometheus
// and the test gave no --at: a triage of a recording is evaluated when the recording was made for,
// as if it ran at once, not when a busy machine gets to it (minutes later, the windows would read
// the end of the recording, and its gauges as frozen).
func withRecordedAt(args []string) []string {
	cfg := ""
	for i, a := range args {
		if a == "--at" || strings.HasPrefix(a, "--at=") {
			return args
		}
		if a == "--config" && i+1 < len(args) {
			cfg = args[i+1]
		}
	}
	if at, ok := configRecordedAt.Load(cfg); ok {
		return append([]string{"--at=" + strconv.FormatInt(at.(time.Time).Unix(), 10)}, args...)
	}
	return args
}

type triageJSON struct {
	Playbook    string           `json:"playbook"`
	Verdict     string           `json:"verdict"`
	Title       string           `json:"title"`
	Summary     string           `json:"summary"`
	Actions     []string         `json:"actions"`
	Missing     []string         `json:"missing"`
	EvaluatedAt time.Time        `json:"evaluated_at"`
	Notes       []string         `json:"notes"`
	Evidence    []triageEvidence `json:"evidence"`
}

func triageCLI(t *testing.T, args ...string) (triageJSON, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"triage", "--output", "json"}, withRecordedAt(args)...), &out, &errb)
	var res triageJSON
	if code == 0 {
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatalf("triage printed invalid JSON: %v\n%s", err, out.String())
		}
	}
	return res, errb.String(), code
}

// triageEvidence is one evidence entry of triage's JSON.
type triageEvidence struct {
	Name         string   `json:"name"`
	Value        *float64 `json:"value"`
	Label        string   `json:"label"`
	Query        string   `json:"query"`
	BaselineText string   `json:"baseline_text"`
	Problem      string   `json:"problem"`
}

// triageOf runs triage with the config for the alert (none: on demand) and scope labels
// ("pod=p", ...), failing the test when it could not run.
func triageOf(t *testing.T, cfg, alert string, labels ...string) triageJSON {
	t.Helper()
	return triageAt(t, cfg, "", alert, labels...)
}

// triageAt is triageOf with the CLI's --at argument ("--at=T"; "" for now).
func triageAt(t *testing.T, cfg, at, alert string, labels ...string) triageJSON {
	t.Helper()
	args := []string{"--config", cfg}
	if at != "" {
		args = append(args, at)
	}
	for _, l := range labels {
		args = append(args, "--label", l)
	}
	if alert != "" {
		args = append(args, "--alert", alert)
	}
	res, stderr, code := triageCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	return res
}

func TestTriageAgainstARealPrometheusTellsTheScenariosApart(t *testing.T) {
	t.Parallel()
	prom := startRecordedPrometheus(t)
	cfg := writeConfig(t, prom.URL, "")
	cases := []struct {
		name, alert, pod, want string
	}{
		{"a deep queue on the TTFT alert is capacity past the knee", "VLLMTimeToFirstTokenP99High", "vllm-capacity", "capacity-past-knee"},
		{"a full KV cache with preemptions is kv-preemption", "VLLMTimeToFirstTokenP99High", "vllm-kv", "kv-preemption"},
		{"old metric names (gpu_cache_usage_perc) are read too", "VLLMKVCacheNearFull", "vllm-kv-old", "kv-preemption"},
		{"slow prefill against yesterday's baseline is prefill-bound", "VLLMTimeToFirstTokenP99High", "vllm-prefill", "prefill-bound"},
		{"a wide batch on the ITL alert is decode-bound", "VLLMInterTokenLatencyP99High", "vllm-decode", "decode-bound"},
		{"aborts seen only as unfinished requests, the abort counter at 0, are client-aborts", "VLLMRequestAbortRateHigh", "vllm-aborts", "client-aborts"},
		{"on-demand triage finds client aborts the counter never saw", "", "vllm-aborts", "client-aborts"},
		{"an overload with aborts hidden from the counter is still capacity past the knee", "VLLMRequestAbortRateHigh", "vllm-capacity", "capacity-past-knee"},
		{"long generations ramping up are not taken for aborts", "", "vllm-ramp", "healthy"},
		{"an ITL rise with the batch as narrow as yesterday is inconclusive, not decode-bound", "VLLMInterTokenLatencyP99High", "vllm-itl-narrow", "inconclusive"},
		{"on-demand triage of a narrow batch with slower steps is inconclusive", "", "vllm-itl-narrow", "inconclusive"},
		{"a deep queue on the queue alert is capacity", "VLLMQueueDepthHigh", "vllm-capacity", "capacity-past-knee"},
		{"on-demand triage of a quiet pod is healthy", "", "vllm-ok", "healthy"},
		{"on-demand triage of the preempting pod finds it", "", "vllm-kv", "kv-preemption"},
		{"an unknown model is no-data", "VLLMTimeToFirstTokenP99High", "no-such-pod", "no-data"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := triageOf(t, cfg, tc.alert, "pod="+tc.pod, "namespace=llm")
			if res.Verdict != tc.want {
				t.Fatalf("verdict %s (%s: %s), want %s", res.Verdict, res.Title, res.Summary, tc.want)
			}
			if len(res.Evidence) == 0 || res.Title == "" || res.Playbook == "" {
				t.Fatalf("incomplete diagnosis: %+v", res)
			}
			for _, e := range res.Evidence {
				if !strings.Contains(e.Query, `pod="`+tc.pod+`"`) {
					t.Fatalf("evidence %s query not scoped to the pod: %s", e.Name, e.Query)
				}
			}
		})
	}
}

func evidenceNamed(t *testing.T, res triageJSON, name string) (value *float64, baseline string) {
	t.Helper()
	for _, e := range res.Evidence {
		if e.Name == name {
			return e.Value, e.BaselineText
		}
	}
	t.Fatalf("no %s evidence in %+v", name, res)
	return nil, ""
}

func TestTriageAtAPastTimeEvaluatesEveryQueryThen(t *testing.T) {
	t.Parallel()
	prom := startRecordedPrometheus(t)
	cfg := writeConfig(t, prom.URL, "")
	// The recorded pods were healthy one day ago and are in trouble now.
	dayAgo := time.Now().Add(-24 * time.Hour).Truncate(time.Second)
	for _, at := range []string{dayAgo.UTC().Format(time.RFC3339), dayAgo.Format(time.RFC3339), strconv.FormatInt(dayAgo.Unix(), 10)} {
		t.Run("at "+at, func(t *testing.T) {
			res, stderr, code := triageCLI(t, "--config", cfg, "--label", "pod=vllm-capacity", "--at", at)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if res.Verdict != "healthy" {
				t.Fatalf("verdict %s (%s): the deep queue of now leaked into a run as of a day ago", res.Verdict, res.Summary)
			}
			if !res.EvaluatedAt.Equal(dayAgo) {
				t.Fatalf("evaluated_at %v, want %v", res.EvaluatedAt, dayAgo)
			}
			if v, _ := evidenceNamed(t, res, "waiting"); v == nil || *v != 0 {
				t.Fatalf("waiting %v, want the day-old 0", v)
			}
		})
	}
	t.Run("the baseline is a day before --at, not a day before now", func(t *testing.T) {
		now, _, code := triageCLI(t, "--config", cfg, "--alert", "VLLMTimeToFirstTokenP99High", "--label", "pod=vllm-prefill")
		if code != 0 {
			t.Fatal("triage now failed")
		}
		if _, b := evidenceNamed(t, now, "prefill_mean"); !strings.HasSuffix(b, ", the pod a day ago") {
			t.Fatalf("now, the baseline should come from the recorded day-old data, got %q", b)
		}
		then, stderr, code := triageCLI(t, "--config", cfg, "--alert", "VLLMTimeToFirstTokenP99High", "--label", "pod=vllm-prefill",
			"--at", dayAgo.Format(time.RFC3339))
		if code != 0 {
			t.Fatal(stderr)
		}
		// Two days ago there is no data: the baseline is the recent past before --at's window.
		if _, b := evidenceNamed(t, then, "prefill_mean"); !strings.HasSuffix(b, ", the 30m before the window") {
			t.Fatalf("as of a day ago the baseline (two days ago) has no data, so the 30m before the window, got %q", b)
		}
	})
	t.Run("a time with no data is no-data", func(t *testing.T) {
		res, stderr, code := triageCLI(t, "--config", cfg, "--label", "pod=vllm-capacity", "--at", time.Now().Add(-72*time.Hour).Format(time.RFC3339))
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if res.Verdict != "no-data" {
			t.Fatalf("verdict %s, want no-data", res.Verdict)
		}
	})
}

func TestTriageAtRejectsAFutureOrMalformedTimeWithOneLine(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, "http://127.0.0.1:1", "")
	for _, at := range []string{time.Now().Add(time.Hour).Format(time.RFC3339), strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10),
		"yesterday", "2026-13-01T00:00:00Z", "", " ", "-5", "NaN", "1e30"} {
		_, stderr, code := triageCLI(t, "--config", cfg, "--at", at)
		if at == "" {
			continue // an empty --at is the default: now (and Prometheus is unreachable here)
		}
		if code == 0 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.HasPrefix(stderr, "responder triage: --at: ") {
			t.Errorf("--at %q: exit %d, stderr %q: want a one-line --at error", at, code, stderr)
		}
	}
}

func TestTriageDoesNotTrustAP99PinnedAtTheTopBucket(t *testing.T) {
	t.Parallel()
	prom := startRecordedPrometheus(t)
	cfg := writeConfig(t, prom.URL, "")
	// TTFT is 35 s, but this pod's histogram stops at 10 s (vLLM before #15202).
	res, stderr, code := triageCLI(t, "--config", cfg, "--alert", "VLLMTimeToFirstTokenP99High", "--label", "pod=vllm-old-buckets")
	if code != 0 {
		t.Fatal(stderr)
	}
	if res.Verdict != "capacity-past-knee" {
		t.Fatalf("verdict %s", res.Verdict)
	}
	for _, e := range res.Evidence {
		if e.Name == "ttft_p99" {
			if e.Value == nil || *e.Value != 10 || !strings.Contains(e.Problem, "top bucket bound") {
				t.Fatalf("ttft_p99 = %v, problem %q: want 10 flagged as pinned at the top bucket", e.Value, e.Problem)
			}
			return
		}
	}
	t.Fatal("no ttft_p99 evidence")
}

func TestTriageComparesWithYesterdaysBaseline(t *testing.T) {
	t.Parallel()
	prom := startRecordedPrometheus(t)
	cfg := writeConfig(t, prom.URL, "")
	// Without history the fixtures show "baseline n/a"; here the pod ran healthy 1 day ago.
	res, stderr, code := triageCLI(t, "--config", cfg, "--alert", "VLLMTimeToFirstTokenP99High", "--label", "pod=vllm-prefill")
	if code != 0 {
		t.Fatal(stderr)
	}
	for _, e := range res.Evidence {
		if e.Name == "prefill_mean" && (e.BaselineText == "" || e.BaselineText == "no history for a baseline") {
			t.Fatalf("prefill baseline should come from 1 day ago, got %q", e.BaselineText)
		}
	}
}

func TestTriageLabelValuesCannotBreakOutOfTheirString(t *testing.T) {
	t.Parallel()
	prom := startRecordedPrometheus(t)
	cfg := writeConfig(t, prom.URL, "")
	for _, hostile := range []string{
		`vllm-capacity"} or vector(1) #`,
		`x\"}`,
		"a\nb",
		`\`,
		`"},pod=~".+`,
	} {
		res, stderr, code := triageCLI(t, "--config", cfg, "--alert", "VLLMTimeToFirstTokenP99High", "--label", "pod="+hostile)
		if code != 0 {
			t.Fatalf("pod=%q: exit %d: %s", hostile, code, stderr)
		}
		// A value that broke out would match the real pods (or vector(1)); escaped, it matches nothing.
		if res.Verdict != "no-data" {
			t.Fatalf("pod=%q: verdict %s: the label value changed the query", hostile, res.Verdict)
		}
	}
}

func TestTriageFailsWithOneLineWhenPrometheusIsUnreachable(t *testing.T) {
	t.Parallel()
	url := fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t))
	cfg := writeConfig(t, url, "")
	_, stderr, code := triageCLI(t, "--config", cfg)
	if code == 0 {
		t.Fatal("exit 0 with Prometheus unreachable")
	}
	// The line names the server and the reason the engine gave (its UnavailableError), once.
	want := "Prometheus at " + url + " unreachable: "
	if strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, want) ||
		!strings.Contains(stderr, "connection refused") || strings.Contains(stderr, "could not be reached") {
		t.Fatalf("want one line %q followed by the reason, got %q", want, stderr)
	}
}

func TestTriageRejectsBadConfigWithOneLine(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(p, []byte("prometheus: {url: ftp://x}\nlisten_typo: 1\n"), 0o644)
	_, stderr, code := triageCLI(t, "--config", p)
	if code == 0 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, `unknown key "listen_typo"`) {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

func TestTriageWithJaegerDownStillDiagnosesAndSaysSo(t *testing.T) {
	t.Parallel()
	prom := startRecordedPrometheus(t)
	cfg := writeConfig(t, prom.URL, fmt.Sprintf("traces: {url: \"http://127.0.0.1:%d\"}\n", testenv.FreePort(t)))
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"triage", "--output", "json", "--config", cfg, "--alert", "VLLMTimeToFirstTokenP99High",
		"--label", "pod=vllm-capacity", "--label", "namespace=llm", "--label", "model_name=llama"}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var res struct {
		Verdict string   `json:"verdict"`
		Notes   []string `json:"notes"`
		Slowest struct {
			Service string `json:"service"`
			Error   string `json:"error"`
		} `json:"slowest_requests"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if res.Verdict != "capacity-past-knee" || res.Slowest.Service != "vllm-llama" || !strings.HasPrefix(res.Slowest.Error, "Jaeger lookup failed: ") ||
		!strings.Contains(strings.Join(res.Notes, "\n"), "slowest requests from traces: not available, Jaeger lookup failed") {
		t.Fatalf("diagnosis with Jaeger down: %s", out.String())
	}
}

// prometheus.queries_per_request sets how many of a playbook's queries share a request: the
// same diagnosis from one request per query when each travels alone, from a few by default.
func TestQueriesPerRequestSetsHowManyQueriesShareARequest(t *testing.T) {
	t.Parallel()
	prom := startRecordedPrometheus(t)
	labels := map[string]string{"alertname": "VLLMTimeToFirstTokenP99High", "pod": "vllm-capacity"}
	pb := builtinPlaybookFor(t, labels)
	var verdicts []string
	for _, n := range []int{1, 10} {
		proxy := startSlowProm(t, prom.URL, "never matches: nothing is held", 0)
		p := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(p, []byte(fmt.Sprintf("prometheus: {url: %q, queries_per_request: %d}\nlog: {level: error}\n", proxy.URL, n)), 0o644); err != nil {
			t.Fatal(err)
		}
		res, stderr, code := triageCLI(t, "--config", p, "--alert", labels["alertname"], "--label", "pod="+labels["pod"])
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		// the pod named without its model: one request listing its model (which joins the scope);
		// the check for the recorded stall history (none here), the playbook's queries n to a
		// request and the fleet request; then the LoRA rule on the way reading the pod's LoRA
		// series (one query, none here); then the capacity verdict reading what
		// kube-state-metrics says of the pod, its step of the lookup, n queries to a request too
		// (no kube-state-metrics here: no workload step)
		// (the scope as the run has it once the listing named the pod's model, pods in their
		// role as serve names them: the fleet's queries then travel in two requests, one being
		// longer than 16 KiB); and the baselines' fallbacks where a baseline's first variant
		// had no value, after the others
		scope := map[string]string{"pod": labels["pod"], "namespace": "llm", "model_name": "llama"}
		want := len(evidence.RequestsWith(pb, scope, n, vllmnames.Default(), false))
		kube, got := proxy.answeredAbout("kube_")
		x := pb.ExpandAll(scope, playbooks.PodScope{Label: vllmnames.Default().PodLabel, Role: vllmnames.Default().RoleLabel})
		first, fallbacks := 0, 0
		proxy.mu.Lock()
		for r := range proxy.passed {
			for i, q := range pb.Queries {
				if q.Variant() && strings.Contains(r, x.Queries[i]) {
					fallbacks++
					break
				}
			}
		}
		proxy.mu.Unlock()
		for _, q := range pb.Queries {
			if !q.Variant() {
				first++
			}
		}
		if most := len(evidence.FallbackRequests(pb, scope, n)); fallbacks > most || (n == 10 && fallbacks > 1) {
			t.Errorf("queries_per_request %d: %d requests of the baselines' fallbacks, at most %d", n, fallbacks, most)
		}
		got -= fallbacks
		lora, _ := proxy.answeredAbout("lora_requests_info")
		if got -= lora; lora != 1 {
			t.Errorf("queries_per_request %d: %d requests of the LoRA lookup, want 1", n, lora)
		}
		// the GPU rules first: dcgm-exporter's series of the pod (none here), n to a request, then
		// its node from kube_pod_info (one request; none here: no node step)
		gpu, _ := proxy.answeredAbout("DCGM_")
		gpuNode, _ := proxy.answeredAbout("group by (node) (kube_pod_info")
		// and the capacity verdict's question to the GPU source: a cordoned node its controller's
		// pods left (kube-state-metrics' series, with the XIDs on that node: n to a request)
		cordon, _ := proxy.answeredAbout(`created_by_name!=""`)
		cordonXID := 0
		proxy.mu.Lock()
		for r := range proxy.passed {
			if strings.Contains(r, `created_by_name!=""`) && strings.Contains(r, "DCGM_") {
				cordonXID++
			}
		}
		proxy.mu.Unlock()
		if got, kube, gpu = got-(gpu-cordonXID), kube-gpuNode-cordon, gpu-cordonXID; gpu < 1 || gpuNode != 1 {
			t.Errorf("queries_per_request %d: %d requests of the GPU lookup and %d of its node, want some and 1", n, gpu, gpuNode)
		}
		if cordon < 1 || (n == 10 && cordon != 1) {
			t.Errorf("queries_per_request %d: %d requests of the capacity verdict's cordoned-node lookup, want 1 (n 10) or more", n, cordon)
		}
		listing, _ := proxy.answeredAbout("sum by (model_name, namespace) (avg_over_time(")
		if got -= listing; listing != 1 {
			t.Errorf("queries_per_request %d: %d requests listing the pod's model, want 1", n, listing)
		}
		if got != want || (n == 1 && want < first+2) || (n == 10 && want > 11) {
			t.Errorf("queries_per_request %d: %d distinct requests of the playbook; want %d", n, got, want)
		}
		if (n == 1 && kube < 2) || (n == 10 && kube != 1) {
			t.Errorf("queries_per_request %d: %d requests of the kube-state-metrics lookup", n, kube)
		}
		verdicts = append(verdicts, res.Verdict)
	}
	if verdicts[0] != verdicts[1] || verdicts[0] != "capacity-past-knee" {
		t.Errorf("verdicts %q; want capacity-past-knee both ways", verdicts)
	}
}
