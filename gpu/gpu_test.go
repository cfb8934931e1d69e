package gpu

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	parser "github.com/prometheus/prometheus/promql/parser"

	"github.com/vllm-responder/vllm-responder/facts"
	"github.com/vllm-responder/vllm-responder/kube"
)

func on(t *testing.T) *Config {
	t.Helper()
	c := &Config{}
	c.SetDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

func gpuSample(idx, uuid string, v float64, extra ...string) *model.Sample {
	m := model.Metric{"Hostname": "gpu-node-0", "gpu": model.LabelValue(idx), "UUID": model.LabelValue(uuid), "modelName": "NVIDIA H100 80GB HBM3"}
	for i := 0; i+1 < len(extra); i += 2 {
		m[model.LabelName(extra[i])] = model.LabelValue(extra[i+1])
	}
	return &model.Sample{Metric: m, Value: model.SampleValue(v)}
}

var subj = facts.Subject{Namespace: "llm", Pod: "vllm-0", At: time.Unix(1700000000, 0), Window: 5 * time.Minute}

// Off, or without a pod, it asks nothing; on, it selects the pod's GPUs by the exporter's pod
// labels (exported_pod, exported_namespace by default).
func TestDCGMExporterAsASourceLooksUpOnlyWhenOnAndGivenAPod(t *testing.T) {
	c := on(t)
	off := *c
	off.Enabled = false
	var asked []string
	ask := func(_ context.Context, qs []facts.Query) facts.Answer {
		for _, q := range qs {
			asked = append(asked, q.Expr)
		}
		return facts.Answer{}
	}
	for _, src := range []Source{{}, {Config: &off}} {
		if r := src.Lookup(context.Background(), ask, subj); r != nil || len(asked) > 0 {
			t.Fatalf("%+v looked up %+v", src, r)
		}
	}
	if r := (Source{Config: c}).Lookup(context.Background(), ask, facts.Subject{Namespace: "llm"}); r != nil {
		t.Fatalf("no pod: %+v", r)
	}
	r := Source{Config: c}.Lookup(context.Background(), ask, subj)
	if r == nil || !strings.Contains(r.Queries["gpus"], `DCGM_FI_DEV_SM_CLOCK{exported_namespace="llm",exported_pod="vllm-0"}[1h]`) {
		t.Fatalf("queries: %v", r)
	}
	if got := r.Notes; len(got) != 1 || !strings.Contains(got[0], "no dcgm-exporter series for pod llm/vllm-0") {
		t.Errorf("notes without series: %q", got)
	}
	if r.Facts.Number("gpu_count") != nil || !r.Facts.Looked(SourceName) {
		t.Errorf("facts without series: %+v", r.Facts)
	}
}

// A new XID on rank 1 and a lost GPU: the lost one is named first, the XID after it; the rows
// show every GPU.
func TestFaultsAreNamedGPUAndNodeFirstTheLostGPU(t *testing.T) {
	c := on(t)
	ask := func(_ context.Context, qs []facts.Query) facts.Answer {
		return facts.Answer{Vectors: map[string]model.Vector{
			"gpus":  {gpuSample("0", "GPU-a", 1980), gpuSample("1", "GPU-b", 1980), gpuSample("2", "GPU-c", 1980)},
			"lost":  {gpuSample("2", "GPU-c", 1980)},
			"xid":   {gpuSample("1", "GPU-b", 48, "err_code", "48")},
			"clock": {gpuSample("0", "GPU-a", 1980), gpuSample("1", "GPU-b", 1975)},
			"util":  {gpuSample("0", "GPU-a", 97), gpuSample("1", "GPU-b", 97)},
		}}
	}
	f := Source{Config: c}.Lookup(context.Background(), ask, subj).Facts
	if n := f.Number("gpu_faults"); n == nil || *n != 2 {
		t.Fatalf("faults: %+v", f)
	}
	if f.Label("gpu_fault_kind") != "gpu-lost" || f.Label("gpu_fault_gpu") != "GPU 2 (GPU-c) on node gpu-node-0" || f.Label("gpu_fault_node") != "gpu-node-0" {
		t.Errorf("first fault: %+v", f.Labels)
	}
	if d := f.Label("gpu_fault_detail"); !strings.Contains(d, "fell off the bus") || !strings.Contains(d, "and 1 more: XID 48 on GPU 1") {
		t.Errorf("detail: %q", d)
	}
	if rows := f.Label("gpu_rows"); !strings.Contains(rows, "GPU 0 (GPU-a) on node gpu-node-0: SM 1980 MHz, util 97%") || !strings.Contains(rows, "GPU 2 (GPU-c) on node gpu-node-0: lost") {
		t.Errorf("rows: %q", rows)
	}
}

// The busy GPU whose clock is lowest against its siblings' is the one compared; an idle GPU
// (GPU_IDLE clocks it down) never is.
func TestTheThrottleCandidateIsABusyGPU(t *testing.T) {
	c := on(t)
	ask := func(_ context.Context, qs []facts.Query) facts.Answer {
		return facts.Answer{Vectors: map[string]model.Vector{
			"gpus":           {gpuSample("0", "GPU-a", 1267), gpuSample("1", "GPU-b", 345)},
			"clock":          {gpuSample("0", "GPU-a", 1267), gpuSample("1", "GPU-b", 345)},
			"util":           {gpuSample("0", "GPU-a", 97), gpuSample("1", "GPU-b", 0)},
			"temp":           {gpuSample("0", "GPU-a", 87), gpuSample("1", "GPU-b", 33)},
			"siblings_clock": {{Value: 1980}},
			"siblings_temp":  {{Value: 61}},
		}}
	}
	f := Source{Config: c}.Lookup(context.Background(), ask, subj).Facts
	if f.Label("gpu_throttled_gpu") != "GPU 0 (GPU-a) on node gpu-node-0" || *f.Number("gpu_clock") != 1267 || *f.Number("gpu_clock_siblings") != 1980 || *f.Number("gpu_temp") != 87 {
		t.Errorf("throttle facts: %+v %+v", f.Labels, f.Numbers)
	}
	if n := f.Number("gpu_faults"); n == nil || *n != 0 {
		t.Errorf("faults: %v", n)
	}
	idle := func(_ context.Context, qs []facts.Query) facts.Answer {
		return facts.Answer{Vectors: map[string]model.Vector{
			"gpus": {gpuSample("0", "GPU-a", 345)}, "clock": {gpuSample("0", "GPU-a", 345)}, "util": {gpuSample("0", "GPU-a", 0)},
		}}
	}
	if f := (Source{Config: c}).Lookup(context.Background(), idle, subj).Facts; f.Label("gpu_throttled_gpu") != "" || f.Number("gpu_clock") != nil {
		t.Errorf("an idle GPU compared: %+v", f)
	}
}

// Where no GPU series names the pod, its node (kube_pod_info) joins it to the node's GPUs, for
// their faults; the fault's node is then read for its own state (cordoned, its GPU health
// conditions).
func TestWithoutPodLabelsTheNodeJoinsTheGPUs(t *testing.T) {
	c := on(t)
	kc := &kube.Config{}
	kc.SetDefaults()
	var steps [][]string
	ask := func(_ context.Context, qs []facts.Query) facts.Answer {
		var names []string
		for _, q := range qs {
			names = append(names, q.Name)
		}
		steps = append(steps, names)
		switch {
		case qs[0].Name == "pod_node":
			if qs[0].Expr != `group by (node) (kube_pod_info{namespace="llm",pod="vllm-0"})` {
				t.Errorf("kube_pod_info query: %s", qs[0].Expr)
			}
			return facts.Answer{Vectors: map[string]model.Vector{"pod_node": {{Metric: model.Metric{"node": "gpu-node-0"}, Value: 1}}}}
		case len(steps) == 3:
			if !strings.Contains(qs[0].Expr, `{Hostname="gpu-node-0"}`) {
				t.Errorf("node step: %s", qs[0].Expr)
			}
			return facts.Answer{Vectors: map[string]model.Vector{"gpus": {gpuSample("0", "GPU-a", 1980)}, "row_remap_failure": {gpuSample("0", "GPU-a", 1)}}}
		case qs[0].Name == "node_cordoned":
			if !strings.Contains(qs[0].Expr, `kube_node_spec_unschedulable{node="gpu-node-0"}`) {
				t.Errorf("node state: %s", qs[0].Expr)
			}
			return facts.Answer{Vectors: map[string]model.Vector{
				"node_cordoned": {{Value: 1}},
				"node_conditions": {
					{Metric: model.Metric{"condition": "SysLogsXIDError", "status": "true"}, Value: 1},
					{Metric: model.Metric{"condition": "AcceleratedHardwareReady", "status": "false"}, Value: 1},
				},
			}}
		}
		return facts.Answer{}
	}
	f := Source{Config: c, Kube: kc}.Lookup(context.Background(), ask, subj).Facts
	if len(steps) != 4 || f.Label("gpu_join") != "node" || f.Label("gpu_fault_kind") != "row-remap-failure" {
		t.Errorf("steps %v, facts %+v", steps, f.Labels)
	}
	if c := f.Number("gpu_node_cordoned"); c == nil || *c != 1 || f.Label("gpu_node_conditions") != "AcceleratedHardwareReady=False, SysLogsXIDError" {
		t.Errorf("the node's state: %v %q", c, f.Label("gpu_node_conditions"))
	}
}

func TestConfigValidateNamesEachKey(t *testing.T) {
	c := on(t)
	c.PodLabel, c.NodeLabel, c.MetricPrefix, c.Recent, c.XIDs = "bad-label", "exported_namespace", "1x", time.Second, nil
	err := c.Validate()
	for _, want := range []string{"pod_label", "must differ", "metric_prefix", "recent", "xids"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

// Every query parses as PromQL, with the labels and a prefix configured otherwise too.
func TestEveryQueryParses(t *testing.T) {
	c := on(t)
	other := *c
	other.PodLabel, other.NamespaceLabel, other.NodeLabel, other.MetricPrefix = "pod", "namespace", "hostname", "gpu_"
	for _, cfg := range []*Config{c, &other} {
		for _, q := range cfg.queries(cfg.matchers(cfg.NamespaceLabel, "llm", cfg.PodLabel, `a"b`), subj) {
			if _, err := parser.NewParser(parser.Options{}).ParseExpr(q.Expr); err != nil {
				t.Errorf("%s: %s: %v", q.Name, q.Expr, err)
			}
		}
	}
}

// The first fault seen again: an XID is counted per GPU by the larger of its series' appearances
// (the gauge) and the exporter's XID count, a lost GPU by its series vanishing; both asked only
// for the fault's node and the pod's GPUs there, and every query parses. Seen once, it is said
// as once (the hard negative of "repeated" is the template's).
func TestTheFirstFaultSeenAgainIsCountedOnThePodsGPUs(t *testing.T) {
	c := on(t)
	first := subj.At.Add(-3 * time.Hour).Unix()
	for _, tc := range []struct {
		name     string
		fault    model.Vector
		kind     string
		counts   map[string]model.Vector
		seen     float64
		contains string
	}{
		{name: "xid", fault: model.Vector{gpuSample("1", "GPU-b", 95, "err_code", "95")}, kind: "xid", seen: 3, contains: `err_code="95"`,
			counts: map[string]model.Vector{"repeat_seen": {gpuSample("", "GPU-b", 1)}, "repeat_counted": {gpuSample("", "GPU-b", 3)}}},
		{name: "xid once", fault: model.Vector{gpuSample("1", "GPU-b", 95, "err_code", "95")}, kind: "xid", seen: 1, contains: `xid="95"`,
			counts: map[string]model.Vector{"repeat_seen": {gpuSample("", "GPU-b", 1)}}},
		{name: "lost", kind: "gpu-lost", seen: 2, contains: "count(DCGM_FI_DEV_SM_CLOCK{Hostname=\"gpu-node-0\"}) > 0",
			counts: map[string]model.Vector{"repeat_seen": {gpuSample("", "GPU-b", 2)}}},
	} {
		var asked []facts.Query
		ask := func(_ context.Context, qs []facts.Query) facts.Answer {
			asked = append(asked, qs...)
			v := map[string]model.Vector{
				"gpus":         {gpuSample("0", "GPU-a", 1980), gpuSample("1", "GPU-b", 1980)},
				"xid":          tc.fault,
				"repeat_first": {&model.Sample{Metric: model.Metric{}, Value: model.SampleValue(first)}},
			}
			if tc.kind == "gpu-lost" {
				v["lost"] = model.Vector{gpuSample("1", "GPU-b", 1980)}
			}
			for k, x := range tc.counts {
				v[k] = x
			}
			return facts.Answer{Vectors: v}
		}
		f := Source{Config: c}.Lookup(context.Background(), ask, subj).Facts
		if n := f.Number("gpu_fault_seen"); f.Label("gpu_fault_kind") != tc.kind || n == nil || *n != tc.seen {
			t.Errorf("%s: kind %q seen %v, want %s %g", tc.name, f.Label("gpu_fault_kind"), n, tc.kind, tc.seen)
		}
		if want := time.Unix(first, 0).UTC().Format("15:04 UTC"); f.Label("gpu_fault_since") != want {
			t.Errorf("%s: since %q, want %q", tc.name, f.Label("gpu_fault_since"), want)
		}
		var repeat string
		for _, q := range asked {
			if _, err := parser.NewParser(parser.Options{}).ParseExpr(q.Expr); err != nil {
				t.Errorf("%s: %s: %s: %v", tc.name, q.Name, q.Expr, err)
			}
			if strings.HasPrefix(q.Name, "repeat_") {
				repeat += q.Expr + "\n"
			}
		}
		if !strings.Contains(repeat, `UUID=~"GPU-a|GPU-b"`) || !strings.Contains(repeat, "[1d:15s]") || !strings.Contains(repeat, tc.contains) {
			t.Errorf("%s: repeat queries:\n%s", tc.name, repeat)
		}
	}
}

// The cordoned node the pods left: the one most left; its cause the XIDs on its gauge, else its
// GPU health conditions; no node when none lost a pod. The queries parse, and ask nothing
// without kube or a namespace.
func TestTheCordonedNodeThePodsLeftAndWhy(t *testing.T) {
	c := on(t)
	kc := &kube.Config{}
	kc.SetDefaults()
	node := func(n string, v float64, extra ...string) *model.Sample {
		m := model.Metric{"node": model.LabelValue(n)}
		for i := 0; i+1 < len(extra); i += 2 {
			m[model.LabelName(extra[i])] = model.LabelValue(extra[i+1])
		}
		return &model.Sample{Metric: m, Value: model.SampleValue(v)}
	}
	for _, tc := range []struct {
		name                string
		answer              map[string]model.Vector
		wantNode, wantCause string
		wantPods            float64
	}{
		{name: "none", answer: map[string]model.Vector{}, wantPods: 0},
		{name: "xid", answer: map[string]model.Vector{
			"cordoned_left":       {node("gpu-a", 1), node("gpu-b", 2)},
			"cordoned_xid":        {node("gpu-a", 48, "err_code", "48"), node("gpu-b", 79, "err_code", "79")},
			"cordoned_conditions": {node("gpu-b", 1, "condition", "SysLogsXIDError")},
		}, wantNode: "gpu-b", wantPods: 2, wantCause: "XID 79"},
		{name: "condition", answer: map[string]model.Vector{
			"cordoned_left":       {node("gpu-b", 1)},
			"cordoned_conditions": {node("gpu-b", 1, "condition", "SysLogsGPUFallenOff")},
		}, wantNode: "gpu-b", wantPods: 1, wantCause: "its GPU health condition SysLogsGPUFallenOff"},
	} {
		ask := func(_ context.Context, qs []facts.Query) facts.Answer {
			for _, q := range qs {
				if _, err := parser.NewParser(parser.Options{}).ParseExpr(q.Expr); err != nil {
					t.Errorf("%s: %v", q.Expr, err)
				}
			}
			return facts.Answer{Vectors: tc.answer}
		}
		f := Source{Config: c, Kube: kc}.Lookup(context.Background(), ask, subj).Facts
		if n := f.Number("gpu_cordoned_pods"); n == nil || *n != tc.wantPods || f.Label("gpu_cordoned_node") != tc.wantNode || f.Label("gpu_cordoned_cause") != tc.wantCause {
			t.Errorf("%s: %v pods left %q (%q)", tc.name, n, f.Label("gpu_cordoned_node"), f.Label("gpu_cordoned_cause"))
		}
	}
	var asked []string
	ask := func(_ context.Context, qs []facts.Query) facts.Answer {
		for _, q := range qs {
			asked = append(asked, q.Name)
		}
		return facts.Answer{}
	}
	Source{Config: c}.Lookup(context.Background(), ask, subj)
	Source{Config: c, Kube: kc}.Lookup(context.Background(), ask, facts.Subject{Pod: "vllm-0", At: subj.At, Window: subj.Window})
	if slices.Contains(asked, "cordoned_left") {
		t.Errorf("asked for the cordon without kube or a namespace: %v", asked)
	}
}
