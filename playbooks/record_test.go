package playbooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vllm-responder/vllm-responder/facts/sources"
)

// Every recorded built-in fixture, decided and written back as a fixture, round-trips: the new
// fixture passes when it expects the verdict given, and fails, naming both, when it expects
// another (the regression test a "Wrong verdict?" correction writes).
func TestAFixtureFromADiagnosisReproducesItsVerdictAndFailsOnAnother(t *testing.T) {
	set := builtinSet(t)
	files, err := LoadFixtures("tests")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for file, f := range files {
		for i, fx := range f.Tests {
			pb, ok := set.Get(fx.Playbook)
			if !ok {
				pb, ok = set.Match(fx.Alert)
			}
			if !ok {
				t.Fatalf("%s tests[%d]: no playbook", file, i)
			}
			kf, problem := recordedFacts(sources.Catalog(), fx.Kube, fx.Facts)
			if problem != "" {
				t.Fatalf("%s: %s: %s", file, fx.Name, problem)
			}
			d := pb.Judge(Observation{Values: fx.Values, Fleet: FleetValues(fx.Fleet), Labels: fx.Alert, Facts: kf})
			other := VerdictHealthy
			if d.Verdict == other {
				other = VerdictInconclusive
			}
			for _, expect := range []string{d.Verdict, other} {
				out, err := FixtureFromDiagnosis(d, expect)
				if err != nil {
					t.Fatalf("%s: %s: %v", file, fx.Name, err)
				}
				dir := t.TempDir()
				if err := os.WriteFile(filepath.Join(dir, "wrong_test.yaml"), out, 0o644); err != nil {
					t.Fatal(err)
				}
				loaded, err := LoadFixtures(dir)
				if err != nil {
					t.Fatalf("%s: %s: the written fixture does not load: %v\n%s", file, fx.Name, err, out)
				}
				res := RunFixtures(set, loaded)
				if len(res) != 1 {
					t.Fatalf("want 1 result, got %+v", res)
				}
				if expect == d.Verdict && res[0].Diff != "" {
					t.Errorf("%s: %s: the fixture of a %s diagnosis does not reproduce it:\n%s\n%s", file, fx.Name, d.Verdict, res[0].Diff, out)
				}
				if expect != d.Verdict && (!strings.Contains(res[0].Diff, "-expected: "+expect) || !strings.Contains(res[0].Diff, "+got:      "+d.Verdict)) {
					t.Errorf("%s: %s: a fixture expecting %s must fail with the %s given, got diff %q", file, fx.Name, expect, d.Verdict, res[0].Diff)
				}
				n++
			}
		}
	}
	if n < 40 {
		t.Fatalf("only %d round trips: the built-in fixtures did not load", n)
	}
}

func TestAFixtureNeedsAKnownVerdictAndRecordedEvidence(t *testing.T) {
	d := builtinSet(t).Triage().Judge(Observation{Values: map[string]*float64{}, Labels: map[string]string{"model_name": "llama"}})
	if _, err := FixtureFromDiagnosis(d, "capacity"); err == nil || !strings.Contains(err.Error(), `unknown verdict "capacity"`) {
		t.Errorf("an unknown verdict must be refused by name, got %v", err)
	}
	if _, err := FixtureFromDiagnosis(&Diagnosis{Playbook: "triage", Verdict: VerdictInconclusive}, VerdictHealthy); err != errNoRecord {
		t.Errorf("a diagnosis without evidence must be refused, got %v", err)
	}
}
