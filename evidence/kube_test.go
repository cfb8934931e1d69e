package evidence

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/facts/sources"
	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/kube"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

// kubeCluster is the recorded pods' Kubernetes: the scenario pods are one Deployment's (llama),
// its HPA at its ceiling.
func kubeCluster() testenv.KSMState {
	var pods []testenv.KSMPod
	for _, l := range testenv.ScenarioLoads() {
		pods = append(pods, testenv.KSMPod{Name: l.Pod, Node: "node-of-" + l.Pod, Ready: true})
	}
	s := testenv.KSMDeployment("llm", "llama", pods...)
	n := len(pods)
	s.HPAs = []testenv.KSMHPA{{Namespace: "llm", Name: "llama", TargetKind: "Deployment", TargetName: "llama", Min: 1, Max: n, Current: n, Desired: n,
		Conditions: map[string]string{"AbleToScale": "True", "ScalingActive": "True", "ScalingLimited": "True"}}}
	return s
}

// kubePrometheus is a real Prometheus holding the recorded vLLM pods and scraping a stand-in
// kube-state-metrics, once it holds the stand-in's series.
func kubePrometheus(t *testing.T) PrometheusQuerier {
	ksm := testenv.ServeExposition(t, kubeCluster().Exposition)
	prom := testenv.Prometheus(t, testenv.PromOptions{
		OpenMetrics:   testenv.RecordedVLLM(time.Now(), testenv.ScenarioLoads()),
		ScrapeTargets: []testenv.Target{{Addr: ksm.Addr, Job: "kube-state-metrics"}},
	})
	client, err := api.NewClient(api.Config{Address: prom.URL})
	if err != nil {
		t.Fatal(err)
	}
	pq := PrometheusQuerier{API: v1.NewAPI(client)}
	testenv.WaitFor(t, 60*time.Second, "Prometheus to scrape the stand-in kube-state-metrics", func() bool {
		v, err := pq.Query(context.Background(), "kube_horizontalpodautoscaler_spec_max_replicas", time.Now())
		vec, ok := v.(model.Vector)
		return err == nil && ok && len(vec) > 0
	})
	return pq
}

func kubeConfig(t *testing.T, selector string) *kube.Config {
	c := &kube.Config{}
	c.SetDefaults()
	c.Selector = selector
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

// kubePlaybook decides a KV verdict before any rule that reads a fact, and capacity with them.
const kubePlaybook = `
name: kube-test
match: {alertname: X}
scope: [namespace, pod, model_name]
queries:
  waiting: sum(avg_over_time(vllm:num_requests_waiting{$scope}[$window]))
  kv_peak: max(max_over_time(vllm:kv_cache_usage_perc{$scope}[$window]))
fleet:
  queries:
    waiting: sum by ($by) (vllm:num_requests_waiting{$siblings})
verdicts:
  - {id: kv-pressure, when: "kv_peak >= 0.9", title: KV}
  - id: capacity-past-knee
    when: waiting >= 5 && kube_hpa_found == 1 && kube_hpa_current >= kube_hpa_max
    title: "{{ .kube_hpa }} at its ceiling"
  - id: capacity-past-knee
    when: waiting >= 5
    title: "capacity{{ with .kube_missing }}: {{ . }}{{ end }}"
  - {id: inconclusive, when: "true", title: other}
`

func TestARunReadsKubeStateMetricsOnlyWhenARuleOnTheWayToItsVerdictDoes(t *testing.T) {
	t.Parallel()
	pq := kubePrometheus(t)
	at := time.Now() // after the first scrape (a second truncated away could be before it)
	p, err := playbooks.Parse("kube-test.yaml", []byte(kubePlaybook), sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	q := countingQuerier{WarningQuerier: pq, asked: make(chan string, 100)}
	engine := func(c *kube.Config, perRequest int) *Engine {
		return NewEngine(q, EngineOptions{CacheTTL: -1, QueriesPerRequest: perRequest, Facts: sources.List(sources.Config{Kubernetes: c}), Logger: zerolog.Nop()})
	}
	alert := map[string]string{"alertname": "X", "namespace": "llm", "pod": "vllm-capacity", "model_name": "llama"}
	// Without the KV rule: a model's KV peak is its worst pod's, past 90%.
	noKV, err := playbooks.Parse("kube-test.yaml", []byte(strings.Replace(kubePlaybook, `  - {id: kv-pressure, when: "kv_peak >= 0.9", title: KV}`+"\n", "", 1)), sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, c *kube.Config, perRequest int, labels map[string]string) (*playbooks.Diagnosis, []string) {
		t.Helper()
		q.drain()
		p := p
		if labels["pod"] == "" {
			p = noKV
		}
		d, err := engine(c, perRequest).RunAt(context.Background(), p, labels, at)
		if err != nil {
			t.Fatal(err)
		}
		return d, q.drain()
	}
	kubeRequests := func(asked []string) int {
		n := 0
		for _, a := range asked {
			if strings.Contains(a, "kube_") {
				n++
			}
		}
		return n
	}

	t.Run("the alert's pod: its workload and HPA become facts, evidence with their queries", func(t *testing.T) {
		d, asked := run(t, kubeConfig(t, `job="kube-state-metrics"`), 0, alert)
		n := float64(len(testenv.ScenarioLoads()))
		if d.Title != "llama at its ceiling" {
			t.Fatalf("title %q", d.Title)
		}
		if got := kubeRequests(asked); got != 3 {
			t.Errorf("%d kube-state-metrics requests, want 3 (the pod's 9 queries in one, the workload's 17 in two)", got)
		}
		f := d.Record.Facts
		if f.Label("kube_workload_ref") != "deployment/llama" || *f.Number("kube_hpa_max") != n || *f.Number("kube_hpa_limited") != 1 ||
			f.Label("kube_node") != "node-of-vllm-capacity" {
			t.Fatalf("facts: %v %v", f.Numbers, f.Labels)
		}
		ev := evidence(d, "kube_hpa_current")
		if ev.Value == nil || *ev.Value != n || !strings.Contains(ev.Query, `kube_horizontalpodautoscaler_status_current_replicas{job="kube-state-metrics",namespace="llm"}`) {
			t.Errorf("evidence: %+v", ev)
		}
		if ev := evidence(d, "kube_workload_ref"); ev.Label != "deployment/llama" || ev.Value != nil || ev.Text != "deployment/llama" {
			t.Errorf("a label-valued fact's evidence: %+v", ev)
		}
		if strings.Contains(strings.Join(d.Notes, "\n"), "Kubernetes") || strings.Contains(strings.Join(d.Missing, " "), "kube_") {
			t.Errorf("notes %q, missing %v", d.Notes, d.Missing)
		}
	})
	t.Run("a verdict decided before any rule reads a fact costs no lookup", func(t *testing.T) {
		kv := map[string]string{"alertname": "X", "namespace": "llm", "pod": "vllm-kv", "model_name": "llama"}
		d, asked := run(t, kubeConfig(t, ""), 0, kv)
		if d.Verdict != playbooks.VerdictKVPressure || kubeRequests(asked) != 0 || d.Record.Facts != nil {
			t.Fatalf("verdict %s, %d kube-state-metrics requests, facts %+v", d.Verdict, kubeRequests(asked), d.Record.Facts)
		}
	})
	t.Run("a few to a request says what each alone says", func(t *testing.T) {
		alone, _ := run(t, kubeConfig(t, ""), 1, alert)
		folded, _ := run(t, kubeConfig(t, ""), 0, alert)
		if !reflect.DeepEqual(alone.Record.Facts, folded.Record.Facts) || len(folded.Record.Facts.Numbers) < 15 {
			t.Fatalf("alone %v %v\nfolded %v %v", alone.Record.Facts.Numbers, alone.Record.Facts.Labels, folded.Record.Facts.Numbers, folded.Record.Facts.Labels)
		}
	})
	t.Run("a run that names no pod reads the pod the fleet puts first", func(t *testing.T) {
		d, _ := run(t, kubeConfig(t, ""), 0, map[string]string{"alertname": "X", "model_name": "llama"})
		if d.Fleet == nil || d.Fleet.Focus != "vllm-capacity" || !d.Fleet.FocusChosen {
			t.Fatalf("fleet focus: %+v", d.Fleet)
		}
		if f := d.Record.Facts; f.Label("kube_node") != "node-of-vllm-capacity" || f.Label("kube_workload") != "llama" {
			t.Fatalf("facts: %v %v", f.Numbers, f.Labels)
		}
	})
	t.Run("no kube-state-metrics series: the facts say what was missing, no note on every diagnosis", func(t *testing.T) {
		d, asked := run(t, kubeConfig(t, `job="nobody"`), 0, alert)
		if !strings.HasPrefix(d.Title, `capacity: no kube-state-metrics series for namespace llm (kube_pod_owner{job="nobody",namespace="llm"})`) ||
			*d.Record.Facts.Number("kube_found") != 0 || strings.Contains(strings.Join(d.Notes, "\n"), "Kubernetes") {
			t.Fatalf("title %q, facts %v %v, notes %q", d.Title, d.Record.Facts.Numbers, d.Record.Facts.Labels, d.Notes)
		}
		if got := kubeRequests(asked); got != 1 {
			t.Errorf("%d kube-state-metrics requests, want 1 (the pod's)", got)
		}
	})
	t.Run("a pod kube-state-metrics does not know is noted", func(t *testing.T) {
		gone := map[string]string{"alertname": "X", "namespace": "llm", "pod": "vllm-gone", "model_name": "llama"}
		d, _ := run(t, kubeConfig(t, ""), 0, gone)
		if !strings.Contains(strings.Join(d.Notes, "\n"), "Kubernetes: kube-state-metrics has no pod llm/vllm-gone") {
			t.Fatalf("verdict %s, notes %q", d.Verdict, d.Notes)
		}
	})
	t.Run("off: no lookup, no facts, no note", func(t *testing.T) {
		off := kubeConfig(t, "")
		off.Enabled = false
		d, asked := run(t, off, 0, alert)
		if d.Record.Facts != nil || kubeRequests(asked) != 0 || d.Title != "capacity" {
			t.Fatalf("title %q, kube %+v", d.Title, d.Record.Facts)
		}
	})
}
