package playbooks

import (
	"testing"
)

// Pods with roles (disaggregated prefill/decode serving) are compared within their pool: a
// decode pod's q_max, q_others_* and fleet_pods count decode pods only, while q_prefill_* and
// q_decode_* read each pool whatever the focus pod's role.
func TestTheFleetsPoolsSplitByRole(t *testing.T) {
	p, ok := builtinSet(t).Get("queue-depth-high")
	if !ok {
		t.Fatal("no queue-depth-high")
	}
	vals := FleetValues{
		"waiting": {"vllm-d-0@decode": 30, "vllm-d-1@decode": 2, "vllm-p-0@prefill": 80, "vllm-p-1@prefill": 60, "prod/old-0": 1},
		"tokens":  {"vllm-d-0@decode": 100, "vllm-d-1@decode": 900, "vllm-p-0@prefill": 5000, "vllm-p-1@prefill": 7000},
	}
	labels := map[string]string{"model_name": "llama", "pod": "vllm-d-0"}
	fj := judgeFleet(p, vals, labels, p.fleetExprs(labels, PodScope{}), PodScope{})
	want := map[string]float64{
		"waiting_this": 30, "waiting_max": 30, "waiting_sum": 32, "waiting_others_max": 2,
		"waiting_prefill_max": 80, "waiting_prefill_min": 60, "waiting_prefill_mean": 70, "waiting_prefill_sum": 140,
		"waiting_decode_max": 30, "waiting_decode_min": 2, "tokens_prefill_min": 5000,
		"fleet_pods": 2, "fleet_prefill_pods": 2, "fleet_decode_pods": 2,
	}
	for name, w := range want {
		if v := fj.values[name]; v == nil || *v != w {
			t.Errorf("%s = %v, want %g", name, v, w)
		}
	}
	if fj.view.Pool != RoleDecode || fj.view.Pods != 2 || len(fj.view.Rows) != 5 {
		t.Errorf("view pool %q, %d pods, %d rows; want the decode pool of 2 pods and every pod listed", fj.view.Pool, fj.view.Pods, len(fj.view.Rows))
	}
	if want := "this pod alone (1 of 2 decode pods)"; fj.view.Scope != want {
		t.Errorf("scope %q, want %q", fj.view.Scope, want)
	}

	// Without roles nothing changes: one pool of every pod, the role stats missing.
	plain := FleetValues{"waiting": {"vllm-0": 30, "vllm-1": 2}}
	labels = map[string]string{"model_name": "llama", "pod": "vllm-0"}
	fj = judgeFleet(p, plain, labels, p.fleetExprs(labels, PodScope{}), PodScope{})
	if v := fj.values["fleet_pods"]; v == nil || *v != 2 || fj.view.Pool != "" || fj.values["waiting_prefill_max"] != nil {
		t.Errorf("without roles: fleet_pods %v, pool %q, waiting_prefill_max %v", fj.values["fleet_pods"], fj.view.Pool, fj.values["waiting_prefill_max"])
	}
	if v := fj.values["fleet_prefill_pods"]; v == nil || *v != 0 {
		t.Errorf("fleet_prefill_pods %v without roles, want 0", v)
	}
}

func TestFleetKeysWithARoleRoundTrip(t *testing.T) {
	for _, k := range []FleetKey{
		{Pod: "vllm-0"}, {Namespace: "prod", Pod: "vllm-0", Rank: "1"}, {Pod: "vllm-d-0", Role: "decode"},
		{Namespace: "prod", Pod: "10.0.0.1:8000", Rank: "0", Role: "prefill"},
	} {
		if got := ParseFleetKey(k.String()); got != k {
			t.Errorf("%q parses as %+v, want %+v", k.String(), got, k)
		}
	}
}
