package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

func TestTheStandInHPADecidesAsKubernetesDoes(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	for _, tc := range []struct {
		name    string
		reading *float64
		desired int
		limited string
		active  string
	}{
		{"past the knee it wants more than its max: at its ceiling, ScalingLimited", f(140), 3, "True", "True"},
		{"within 10% of its target it stays", f(21), 2, "False", "True"},
		{"a quiet queue wants its min", f(0), 1, "True", "True"},
		{"above the target with room it scales up, not limited", f(29), 3, "False", "True"},
		{"no reading: ScalingActive False, it stays", nil, 2, "False", "False"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &hpa{spec: testenv.KSMHPA{Min: 1, Max: 3, Current: 2, Metrics: []testenv.KSMHPAMetric{{Name: "m", TargetType: "average", Target: 20}}}}
			h.follow(tc.reading)
			s := h.state(testenv.KSMState{}).HPAs[0]
			if s.Desired != tc.desired || s.Conditions["ScalingLimited"] != tc.limited || s.Conditions["ScalingActive"] != tc.active {
				t.Errorf("desired %d, conditions %v", s.Desired, s.Conditions)
			}
		})
	}
}

// POST /admin/node changes a node as kubectl cordon or a GPU health agent does; what is left out
// stays, and an unknown node is refused.
func TestAdminNodeCordonsAndSetsConditions(t *testing.T) {
	n := &nodes{list: []testenv.KSMNode{testenv.KSMGPUNode("gpu-node-0", 8), testenv.KSMGPUNode("gpu-node-1", 8)}}
	post := func(body string) int {
		w := httptest.NewRecorder()
		n.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/admin/node", strings.NewReader(body)))
		return w.Code
	}
	if c := post(`{"node":"gpu-node-0","unschedulable":true,"conditions":{"SysLogsGPUFallenOff":"True"},"gpus_allocatable":7}`); c != http.StatusNoContent {
		t.Fatalf("status %d", c)
	}
	if c := post(`{"node":"gpu-node-0","conditions":{"GpuPcieWatch":"True"}}`); c != http.StatusNoContent {
		t.Fatalf("status %d", c)
	}
	if c := post(`{"node":"gpu-node-9","unschedulable":true}`); c != http.StatusNotFound {
		t.Errorf("unknown node: status %d, want 404", c)
	}
	body := n.state().Exposition(time.Now())
	for _, line := range []string{
		`kube_node_spec_unschedulable{node="gpu-node-0"} 1`,
		`kube_node_spec_unschedulable{node="gpu-node-1"} 0`,
		`kube_node_status_condition{node="gpu-node-0",condition="SysLogsGPUFallenOff",status="true"} 1`,
		`kube_node_status_condition{node="gpu-node-0",condition="GpuPcieWatch",status="true"} 1`,
		`kube_node_status_allocatable{node="gpu-node-0",resource="nvidia_com_gpu",unit="integer"} 7`,
	} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("missing %s in\n%s", line, body)
		}
	}
}
