package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

// The recorded vLLM series the benchmark's Prometheus is loaded with: the same shapes as
// cmd/responder's startRecordedPrometheus (a copy: that one lives in a _test.go file), vLLM's
// metric names and bucket boundaries (VLLM.md).
var (
	ttftBuckets  = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	itlBuckets   = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	phaseBuckets = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
	tokenBuckets = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000}
)

type podLoad struct {
	pod, model     string
	reqRate        float64
	abortShare     float64
	ttft, queue    float64
	prefill        float64
	decode, itl    float64
	prompt         float64
	waiting        float64
	running        float64
	kv             float64
	preemptionRate float64
}

func (l podLoad) series(w *strings.Builder, start, end time.Time, step time.Duration, t0 time.Time) {
	lbl := func(extra string) string {
		s := fmt.Sprintf(`model_name=%q,engine="0",pod=%q,namespace="llm"`, l.model, l.pod)
		if extra != "" {
			s += "," + extra
		}
		return "{" + s + "}"
	}
	for ts := start; !ts.After(end); ts = ts.Add(step) {
		el := ts.Sub(t0).Seconds()
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
		gauge("vllm:kv_cache_usage_perc", l.kv)
		counter("vllm:num_preemptions", "", l.preemptionRate*el)
		counter("vllm:request_success", `finished_reason="stop"`, n*(1-l.abortShare))
		counter("vllm:request_success", `finished_reason="abort"`, n*l.abortShare)
		counter("vllm:generation_tokens", "", n*200)
		counter("vllm:prompt_tokens", "", n*l.prompt)
		hist("vllm:time_to_first_token_seconds", ttftBuckets, n, l.ttft)
		hist("vllm:inter_token_latency_seconds", itlBuckets, n*200, l.itl)
		hist("vllm:request_queue_time_seconds", phaseBuckets, n, l.queue)
		hist("vllm:request_prefill_time_seconds", phaseBuckets, n, l.prefill)
		hist("vllm:request_decode_time_seconds", phaseBuckets, n, l.decode)
		hist("vllm:e2e_request_latency_seconds", phaseBuckets, n, l.queue+l.prefill+l.decode)
		hist("vllm:request_prompt_tokens", tokenBuckets, n, l.prompt)
	}
}

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
		for _, l := range families[fam] {
			b.WriteString(l + "\n")
		}
	}
	b.WriteString("# EOF\n")
	return b.String()
}

var healthy = podLoad{reqRate: 4, ttft: 0.3, queue: 0.01, prefill: 0.1, decode: 5, itl: 0.025, prompt: 800,
	waiting: 0, running: 12, kv: 0.3}

// scenarioPods are the pods with data; the TTFT measurement uses vllm-capacity.
func scenarioPods() []podLoad {
	capacity := healthy
	capacity.pod, capacity.model = "vllm-capacity", "llama"
	capacity.ttft, capacity.queue, capacity.waiting, capacity.running, capacity.kv = 35, 34, 140, 64, 0.6
	kv := healthy
	kv.pod, kv.model = "vllm-kv", "llama"
	kv.kv, kv.preemptionRate, kv.running, kv.waiting, kv.decode, kv.itl = 0.99, 2, 120, 20, 30, 0.06
	prefill := healthy
	prefill.pod, prefill.model = "vllm-prefill", "llama"
	prefill.ttft, prefill.prefill, prefill.prompt = 3, 2.4, 9000
	decode := healthy
	decode.pod, decode.model = "vllm-decode", "llama"
	decode.itl, decode.running, decode.decode = 0.15, 220, 40
	aborts := healthy
	aborts.pod, aborts.model = "vllm-aborts", "llama"
	aborts.abortShare = 0.3
	return []podLoad{capacity, kv, prefill, decode, aborts}
}

// startRecordedPrometheus backfills 20 minutes of every scenario pod, plus the same pods one day
// earlier in a healthy state (the "offset 1d" baselines), and starts a real Prometheus on it.
func startRecordedPrometheus(t *benchTB) *testenv.PromServer {
	now := time.Now().Truncate(15 * time.Second)
	var raw strings.Builder
	for _, p := range scenarioPods() {
		base := healthy
		base.pod, base.model = p.pod, p.model
		dayAgo := now.Add(-24 * time.Hour)
		base.series(&raw, dayAgo.Add(-15*time.Minute), dayAgo.Add(5*time.Minute), 15*time.Second, dayAgo.Add(-30*time.Minute))
	}
	body := raw.String()
	raw.Reset()
	for _, p := range scenarioPods() {
		p.series(&raw, now.Add(-20*time.Minute), now.Add(-15*time.Second), 15*time.Second, now.Add(-25*time.Hour))
	}
	return testenv.Prometheus(t, testenv.PromOptions{OpenMetrics: writeOpenMetrics(body + raw.String())})
}
