package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

// Bucket boundaries vLLM exports (VLLM.md).
var (
	ttftBuckets  = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	itlBuckets   = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	phaseBuckets = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
	tokenBuckets = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000}
)

// podLoad is the steady state of one simulated pod: what each metric does per second.
type podLoad struct {
	pod, model     string
	legacy         bool    // old metric names (gpu_cache_usage_perc, time_per_output_token_seconds)
	reqRate        float64 // finished requests/s
	abortShare     float64
	ttft, queue    float64 // seconds, per request
	prefill        float64
	decode, itl    float64
	prompt         float64 // tokens per request
	waiting        float64
	running        float64
	kv             float64
	preemptionRate float64
}

// series writes OpenMetrics for one pod from start to end every step, continuing counters from
// the values they had at offset (seconds of load so far).
func (l podLoad) series(w *strings.Builder, start, end time.Time, step time.Duration, t0 time.Time) {
	lbl := func(extra string) string {
		s := fmt.Sprintf(`model_name=%q,engine="0",pod=%q,namespace="llm"`, l.model, l.pod)
		if extra != "" {
			s += "," + extra
		}
		return "{" + s + "}"
	}
	for ts := start; !ts.After(end); ts = ts.Add(step) {
		el := ts.Sub(t0).Seconds() // seconds of load: counters grow from 0 at t0
		n := l.reqRate * el
		unix := ts.Unix()
		gauge := func(name string, v float64) { fmt.Fprintf(w, "%s%s %g %d\n", name, lbl(""), v, unix) }
		counter := func(name, extra string, v float64) { fmt.Fprintf(w, "%s_total%s %g %d\n", name, lbl(extra), v, unix) }
		hist := func(name string, buckets []float64, count, value float64) {
			for _, b := range buckets {
				c := 0.0
				if value <= b {
					c = count
				}
				fmt.Fprintf(w, "%s_bucket%s %g %d\n", name, lbl(fmt.Sprintf(`le="%g"`, b)), c, unix)
			}
			fmt.Fprintf(w, "%s_bucket%s %g %d\n", name, lbl(`le="+Inf"`), count, unix)
			fmt.Fprintf(w, "%s_sum%s %g %d\n", name, lbl(""), count*value, unix)
			fmt.Fprintf(w, "%s_count%s %g %d\n", name, lbl(""), count, unix)
		}
		gauge("vllm:num_requests_waiting", l.waiting)
		gauge("vllm:num_requests_running", l.running)
		if l.legacy {
			gauge("vllm:gpu_cache_usage_perc", l.kv)
		} else {
			gauge("vllm:kv_cache_usage_perc", l.kv)
		}
		counter("vllm:num_preemptions", "", l.preemptionRate*el)
		counter("vllm:request_success", `finished_reason="stop"`, n*(1-l.abortShare))
		counter("vllm:request_success", `finished_reason="abort"`, n*l.abortShare)
		counter("vllm:generation_tokens", "", n*200)
		counter("vllm:prompt_tokens", "", n*l.prompt)
		hist("vllm:time_to_first_token_seconds", ttftBuckets, n, l.ttft)
		if l.legacy {
			hist("vllm:time_per_output_token_seconds", itlBuckets, n*200, l.itl)
		} else {
			hist("vllm:inter_token_latency_seconds", itlBuckets, n*200, l.itl)
		}
		hist("vllm:request_queue_time_seconds", phaseBuckets, n, l.queue)
		hist("vllm:request_prefill_time_seconds", phaseBuckets, n, l.prefill)
		hist("vllm:request_decode_time_seconds", phaseBuckets, n, l.decode)
		hist("vllm:e2e_request_latency_seconds", phaseBuckets, n, l.queue+l.prefill+l.decode)
		hist("vllm:request_prompt_tokens", tokenBuckets, n, l.prompt)
	}
}

// writeOpenMetrics groups samples by metric family (OpenMetrics wants each family contiguous)
// and declares their types.
func writeOpenMetrics(raw string) string {
	families := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(raw), "\n") {
		name := line[:strings.IndexAny(line, "{ ")]
		fam := name
		for _, suf := range []string{"_bucket", "_sum", "_count", "_total"} {
			if strings.HasSuffix(name, suf) {
				fam = strings.TrimSuffix(name, suf)
				break
			}
		}
		families[fam] = append(families[fam], line)
	}
	names := make([]string, 0, len(families))
	for n := range families {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, fam := range names {
		typ := "gauge"
		switch {
		case strings.HasSuffix(families[fam][0][:strings.IndexAny(families[fam][0], "{ ")], "_total"):
			typ = "counter"
		case strings.Contains(fam, "_seconds") || strings.HasSuffix(fam, "_tokens"):
			typ = "histogram"
		}
		fmt.Fprintf(&b, "# TYPE %s %s\n", fam, typ)
		// Samples of a family must be in time order per series; they were written in time order.
		for _, l := range families[fam] {
			b.WriteString(l + "\n")
		}
	}
	b.WriteString("# EOF\n")
	return b.String()
}

var healthy = podLoad{reqRate: 4, ttft: 0.3, queue: 0.01, prefill: 0.1, decode: 5, itl: 0.025, prompt: 800,
	waiting: 0, running: 12, kv: 0.3}

func scenarioPods() []podLoad {
	capacity := healthy
	capacity.pod, capacity.model = "vllm-capacity", "llama"
	capacity.ttft, capacity.queue, capacity.waiting, capacity.running, capacity.kv = 35, 34, 140, 64, 0.6

	kv := healthy
	kv.pod, kv.model = "vllm-kv", "llama"
	kv.kv, kv.preemptionRate, kv.running, kv.waiting, kv.decode, kv.itl = 0.99, 2, 120, 20, 30, 0.06

	kvLegacy := kv
	kvLegacy.pod, kvLegacy.legacy = "vllm-kv-old", true

	prefill := healthy
	prefill.pod, prefill.model = "vllm-prefill", "llama"
	prefill.ttft, prefill.prefill, prefill.prompt = 3, 2.4, 9000

	decode := healthy
	decode.pod, decode.model = "vllm-decode", "llama"
	decode.itl, decode.running, decode.decode = 0.15, 220, 40

	aborts := healthy
	aborts.pod, aborts.model = "vllm-aborts", "llama"
	aborts.abortShare = 0.3

	ok := healthy
	ok.pod, ok.model = "vllm-ok", "llama"
	return []podLoad{capacity, kv, kvLegacy, prefill, decode, aborts, ok}
}

// startRecordedPrometheus backfills 20 minutes of every scenario pod, plus the same pods 1 day
// ago in a healthy state (the baselines of "offset 1d"), and starts a real Prometheus on it.
func startRecordedPrometheus(t *testing.T) *testenv.PromServer {
	t.Helper()
	now := time.Now().Truncate(15 * time.Second)
	var raw strings.Builder
	for _, p := range scenarioPods() {
		base := healthy
		base.pod, base.model, base.legacy = p.pod, p.model, p.legacy
		dayAgo := now.Add(-24 * time.Hour)
		t0 := dayAgo.Add(-30 * time.Minute)
		base.series(&raw, dayAgo.Add(-15*time.Minute), dayAgo.Add(5*time.Minute), 15*time.Second, t0)
	}
	body := raw.String()
	raw.Reset()
	for _, p := range scenarioPods() {
		p.series(&raw, now.Add(-20*time.Minute), now.Add(-15*time.Second), 15*time.Second, now.Add(-25*time.Hour))
	}
	return testenv.Prometheus(t, testenv.PromOptions{OpenMetrics: writeOpenMetrics(body + raw.String())})
}

func writeConfig(t *testing.T, promURL string, extra string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	cfg := fmt.Sprintf("prometheus: {url: %q}\nlog: {level: error}\n%s", promURL, extra)
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type triageJSON struct {
	Playbook string   `json:"playbook"`
	Verdict  string   `json:"verdict"`
	Title    string   `json:"title"`
	Summary  string   `json:"summary"`
	Actions  []string `json:"actions"`
	Missing  []string `json:"missing"`
	Evidence []struct {
		Name         string   `json:"name"`
		Value        *float64 `json:"value"`
		Query        string   `json:"query"`
		BaselineText string   `json:"baseline_text"`
	} `json:"evidence"`
}

func triage(t *testing.T, args ...string) (triageJSON, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"triage", "--output", "json"}, args...), &out, &errb)
	var res triageJSON
	if code == 0 {
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatalf("triage printed invalid JSON: %v\n%s", err, out.String())
		}
	}
	return res, errb.String(), code
}

func TestTriageAgainstARealPrometheusTellsTheScenariosApart(t *testing.T) {
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
		{"aborts with normal latency are client-aborts", "VLLMRequestAbortRateHigh", "vllm-aborts", "client-aborts"},
		{"a deep queue on the queue alert is capacity", "VLLMQueueDepthHigh", "vllm-capacity", "capacity-past-knee"},
		{"on-demand triage of a quiet pod is healthy", "", "vllm-ok", "healthy"},
		{"on-demand triage of the preempting pod finds it", "", "vllm-kv", "kv-preemption"},
		{"an unknown model is no-data", "VLLMTimeToFirstTokenP99High", "no-such-pod", "no-data"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--config", cfg, "--label", "pod=" + tc.pod, "--label", "namespace=llm"}
			if tc.alert != "" {
				args = append(args, "--alert", tc.alert)
			}
			res, stderr, code := triage(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
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

func TestTriageComparesWithYesterdaysBaseline(t *testing.T) {
	prom := startRecordedPrometheus(t)
	cfg := writeConfig(t, prom.URL, "")
	// Without history the fixtures show "baseline n/a"; here the pod ran healthy 1 day ago.
	res, stderr, code := triage(t, "--config", cfg, "--alert", "VLLMTimeToFirstTokenP99High", "--label", "pod=vllm-prefill")
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
	prom := startRecordedPrometheus(t)
	cfg := writeConfig(t, prom.URL, "")
	for _, hostile := range []string{
		`vllm-capacity"} or vector(1) #`,
		`x\"}`,
		"a\nb",
		`\`,
		`"},pod=~".+`,
	} {
		res, stderr, code := triage(t, "--config", cfg, "--alert", "VLLMTimeToFirstTokenP99High", "--label", "pod="+hostile)
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
	cfg := writeConfig(t, fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t)), "")
	_, stderr, code := triage(t, "--config", cfg)
	if code == 0 {
		t.Fatal("exit 0 with Prometheus unreachable")
	}
	if strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "unreachable") {
		t.Fatalf("want one line naming the problem, got %q", stderr)
	}
}

func TestTriageRejectsBadConfigWithOneLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(p, []byte("prometheus: {url: ftp://x}\nlisten_typo: 1\n"), 0o644)
	_, stderr, code := triage(t, "--config", p)
	if code == 0 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, `unknown key "listen_typo"`) {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}
