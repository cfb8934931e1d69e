package evidence

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/facts/sources"
	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

// fleetQuerier answers fleet queries (those with `by (pod)`) with one sample per pod from
// byPod[signal], every other query with one number, except the scrape, restart and pause
// queries of a server scraped the whole window that neither restarted nor paused (steady); it
// records what was asked.
type fleetQuerier struct {
	podLabel  string // the label the keys' pods are written under (default pod)
	roleLabel string // the label the keys' roles are written under (none when empty)
	mu        sync.Mutex
	asked     []string
	byPod     map[string]map[string]float64 // signal (a metric name in the query) -> pod -> value
	scalar    float64
}

func (f *fleetQuerier) Query(_ context.Context, q string, _ time.Time) (model.Value, error) {
	f.mu.Lock()
	f.asked = append(f.asked, q)
	f.mu.Unlock()
	legs := foldedLegs(nil, q)
	if legs != nil && !strings.Contains(q, "by (namespace, ") { // a request of the playbook's own queries
		var vec model.Vector
		for _, l := range legs {
			v, ok := steady[l.name]
			if !ok {
				v = f.scalar
			}
			vec = append(vec, &model.Sample{Metric: model.Metric{signalLabel: model.LabelValue(l.name)}, Value: model.SampleValue(v)})
		}
		return vec, nil
	}
	if m := foldedSignalRE.FindAllStringSubmatch(q, -1); m != nil { // the fleet's one request
		var vec model.Vector
		for _, sig := range m {
			for key, v := range f.byPod[sig[1]] {
				k := playbooks.ParseFleetKey(key)
				podLabel := model.LabelName(cmp.Or(f.podLabel, "pod"))
				metric := model.Metric{podLabel: model.LabelValue(k.Pod), signalLabel: model.LabelValue(sig[1])}
				if k.Namespace != "" {
					metric["namespace"] = model.LabelValue(k.Namespace)
				}
				if k.Rank != "" {
					metric["engine"] = model.LabelValue(k.Rank)
				}
				if k.Role != "" && f.roleLabel != "" {
					metric[model.LabelName(f.roleLabel)] = model.LabelValue(k.Role)
				}
				vec = append(vec, &model.Sample{Metric: metric, Value: model.SampleValue(v)})
			}
		}
		return vec, nil
	}
	return model.Vector{{Metric: model.Metric{}, Value: model.SampleValue(f.scalar)}}, nil
}

// steady are the built-in playbooks' scrape, restart and pause values of a server scraped the
// whole window that neither restarted nor paused.
var steady = map[string]float64{"up_min": 1, "up_now": 1, "start_changes": 0, "resets": 0, "asleep": 0, "asleep_now": 0, "pause_ops": 0, "fds_growth": 0}

// foldedSignalRE finds the names of the fleet queries a fleet request carries.
var foldedSignalRE = regexp.MustCompile(`"` + signalLabel + `", "(\w+)"`)

func builtinSet(t testing.TB) *playbooks.Set {
	t.Helper()
	pbs, err := playbooks.Builtin(sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	s, err := playbooks.NewSet(pbs, nil, playbooks.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// On-demand triage of a model names the wedged pod, and the number of queries is the same for 3
// pods as for 50: one vector by pod per signal.
func TestTriageOfAModelNamesTheWedgedPodWithOneQueryPerSignal(t *testing.T) {
	t.Parallel()
	p := builtinSet(t).Triage()
	labels := map[string]string{"model_name": `llama"} or vector(1) #`, "namespace": "prod"}
	count := func(pods int) (*playbooks.Diagnosis, *fleetQuerier) {
		fq := &fleetQuerier{byPod: map[string]map[string]float64{"waiting": {}, "running": {}, "tokens": {}, "arrivals": {}, "stall": {}}}
		for i := range pods {
			pod := fmt.Sprintf("vllm-%d", i)
			fq.byPod["waiting"][pod], fq.byPod["running"][pod], fq.byPod["tokens"][pod], fq.byPod["arrivals"][pod] = 1, 10, 2000, 4
		}
		fq.byPod["waiting"]["vllm-1"], fq.byPod["running"]["vllm-1"], fq.byPod["tokens"]["vllm-1"] = 30, 0, 0
		fq.byPod["stall"]["vllm-1"] = 12
		e := NewEngine(fq, EngineOptions{CacheTTL: -1, Logger: zerolog.Nop()})
		d, err := e.Run(context.Background(), p, labels)
		if err != nil {
			t.Fatal(err)
		}
		return d, fq
	}
	d3, q3 := count(3)
	d50, q50 := count(50)
	for _, d := range []*playbooks.Diagnosis{d3, d50} {
		if d.Verdict != playbooks.VerdictEngineStalled || d.Fleet == nil || d.Fleet.Focus != "vllm-1" || !d.Fleet.FocusChosen {
			t.Fatalf("verdict %s, fleet %+v; want engine-stalled naming vllm-1", d.Verdict, d.Fleet)
		}
		if !strings.Contains(d.Title, "vllm-1") || !strings.Contains(d.Summary, "this pod alone (1 of ") {
			t.Errorf("title %q / summary %q should name vllm-1 and say it is this pod alone", d.Title, d.Summary)
		}
	}
	if d50.Fleet.Pods != 50 || len(d50.Fleet.Rows) != 50 || d50.Fleet.Rows[0].Pod != "vllm-1" {
		t.Errorf("50 pods: %d pods, %d rows, first %q; want 50, 50, the focus vllm-1 first", d50.Fleet.Pods, len(d50.Fleet.Rows), d50.Fleet.Rows[0].Pod)
	}
	// The fleet's queries travel in as few requests as fit DefaultMaxQueryBytes: triage's in two
	// (its stall history alone is 10 KB).
	if want := len(Requests(p, labels, 0)); len(q3.asked) != len(q50.asked) || len(q3.asked) != want || want > len(p.Queries)/defaultQueriesPerRequest+3 {
		t.Errorf("requests: %d for 3 pods, %d for 50; want both %d (the %d queries a few to a request, and the fleet's in one or two)",
			len(q3.asked), len(q50.asked), want, len(p.Queries))
	}
	for _, q := range q3.asked {
		if strings.Contains(q, "pod=") {
			t.Errorf("a query narrowed to one pod: %s", q)
		}
		if !strings.Contains(q, `model_name="llama\"} or vector(1) #"`) {
			t.Errorf("label value not quoted as a PromQL string: %s", q)
		}
		if strings.Contains(q, "vllm:num_requests_") && !strings.Contains(q, `server=""`) {
			t.Errorf("query counts the router's series (label server) as pods: %s", q)
		}
	}
}

// A pod that has no series for a signal shows n/a there; its other values still count.
func TestFleetViewShowsAMissingValueAsNA(t *testing.T) {
	t.Parallel()
	p, _ := builtinSet(t).Get("ttft-p99-high")
	fq := &fleetQuerier{scalar: 1, byPod: map[string]map[string]float64{
		"waiting": {"vllm-0": 140, "vllm-1": 0, "vllm-2": 1},
		"kv":      {"vllm-0": 0.3, "vllm-1": 0.1},
	}}
	e := NewEngine(fq, EngineOptions{CacheTTL: -1, Logger: zerolog.Nop()})
	d, err := e.Run(context.Background(), p, map[string]string{"model_name": "llama", "namespace": "prod", "pod": "vllm-0"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Fleet == nil || d.Fleet.Focus != "vllm-0" || d.Fleet.FocusChosen || d.Fleet.Pods != 3 {
		t.Fatalf("fleet %+v; want 3 pods with the alert's vllm-0 in focus", d.Fleet)
	}
	kvCol := -1
	for i, c := range d.Fleet.Columns {
		if c.Name == "kv" {
			kvCol = i
		}
	}
	for _, r := range d.Fleet.Rows {
		if r.Pod == "vllm-2" && (r.Values[kvCol] != nil || r.Texts[kvCol] != playbooks.NA) {
			t.Errorf("vllm-2 has no KV series; got %v %q", r.Values[kvCol], r.Texts[kvCol])
		}
	}
	if d.Fleet.Scope != "this pod alone (1 of 3 pods)" {
		t.Errorf("scope %q", d.Fleet.Scope)
	}
}

// Two namespaces with a pod of the same name are two pods: siblings are the same model_name and
// namespace, so an alert that names no namespace must not add them up as one.
func TestSameNamedPodsOfTwoNamespacesAreTwoPods(t *testing.T) {
	t.Parallel()
	p, _ := builtinSet(t).Get("ttft-p99-high")
	fq := &fleetQuerier{scalar: 1, byPod: map[string]map[string]float64{
		"waiting":  {"prod/vllm-0": 140, "staging/vllm-0": 2, "prod/vllm-1": 0},
		"arrivals": {"prod/vllm-0": 48, "staging/vllm-0": 5, "prod/vllm-1": 6},
	}}
	d, err := NewEngine(fq, EngineOptions{CacheTTL: -1, Logger: zerolog.Nop()}).Run(context.Background(), p,
		map[string]string{"alertname": "VLLMTimeToFirstTokenP99High", "model_name": "llama", "pod": "vllm-0"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Fleet == nil || d.Fleet.Pods != 3 || d.Fleet.Focus != "prod/vllm-0" {
		t.Fatalf("fleet %+v; want 3 pods (prod/vllm-0 and staging/vllm-0 apart), the worst vllm-0 in focus", d.Fleet)
	}
	for _, r := range d.Fleet.Rows {
		if r.Pod == "staging/vllm-0" && (r.Values[0] == nil || *r.Values[0] != 2) {
			t.Errorf("staging/vllm-0 waiting %v; want its own 2, not added to prod's", r.Values[0])
		}
	}
	if !slices.ContainsFunc(d.Notes, func(n string) bool { return strings.Contains(n, "2 namespaces have a pod vllm-0") }) {
		t.Errorf("notes %q should say the alert's pod name is in two namespaces", d.Notes)
	}
	// Every fleet query is asked once, in a fleet request (one that carries fleet queries only)
	// whose every query groups by the namespace too.
	fleetNames := map[string]bool{}
	for _, q := range p.Fleet.Queries {
		fleetNames[q.Name] = true
	}
	asked := map[string]int{}
	for _, q := range fq.asked {
		signals := foldedSignalRE.FindAllStringSubmatch(q, -1)
		if len(signals) == 0 || slices.ContainsFunc(signals, func(m []string) bool { return !fleetNames[m[1]] }) {
			continue // the playbook's own request
		}
		for _, m := range signals {
			asked[m[1]]++
		}
		if strings.Count(q, "by (namespace, pod, instance, engine)") < len(signals) {
			t.Errorf("fleet request not grouped by namespace, pod, instance and engine: %s", q)
		}
	}
	for _, fq := range p.Fleet.Queries {
		if asked[fq.Name] != 1 {
			t.Errorf("fleet query %s asked %d times; want once", fq.Name, asked[fq.Name])
		}
	}
}

// Where the scrape adds no pod label (vLLM's static example: job and instance), each instance
// is a pod of its own, not one "(no label)" pod; with vllm.pod_label set, that label names them.
func TestFleetPodsByInstanceOrTheConfiguredPodLabel(t *testing.T) {
	t.Parallel()
	p, _ := builtinSet(t).Get("ttft-p99-high")
	for _, tc := range []struct {
		name, podLabel, label, groupBy string
	}{
		{"instance", "", "instance", "by (namespace, pod, instance, engine)"},
		{"configured pod label", "kubernetes_pod_name", "kubernetes_pod_name", "by (namespace, kubernetes_pod_name, instance, engine)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fq := &fleetQuerier{scalar: 1, podLabel: tc.label, byPod: map[string]map[string]float64{
				"waiting": {"10.0.0.1:8000": 140, "10.0.0.2:8000": 0},
			}}
			e := NewEngine(fq, EngineOptions{CacheTTL: -1, Logger: zerolog.Nop(), Naming: vllmnames.Naming{PodLabel: tc.podLabel}})
			d, err := e.Run(context.Background(), p, map[string]string{"model_name": "llama", tc.label: "10.0.0.1:8000"})
			if err != nil {
				t.Fatal(err)
			}
			if d.Fleet == nil || d.Fleet.Pods != 2 || d.Fleet.Focus != "10.0.0.1:8000" || d.Fleet.FocusChosen {
				t.Fatalf("fleet %+v; want 2 pods named by %s, the alert's in focus", d.Fleet, tc.label)
			}
			if !slices.ContainsFunc(fq.asked, func(q string) bool { return strings.Contains(q, tc.groupBy) }) {
				t.Errorf("no fleet request grouped %s in %q", tc.groupBy, fq.asked)
			}
		})
	}
}

// Where pods carry a role label (disaggregated prefill/decode serving), the fleet is grouped by
// it too and a decode pod is compared with the decode pool only: a decode pod holding the queue
// beside idle prefill pods is its pool's only pod (capacity), not a router imbalance, and the
// prefill pool's values are read apart.
func TestADecodePodIsComparedWithTheDecodePoolNotThePrefillPods(t *testing.T) {
	t.Parallel()
	p, _ := builtinSet(t).Get("queue-depth-high")
	fq := &fleetQuerier{scalar: 1, roleLabel: "llm_isvc_role", byPod: map[string]map[string]float64{
		"waiting":  {"vllm-d-0@decode": 300, "vllm-p-0@prefill": 0, "vllm-p-1@prefill": 2},
		"arrivals": {"vllm-d-0@decode": 50, "vllm-p-0@prefill": 4, "vllm-p-1@prefill": 5},
		"tokens":   {"vllm-d-0@decode": 3000, "vllm-p-0@prefill": 9000, "vllm-p-1@prefill": 8000},
	}}
	fq.scalar = 0.95 // queue share, KV below full...: every scalar the same
	e := NewEngine(fq, EngineOptions{CacheTTL: -1, Logger: zerolog.Nop(), Naming: vllmnames.Naming{RoleLabel: "llm_isvc_role"}})
	d, err := e.Run(context.Background(), p, map[string]string{"model_name": "llama", "namespace": "prod", "pod": "vllm-d-0"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(fq.asked, func(q string) bool {
		return strings.Contains(q, "by (namespace, pod, instance, engine, llm_isvc_role)")
	}) {
		t.Errorf("no fleet request grouped by the role label in %q", fq.asked)
	}
	if d.Verdict == playbooks.VerdictLoadImbalance || d.Fleet == nil || d.Fleet.Pool != "decode" || d.Fleet.Pods != 1 {
		t.Fatalf("verdict %s, fleet %+v; want the decode pool of 1 pod, no imbalance against prefill pods", d.Verdict, d.Fleet)
	}
	if !strings.Contains(d.Fleet.Scope, "the model's only decode pod (1 of 1 decode pods)") {
		t.Errorf("scope %q", d.Fleet.Scope)
	}
	if len(d.Fleet.Rows) != 3 || d.Fleet.Rows[0].Role != "decode" || !strings.Contains(strings.Join(fleetTable(d), "\n"), "vllm-p-1 (prefill)") {
		t.Errorf("rows %+v; want every pod listed with its role:\n%s", d.Fleet.Rows, strings.Join(fleetTable(d), "\n"))
	}
}

// A pod's data-parallel engines add up by the query's own aggregation (queues summed, KV usage
// the fullest engine's), and the focus pod's engines are listed worst first.
func TestDataParallelEnginesAddUpPerPodByTheQuerysAggregation(t *testing.T) {
	t.Parallel()
	p, _ := builtinSet(t).Get("ttft-p99-high")
	fq := &fleetQuerier{scalar: 1, byPod: map[string]map[string]float64{
		"waiting": {"vllm-0#0": 3, "vllm-0#1": 40, "vllm-1#0": 1},
		"kv":      {"vllm-0#0": 0.2, "vllm-0#1": 0.6, "vllm-1#0": 0.1},
	}}
	d, err := NewEngine(fq, EngineOptions{CacheTTL: -1, Logger: zerolog.Nop()}).Run(context.Background(), p,
		map[string]string{"model_name": "llama", "namespace": "prod", "pod": "vllm-0"})
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, c := range d.Fleet.Columns {
		col[c.Name] = i
	}
	r := d.Fleet.Rows[0]
	if r.Pod != "vllm-0" || *r.Values[col["waiting"]] != 43 || *r.Values[col["kv"]] != 0.6 {
		t.Errorf("vllm-0: waiting %v, kv %v; want 43 (summed) and 0.6 (the max)", *r.Values[col["waiting"]], *r.Values[col["kv"]])
	}
	if d.Fleet.Rank != "1" || len(d.Fleet.Ranks) != 2 || d.Fleet.Ranks[0].Pod != "1" {
		t.Errorf("engines %q %+v; want engine 1 (the deeper queue) first of 2", d.Fleet.Rank, d.Fleet.Ranks)
	}
	table := fleetTable(d)
	if len(table) != 5 || !strings.Contains(table[1], "vllm-0") || !strings.Contains(table[2], "engine 1") || !strings.Contains(table[3], "engine 0") {
		t.Errorf("table should list vllm-0, then its engines 1 and 0, then vllm-1:\n%s", strings.Join(table, "\n"))
	}
}

// An alert about one data-parallel engine (VLLMEngineStalled keeps the engine label) names that
// engine, even when another engine of the pod ranks worse; without the label, the worst is named.
func TestTheAlertsEngineLabelNamesTheEngine(t *testing.T) {
	t.Parallel()
	p, _ := builtinSet(t).Get("engine-stalled")
	fq := &fleetQuerier{scalar: 1, byPod: map[string]map[string]float64{
		"waiting": {"vllm-0#0": 2, "vllm-0#1": 30, "vllm-0#2": 50},
		"stall":   {"vllm-0#1": 30, "vllm-0#2": 50},
		"tokens":  {"vllm-0#0": 900, "vllm-0#1": 0, "vllm-0#2": 0},
		"running": {"vllm-0#0": 8, "vllm-0#1": 0, "vllm-0#2": 0},
	}}
	for _, tc := range []struct{ label, want string }{{"1", "1"}, {"2", "2"}, {"", "2"}, {"7", "2"}} {
		labels := map[string]string{"alertname": "VLLMEngineStalled", "model_name": "llama", "namespace": "prod", "pod": "vllm-0"}
		if tc.label != "" {
			labels["engine"] = tc.label
		}
		d, err := NewEngine(fq, EngineOptions{CacheTTL: -1, Logger: zerolog.Nop()}).Run(context.Background(), p, labels)
		if err != nil {
			t.Fatal(err)
		}
		if d.Fleet == nil || string(d.Fleet.Rank) != tc.want || d.Verdict != playbooks.VerdictEngineStalled || !strings.Contains(d.Title, "engine "+tc.want) {
			t.Errorf("engine label %q: verdict %s, title %q, engine %q; want engine-stalled naming engine %s", tc.label, d.Verdict, d.Title, d.Fleet.Rank, tc.want)
		}
	}
}

// rejectingFolded rejects a request of several fleet queries as Prometheus rejects a bad query,
// and answers each fleet query alone (labelled, when a request of its own holds it: the queries
// that do not fit the first request's length bound) with one sample per pod.
type rejectingFolded struct {
	mu    sync.Mutex
	alone int
}

func (r *rejectingFolded) Query(_ context.Context, q string, _ time.Time) (model.Value, error) {
	switch {
	case strings.Count(q, `"`+signalLabel+`"`) > 1:
		return nil, &v1.Error{Type: v1.ErrBadData, Msg: "query too large"}
	case strings.Contains(q, "by (namespace, pod, instance, engine)"):
		r.mu.Lock()
		r.alone++
		r.mu.Unlock()
		return model.Vector{{Metric: model.Metric{"pod": "vllm-0"}, Value: 1}, {Metric: model.Metric{"pod": "vllm-1"}, Value: 2}}, nil
	}
	return model.Vector{{Metric: model.Metric{}, Value: 1}}, nil
}

// When Prometheus rejects the fleet's one request, each fleet query is sent alone: one bad query
// must not cost the sibling comparison.
func TestARejectedFleetRequestFallsBackToOneRequestPerQuery(t *testing.T) {
	t.Parallel()
	p, _ := builtinSet(t).Get("ttft-p99-high")
	q := &rejectingFolded{}
	d, err := NewEngine(q, EngineOptions{CacheTTL: -1, Logger: zerolog.Nop()}).Run(context.Background(), p,
		map[string]string{"model_name": "llama", "namespace": "prod", "pod": "vllm-0"})
	if err != nil {
		t.Fatal(err)
	}
	if q.alone != len(p.Fleet.Queries) {
		t.Errorf("%d fleet queries sent alone; want all %d", q.alone, len(p.Fleet.Queries))
	}
	if d.Fleet == nil || d.Fleet.Pods != 2 || d.Fleet.Rows[0].Values[0] == nil {
		t.Fatalf("fleet %+v; want both pods with values", d.Fleet)
	}
}

// fleetTable is the sibling table as the notifiers show it (notify's view of the diagnosis).
func fleetTable(d *playbooks.Diagnosis) []string { return notify.NewDiagnosisView(d).Fleet.Table(8) }
