package playbooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vllm-responder/vllm-responder/facts/sources"
)

// Every playbook error names its file and place, so an author can fix it without guessing.
func TestPlaybookErrorsNameTheirPlace(t *testing.T) {
	cases := map[string]string{
		"unknown-name.yaml":           `testdata/bad/unknown-name.yaml: verdicts[1].when: unknown name "queue_meen"`,
		"unknown-query-in-chart.yaml": `testdata/bad/unknown-query-in-chart.yaml: charts[0].queries[0]: unknown query "waitin"`,
		"unknown-key.yaml":            `testdata/bad/unknown-key.yaml: line 4: unknown key "queries.waiting.unitt"`,
		"decode-errors.yaml": `testdata/bad/decode-errors.yaml: line 4: params.limit: "high" is not a number
testdata/bad/decode-errors.yaml: line 6: queries.waiting: must be a PromQL string or an object with expr
testdata/bad/decode-errors.yaml: line 9: unknown key "verdicts[0].titel"
testdata/bad/decode-errors.yaml: line 11: window: written twice (first at line 10)`,
		"bad-promql.yaml":              `testdata/bad/bad-promql.yaml: queries.waiting: invalid PromQL`,
		"unknown-verdict.yaml":         `testdata/bad/unknown-verdict.yaml: verdicts[0].id: unknown verdict "all-good"`,
		"template-typo.yaml":           `testdata/bad/template-typo.yaml: verdicts[0].summary: unknown name "waitng"`,
		"unknown-placeholder.yaml":     `testdata/bad/unknown-placeholder.yaml: queries.waiting: unknown placeholder $windw`,
		"no-match.yaml":                `testdata/bad/no-match.yaml: match: required unless on_demand is true`,
		"fleet-scope-placeholder.yaml": `testdata/bad/fleet-scope-placeholder.yaml: fleet.queries.waiting: unknown placeholder $scope (known: $siblings, $by, $window and the params)`,
		"fleet-scalar.yaml":            `testdata/bad/fleet-scalar.yaml: fleet.queries.pods: must return an instant vector by pod, not a scalar`,
		"fleet-unknown-value.yaml":     `testdata/bad/fleet-unknown-value.yaml: verdicts[0].when: unknown name "queue_other_mean"`,
		"fleet-bad-focus.yaml":         `testdata/bad/fleet-bad-focus.yaml: fleet.focus[0]: unknown fleet query "queue"`,
		"traces-typo.yaml":             `testdata/bad/traces-typo.yaml: verdicts[0].summary: unknown name "sumary"`,
		"traces-reserved.yaml":         `testdata/bad/traces-reserved.yaml: queries.traces: "traces" is reserved`,
		"fact-name-taken.yaml": `testdata/bad/fact-name-taken.yaml: params.kube_hpa_max: name already used by a kube-state-metrics fact
testdata/bad/fact-name-taken.yaml: queries.kube_node: name already used by a kube-state-metrics fact`,
		"labels.yaml": `testdata/bad/labels.yaml: labels: a playbook has no labels: to pick the alerts it diagnoses by their labels use match, ` +
			`to narrow its queries by the alert's labels use scope (templates read the alert's labels as .labels)`,
	}
	for file, want := range cases {
		t.Run(file, func(t *testing.T) {
			path := filepath.Join("testdata/bad", file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Parse(path, data, sources.Catalog())
			if err == nil {
				t.Fatalf("loaded without error; want %q", want)
			}
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error\n  %s\nwant it to contain\n  %s", err, want)
			}
		})
	}
}

// A labels key, even an empty one, is an error of its own: it was once decoded and ignored.
func TestALabelsKeyIsRejectedEvenWhenEmpty(t *testing.T) {
	for _, labels := range []string{"labels:", "labels: {}", "labels: {team: ml}"} {
		t.Run(labels, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte("name: x\nmatch: {alertname: X}\n"+labels+"\nqueries: {w: 'sum(w{$scope})'}\n"+
				"verdicts: [{id: healthy, when: 'true', title: ok}]\n"), sources.Catalog())

			if err == nil || !strings.HasPrefix(err.Error(), "x.yaml: labels: a playbook has no labels: ") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("want the one labels error, got %v", err)
			}
		})
	}
}

// A fixture file is decoded as strictly as a playbook: a typo in expect is named with its line,
// not taken for a fixture that expects nothing.
func TestAFixtureTypoNamesItsLineAndKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x_test.yaml")
	src := "tests:\n  - name: one\n    playbook: triage\n    values: {waiting: 1, running: ~}\n    expect:\n      verdit: healthy\n"
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadFixtures(path)
	if want := path + `: line 6: unknown key "tests[0].expect.verdit"`; err == nil || err.Error() != want {
		t.Fatalf("error\n  %v\nwant\n  %s", err, want)
	}
}

func TestUserPlaybookOverridesBuiltinByNameAndParamsOverrideThresholds(t *testing.T) {
	builtin, err := Builtin(sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	mine, err := Parse("mine/ttft.yaml", []byte(`
name: ttft-p99-high
match: {alertname: VLLMTimeToFirstTokenP99High, team: "=~infra|ml"}
params: {limit: 1}
queries:
  waiting: sum(vllm:num_requests_waiting{$scope})
verdicts:
  - {id: capacity-past-knee, when: waiting > limit, title: "mine"}
  - {id: inconclusive, when: "true", title: "mine too"}
`), sources.Catalog())

	if err != nil {
		t.Fatal(err)
	}
	set, err := NewSet(builtin, []*Playbook{mine}, SetOptions{Params: map[string]map[string]float64{"ttft-p99-high": {"limit": 10}}})
	if err != nil {
		t.Fatal(err)
	}
	p, ok := set.Match(map[string]string{"alertname": "VLLMTimeToFirstTokenP99High", "team": "ml"})
	if !ok || p.Source != "mine/ttft.yaml" {
		t.Fatalf("user playbook did not replace the built-in: %+v", p)
	}
	if _, ok := set.Match(map[string]string{"alertname": "VLLMTimeToFirstTokenP99High", "team": "web"}); ok {
		t.Fatal("regexp matcher should not match team=web (anchored)")
	}
	v := 5.0
	if d := p.Judge(Observation{Values: map[string]*float64{"waiting": &v}}); d.Verdict != VerdictInconclusive {
		t.Fatalf("param override ignored: 5 > limit(10) gave %s", d.Verdict)
	}

	_, err = NewSet(builtin, nil, SetOptions{Params: map[string]map[string]float64{"ttft-p99-high": {"kv_ful": 0.95}}})
	if err == nil || !strings.Contains(err.Error(), `playbooks.params.ttft-p99-high.kv_ful: playbook ttft-p99-high has no param "kv_ful"`) {
		t.Fatalf("a param typo must be an error, got %v", err)
	}
}

func TestFixturesPassAndAFailingFixtureShowsADiff(t *testing.T) {
	builtin, err := Builtin(sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	set, err := NewSet(builtin, nil, SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	files, err := LoadFixtures("tests")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 6 {
		t.Fatalf("want fixtures for every built-in playbook, got %d files", len(files))
	}
	seen := map[string]map[string]bool{}
	for _, r := range RunFixtures(set, files) {
		if r.Diff != "" {
			t.Errorf("%s: %s:\n%s", r.File, r.Name, r.Diff)
		}
	}
	for _, f := range files {
		for _, fx := range f.Tests {
			pb := fx.Playbook
			if pb == "" {
				p, _ := set.Match(fx.Alert)
				pb = p.Name
			}
			if seen[pb] == nil {
				seen[pb] = map[string]bool{}
			}
			seen[pb][fx.Expect.Verdict] = true
		}
	}
	// Every verdict a built-in playbook can give has a fixture.
	for _, p := range set.All() {
		for _, v := range p.Verdicts {
			if !seen[p.Name][v.ID] {
				t.Errorf("playbook %s: no fixture expects verdict %s", p.Name, v.ID)
			}
		}
	}

	bad := map[string]*FixtureFile{"x_test.yaml": {Tests: []Fixture{{Name: "wrong", Playbook: "triage",
		Values: map[string]*float64{}, Expect: FixtureExpect{Verdict: VerdictHealthy}}}}}
	res := RunFixtures(set, bad)
	if len(res) != 1 || !strings.Contains(res[0].Diff, "-expected: healthy") || !strings.Contains(res[0].Diff, "+got:      no-data") {
		t.Fatalf("a failing fixture must show a diff, got %+v", res)
	}
}

func TestOnlyRulesThatFailOnAMissingValueAreReportedUndecidable(t *testing.T) {
	p, err := Parse("x.yaml", []byte(`
name: x
match: {alertname: X}
queries:
  a: sum(x{$scope})
  base: sum(x{$scope} offset 1d)
verdicts:
  - {id: prefill-bound, when: "base != nil ? a > 2 * base : a > 10", title: handles nil}
  - {id: decode-bound, when: "a > base", title: needs base}
  - {id: inconclusive, when: "true", title: fallback}
`), sources.Catalog())

	if err != nil {
		t.Fatal(err)
	}
	a := 5.0
	d := p.Judge(Observation{Values: map[string]*float64{"a": &a}})
	if d.Verdict != VerdictInconclusive || len(d.Notes) != 1 || !strings.Contains(d.Notes[0], "rule decode-bound not decidable: base missing") {
		t.Fatalf("verdict %s, notes %q", d.Verdict, d.Notes)
	}
}

// Kubernetes mounts a ConfigMap as a directory of symlinks into a hidden "..<timestamp>/" copy:
// the playbooks must load once, not twice.
func TestLoadDirSkipsAConfigMapsHiddenCopy(t *testing.T) {
	dir := t.TempDir()
	pb := "name: mine\nmatch: {alertname: X}\nqueries: {w: 'sum(vllm:num_requests_waiting{$scope})'}\nverdicts: [{id: healthy, when: 'true', title: ok}]\n"
	hidden := filepath.Join(dir, "..2026_11_29_10_00_00.123")
	if err := os.MkdirAll(hidden, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hidden, "mine.yaml"), []byte(pb), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..2026_11_29_10_00_00.123", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..data/mine.yaml", filepath.Join(dir, "mine.yaml")); err != nil {
		t.Fatal(err)
	}
	pbs, err := LoadDir(dir, sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	if len(pbs) != 1 {
		t.Fatalf("loaded %d playbooks, want 1", len(pbs))
	}
}

// An optional query (a feature's series) that returns nothing is neither missing evidence nor a
// reason to call a rule undecidable; a plain one is both.
func TestAnOptionalQueryAbsentIsNotMissing(t *testing.T) {
	p, err := Parse("o.yaml", []byte(`name: o
match: {alertname: A}
queries:
  waiting: sum(vllm:num_requests_waiting{$scope})
  accepted:
    expr: sum(rate(vllm:spec_decode_num_accepted_tokens_total{$scope}[$window]))
    optional: true
verdicts:
  - id: decode-bound
    when: accepted > 1
    title: decode
  - id: inconclusive
    when: "true"
    title: none
`), sources.Catalog())

	if err != nil {
		t.Fatal(err)
	}
	d := p.Judge(Observation{Values: map[string]*float64{}})
	if len(d.Missing) != 1 || d.Missing[0] != "waiting" {
		t.Errorf("missing %v, want only waiting", d.Missing)
	}
	for _, n := range d.Notes {
		if strings.Contains(n, "accepted") {
			t.Errorf("note %q about an optional query", n)
		}
	}
}
