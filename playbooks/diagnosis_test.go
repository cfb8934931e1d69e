package playbooks

import (
	"os"
	"slices"
	"strings"
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

// The runbooks' verdict table says what VerdictMeaning says, verdict by verdict.
func TestTheRunbooksVerdictTableIsVerdictMeaning(t *testing.T) {
	b, err := os.ReadFile("../docs/playbooks/README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range KnownVerdicts {
		if row := "| `" + id + "` | " + VerdictMeaning(id) + " |"; !strings.Contains(string(b), row) {
			t.Errorf("docs/playbooks/README.md has no row\n%s", row)
		}
	}
}

// Every verdict has a class, and the classes that integrations and triage tell apart are where
// their meanings say: a pause on purpose is not a failure, pressure is not yet one.
func TestEveryVerdictHasItsClass(t *testing.T) {
	known := []Class{ClassProblem, ClassPressure, ClassPaused, ClassUnexplained, ClassHealthy, ClassNoData}
	for _, id := range KnownVerdicts {
		if c := ClassOf(id); !slices.Contains(known, c) {
			t.Errorf("verdict %s has class %q, not one of %v", id, c, known)
		}
	}
	for id, want := range map[string]Class{
		VerdictEngineStalled: ClassProblem, VerdictEnginePaused: ClassPaused, VerdictKVPressure: ClassPressure,
		VerdictInconclusive: ClassUnexplained, VerdictHealthy: ClassHealthy, VerdictNoData: ClassNoData,
	} {
		if got := ClassOf(id); got != want {
			t.Errorf("ClassOf(%s) = %q, want %q", id, got, want)
		}
	}
	if c := ClassOf("resolved"); c != "" {
		t.Errorf("a word that is no verdict has class %q", c)
	}
}
