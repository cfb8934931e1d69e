package playbooks

import (
	"fmt"
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

// The causal order: every verdict has its own rank, the order docs/incidents.md states (and
// explains) is the table's, and the verdicts the doc places before their rows exist take the
// ranks kept for them.
func TestTheCausalOrderIsTheOneDocsIncidentsStates(t *testing.T) {
	b, err := os.ReadFile("../docs/incidents.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]int{}
	ranks := map[int]string{}
	for _, line := range strings.Split(string(b), "\n") {
		var rank int
		var id string
		if n, _ := fmt.Sscanf(line, "| %d | `%s", &rank, &id); n == 2 {
			id = strings.TrimSuffix(strings.Fields(id)[0], "`")
			if other, dup := ranks[rank]; dup {
				t.Errorf("docs/incidents.md gives rank %d to %s and %s", rank, other, id)
			}
			doc[id], ranks[rank] = rank, id
		}
	}
	if len(doc) < len(verdicts) {
		t.Fatalf("docs/incidents.md places %d verdicts, the table has %d", len(doc), len(verdicts))
	}
	seen := map[int]string{}
	for _, v := range verdicts {
		if v.Rank <= 0 {
			t.Errorf("%s has no causal rank", v.ID)
		}
		if other, dup := seen[v.Rank]; dup {
			t.Errorf("%s and %s share the causal rank %d", other, v.ID, v.Rank)
		}
		seen[v.Rank] = v.ID
		if doc[v.ID] != v.Rank {
			t.Errorf("%s: rank %d in the table, %d in docs/incidents.md", v.ID, v.Rank, doc[v.ID])
		}
	}
	for id, rank := range doc {
		if _, known := lookupVerdict(id); !known && seen[rank] != "" {
			t.Errorf("docs/incidents.md keeps rank %d for %s, which the table gives %s", rank, id, seen[rank])
		}
	}
	if CausalRank("unmatched") <= CausalRank(VerdictHealthy) {
		t.Error("an unknown verdict does not rank after every verdict")
	}
	// The order's few claims an incident rests on.
	for _, pair := range [][2]string{{VerdictEngineStalled, VerdictCapacityPastKnee}, {VerdictKVPreemption, VerdictCapacityPastKnee},
		{VerdictCapacityPastKnee, VerdictPrefillBound}, {VerdictEngineRestarting, VerdictEngineStalled}, {VerdictLoadImbalance, VerdictCapacityPastKnee},
		{VerdictCapacityPastKnee, VerdictKVPressure}, {VerdictKVPressure, VerdictInconclusive}} {
		if CausalRank(pair[0]) >= CausalRank(pair[1]) {
			t.Errorf("%s does not rank before %s", pair[0], pair[1])
		}
	}
}
