package testenv

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Bucket boundaries vLLM exports (vllm/v1/metrics/loggers.py; internal/realvllm checks them on a real vLLM).
var (
	// Before vLLM #15202 (April 2025) the TTFT histogram stopped at 10 s.
	oldTTFTBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
	ttftBuckets    = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	itlBuckets     = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	phaseBuckets   = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
	tokenBuckets   = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000}
)

// VLLMLoad is the steady state of one recorded vLLM pod: what each metric does per second. It
// writes vLLM's metric names, labels and bucket boundaries, and records what real vLLM V1 records
// (docs/vllm-facts.md): a client abort is never finished (not in request_success_total nor in any
// finished-request histogram) but its prompt tokens and first token are counted; every
// finish reason exists at 0. So a real Prometheus loaded with it answers the playbooks' queries as
// it would for a real fleet.
type VLLMLoad struct {
	Pod, Model string
	// Namespace (default "llm") and Engine, vLLM's data-parallel index (default "0"): a pod with
	// several engines is one load per engine.
	Namespace, Engine string
	Legacy            bool    // old metric names (gpu_cache_usage_perc, time_per_output_token_seconds)
	OldBuckets        bool    // the TTFT bucket layout before vLLM #15202 (top bucket 10 s)
	ReqRate           float64 // requests/s that get a first token
	// AbortShare of those requests have clients that give up after their first token: counted in
	// TTFT and prompt_tokens_total, never finished.
	AbortShare float64
	// CountedAbortShare of them are aborted by the engine itself (finished_reason="abort").
	CountedAbortShare float64
	// RunningGrowth requests/s: the running batch widens by this much over the recorded window
	// (load ramping up with long generations): that many first tokens a second have no finish yet.
	RunningGrowth  float64
	TTFT, Queue    float64 // seconds, per request
	Prefill        float64
	Decode, ITL    float64
	Prompt         float64 // tokens per request
	Waiting        float64
	Running        float64
	KV             float64
	PreemptionRate float64
	// HangFrom, when set, is how long before the recorded window's end the engine core stops,
	// for HangFor (0: until the end). As measured on vLLM 0.32 (SIGSTOP of EngineCore), every
	// vllm: series freezes at its last value, gauges and counters alike, while the API server
	// keeps answering /metrics (up 1) and its open file descriptors climb, one per request it
	// accepts and does not answer. Afterwards the engine serves its load again.
	HangFrom, HangFor time.Duration
	// EarlierHangFrom, EarlierHangFor: another stop of the same engine before that one, as
	// HangFrom and HangFor (two stalls in the last 15 minutes).
	EarlierHangFrom, EarlierHangFor time.Duration
	// Asleep makes the hang sleep mode, on purpose: engine_sleep_state{sleep_state="awake"} 0
	// (set by the API server itself), no file descriptors piling up.
	Asleep bool
	// RestartAt, when set, is how long before the window's end the server restarts: RestartGap
	// (default 30 s; 29 s to over 2 minutes on the real vLLM) without an answer to the scrape (up
	// 0, no series), then a new process (started during the gap: the API server answers /metrics
	// only once its engine is ready), its counters from 0. With RestartReason
	// kube-state-metrics (v2's series, kept with honor_labels) says so: its container's restart
	// count goes up by one, its last terminated reason (OOMKilled, Error) with exit code
	// RestartExitCode.
	RestartAt, RestartGap time.Duration
	RestartReason         string
	RestartExitCode       int
	// StartAt, when set, makes the pod new: its server answers the scrape from StartAt before
	// the window's end, after RestartGap of start-up that Prometheus scraped as down (up 0), and
	// has no series before (a pod of a rollout, or one added by the autoscaler).
	StartAt time.Duration
	// ScrapeGapAt, when set, is how long before the window's end scrapes fail for ScrapeGap (up
	// 0, no series) while the server runs on: a scrape timeout on a loaded API server, not a
	// restart.
	ScrapeGapAt, ScrapeGap time.Duration
	// Step is how often the pod is scraped (default 15 s).
	Step time.Duration
	// HitRate, when set (here or on Earlier), is the share of prompt tokens the prefix cache
	// serves: prefix_cache_queries_total and prefix_cache_hits_total are written, in tokens.
	HitRate float64
	// Earlier, when set, is the pod's load until ChangedFor before the window's end (counters
	// carry on from it): an incident that began then.
	Earlier    *VLLMLoad
	ChangedFor time.Duration
	// DayAgo is the pod's load one day earlier (default HealthyLoad); Fresh: the pod is newer
	// than a day and has no series then.
	DayAgo *VLLMLoad
	Fresh  bool
}

// HealthyLoad is a quiet pod: the baseline the scenarios depart from.
var HealthyLoad = VLLMLoad{ReqRate: 4, TTFT: 0.3, Queue: 0.01, Prefill: 0.1, Decode: 5, ITL: 0.025, Prompt: 800,
	Waiting: 0, Running: 12, KV: 0.3}

// ScenarioLoads are one pod per diagnosis (namespace "llm", model "llama"): vllm-capacity (past
// the knee, with clients giving up unseen), vllm-kv (preemption), vllm-kv-old (the same, old metric
// names), vllm-prefill (long prompts), vllm-decode (wide batch), vllm-aborts (client aborts seen only
// as unfinished requests: the abort counter stays 0), vllm-ok (healthy), vllm-old-buckets (past the
// knee on vLLM's old TTFT buckets: the p99 saturates at 10 s), and two hard negatives:
// vllm-itl-narrow (ITL doubled with the batch as narrow as yesterday: inconclusive, not
// decode-bound) and vllm-ramp (long generations ramping up: first tokens outrun finishes by the
// running batch's growth, which is not an abort).
func ScenarioLoads() []VLLMLoad {
	with := func(pod string, f func(*VLLMLoad)) VLLMLoad {
		l := HealthyLoad
		l.Pod, l.Model = pod, "llama"
		f(&l)
		return l
	}
	kv := func(l *VLLMLoad) {
		l.KV, l.PreemptionRate, l.Running, l.Waiting, l.Decode, l.ITL = 0.99, 2, 120, 20, 30, 0.06
	}
	return []VLLMLoad{
		with("vllm-capacity", func(l *VLLMLoad) {
			l.TTFT, l.Queue, l.Waiting, l.Running, l.KV, l.AbortShare = 35, 34, 140, 64, 0.6, 0.2
		}),
		with("vllm-kv", kv),
		with("vllm-kv-old", func(l *VLLMLoad) { kv(l); l.Legacy = true }),
		with("vllm-prefill", func(l *VLLMLoad) { l.TTFT, l.Prefill, l.Prompt = 3, 2.4, 9000 }),
		with("vllm-decode", func(l *VLLMLoad) { l.ITL, l.Running, l.Decode = 0.15, 220, 40 }),
		with("vllm-aborts", func(l *VLLMLoad) { l.AbortShare = 0.3 }),
		with("vllm-ok", func(*VLLMLoad) {}),
		with("vllm-itl-narrow", func(l *VLLMLoad) { l.ITL, l.Decode = 0.06, 12 }),
		with("vllm-ramp", func(l *VLLMLoad) { l.ReqRate, l.RunningGrowth, l.Decode = 2, 0.15, 90 }),
		with("vllm-old-buckets", func(l *VLLMLoad) {
			l.TTFT, l.Queue, l.Waiting, l.Running, l.KV, l.OldBuckets = 35, 34, 140, 64, 0.6, true
		}),
	}
}

// FleetModel is the model of FleetLoads, on FleetPods pods.
const (
	FleetModel = "llama-fleet"
	FleetPods  = 50
)

// FleetLoads is one model on FleetPods pods (namespace "llm"): fleet-0 past the knee while the
// router gives its siblings little (load-imbalance), the others quiet.
func FleetLoads() []VLLMLoad {
	out := make([]VLLMLoad, FleetPods)
	for i := range out {
		l := HealthyLoad
		l.Pod, l.Model, l.ReqRate = fmt.Sprintf("fleet-%d", i), FleetModel, 2
		if i == 0 {
			l.ReqRate, l.TTFT, l.Queue, l.Waiting, l.Running, l.KV = 40, 35, 34, 140, 256, 0.6
		}
		out[i] = l
	}
	return out
}

// series writes samples from start to end every step; counters grow from 0 at t0. Beside vLLM's
// own series it writes what a scrape adds: the target's labels (job, instance, pod, namespace),
// its up, and the API server's process_start_time_seconds (t0), process_open_fds and
// process_cpu_seconds_total, once per pod
// (with its engine "0" or unnamed).
func (l VLLMLoad) series(w *strings.Builder, start, end time.Time, step time.Duration, t0 time.Time) {
	ns, engine := l.Namespace, l.Engine
	if ns == "" {
		ns = "llm"
	}
	if engine == "" {
		engine = "0"
	}
	target := fmt.Sprintf(`job="vllm",instance=%q,pod=%q,namespace=%q`, l.Pod+":8000", l.Pod, ns)
	lbl := func(extra string) string {
		s := fmt.Sprintf(`model_name=%q,engine=%q,`, l.Model, engine) + target
		if extra != "" {
			s += "," + extra
		}
		return "{" + s + "}"
	}
	type span struct{ from, to time.Time }
	var hangs []span
	if l.EarlierHangFrom > 0 {
		from := end.Add(-l.EarlierHangFrom)
		hangs = append(hangs, span{from, from.Add(l.EarlierHangFor)})
	}
	if l.HangFrom > 0 {
		h := span{end.Add(-l.HangFrom), end.Add(step)}
		if l.HangFor > 0 {
			h.to = h.from.Add(l.HangFor)
		}
		hangs = append(hangs, h)
	}
	restart, gap := end.Add(-l.RestartAt), l.RestartGap
	if gap == 0 {
		gap = 30 * time.Second
	}
	born, pst := end.Add(-l.StartAt), t0 // pst: the API server process's start
	if l.StartAt > 0 {
		t0, pst = born, born.Add(-gap/2)
	}
	scrapeGap := end.Add(-l.ScrapeGapAt)
	for ts := start; !ts.After(end); ts = ts.Add(step) {
		if l.StartAt > 0 && ts.Before(born) {
			if !ts.Before(born.Add(-gap)) && engine == "0" {
				fmt.Fprintf(w, "up{%s} 0 %d\n", target, ts.Unix())
			}
			continue
		}
		if l.ScrapeGapAt > 0 && !ts.Before(scrapeGap) && ts.Before(scrapeGap.Add(l.ScrapeGap)) {
			if engine == "0" {
				fmt.Fprintf(w, "up{%s} 0 %d\n", target, ts.Unix())
			}
			continue
		}
		if engine == "0" && l.RestartReason != "" {
			ksm := fmt.Sprintf(`job="kube-state-metrics",instance="10.0.9.9:8080",namespace=%q,pod=%q,uid="0a1b",container="vllm"`, ns, l.Pod)
			restarts := 0
			if !ts.Before(restart) {
				restarts = 1
				fmt.Fprintf(w, "kube_pod_container_status_last_terminated_reason{%s,reason=%q} 1 %d\n", ksm, l.RestartReason, ts.Unix())
				fmt.Fprintf(w, "kube_pod_container_status_last_terminated_exitcode{%s} %d %d\n", ksm, l.RestartExitCode, ts.Unix())
			}
			fmt.Fprintf(w, "kube_pod_container_status_restarts_total{%s} %d %d\n", ksm, restarts, ts.Unix())
		}
		// The time the engine has run: counters stand still while it hangs, and start again from
		// 0 at a restart; its gauges are as they were when it stopped.
		t0, procStart, run, gts := t0, pst, ts, ts
		hung, hangStart := false, time.Time{}
		for _, h := range hangs {
			if ts.After(h.from) {
				run = run.Add(-min(ts.Sub(h.from), h.to.Sub(h.from)))
			}
			if !ts.Before(h.from) && ts.Before(h.to) {
				hung, hangStart, gts = true, h.from, h.from
			}
		}
		if l.RestartAt > 0 {
			if !ts.Before(restart.Add(-gap)) && ts.Before(restart) {
				if engine == "0" {
					fmt.Fprintf(w, "up{%s} 0 %d\n", target, ts.Unix())
				}
				continue
			}
			if !ts.Before(restart) {
				t0, procStart = restart, restart.Add(-gap/2)
			}
		}
		el := run.Sub(t0).Seconds()
		// The loads the engine ran since t0, each with its seconds and its requests with a
		// first token: Earlier until the change, then l.
		type seg struct {
			l       VLLMLoad
			secs, n float64
		}
		segs := []seg{{l, el, l.ReqRate * el}}
		gl := l // the load the gauges show
		if l.Earlier != nil {
			change := end.Add(-l.ChangedFor)
			upTo := run
			if change.Before(run) {
				upTo = change
			}
			before, after := max(upTo.Sub(t0).Seconds(), 0), max(run.Sub(change).Seconds(), 0)
			e := *l.Earlier
			segs = []seg{{e, before, e.ReqRate * before}, {l, after, l.ReqRate * after}}
			if gts.Before(change) {
				gl = e
			}
		}
		var n, counted, preempted float64
		for _, sg := range segs {
			n += sg.n
			counted += sg.n * sg.l.CountedAbortShare
			preempted += sg.l.PreemptionRate * sg.secs
		}
		grown := l.RunningGrowth * gts.Sub(start).Seconds()
		// requests finished (counted aborts included), by segment; the batch's growth is the last
		// segment's
		finOf := func(i int) float64 {
			f := segs[i].n * (1 - segs[i].l.AbortShare)
			if i == len(segs)-1 {
				f -= grown
			}
			return f
		}
		var fin float64
		for i := range segs {
			fin += finOf(i)
		}
		sum := func(f func(i int) float64) float64 {
			t := 0.0
			for i := range segs {
				t += f(i)
			}
			return t
		}
		unix := ts.Unix()
		gauge := func(name, extra string, v float64) { fmt.Fprintf(w, "%s%s %g %d\n", name, lbl(extra), v, unix) }
		counter := func(name, extra string, v float64) { fmt.Fprintf(w, "%s_total%s %g %d\n", name, lbl(extra), v, unix) }
		// hist writes a histogram of value observed count times in each segment.
		hist := func(name string, buckets []float64, count func(i int) float64, value func(VLLMLoad) float64) {
			for _, b := range buckets {
				c := sum(func(i int) float64 {
					if value(segs[i].l) <= b {
						return count(i)
					}
					return 0
				})
				fmt.Fprintf(w, "%s_bucket%s %g %d\n", name, lbl(fmt.Sprintf(`le="%g"`, b)), c, unix)
			}
			fmt.Fprintf(w, "%s_bucket%s %g %d\n", name, lbl(`le="+Inf"`), sum(count), unix)
			fmt.Fprintf(w, "%s_sum%s %g %d\n", name, lbl(""), sum(func(i int) float64 { return count(i) * value(segs[i].l) }), unix)
			fmt.Fprintf(w, "%s_count%s %g %d\n", name, lbl(""), sum(count), unix)
		}
		started := func(i int) float64 { return segs[i].n }
		tokens := func(i int) float64 { return segs[i].n * 200 }
		if engine == "0" {
			// One descriptor per request the API server accepted and did not answer: while the
			// engine hangs, the requests that keep arriving (none on a pod nobody sends to).
			fds := 40
			if hung && !l.Asleep {
				fds += int(l.ReqRate * ts.Sub(hangStart).Seconds())
			}
			fmt.Fprintf(w, "up{%s} 1 %d\n", target, unix)
			fmt.Fprintf(w, "process_start_time_seconds{%s} %d %d\n", target, procStart.Unix(), unix)
			fmt.Fprintf(w, "process_open_fds{%s} %d %d\n", target, fds, unix)
			// The API server's CPU: a few percent of its core while it serves, flat while hung.
			cpu := 0.03 * ts.Sub(t0).Seconds()
			if hung {
				cpu = 0.03 * hangStart.Sub(t0).Seconds()
			}
			fmt.Fprintf(w, "process_cpu_seconds_total{%s} %g %d\n", target, cpu, unix)
		}
		if !l.Legacy { // vLLM versions of the old names had no sleep state
			awake := 1
			if hung && l.Asleep {
				awake = 0
			}
			gauge("vllm:engine_sleep_state", `sleep_state="awake"`, float64(awake))
			gauge("vllm:engine_sleep_state", `sleep_state="weights_offloaded"`, float64(1-awake))
			gauge("vllm:engine_sleep_state", `sleep_state="discard_all"`, 0)
		}
		gauge("vllm:num_requests_waiting", "", gl.Waiting)
		gauge("vllm:num_requests_running", "", gl.Running+grown)
		// A serving engine's KV usage moves with every block it allocates and frees: every other
		// sample, counted back from the last, is a hair lower, so its gauges are not frozen while
		// its value now and its peak stay l.KV.
		kv := gl.KV
		if int(end.Sub(gts)/step)%2 == 1 && kv >= 0.001 {
			kv -= 0.0001
		}
		if l.Legacy {
			gauge("vllm:gpu_cache_usage_perc", "", kv)
		} else {
			gauge("vllm:kv_cache_usage_perc", "", kv)
		}
		counter("vllm:num_preemptions", "", preempted)
		counter("vllm:request_success", `finished_reason="stop"`, fin-counted)
		counter("vllm:request_success", `finished_reason="abort"`, counted)
		for _, r := range []string{"length", "error", "repetition"} {
			counter("vllm:request_success", `finished_reason="`+r+`"`, 0)
		}
		prompt := sum(func(i int) float64 { return segs[i].n * segs[i].l.Prompt })
		counter("vllm:generation_tokens", "", sum(tokens))
		counter("vllm:prompt_tokens", "", prompt)
		if l.HitRate > 0 || (l.Earlier != nil && l.Earlier.HitRate > 0) {
			counter("vllm:prefix_cache_queries", "", prompt)
			counter("vllm:prefix_cache_hits", "", sum(func(i int) float64 { return segs[i].n * segs[i].l.Prompt * segs[i].l.HitRate }))
		}
		ttft := func(x VLLMLoad) float64 { return x.TTFT }
		if l.OldBuckets {
			hist("vllm:time_to_first_token_seconds", oldTTFTBuckets, started, ttft)
		} else {
			hist("vllm:time_to_first_token_seconds", ttftBuckets, started, ttft)
		}
		itl := func(x VLLMLoad) float64 { return x.ITL }
		if l.Legacy {
			hist("vllm:time_per_output_token_seconds", itlBuckets, tokens, itl)
		} else {
			hist("vllm:inter_token_latency_seconds", itlBuckets, tokens, itl)
		}
		// observed at finish only
		hist("vllm:request_queue_time_seconds", phaseBuckets, finOf, func(x VLLMLoad) float64 { return x.Queue })
		hist("vllm:request_prefill_time_seconds", phaseBuckets, finOf, func(x VLLMLoad) float64 { return x.Prefill })
		hist("vllm:request_decode_time_seconds", phaseBuckets, finOf, func(x VLLMLoad) float64 { return x.Decode })
		hist("vllm:e2e_request_latency_seconds", phaseBuckets, finOf, func(x VLLMLoad) float64 { return x.Queue + x.Prefill + x.Decode })
		hist("vllm:request_prompt_tokens", tokenBuckets, finOf, func(x VLLMLoad) float64 { return x.Prompt })
	}
}

// RecordedVLLM returns OpenMetrics (for promtool's backfill) holding 20 minutes of each pod's load
// up to now, and the same pods healthy one day earlier (the baselines of `offset 1d` queries).
func RecordedVLLM(now time.Time, pods []VLLMLoad) string {
	now = now.Truncate(15 * time.Second)
	var raw strings.Builder
	for _, p := range pods {
		if p.Fresh || p.StartAt > 0 {
			continue
		}
		base := HealthyLoad
		if p.DayAgo != nil {
			base = *p.DayAgo
		}
		base.Pod, base.Model, base.Legacy, base.OldBuckets = p.Pod, p.Model, p.Legacy, p.OldBuckets
		base.Namespace, base.Engine = p.Namespace, p.Engine
		dayAgo := now.Add(-24 * time.Hour)
		base.series(&raw, dayAgo.Add(-15*time.Minute), dayAgo.Add(5*time.Minute), 15*time.Second, dayAgo.Add(-30*time.Minute))
	}
	for _, p := range pods {
		step := p.Step
		if step == 0 {
			step = 15 * time.Second
		}
		p.series(&raw, now.Add(-20*time.Minute), now.Add(-15*time.Second), step, now.Add(-25*time.Hour))
	}
	return openMetrics(raw.String())
}

// recordedAt maps a recorded Prometheus' URL to its RecordedAt.
var recordedAt sync.Map

// RecordedAtOf is the RecordedAt of the recorded Prometheus at url (RecordedPrometheus,
// RecordedPrometheusWithRules), for helpers that only hold its URL (a config file): false for
// any other Prometheus.
func RecordedAtOf(url string) (time.Time, bool) {
	v, ok := recordedAt.Load(url)
	if !ok {
		return time.Time{}, false
	}
	return v.(time.Time), true
}

// RecordedPrometheus starts a real Prometheus holding RecordedVLLM for these pods.
func RecordedPrometheus(t testing.TB, pods []VLLMLoad) *PromServer {
	t.Helper()
	now := time.Now()
	p := Prometheus(t, PromOptions{OpenMetrics: RecordedVLLM(now, pods)})
	p.RecordedAt = now
	recordedAt.Store(p.URL, now)
	return p
}

// RecordedPrometheusWithRules is RecordedPrometheus with the recording rules of ruleFiles (the
// shipped deploy/prometheus files: the stall history) evaluated over the recorded 20 minutes,
// as a Prometheus that has run them all along holds them.
func RecordedPrometheusWithRules(t testing.TB, pods []VLLMLoad, ruleFiles ...string) *PromServer {
	t.Helper()
	now := time.Now()
	end := now.Truncate(15 * time.Second)
	p := Prometheus(t, PromOptions{OpenMetrics: RecordedVLLM(now, pods), BackfillRules: ruleFiles,
		BackfillFrom: end.Add(-20 * time.Minute), BackfillTo: end})
	p.RecordedUntil, p.RecordedAt = end, now
	recordedAt.Store(p.URL, now)
	return p
}

// openMetrics groups samples by metric family (OpenMetrics wants each family contiguous) and
// declares their types.
func openMetrics(raw string) string {
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
		first := families[fam][0]
		typ := "gauge"
		switch {
		case strings.HasSuffix(first[:strings.IndexAny(first, "{ ")], "_total"):
			typ = "counter"
		case strings.HasPrefix(fam, "vllm:") && (strings.Contains(fam, "_seconds") || strings.HasSuffix(fam, "_tokens")):
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

// ProgressLoads are the pods of one model (in namespace) whose engines hang, sleep, restart or
// recover, as recorded on a real Prometheus (the hang as measured on vLLM 0.32: every vllm:
// series frozen at its last value, /metrics still answering), beside an idle, a slow and a quiet
// pod: the real-vLLM end-to-end test's stops of 75 s (scraped every 15 s and every second), two
// stops, a stop 6m10s ago still on, a hang of 5 minutes that ended, a restart inside the window
// and one whose scrape gap began before it, a new pod, a busy pod whose scrapes time out.
func ProgressLoads(namespace, model string) []VLLMLoad {
	pod := func(name string, f func(*VLLMLoad)) VLLMLoad {
		l := HealthyLoad
		l.Namespace, l.Pod, l.Model = namespace, name, model
		f(&l)
		return l
	}
	return []VLLMLoad{
		// SIGSTOP of EngineCore with two requests running: the queue reads 0.
		pod("hung", func(l *VLLMLoad) { l.Running, l.Waiting, l.KV, l.HangFrom = 2, 0, 0.04, 8*time.Minute }),
		pod("asleep", func(l *VLLMLoad) { l.Running, l.Waiting, l.HangFrom, l.Asleep = 2, 1, 8*time.Minute, true }),
		pod("restarted", func(l *VLLMLoad) {
			l.RestartAt, l.RestartReason, l.RestartExitCode = 2*time.Minute, "OOMKilled", 137
		}),
		// hung for 5 minutes, until 4 minutes ago; its backlog queues since
		pod("recovered", func(l *VLLMLoad) {
			l.HangFrom, l.HangFor, l.Waiting, l.Queue, l.TTFT = 9*time.Minute, 5*time.Minute, 30, 34, 35
		}),
		// SIGSTOP for 75 s, until a minute ago, as the real-vLLM end-to-end test does: scraped
		// every 15 s, and every second
		pod("stopped-75s", func(l *VLLMLoad) {
			l.HangFrom, l.HangFor, l.Waiting, l.Queue, l.TTFT = 135*time.Second, 75*time.Second, 30, 34, 35
		}),
		pod("stopped-75s-1s", func(l *VLLMLoad) {
			l.Step, l.HangFrom, l.HangFor, l.Waiting, l.Queue, l.TTFT = time.Second, 135*time.Second, 75*time.Second, 30, 34, 35
		}),
		// stopped for 75 s twice: 8 minutes ago and until a minute ago
		pod("stopped-twice", func(l *VLLMLoad) {
			l.HangFrom, l.HangFor, l.Waiting, l.Queue, l.TTFT = 135*time.Second, 75*time.Second, 30, 34, 35
			l.EarlierHangFrom, l.EarlierHangFor = 8*time.Minute, 75*time.Second
		}),
		// stopped 6m10s ago, scraped every second: since when, to 5 s
		pod("stopped-370s-1s", func(l *VLLMLoad) {
			l.Step, l.Running, l.Waiting, l.HangFrom = time.Second, 2, 0, 370*time.Second
		}),
		// past capacity, its scrapes timing out for 45 s: neither a restart nor a stall
		pod("busy-gap", func(l *VLLMLoad) {
			l.TTFT, l.Queue, l.Waiting, l.Running, l.KV = 35, 34, 140, 64, 0.6
			l.ScrapeGapAt, l.ScrapeGap = 3*time.Minute, 45*time.Second
		}),
		// killed 6.5 minutes ago and scraped again for 30 s: a gap longer than the window; its
		// engine core died, so the container exited 0 (vLLM 0.32)
		pod("restarted-late", func(l *VLLMLoad) {
			l.RestartAt, l.RestartGap, l.RestartReason, l.RestartExitCode = 30*time.Second, 6*time.Minute, "Completed", 0
		}),
		// a new pod: two minutes of start-up scraped as down, serving for the last minute
		pod("new", func(l *VLLMLoad) { l.StartAt, l.RestartGap = time.Minute, 2*time.Minute }),
		pod("idle", func(l *VLLMLoad) { l.ReqRate, l.Running, l.Waiting, l.KV = 0, 0, 0, 0 }),
		// An idle engine (nothing running or waiting, as it last reported) stopped for 70 s,
		// until 65 s ago, while one short request a second kept arriving: its gauges stay 0/0,
		// the API server holds the requests (process_open_fds climbs); their TTFT holds the hang.
		// And the same stop with nothing arriving: indistinguishable from idle, and harmless.
		pod("idle-hang-trickle", func(l *VLLMLoad) {
			l.ReqRate, l.Running, l.Waiting, l.KV, l.Decode, l.TTFT = 1, 0, 0, 0, 0.05, 79
			l.HangFrom, l.HangFor = 135*time.Second, 70*time.Second
		}),
		// That stop twice, 8 minutes ago and until 65 s ago: each hang's first minute counted.
		pod("idle-hang-twice", func(l *VLLMLoad) {
			l.ReqRate, l.Running, l.Waiting, l.KV, l.Decode, l.TTFT = 1, 0, 0, 0, 0.05, 79
			l.HangFrom, l.HangFor = 135*time.Second, 70*time.Second
			l.EarlierHangFrom, l.EarlierHangFor = 8*time.Minute, 70*time.Second
		}),
		pod("idle-hang-quiet", func(l *VLLMLoad) {
			l.ReqRate, l.Running, l.Waiting, l.KV = 0, 0, 0, 0
			l.HangFrom, l.HangFor = 135*time.Second, 70*time.Second
		}),
		pod("slow", func(l *VLLMLoad) { l.ReqRate, l.Running, l.Waiting = 0.05, 4, 2 }),
		pod("ok", func(*VLLMLoad) {}),
	}
}
