package evidence

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/facts/sources"
	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

// loraPlaybook decides a KV verdict before any rule that reads a fact, then the LoRA rule, then
// one that reads kube-state-metrics' facts.
const loraPlaybook = `
name: lora-test
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
  - id: lora-capacity
    when: waiting >= 5 && lora_running >= lora_max
    title: "slots {{ .lora_running_adapters }} of {{ count .lora_max }}"
  - {id: capacity-past-knee, when: "waiting >= 5 && kube_hpa_found == 1", title: "ceiling"}
  - {id: inconclusive, when: "true", title: other}
`

// The LoRA facts go the way kube-state-metrics' go: asked for only when a rule on the way reads
// them, for the alert's pod or the fleet's focus, through the engine's query path, and no other
// source is asked for when the verdict is decided on them.
func TestARunReadsTheLoRASeriesOnlyWhenARuleOnTheWayToItsVerdictDoes(t *testing.T) {
	t.Parallel()
	// The recorded pods, and the capacity pod's LoRA family as vLLM 0.32 keeps it: every state
	// seen, the newest (two adapters, --max-loras 2) the greatest value.
	lora := testenv.ServeExposition(t, func(now time.Time) string {
		ts := float64(now.Unix())
		return "# HELP vllm:lora_requests_info Running stats on lora requests.\n# TYPE vllm:lora_requests_info gauge\n" +
			`vllm:lora_requests_info{max_lora="2",running_lora_adapters="",waiting_lora_adapters=""} ` + model.SampleValue(ts-300).String() + "\n" +
			`vllm:lora_requests_info{max_lora="2",running_lora_adapters="sql,chat",waiting_lora_adapters="sql,chat"} ` + model.SampleValue(ts).String() + "\n"
	})
	prom := testenv.Prometheus(t, testenv.PromOptions{
		OpenMetrics:   testenv.RecordedVLLM(time.Now(), testenv.ScenarioLoads()),
		ScrapeTargets: []testenv.Target{{Addr: lora.Addr, Labels: map[string]string{"namespace": "llm", "pod": "vllm-capacity"}}},
	})
	client, err := api.NewClient(api.Config{Address: prom.URL})
	if err != nil {
		t.Fatal(err)
	}
	pq := PrometheusQuerier{API: v1.NewAPI(client)}
	testenv.WaitFor(t, 60*time.Second, "Prometheus to scrape the stand-in LoRA family", func() bool {
		v, err := pq.Query(context.Background(), "vllm:lora_requests_info", time.Now())
		vec, ok := v.(model.Vector)
		return err == nil && ok && len(vec) == 2
	})
	at := time.Now()
	p, err := playbooks.Parse("lora-test.yaml", []byte(loraPlaybook), sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	q := countingQuerier{WarningQuerier: pq, asked: make(chan string, 100)}
	run := func(t *testing.T, labels map[string]string) (*playbooks.Diagnosis, []string) {
		t.Helper()
		q.drain()
		e := NewEngine(q, EngineOptions{CacheTTL: -1, Facts: sources.List(sources.Config{Kubernetes: kubeConfig(t, "")}), Logger: zerolog.Nop()})
		d, err := e.RunAt(context.Background(), p, labels, at)
		if err != nil {
			t.Fatal(err)
		}
		return d, q.drain()
	}
	count := func(asked []string, s string) int {
		n := 0
		for _, a := range asked {
			n += strings.Count(a, s)
		}
		return n
	}

	t.Run("the alert's pod: the newest series' labels become facts, kube-state-metrics not asked", func(t *testing.T) {
		d, asked := run(t, map[string]string{"alertname": "X", "namespace": "llm", "pod": "vllm-capacity", "model_name": "llama"})
		if d.Verdict != playbooks.VerdictLoRACapacity || d.Title != "slots sql, chat of 2" {
			t.Fatalf("verdict %s %q", d.Verdict, d.Title)
		}
		if count(asked, "lora_requests_info") != 1 || count(asked, "kube_") != 0 {
			t.Errorf("asked %q: want the LoRA query once and no kube-state-metrics query", asked)
		}
		ev := evidence(d, "lora_running")
		if ev.Value == nil || *ev.Value != 2 || ev.Query != `topk(1, vllm:lora_requests_info{namespace="llm",pod="vllm-capacity"})` {
			t.Errorf("evidence %+v", ev)
		}
		if !d.Record.Facts.Looked("vllm lora_requests_info") || d.Record.Facts.Looked("kube-state-metrics") {
			t.Errorf("sources %v", d.Record.Facts.Sources)
		}
	})
	t.Run("a verdict decided before any rule reads a fact costs no lookup", func(t *testing.T) {
		d, asked := run(t, map[string]string{"alertname": "X", "namespace": "llm", "pod": "vllm-kv", "model_name": "llama"})
		if d.Verdict != playbooks.VerdictKVPressure || count(asked, "lora_requests_info") != 0 || d.Record.Facts != nil {
			t.Fatalf("verdict %s, asked %q", d.Verdict, asked)
		}
	})
	t.Run("a pod without the family: the LoRA rule does not hold, and the next rule's source is asked too", func(t *testing.T) {
		d, asked := run(t, map[string]string{"alertname": "X", "namespace": "llm", "pod": "vllm-ok", "model_name": "llama"})
		if d.Verdict == playbooks.VerdictLoRACapacity || count(asked, "lora_requests_info") != 1 || count(asked, "kube_") == 0 {
			t.Fatalf("verdict %s, asked %q", d.Verdict, asked)
		}
	})
}
