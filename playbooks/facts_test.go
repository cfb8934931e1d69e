package playbooks

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vllm-responder/vllm-responder/facts"
	"github.com/vllm-responder/vllm-responder/facts/sources"
	"github.com/vllm-responder/vllm-responder/kube"
	"github.com/vllm-responder/vllm-responder/lora"
)

// factsPlaybook decides on a number fact and a label fact, and renders both.
const factsPlaybook = `
name: facts
match: {alertname: X}
queries:
  waiting: sum(vllm:num_requests_waiting{$scope})
verdicts:
  - id: capacity-past-knee
    when: waiting > 5 && kube_hpa_found == 1 && kube_hpa_current >= kube_hpa_max && kube_workload_kind == "Deployment"
    title: "{{ .kube_workload_ref }} at its ceiling"
    summary: "HPA {{ .kube_hpa }}: {{ count .kube_hpa_current }} of {{ count .kube_hpa_max }}{{ with .kube_node }}, node {{ . }}{{ end }}"
  - id: inconclusive
    when: "true"
    title: "fallback{{ with .kube_missing }}: {{ . }}{{ end }}"
    summary: "max {{ count .kube_hpa_max }}, workload [{{ .kube_workload }}]"
`

func TestConditionsAndTemplatesReadFactsByName(t *testing.T) {
	p, err := Parse("facts.yaml", []byte(factsPlaybook), sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	w := 9.0
	values := map[string]*float64{"waiting": &w}
	at, _ := kube.FactsFrom(map[string]any{"kube_hpa_found": 1, "kube_hpa_current": 8, "kube_hpa_max": 8,
		"kube_workload_kind": "Deployment", "kube_workload_ref": "deployment/llama", "kube_hpa": "llama"})
	scaling, _ := kube.FactsFrom(map[string]any{"kube_hpa_found": 1, "kube_hpa_current": 4, "kube_hpa_max": 8,
		"kube_workload_kind": "Deployment"})
	absent, _ := kube.FactsFrom(map[string]any{"kube_found": 0, "kube_missing": "no series for namespace llm"})
	for _, tc := range []struct {
		name          string
		kube          *facts.Facts
		verdict, text string
	}{
		{"an HPA at its ceiling", at, "capacity-past-knee", "deployment/llama at its ceiling / HPA llama: 8 of 8"},
		{"an HPA below its ceiling is not at it", scaling, "inconclusive", "fallback / max 8, workload []"},
		{"no kube-state-metrics series: the number facts are unknown, the label says why", absent, "inconclusive",
			"fallback: no series for namespace llm / max n/a, workload []"},
		{"kube-state-metrics not read: every fact unknown", nil, "inconclusive", "fallback / max n/a, workload []"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := p.Judge(Observation{Values: values, Facts: tc.kube})
			if got := d.Title + " / " + d.Summary; d.Verdict != tc.verdict || got != tc.text {
				t.Errorf("got %s %q, want %s %q", d.Verdict, got, tc.verdict, tc.text)
			}
			if len(d.Missing) > 0 || d.Degraded() {
				t.Errorf("an unknown fact is not missing evidence: missing %v", d.Missing)
			}
			if len(d.Notes) > 0 {
				t.Errorf("notes: %v", d.Notes)
			}
		})
	}
}

// A fixture's kube: section stands for a lookup: the facts by name, checked, and a fixture
// written from a diagnosis carries them.
func TestFixturesRecordFactsAndRefuseUnknownOnes(t *testing.T) {
	p, err := Parse("facts.yaml", []byte(factsPlaybook), sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	set, err := NewSet(nil, []*Playbook{p}, SetOptions{Triage: "facts"})
	if err != nil {
		t.Fatal(err)
	}
	w := 9.0
	kf, _ := kube.FactsFrom(map[string]any{"kube_hpa_found": 1, "kube_hpa_current": 3, "kube_hpa_max": 3, "kube_workload_kind": "Deployment"})
	d := p.Judge(Observation{Values: map[string]*float64{"waiting": &w}, Facts: kf})
	out, err := FixtureFromDiagnosis(d, VerdictCapacityPastKnee)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "kube:\n") || !strings.Contains(string(out), "kube_workload_kind: Deployment") {
		t.Fatalf("the fixture lacks the facts:\n%s", out)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a_test.yaml"), out, 0o644)
	os.WriteFile(filepath.Join(dir, "b_test.yaml"), []byte(`tests:
  - name: a typo in a fact
    playbook: facts
    values: {waiting: 9}
    kube: {kube_hpa_maxx: 3}
    expect: {verdict: capacity-past-knee}
`), 0o644)
	files, err := LoadFixtures(dir)
	if err != nil {
		t.Fatal(err)
	}
	res := RunFixtures(set, files)
	if len(res) != 2 || res[0].Diff != "" || !strings.HasPrefix(res[1].Diff, "kube: kube_hpa_maxx: no such fact") {
		t.Fatalf("got %+v", res)
	}
}

// A diagnosis made without facts says whether a rule on the way to its verdict reads one: the
// evidence engine looks them up only then.
func TestADiagnosisSaysWhetherFactsCouldChangeIt(t *testing.T) {
	p, err := Parse("facts.yaml", []byte(`
name: facts
match: {alertname: X}
queries:
  waiting: sum(vllm:num_requests_waiting{$scope})
  kv: max(vllm:kv_cache_usage_perc{$scope})
verdicts:
  - {id: kv-pressure, when: "kv >= 0.9", title: KV}
  - {id: capacity-past-knee, when: "waiting > 5 && kube_hpa_found == 1", title: "ceiling"}
  - {id: load-imbalance, when: "waiting > 1", title: "pod{{ with .kube_pod_place }} ({{ . }}){{ end }}"}
  - {id: inconclusive, when: "true", title: other}
`), sources.Catalog())

	if err != nil {
		t.Fatal(err)
	}
	f := func(x float64) *float64 { return &x }
	for _, tc := range []struct {
		name       string
		values     map[string]*float64
		kube       *facts.Facts
		verdict    string
		needsFacts bool
	}{
		{"decided before any rule reads a fact", map[string]*float64{"kv": f(0.95), "waiting": f(9)}, nil, VerdictKVPressure, false},
		{"a fact-reading rule was tried on the way", map[string]*float64{"kv": f(0.5), "waiting": f(9)}, nil, VerdictLoadImbalance, true},
		{"the verdict's template reads a fact", map[string]*float64{"kv": f(0.5), "waiting": f(2)}, nil, VerdictLoadImbalance, true},
		{"with the facts given, nothing more to look up", map[string]*float64{"kv": f(0.5), "waiting": f(9)}, facts.New(kube.SourceName), VerdictLoadImbalance, false},
	} {
		d := p.Judge(Observation{Values: tc.values, Facts: tc.kube})
		if d.Verdict != tc.verdict || d.NeedsFacts() != tc.needsFacts {
			t.Errorf("%s: verdict %s, needs facts %v", tc.name, d.Verdict, d.NeedsFacts())
		}
	}
}

// Each source is named only when a rule on the way reads one of its facts, and a source looked
// up is not named again: the LoRA series are not asked about for a verdict decided on
// kube-state-metrics' facts alone, nor kube-state-metrics for one decided on LoRA's.
func TestADiagnosisNamesOnlyTheFactSourcesOnTheWay(t *testing.T) {
	p, err := Parse("sources.yaml", []byte(`
name: sources
match: {alertname: X}
queries:
  waiting: sum(vllm:num_requests_waiting{$scope})
  deferred: sum(vllm:num_requests_waiting_by_reason{reason="deferred",$scope})
verdicts:
  - {id: lora-capacity, when: "deferred > 1 && lora_running >= lora_max", title: "slots {{ .lora_running_adapters }}"}
  - {id: capacity-past-knee, when: "waiting > 5 && kube_hpa_found == 1", title: "ceiling"}
  - {id: inconclusive, when: "true", title: other}
`), sources.Catalog())

	if err != nil {
		t.Fatal(err)
	}
	f := func(x float64) *float64 { return &x }
	withLoRA, _ := recordedFacts(sources.Catalog(), nil, map[string]any{"lora_max": 2, "lora_running": 2, "lora_running_adapters": "a, b"})
	withLoRA.Sources = []string{lora.SourceName}
	for _, tc := range []struct {
		name    string
		values  map[string]*float64
		facts   *facts.Facts
		verdict string
		sources []string
	}{
		{"kube-state-metrics looked up, the LoRA rule needs the LoRA series only", map[string]*float64{"deferred": f(3), "waiting": f(0)}, facts.New(kube.SourceName), VerdictInconclusive, []string{lora.SourceName}},
		{"with them, it holds and nothing more is needed", map[string]*float64{"deferred": f(3), "waiting": f(0)}, withLoRA, VerdictLoRACapacity, nil},
		{"past it, the capacity rule needs kube-state-metrics, the LoRA series already looked up", map[string]*float64{"deferred": f(0), "waiting": f(9)}, withLoRA, VerdictInconclusive, []string{kube.SourceName}},
		{"both, when neither was looked up", map[string]*float64{"deferred": f(0), "waiting": f(9)}, nil, VerdictInconclusive, []string{lora.SourceName, kube.SourceName}},
	} {
		d := p.Judge(Observation{Values: tc.values, Facts: tc.facts})
		if d.Verdict != tc.verdict || !slices.Equal(d.FactSources(), tc.sources) {
			t.Errorf("%s: verdict %s, sources %v; want %s, %v", tc.name, d.Verdict, d.FactSources(), tc.verdict, tc.sources)
		}
	}
}
