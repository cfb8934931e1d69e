package kube

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
)

func vec(samples ...map[string]string) model.Vector {
	var v model.Vector
	for _, s := range samples {
		m := model.Metric{}
		val := 1.0
		for k, x := range s {
			if k == "=" { // the value
				val, _ = strconv.ParseFloat(x, 64)
				continue
			}
			m[model.LabelName(k)] = model.LabelValue(x)
		}
		v = append(v, &model.Sample{Metric: m, Value: model.SampleValue(val)})
	}
	return v
}

func TestTheHPAsSignalNamesItsMetricAndWhereItComesFrom(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	for _, tc := range []struct {
		name string
		h    HPA
		want string
	}{
		{"a resource metric in percent of the pods' requests",
			HPA{Metric: "cpu", MetricType: "utilization", Target: f(80), Reading: f(95), Metrics: 1},
			"it scales on cpu, which it reads as 95% of the pods' requests now against a target of 80% of the pods' requests"},
		{"an HPA that cannot read its metric says so",
			HPA{Metric: "vllm_waiting", MetricType: "value", Target: f(10), Metrics: 1, Conditions: map[string]string{"ScalingActive": "false"}},
			"it scales on vllm_waiting against a target of 10 (its status has no reading yet); ScalingActive is false: it cannot compute a scale from that metric now"},
		{"the metric furthest above its target of several",
			HPA{Metric: "wva_desired_replicas", MetricType: "value", Target: f(1), Reading: f(7), Metrics: 2,
				Source: "llm-d's workload variant autoscaler", SourceValue: f(7)},
			"it scales on wva_desired_replicas (the furthest above its target of its 2 metrics; from llm-d's workload variant autoscaler, which reads 7), which it reads as 7 now against a target of 1"},
		{"no metric kube-state-metrics exports: nothing to say", HPA{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.h.signal(); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestTheHPAMetricIsTheOneFurthestAboveItsTargetAndItsSourceIsRead(t *testing.T) {
	h := &HPA{}
	h.readMetric(
		vec(map[string]string{"metric_name": "cpu", "metric_target_type": "utilization", "=": "80"},
			map[string]string{"metric_name": "wva_desired_replicas", "metric_target_type": "value", "=": "2"}),
		vec(map[string]string{"metric_name": "cpu", "metric_target_type": "utilization", "=": "95"},
			map[string]string{"metric_name": "wva_desired_replicas", "metric_target_type": "value", "=": "7"}))
	h.readSource(nil, vec(map[string]string{"target_name": "llama", "=": "7"}))
	if h.Metric != "wva_desired_replicas" || *h.Reading != 7 || h.Metrics != 2 || h.Source != "llm-d's workload variant autoscaler" || *h.SourceValue != 7 {
		t.Fatalf("got %+v", h)
	}
	// A KEDA series of another metric of the ScaledObject is not this metric's source.
	k := &HPA{Metric: "s1-cpu"}
	k.readSource(vec(map[string]string{"metric": "s0-prometheus", "scaledObject": "llama", "scaler": "prometheusScaler", "=": "40"}), nil)
	if k.Source != "" {
		t.Fatalf("source of another metric taken: %+v", k)
	}
}

func TestRecordedFactsReadBackAndUnknownOnesAreRefused(t *testing.T) {
	r := &Report{Found: true, Workload: Ref{KindDeployment, "llama"}, Node: "n1", Pods: &PodStates{Total: 3, Ready: 3},
		HPA: &HPA{Name: "llama", Max: ptr(3), Current: ptr(3), Conditions: map[string]string{"ScalingLimited": "true"}}, HPAs: 1}
	f := r.Facts()
	back, err := FactsFrom(f.Map())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, f) {
		t.Fatalf("round trip:\n%+v\n%+v", back, f)
	}
	if *f.Number("kube_hpa_limited") != 1 || f.Label("kube_workload_ref") != "deployment/llama" || f.Number("kube_hpa_desired") != nil {
		t.Fatalf("facts: %+v %+v", f.Numbers, f.Labels)
	}
	_, err = FactsFrom(map[string]any{"kube_hpa_maxx": 3, "kube_workload": 4, "kube_hpa_max": "three"})
	for _, want := range []string{"kube_hpa_maxx: no such fact", "kube_workload: a label value (a string), not 4", `kube_hpa_max: a number, not "three"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in %v", want, err)
		}
	}
}

func ptr(x float64) *float64 { return &x }

func TestConfigErrorsNameTheirKeys(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{NamespaceLabel: "namespace", PodLabel: "pod", Selector: `{job="x"}`}, "selector: write the matchers without braces"},
		{Config{NamespaceLabel: "namespace", PodLabel: "pod", Selector: `job=x`}, "selector: not PromQL label matchers"},
		{Config{NamespaceLabel: "namespace", PodLabel: "pod", Selector: `__name__="x"`}, "selector: must not match the metric name"},
		{Config{NamespaceLabel: "exported-namespace", PodLabel: "pod"}, `namespace_label: "exported-namespace" is not a valid label name`},
		{Config{NamespaceLabel: "pod", PodLabel: "pod"}, `pod_label: must differ from namespace_label ("pod")`},
	} {
		if err := tc.c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.c, err, tc.want)
		}
	}
	c := Config{NamespaceLabel: "exported_namespace", PodLabel: "exported_pod", Selector: ` job = "kube-state-metrics" , cluster=~"eu-.*"`}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := c.matchers("exported_namespace", "llm"); got != `job="kube-state-metrics",cluster=~"eu-.*",exported_namespace="llm"` {
		t.Fatalf("matchers: %s", got)
	}
}

// The last terminated container is the one that restarted most: a sidecar's old Error does not
// hide the server's OOM kill.
func TestTheLastTerminatedContainerIsTheOneThatRestartedMost(t *testing.T) {
	a := Answer{Vectors: map[string]model.Vector{
		"pod_restarts":        vec(map[string]string{"container": "vllm", "=": "4"}, map[string]string{"container": "proxy", "=": "1"}),
		"pod_restarts_window": vec(map[string]string{"container": "vllm", "=": "1"}, map[string]string{"container": "proxy", "=": "0"}),
		"pod_last_reason":     vec(map[string]string{"container": "vllm", "reason": "OOMKilled"}, map[string]string{"container": "proxy", "reason": "Error"}),
		"pod_last_exitcode":   vec(map[string]string{"container": "vllm", "=": "137"}, map[string]string{"container": "proxy", "=": "1"}),
	}}
	r := &Report{Pod: PodRef{"prod", "vllm-0"}}
	r.readRestarts(a)
	if got := r.restartsSummary(); got != "kube-state-metrics: pod vllm-0 restarted once in the window (5 times since it was created); container vllm last terminated: OOMKilled (exit code 137)." {
		t.Errorf("got %q", got)
	}
	if got := (&Report{}).restartsSummary(); got != "" {
		t.Errorf("no restart count, no sentence: %q", got)
	}
}

// A vLLM container whose engine core died exits 0 (vLLM 0.32's API server shuts itself down on
// EngineDeadError), which Kubernetes records as Completed: the summary does not read it as a job
// that finished. An Error says nothing more than its code.
func TestACompletedContainerIsNotReadAsACleanFinish(t *testing.T) {
	cases := []struct {
		name, reason, exitCode, want string
	}{
		{"Completed with exit code 0", "Completed", "0",
			"kube-state-metrics: pod vllm-0 restarted once in the window (once since it was created); container vllm last terminated: Completed (exit code 0), which is no clean finish for a vLLM server: its API server exits 0 when its engine core dies (EngineDeadError, measured on vLLM 0.32) and when it is stopped (SIGTERM, as after a failed liveness probe); its previous logs say which."},
		{"Completed without an exit code (older kube-state-metrics)", "Completed", "",
			"kube-state-metrics: pod vllm-0 restarted once in the window (once since it was created); container vllm last terminated: Completed, which is no clean finish for a vLLM server: its API server exits 0 when its engine core dies (EngineDeadError, measured on vLLM 0.32) and when it is stopped (SIGTERM, as after a failed liveness probe); its previous logs say which."},
		{"Error is what it says", "Error", "1",
			"kube-state-metrics: pod vllm-0 restarted once in the window (once since it was created); container vllm last terminated: Error (exit code 1)."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := Answer{Vectors: map[string]model.Vector{
				"pod_restarts":        vec(map[string]string{"container": "vllm", "=": "1"}),
				"pod_restarts_window": vec(map[string]string{"container": "vllm", "=": "1"}),
				"pod_last_reason":     vec(map[string]string{"container": "vllm", "reason": tc.reason}),
			}}
			if tc.exitCode != "" {
				a.Vectors["pod_last_exitcode"] = vec(map[string]string{"container": "vllm", "=": tc.exitCode})
			}
			r := &Report{Pod: PodRef{"prod", "vllm-0"}}
			r.readRestarts(a)
			if got := r.restartsSummary(); got != tc.want {
				t.Errorf("summary\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}
