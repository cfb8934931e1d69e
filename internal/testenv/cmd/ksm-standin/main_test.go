package main

import (
	"testing"

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
