package playbooks

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/vllm-responder/vllm-responder/traces"
)

// FixtureFile is a file of playbook tests, like `promtool test rules`: recorded query results
// and the verdict expected from them. Files are named *_test.yaml.
type FixtureFile struct {
	Tests []Fixture `yaml:"tests"`
}

// Fixture is one test case.
type Fixture struct {
	Name string `yaml:"name"`
	// Playbook names the playbook; or Alert gives alert labels and the matching playbook is used.
	Playbook string            `yaml:"playbook"`
	Alert    map[string]string `yaml:"alert"`
	// Values are the recorded results by query name; a query absent or null returned no data.
	Values map[string]*float64 `yaml:"values"`
	// Fleet are recorded fleet query results: query -> pod -> value (a pod absent had no series).
	Fleet map[string]map[string]float64 `yaml:"fleet"`
	// TracesSummary, when set, stands for a trace lookup that found slow requests and summed them
	// up in this line (.traces.summary; .traces.count is then 1). Absent: no traces.
	TracesSummary string `yaml:"traces_summary"`
	// Facts are recorded facts by name, of any source (lora_max: 4, kube_workload: vllm-llama);
	// Kube are kube-state-metrics' (the older key). Absent both: no fact was looked up.
	Facts  map[string]any `yaml:"facts"`
	Kube   map[string]any `yaml:"kube"`
	Expect FixtureExpect  `yaml:"expect"`
}

// FixtureExpect is what the diagnosis must show.
type FixtureExpect struct {
	Verdict string `yaml:"verdict"`
	// Missing, when given, must equal the diagnosis' missing list (order ignored).
	Missing []string `yaml:"missing"`
	// TitleContains and SummaryContains are substrings of the rendered texts; ActionContains a
	// substring of one of the rendered actions.
	TitleContains   string `yaml:"title_contains"`
	SummaryContains string `yaml:"summary_contains"`
	ActionContains  string `yaml:"action_contains"`
	// FleetFocus is the pod the diagnosis names (the alert's, or the worst when it names none);
	// FleetScopeContains a substring of "this pod alone (1 of 3 pods)" and the like.
	FleetFocus         string `yaml:"fleet_focus"`
	FleetScopeContains string `yaml:"fleet_scope_contains"`
}

// FixtureResult is one test's outcome; Diff is empty when it passed.
type FixtureResult struct {
	File string
	Name string
	Diff string
}

// LoadFixtures reads every *_test.yaml under the given paths (files or directories).
func LoadFixtures(paths ...string) (map[string]*FixtureFile, error) {
	out := map[string]*FixtureFile{}
	var errs []error
	for _, root := range paths {
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !(strings.HasSuffix(p, "_test.yaml") || strings.HasSuffix(p, "_test.yml")) {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			var f FixtureFile
			if err := decodeFile(p, data, &f); err != nil {
				errs = append(errs, err)
				return nil
			}
			out[p] = &f
			return nil
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// RunFixtures evaluates every fixture against the playbook set.
func RunFixtures(set *Set, files map[string]*FixtureFile) []FixtureResult {
	var results []FixtureResult
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, file := range names {
		for i, fx := range files[file].Tests {
			name := fx.Name
			if name == "" {
				name = fmt.Sprintf("tests[%d]", i)
			}
			results = append(results, FixtureResult{File: file, Name: name, Diff: runFixture(set, fx)})
		}
	}
	return results
}

func runFixture(set *Set, fx Fixture) string {
	var pb *Playbook
	switch {
	case fx.Playbook != "":
		p, ok := set.Get(fx.Playbook)
		if !ok {
			return fmt.Sprintf("no playbook named %q", fx.Playbook)
		}
		pb = p
	case len(fx.Alert) > 0:
		p, ok := set.Match(fx.Alert)
		if !ok {
			return fmt.Sprintf("no playbook matches alert %v", fx.Alert)
		}
		pb = p
	default:
		return "set playbook or alert"
	}
	for name := range fx.Values {
		if _, ok := pb.Query(name); !ok {
			return fmt.Sprintf("values.%s: playbook %s has no query %q", name, pb.Name, name)
		}
	}
	for name := range fx.Fleet {
		if pb.Fleet == nil || pb.Fleet.index == nil {
			return fmt.Sprintf("fleet.%s: playbook %s has no fleet section", name, pb.Name)
		}
		if _, ok := pb.Fleet.index[name]; !ok {
			return fmt.Sprintf("fleet.%s: playbook %s has no fleet query %q", name, pb.Name, name)
		}
	}
	labels := fx.Alert
	if labels == nil {
		labels = map[string]string{}
	}
	var tr *traces.Report
	if fx.TracesSummary != "" {
		tr = &traces.Report{Operation: traces.Operation, Summary: fx.TracesSummary, Requests: []traces.Request{{}}}
	}
	kf, problem := recordedFacts(pb.catalog, fx.Kube, fx.Facts)
	if problem != "" {
		return problem
	}
	d := pb.Judge(Observation{Values: fx.Values, Fleet: FleetValues(fx.Fleet), Labels: labels, Traces: tr, Facts: kf})
	var diff []string
	if fx.Expect.Verdict == "" {
		diff = append(diff, "expect.verdict is required")
	} else if d.Verdict != fx.Expect.Verdict {
		diff = append(diff, fmt.Sprintf("verdict:\n  -expected: %s\n  +got:      %s (%s)", fx.Expect.Verdict, d.Verdict, d.Title))
		for _, n := range d.Notes {
			diff = append(diff, "  note: "+n)
		}
	}
	if fx.Expect.Missing != nil {
		want, got := slices.Clone(fx.Expect.Missing), slices.Clone(d.Missing)
		sort.Strings(want)
		sort.Strings(got)
		if !slices.Equal(want, got) {
			diff = append(diff, fmt.Sprintf("missing:\n  -expected: %v\n  +got:      %v", want, got))
		}
	}
	if s := fx.Expect.TitleContains; s != "" && !strings.Contains(d.Title, s) {
		diff = append(diff, fmt.Sprintf("title does not contain %q:\n  got: %s", s, d.Title))
	}
	if s := fx.Expect.SummaryContains; s != "" && !strings.Contains(d.Summary, s) {
		diff = append(diff, fmt.Sprintf("summary does not contain %q:\n  got: %s", s, d.Summary))
	}
	if s := fx.Expect.ActionContains; s != "" && !slices.ContainsFunc(d.Actions, func(a string) bool { return strings.Contains(a, s) }) {
		diff = append(diff, fmt.Sprintf("no action contains %q:\n  got: %s", s, strings.Join(d.Actions, "\n       ")))
	}
	if want := fx.Expect.FleetFocus; want != "" && (d.Fleet == nil || d.Fleet.Focus != want) {
		got := "no fleet view"
		if d.Fleet != nil {
			got = d.Fleet.Focus
		}
		diff = append(diff, fmt.Sprintf("fleet focus:\n  -expected: %s\n  +got:      %s", want, got))
	}
	if s := fx.Expect.FleetScopeContains; s != "" && (d.Fleet == nil || !strings.Contains(d.Fleet.Scope, s)) {
		got := "no fleet view"
		if d.Fleet != nil {
			got = d.Fleet.Scope
		}
		diff = append(diff, fmt.Sprintf("fleet scope does not contain %q:\n  got: %s", s, got))
	}
	return strings.Join(diff, "\n")
}
