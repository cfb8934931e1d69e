package playbooks

import (
	"testing"

	"github.com/vllm-responder/vllm-responder/traces"
)

func TestSummaryCitesTraces(t *testing.T) {
	tr := &traces.Report{Summary: "the 5 slowest requests spent 92% of their time queued"}
	for _, c := range []struct {
		name string
		d    Diagnosis
		want bool
	}{
		{"no traces", Diagnosis{Summary: "x"}, false},
		{"an inconclusive summary leading with the traces", Diagnosis{Summary: "Traces: " + tr.Summary + " None matched.", SlowestRequests: tr}, true},
		{"a summary that does not cite them", Diagnosis{Summary: "Capacity, past the knee.", SlowestRequests: tr}, false},
	} {
		if got := c.d.SummaryCitesTraces(); got != c.want {
			t.Errorf("%s: SummaryCitesTraces() = %v, want %v", c.name, got, c.want)
		}
	}
}
