package testenv

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// sampleLines are the sample lines of docs/gpu-facts.md's <!-- sample: name --> block.
func sampleLines(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile("../../docs/gpu-facts.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- sample: "+name+" -->\n```text\n")
	if !ok {
		t.Fatalf("docs/gpu-facts.md has no sample %q", name)
	}
	body, _, _ := strings.Cut(rest, "```")
	return strings.Split(strings.TrimSpace(body), "\n")
}

var labelNamesRE = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"`)

// shapes maps each family of an exposition to its HELP and TYPE lines and the label-name
// sequences of its samples.
func shapes(lines []string) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	add := func(fam, shape string) {
		if out[fam] == nil {
			out[fam] = map[string]bool{}
		}
		out[fam][shape] = true
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "# ") {
			f := strings.Fields(l)
			add(f[2], l)
			continue
		}
		name, labels, _ := strings.Cut(l, "{")
		var names []string
		for _, m := range labelNamesRE.FindAllStringSubmatch(labels, -1) {
			names = append(names, m[1])
		}
		add(name, strings.Join(names, ","))
	}
	return out
}

// The node families as kube-state-metrics v2.17 writes them, family by family against the
// sample in docs/gpu-facts.md: HELP, TYPE, label names in order.
func TestKSMNodeFamiliesMatchTheFactsSample(t *testing.T) {
	alloc := 7
	st := KSMState{Nodes: []KSMNode{{Name: "gpu-h100-a7", Unschedulable: true, GPUs: 8, GPUsAllocatable: &alloc,
		Conditions: map[string]string{"SysLogsXIDError": "True"},
		Taints:     []KSMTaint{{"nvidia.com/gpu-xid-error", "true", "NoSchedule"}}}}}
	got := shapes(strings.Split(strings.TrimSpace(st.Exposition(time.Now())), "\n"))
	want := shapes(sampleLines(t, "ksm-node"))
	for fam, w := range want {
		for shape := range w {
			if !got[fam][shape] {
				t.Errorf("%s: the sample has %q, the stand-in does not (it has %v)", fam, shape, got[fam])
			}
		}
		for shape := range got[fam] {
			if !w[shape] {
				t.Errorf("%s: the stand-in writes %q, the sample does not", fam, shape)
			}
		}
	}
	body := st.Exposition(time.Now())
	for _, line := range []string{
		`kube_node_spec_unschedulable{node="gpu-h100-a7"} 1`,
		`kube_node_status_condition{node="gpu-h100-a7",condition="Ready",status="true"} 1`,
		`kube_node_status_condition{node="gpu-h100-a7",condition="SysLogsXIDError",status="true"} 1`,
		`kube_node_status_condition{node="gpu-h100-a7",condition="SysLogsXIDError",status="false"} 0`,
		`kube_node_status_allocatable{node="gpu-h100-a7",resource="nvidia_com_gpu",unit="integer"} 7`,
		`kube_node_status_capacity{node="gpu-h100-a7",resource="nvidia_com_gpu",unit="integer"} 8`,
		`kube_node_spec_taint{node="gpu-h100-a7",key="nvidia.com/gpu-xid-error",value="true",effect="NoSchedule"} 1`,
	} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("missing %s", line)
		}
	}
}

// Scraped by a real Prometheus, the node's state joins a pod through kube_pod_info's node: what
// the GPU fact source will ask ("is this pod's node cordoned, and why?").
func TestKSMNodesJoinTheirPodsInPrometheus(t *testing.T) {
	st := KSMDeployment("inference", "llama", KSMPod{Name: "llama-0", Ready: true}, KSMPod{Name: "llama-1", Ready: true}).
		Add(KSMState{Nodes: []KSMNode{
			{Name: "gpu-node-0", GPUs: 8, Unschedulable: true, Conditions: map[string]string{"SysLogsGPUFallenOff": "True", "AcceleratedHardwareReady": "False"}},
			KSMGPUNode("gpu-node-1", 8),
		}})
	x := ServeExposition(t, func(now time.Time) string { return st.Exposition(now) })
	p := Prometheus(t, PromOptions{ScrapeTargets: []Target{{Addr: x.Addr, Job: "kube-state-metrics"}}})
	query := func(q string) []string {
		resp, err := http.Get(p.URL + "/api/v1/query?query=" + url.QueryEscape(q))
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		var r struct {
			Data struct {
				Result []struct {
					Metric map[string]string `json:"metric"`
				} `json:"result"`
			} `json:"data"`
		}
		b, _ := io.ReadAll(resp.Body)
		if json.Unmarshal(b, &r) != nil {
			return nil
		}
		var pods []string
		for _, s := range r.Data.Result {
			pods = append(pods, s.Metric["pod"]+"@"+s.Metric["node"])
		}
		return pods
	}
	cordoned := `kube_pod_info{namespace="inference"} * on (node) group_left () (kube_node_spec_unschedulable == 1)`
	WaitFor(t, 30*time.Second, "kube-state-metrics' series", func() bool { return len(query(`kube_pod_info`)) == 2 })
	if got := query(cordoned); len(got) != 1 || got[0] != "llama-0@gpu-node-0" {
		t.Errorf("pods on a cordoned node: %v, want llama-0@gpu-node-0", got)
	}
	failing := `kube_pod_info{namespace="inference"} * on (node) group_left () (max by (node) (kube_node_status_condition{condition=~"SysLogs.*|Gpu.*Watch",status="true"}) == 1 or max by (node) (kube_node_status_condition{condition="AcceleratedHardwareReady",status="false"}) == 1)`
	if got := query(failing); len(got) != 1 || got[0] != "llama-0@gpu-node-0" {
		t.Errorf("pods on a node whose GPU health condition fails: %v, want llama-0@gpu-node-0", got)
	}
}
