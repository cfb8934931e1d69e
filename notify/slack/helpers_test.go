package slack

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/prometheus/alertmanager/template"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"
	slackgo "github.com/slack-go/slack"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/notify/slack/fakeslack"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/store"
)

var (
	t0      = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	startTS = t0.Add(-10 * time.Minute)
)

func testConfig(apiURL string) *Config {
	c := &Config{
		BotToken:           "xoxb-test-token",
		SigningSecret:      "signing-secret",
		Channel:            "#vllm-incidents",
		APIURL:             apiURL,
		GrafanaURLTemplate: "https://grafana.example/d/vllm/vllm?var-model={{.Model}}&var-pod={{.Pod}}&from={{.FromMS}}&to={{.ToMS}}",
		TracesURLTemplate:  "https://jaeger.example/search?service=vllm-{{.Model}}&operation=llm_request&minDuration=1s&limit=20&start={{.FromUS}}&end={{.ToUS}}",
	}
	c.SetDefaults()
	c.PostInterval = time.Millisecond
	c.ParentWait = 10 * time.Second
	if err := c.Validate(); err != nil {
		panic(err)
	}
	return c
}

// testRender is what the notifier renders with under testConfig, an Alertmanager and a capturer
// configured: rendering alone, without Slack or a store.
func testRender() renderOptions {
	return newRenderOptions(testConfig(""), true, true, testStormThreshold)
}

// testStormThreshold is the storm threshold the tests render and notify with (the default).
const testStormThreshold = 5

// parentOf renders the parent message of nt (its view under o).
func parentOf(nt *notify.Notification, o renderOptions) ([]slackgo.Block, string) {
	return parentBlocks(notify.NewView(nt, o.View), o)
}

type harness struct {
	slack *fakeslack.Server
	cfg   *Config
	store store.Store
	api   *webAPI
	n     *notifier
	m     *metrics
}

func newHarness(t *testing.T, st store.Store, prom RangeQuerier, allowed ...string) *harness {
	t.Helper()
	// The workspace knows the configured channel by its name: the notifier resolves it.
	fs := fakeslack.New(t, append(allowed, "conversations.list")...)
	cfg := testConfig(fs.APIURL())
	if st == nil {
		st = store.NewMemory()
	}
	m := newMetrics(nil)
	api := newAPI(cfg, m, zerolog.New(zerolog.NewTestWriter(t)), nil)
	n, err := newNotifier(notifierOptions{Config: cfg, Store: st, API: api, Logger: zerolog.New(zerolog.NewTestWriter(t)),
		Prometheus: prom, Silence: true, Capture: true, StormThreshold: testStormThreshold, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{slack: fs, cfg: cfg, store: st, api: api, n: n, m: m}
}

func f(v float64) *float64 { return &v }

func alert(pod, status string) template.Alert {
	a := template.Alert{
		Status: status,
		Labels: template.KV{"alertname": "VLLMTimeToFirstTokenP99High", "model_name": "meta-llama/Llama-3.1-8B-Instruct",
			"namespace": "inference", "pod": pod, "severity": "page"},
		Annotations:  template.KV{"runbook_url": "https://runbooks.example/vllm/ttft", "summary": "TTFT p99 above 10s"},
		StartsAt:     startTS,
		GeneratorURL: "http://prometheus.example/graph?g0.expr=vllm_ttft",
		Fingerprint:  "fp-" + pod,
	}
	if status == notify.StatusResolved {
		a.EndsAt = t0.Add(25 * time.Minute)
	}
	return a
}

// testRecordID stands for the id of a kept diagnosis record (the Wrong verdict? select).
const testRecordID = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"

// diagnosisFor is a realistic diagnosis for each verdict.
func diagnosisFor(verdict, pod string) *playbooks.Diagnosis {
	d := &playbooks.Diagnosis{
		Playbook: "ttft-p99-high", Verdict: verdict,
		Scope:       map[string]string{"model_name": "meta-llama/Llama-3.1-8B-Instruct", "namespace": "inference", "pod": pod},
		EvaluatedAt: t0, DurationMS: 231, RecordID: testRecordID,
		Charts: []playbooks.ChartSpec{{Title: "TTFT p99 and queue depth", Range: time.Hour, Series: []playbooks.ChartSeries{
			{Name: "ttft_p99", Title: "TTFT p99", Unit: "s", Query: `histogram_quantile(0.99, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{pod="` + pod + `"}[5m])))`},
			{Name: "waiting", Title: "Queue depth", Unit: "requests", Query: `sum(vllm:num_requests_waiting{pod="` + pod + `"})`},
		}}},
	}
	ev := func(name, title, text, unit string, v float64, base *float64, baseText string) playbooks.Evidence {
		return playbooks.Evidence{Name: name, Title: title, Text: text, Unit: unit, Value: f(v), Baseline: base, BaselineText: baseText, Query: name + "{...}"}
	}
	switch verdict {
	case playbooks.VerdictCapacityPastKnee:
		d.Title, d.Summary = "Capacity, past the knee", "Queue 84 deep and growing; queueing is 91% of TTFT; running batch pinned at 256; no preemptions."
		d.Actions = []string{"Add replicas or shed load", "This is not a bug: the engine is saturated"}
		d.Evidence = []playbooks.Evidence{
			ev("ttft_p99", "TTFT p99", "14.2 s", "s", 14.2, f(0.9), "0.9 s a day ago"),
			ev("waiting", "Queue depth", "84 requests", "requests", 84, nil, ""),
			ev("queue_share", "Queue share of TTFT", "91%", "ratio", 0.91, nil, ""),
			ev("running", "Running batch", "256 of max 256", "requests", 256, nil, ""),
			ev("preemptions", "Preemptions", "0/s", "1/s", 0, nil, ""),
		}
	case playbooks.VerdictKVPreemption:
		d.Title, d.Summary = "KV preemption", "KV cache 98% full, 2.4 preemptions/s."
		d.Actions = []string{"Lower --max-num-seqs or --max-model-len", "Raise --gpu-memory-utilization", "Add capacity"}
		d.Evidence = []playbooks.Evidence{ev("kv_usage", "KV cache usage", "98%", "ratio", 0.98, f(0.6), "60% a day ago"), ev("preemptions", "Preemptions", "2.4/s", "1/s", 2.4, nil, "")}
	case playbooks.VerdictKVPressure:
		d.Title, d.Summary = "KV pressure, preemption imminent", "KV cache 95% full, no preemptions yet."
		d.Actions = []string{"Lower --max-num-seqs", "Add capacity before preemption starts"}
		d.Evidence = []playbooks.Evidence{ev("kv_usage", "KV cache usage", "95%", "ratio", 0.95, nil, "")}
	case playbooks.VerdictPrefillBound:
		d.Title, d.Summary = "Prefill-bound", "Prefill time is 78% of the TTFT rise; prompts doubled in length; queue short."
		d.Actions = []string{"Check the clients' prompt lengths", "Enable prefix caching", "Tune --max-num-batched-tokens"}
		d.Evidence = []playbooks.Evidence{ev("prefill_mean", "Prefill time (mean)", "1.8 s", "s", 1.8, f(0.4), "0.4 s a day ago"), ev("prompt_p50", "Prompt tokens p50", "3,900 tokens", "tokens", 3900, f(1800), "")}
	case playbooks.VerdictDecodeBound:
		d.Title, d.Summary = "Decode-bound", "ITL p99 rose to 180 ms with the running batch at 210 (was 90)."
		d.Actions = []string{"Lower --max-num-seqs", "Spread load across replicas"}
		d.Evidence = []playbooks.Evidence{ev("itl_p99", "ITL p99", "180 ms", "s", 0.18, f(0.05), "50 ms a day ago"), ev("running", "Running batch", "210", "requests", 210, f(90), "")}
	case playbooks.VerdictClientAborts:
		d.Title, d.Summary = "Client aborts", "12% of requests aborted while latency is normal."
		d.Actions = []string{"Check client and load-balancer timeouts"}
		d.Evidence = []playbooks.Evidence{ev("abort_share", "Abort share", "12%", "ratio", 0.12, f(0.01), "1% a day ago")}
	case playbooks.VerdictInconclusive:
		d.Title, d.Summary = "Inconclusive", "The alert is real but no rule explains it."
		d.Actions = []string{"Capture a bounded profile", "Look at sampled traces of slow requests"}
		d.OfferProfile = true
		d.Evidence = []playbooks.Evidence{ev("ttft_p99", "TTFT p99", "11.0 s", "s", 11, nil, "no baseline: series younger than 1d"),
			{Name: "prefill_mean", Title: "Prefill time (mean)", Query: "x", Problem: "no series"}}
		d.Missing = []string{"prefill_mean"}
	case playbooks.VerdictHealthy:
		d.Title, d.Summary = "Healthy", "Nothing wrong: queue empty, KV cache 40% full, TTFT p99 0.4 s."
		d.Evidence = []playbooks.Evidence{ev("ttft_p99", "TTFT p99", "0.4 s", "s", 0.4, nil, "")}
		d.Charts = nil
	case playbooks.VerdictEngineStalled:
		d.Playbook = "engine-stalled"
		d.Title, d.Summary = "Engine stalled on "+pod+": restart it", "Pod "+pod+" made no progress (no prompt or generation token, no engine step, no finished request) for about 7m48s while it holds requests: 2 running, 0 waiting, KV 4%, as it last reported them. Its gauges are frozen: not one changed in the last 5m0s; this pod alone (1 of 3 pods)."
		d.Actions = []string{"Restart pod " + pod, "Before the restart, take a stack dump: py-spy dump --pid <EngineCore pid>", "Read its logs for EngineDeadError and CUDA errors"}
		d.Evidence = []playbooks.Evidence{ev("waiting", "Requests waiting now", "42", "count", 42, f(12), "12"), ev("gen_tps", "Generation tokens", "0/s", "per_second", 0, nil, "")}
		d.Fleet = fleetFor(pod, map[string][3]float64{pod: {42, 0, 0}, "vllm-1": {0, 11, 1900}, "vllm-2": {1, 9, 2100}})
	case playbooks.VerdictEnginePaused:
		d.Playbook = "engine-stalled"
		d.Title, d.Summary = "Engine paused on purpose on "+pod+": do not restart it", "1 engine(s) slept in the last 5m0s (vllm:engine_sleep_state{sleep_state=\"awake\"} 0, set on /sleep; 1 still asleep now): the engine is paused on purpose (sleep mode, or generation paused while its weights are updated), not stalled."
		d.Actions = []string{"Do not restart the pod: it serves again after /wake_up (sleep mode) or /resume (weight updates)", "Find who paused it and for how long"}
		d.Evidence = []playbooks.Evidence{ev("held", "Requests held (least running + waiting in the window)", "3", "count", 3, nil, "")}
	case playbooks.VerdictEngineRestarting:
		d.Title, d.Summary = "Engine restarting: pod "+pod+" restarted within the last 5m0s", "The server is scraped again; in the last 5m0s: 1 process restart(s) (process_start_time_seconds changed), 2 counter reset(s), least scrape up 0."
		d.Actions = []string{"kubectl describe pod " + pod + " -n inference: Last State (Terminated: Reason OOMKilled or Error, Exit Code)", "kubectl logs " + pod + " -n inference --previous"}
		d.Evidence = []playbooks.Evidence{ev("ttft_p99", "TTFT p99", "3.1 s", "s", 3.1, f(0.4), "0.4 s a day ago")}
	case playbooks.VerdictLoadImbalance:
		d.Title, d.Summary = "Load imbalance: the router overloads "+pod+" while its siblings have room", "Pod "+pod+" has 140 waiting and 256 running at 48/s arrivals, while the other pods have at most 1 waiting and 6/s arrivals; this pod alone (1 of 3 pods)."
		d.Actions = []string{"Check the router or load balancer in front of the model", "Do not add replicas for this"}
		d.Evidence = []playbooks.Evidence{ev("waiting", "Requests waiting now", "140", "count", 140, f(60), "60")}
		d.Fleet = fleetFor(pod, map[string][3]float64{pod: {140, 256, 12000}, "vllm-1": {0, 12, 1500}, "vllm-2": {1, 10, 1400}})
	case playbooks.VerdictPrefixCollapse:
		d.Title, d.Summary = "Prefix-cache collapse: the cache stopped hitting, prefill recomputes", "The prefix-cache hit rate fell to 1% (baseline 88%) with prompts unchanged (3950 tokens), prefill mean 160 ms (baseline 30 ms)."
		d.Actions = []string{"Check routing affinity", "Check recent prompt or chat-template changes", "Check KV capacity (evictions)"}
		d.Evidence = []playbooks.Evidence{ev("hit_rate", "Prefix-cache hit rate (tokens)", "1%", "ratio", 0.01, f(0.88), "88%")}
	case playbooks.VerdictNoData:
		d.Title, d.Summary = "No data", "Prometheus has no vLLM series for this scope."
		d.Actions = []string{"Check the scrape config and the label values", "Check the metric names against your vLLM version"}
		d.Evidence = []playbooks.Evidence{{Name: "waiting", Title: "Queue depth", Query: "sum(vllm:num_requests_waiting)", Problem: "no series"}}
		d.Missing = []string{"waiting", "ttft_p99"}
		d.Notes = []string{"vllm:gpu_cache_usage_perc and vllm:kv_cache_usage_perc both absent"}
		d.Charts = nil
	}
	return d
}

// fleetFor is a three-column sibling comparison (waiting, running, tokens/s), pod in focus.
func fleetFor(pod string, rows map[string][3]float64) *playbooks.FleetView {
	v := &playbooks.FleetView{By: "pod", Focus: pod, Pods: len(rows), Affected: 1, AffectedPods: []string{pod},
		Scope:    "this pod alone (1 of 3 pods)",
		Siblings: map[string]string{"model_name": "meta-llama/Llama-3.1-8B-Instruct", "namespace": "inference"},
		Columns: []playbooks.FleetColumn{{Name: "waiting", Title: "Waiting", Unit: "count"}, {Name: "running", Title: "Running", Unit: "count"},
			{Name: "tokens", Title: "Tokens", Unit: "per_second"}}}
	names := []string{pod}
	for n := range rows {
		if n != pod {
			names = append(names, n)
		}
	}
	sort.Strings(names[1:])
	for _, n := range names {
		r := playbooks.FleetRow{Pod: n, Focus: n == pod, Affected: n == pod}
		for i, c := range v.Columns {
			x := rows[n][i]
			r.Values = append(r.Values, &x)
			r.Texts = append(r.Texts, playbooks.FormatValue(&x, c.Unit))
		}
		v.Rows = append(v.Rows, r)
	}
	return v
}

func firingNotification(group string, items ...notify.Item) *notify.Notification {
	return &notify.Notification{
		GroupKey: group, Status: notify.StatusFiring, Receiver: "vllm-responder",
		ExternalURL:  "http://alertmanager.example",
		GroupLabels:  map[string]string{"alertname": "VLLMTimeToFirstTokenP99High"},
		CommonLabels: map[string]string{"alertname": "VLLMTimeToFirstTokenP99High", "model_name": "meta-llama/Llama-3.1-8B-Instruct"},
		Items:        items, Source: notify.SourceAlertmanager, ReceivedAt: t0,
	}
}

func item(verdict, pod string) notify.Item {
	return notify.Item{Alert: alert(pod, notify.StatusFiring), Diagnosis: diagnosisFor(verdict, pod)}
}

// fakeProm answers range queries with a ramp, or fails.
type fakeProm struct{ err error }

func (p fakeProm) QueryRange(_ context.Context, q string, r v1.Range, _ ...v1.Option) (model.Value, v1.Warnings, error) {
	if p.err != nil {
		return nil, nil, p.err
	}
	var vals []model.SamplePair
	i := 0
	for ts := r.Start; !ts.After(r.End); ts = ts.Add(r.Step) {
		vals = append(vals, model.SamplePair{Timestamp: model.TimeFromUnixNano(ts.UnixNano()), Value: model.SampleValue(float64(i%60) * 0.3)})
		i++
	}
	return model.Matrix{{Metric: model.Metric{"pod": "vllm-0"}, Values: vals}}, nil, nil
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// sharedRedis returns clients of one real Redis, their keys under this test's own prefix: the
// store of several responders.
func sharedRedis(t *testing.T) func() store.Store {
	addr := testenv.RedisAddr(t)
	prefix := fmt.Sprintf("test-%s-%d:", t.Name(), time.Now().UnixNano())
	return func() store.Store {
		s, err := store.NewRedis("redis://"+addr+"/0", "", prefix)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

// sameSlack is another responder on st that talks to a's fake Slack.
func sameSlack(t *testing.T, a *harness, st store.Store) *harness {
	b := newHarness(t, st, nil)
	b.cfg.APIURL = a.cfg.APIURL
	b.api = newAPI(b.cfg, b.m, a.api.log, nil)
	b.n.api = b.api
	return b
}
