package gpu

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/facts"
	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/internal/testenv/simgpu"
	"github.com/vllm-responder/vllm-responder/kube"
	"github.com/vllm-responder/vllm-responder/sim"
)

// The lookup's PromQL, in a real Prometheus, on vllm-sim's dcgm-exporter stand-in scraped as a
// cluster scrapes it (the exporter another target whose own pod, namespace and container collide
// with the payload's: the vLLM pod arrives in exported_pod). Six pods on six nodes: a failed row
// remap (XID 64 with it), a GPU off the bus, an XID 48 already on the gauge when the exporter
// started (stale), a GPU at its thermal limit, an idle pod, and a pod that crash-loops on the
// same XID 95 (the exporter's optional XID count on). Each is what the GPU rules read:
// the two faults found and named, the stale XID not; the hot GPU compared with its busy
// siblings, the idle one never.
func TestTheLookupReadsTheStandInsFaultsAndThrottleThroughExportedPod(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type pod struct {
		name, ns, start, fault string
		tp                     int
		optional               bool
		eng                    *sim.Engine
	}
	pods := []*pod{
		{name: "remap", start: "healthy", fault: "gpu-row-remap-failure", tp: 2},
		{name: "lost", start: "healthy", fault: "gpu-xid79", tp: 2},
		{name: "stale", start: "gpu-stale-xid", tp: 2},
		{name: "hot", start: "healthy", fault: "gpu-throttle", tp: 1},
		{name: "idle", start: "idle", tp: 1},
		// in a namespace of its own: its GPU, busy and idle by turns, is not the hot GPU's sibling
		{name: "loop", ns: "crashloop", start: "healthy", fault: "gpu-xid-repeat", tp: 1, optional: true},
	}
	var targets []testenv.Target
	for i, p := range pods {
		var tg []testenv.Target
		if p.ns == "" {
			p.ns = "inference"
		}
		p.eng, tg = simgpu.Start(ctx, t, simgpu.Pod{Name: p.name, Namespace: p.ns, Node: fmt.Sprintf("gpu-node-%d", i), TP: p.tp,
			Seed: uint64(i + 1), Scenario: p.start, Optional: p.optional})
		targets = append(targets, tg...)
	}
	prom := testenv.Prometheus(t, testenv.PromOptions{ScrapeTargets: targets})
	c := on(t)
	lookup := func(p *pod) *facts.Facts {
		s := facts.Subject{Namespace: p.ns, Pod: p.name, At: time.Now(), Window: 10 * time.Second}
		return (Source{Config: c}).Lookup(context.Background(), testenv.Asker(t, prom.URL, s.At), s).Facts
	}
	// and stored for over a repeat step (15 s): an XID appearing in the same step as its GPU's
	// series is read as the exporter starting, and not counted as seen
	var stored time.Time
	testenv.WaitFor(t, 60*time.Second, "every pod's GPUs stored under its name, a repeat step ago", func() bool {
		if stored.IsZero() {
			for _, p := range pods {
				if n := lookup(p).Number("gpu_count"); n == nil || int(*n) != p.tp {
					return false
				}
			}
			stored = time.Now()
		}
		return time.Since(stored) > repeatStep
	})
	// Before the faults: none, the stale XID included; the idle GPU never compared.
	for _, p := range pods {
		if n := lookup(p).Number("gpu_faults"); n == nil || *n != 0 {
			t.Fatalf("%s: %v faults before any, facts %+v", p.name, n, lookup(p).Labels)
		}
	}
	switched := time.Now()
	for _, p := range pods {
		if p.fault == "" {
			continue
		}
		sc := sim.Scenarios[p.fault]
		sc.GPU.At = 2 * time.Second
		if sc.GPU.Every > 0 { // the crash loop, faster: the fault at each crash, 2 s after each start
			sc.CrashAfter, sc.DownFor, sc.GPU.Every = 2*time.Second, 2*time.Second, 4*time.Second
		}
		p.eng.SetScenario(sc, true, switched)
	}
	var got map[string]*facts.Facts
	testenv.WaitFor(t, 90*time.Second, "the faults and the hot GPU's window", func() bool {
		got = map[string]*facts.Facts{}
		for _, p := range pods {
			got[p.name] = lookup(p)
		}
		hot := got["hot"].Number("gpu_clock")
		// (occurrences are counted at 15 s steps: one shows up to a step late)
		loop := got["loop"].Number("gpu_fault_seen")
		return got["remap"].Number("gpu_fault_seen") != nil && got["lost"].Number("gpu_fault_seen") != nil && loop != nil && *loop >= 2 &&
			hot != nil && *hot < 1300 && time.Since(switched) > 15*time.Second
	})
	if f := got["remap"]; f.Label("gpu_fault_kind") != "xid" || *f.Number("gpu_xid") != 64 || *f.Number("gpu_faults") != 2 ||
		!strings.HasPrefix(f.Label("gpu_fault_gpu"), "GPU 0 (GPU-") || f.Label("gpu_fault_node") != "gpu-node-0" ||
		!strings.Contains(f.Label("gpu_fault_detail"), "and 1 more: row-remap-failure on GPU 0") {
		t.Errorf("remap: %+v %v", f.Labels, f.Numbers)
	}
	if f := got["lost"]; f.Label("gpu_fault_kind") != "gpu-lost" || f.Label("gpu_fault_node") != "gpu-node-1" ||
		!strings.HasPrefix(f.Label("gpu_fault_gpu"), "GPU 1 (GPU-") || !strings.Contains(f.Label("gpu_rows"), "lost (no series now)") {
		t.Errorf("lost: %+v", f.Labels)
	}
	// Seen again: the crash loop's XID 95, by the exporter's XID count (the gauge shows it once);
	// the one-off faults once.
	if f := got["loop"]; f.Label("gpu_fault_kind") != "xid" || *f.Number("gpu_xid") != 95 || f.Label("gpu_fault_since") == "" {
		t.Errorf("loop: %+v %v", f.Labels, f.Numbers)
	}
	for _, name := range []string{"remap", "lost"} {
		if n := got[name].Number("gpu_fault_seen"); n == nil || *n != 1 {
			t.Errorf("%s: seen %v times, want once", name, n)
		}
	}
	if f := got["stale"]; *f.Number("gpu_faults") != 0 {
		t.Errorf("stale XID counted: %+v", f.Labels)
	}
	f := got["hot"]
	num := func(name string) float64 {
		if v := f.Number(name); v != nil {
			return *v
		}
		return -1
	}
	if num("gpu_faults") != 0 || num("gpu_clock") > 1300 || num("gpu_clock_siblings") != 1980 || num("gpu_temp") != 87 ||
		num("gpu_temp_siblings") != 61 || num("gpu_util") < 50 || !strings.HasPrefix(f.Label("gpu_throttled_gpu"), "GPU 0 (GPU-") {
		t.Errorf("hot: %+v %v", f.Labels, f.Numbers)
	}
	if f := got["idle"]; f.Label("gpu_throttled_gpu") != "" || f.Number("gpu_clock") != nil {
		t.Errorf("idle GPU compared: %+v", f.Labels)
	}
}

// A GPU node cordoned after its pod of the Deployment was drained, read from a real Prometheus
// on kube-state-metrics' and dcgm-exporter's stand-ins: before the cordon no node is named;
// after it, the node, the one pod that left it, and the XID its GPU still shows (48, from
// gpu-stale-xid). Another node cordoned that no pod of the Deployment ran on is never named;
// kube-state-metrics is scraped twice (two replicas), and the pod counted once.
func TestACordonedNodeThePodsLeftIsNamedWithItsXID(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, dcgm := simgpu.Start(ctx, t, simgpu.Pod{Name: "vllm-llama-7d9c5f-1", Namespace: "llm", Node: "gpu-node-1", GPUs: 2, Scenario: "gpu-stale-xid"})
	nodes := []testenv.KSMNode{testenv.KSMGPUNode("gpu-node-0", 8), testenv.KSMGPUNode("gpu-node-1", 8), testenv.KSMGPUNode("gpu-node-3", 8)}
	before := testenv.KSMDeployment("llm", "vllm-llama", testenv.KSMPod{Ready: true}, testenv.KSMPod{Ready: true})
	before.Nodes = nodes
	// After the drain: node 1 cordoned (NVSentinel's condition with it), its pod gone and its
	// replacement Pending with no GPU to go to; node 3 cordoned for maintenance.
	after := testenv.KSMDeployment("llm", "vllm-llama", testenv.KSMPod{Ready: true},
		testenv.KSMPod{Name: "vllm-llama-7d9c5f-2", Phase: "Pending", Unschedulable: true, UnschedulableFor: time.Minute})
	after.Nodes = slices.Clone(nodes)
	after.Nodes[1].Unschedulable, after.Nodes[1].Conditions = true, map[string]string{"SysLogsXIDError": "True"}
	after.Nodes[2].Unschedulable = true
	ksm := testenv.ServeExposition(t, before.Exposition)
	prom := testenv.Prometheus(t, testenv.PromOptions{ScrapeTargets: append(dcgm,
		testenv.Target{Addr: ksm.Addr, Job: "kube-state-metrics"}, testenv.Target{Addr: ksm.Addr, Job: "ksm-shadow"})})
	c := on(t)
	kc := &kube.Config{}
	kc.SetDefaults()
	lookup := func() *facts.Facts {
		s := facts.Subject{Namespace: "llm", Pod: "vllm-llama-7d9c5f-0", At: time.Now(), Window: 10 * time.Second}
		return (Source{Config: c, Kube: kc}).Lookup(context.Background(), testenv.Asker(t, prom.URL, s.At), s).Facts
	}
	var f *facts.Facts
	testenv.WaitFor(t, 60*time.Second, "pod 1 on node 1 and the XID stored", func() bool {
		f = lookup()
		n := f.Number("gpu_cordoned_pods")
		return n != nil && holds(t, prom.URL, "DCGM_FI_DEV_XID_ERRORS") && holds(t, prom.URL, `kube_pod_info{pod="vllm-llama-7d9c5f-1",node="gpu-node-1"}`)
	})
	if n := f.Number("gpu_cordoned_pods"); *n != 0 || f.Label("gpu_cordoned_node") != "" {
		t.Fatalf("before the cordon: %v pods left %q", *n, f.Label("gpu_cordoned_node"))
	}
	ksm.Set(after.Exposition)
	testenv.WaitFor(t, 60*time.Second, "the cordon read", func() bool {
		f = lookup()
		return f.Label("gpu_cordoned_node") != ""
	})
	if n := f.Number("gpu_cordoned_pods"); f.Label("gpu_cordoned_node") != "gpu-node-1" || *n != 1 || f.Label("gpu_cordoned_cause") != "XID 48" {
		t.Errorf("after the cordon: node %q, %v pods, cause %q; want gpu-node-1, 1, XID 48", f.Label("gpu_cordoned_node"), *n, f.Label("gpu_cordoned_cause"))
	}
}

// holds reports whether Prometheus at url holds a series expr selects.
func holds(t *testing.T, url, expr string) bool {
	a := testenv.Asker(t, url, time.Now())(context.Background(), []facts.Query{{Name: "x", Expr: expr}})
	return len(a.Vectors["x"]) > 0
}
