package playbooks

import (
	"github.com/vllm-responder/vllm-responder/facts/sources"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
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
	if len(d.Missing) != 0 {
		t.Errorf("missing %v: no rule was left undecided by a missing value", d.Missing)
	}
	for _, n := range d.Notes {
		if strings.Contains(n, "accepted") {
			t.Errorf("note %q about an optional query", n)
		}
	}

	// One that failed (its feature may be on) is missing where a rule needs it.
	d = p.Judge(Observation{Values: map[string]*float64{}, Failed: map[string]bool{"accepted": true}})
	if !slices.Equal(d.Missing, []string{"accepted"}) || !slices.Contains(d.Notes, "rule decode-bound not decidable: accepted missing") {
		t.Errorf("missing %v, notes %q; want accepted", d.Missing, d.Notes)
	}
}

// Missing is what the verdict needed and did not have: the values read by the rules tried before
// it that a missing value left undecided (any of them could have been the verdict), not every
// query without a value. A confident verdict lists only what a rule above it needed; an
// inconclusive one is never silent about a rule it could not decide, a fleet value included.
func TestMissingIsWhatAnUndecidedRuleBeforeTheVerdictNeeded(t *testing.T) {
	p, err := Parse("m.yaml", []byte(`name: m
match: {alertname: A}
queries:
  waiting: sum(vllm:num_requests_waiting{$scope})
  waiting_before: sum(vllm:num_requests_waiting{$scope} offset $window)
  hit_rate: sum(x{$scope})
  prefill: sum(y{$scope})
fleet:
  queries: {arrivals: 'sum by ($by) (rate(vllm:request_success_total{$siblings}[$window]))'}
verdicts:
  - {id: prefix-cache-collapse, when: "hit_rate < 0.5", title: collapse}
  - {id: load-imbalance, when: "arrivals_this > 3 * arrivals_others_mean", title: imbalance}
  - {id: capacity-past-knee, when: "waiting > 10", title: "capacity, {{ count .waiting_before }} before"}
  - {id: prefill-bound, when: "prefill > 1", title: prefill}
  - {id: inconclusive, when: "true", title: none}
`), sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	v := func(f float64) *float64 { return &f }
	labels := map[string]string{"namespace": "ns", "pod": "p0", "model_name": "m"}
	fleet := FleetValues{"arrivals": {"ns/p0": 1, "ns/p1": 1, "ns/p2": 1}}

	// waiting_before (shown, read by no rule) and prefill (read after the verdict) are absent:
	// the verdict did not need them.
	d := p.Judge(Observation{Values: map[string]*float64{"waiting": v(40), "hit_rate": v(0.9)}, Fleet: fleet, Labels: labels})
	if d.Verdict != VerdictCapacityPastKnee || len(d.Missing) != 0 {
		t.Errorf("verdict %s, missing %v; want capacity-past-knee, nothing missing", d.Verdict, d.Missing)
	}
	// A rule above the verdict left undecided: it could have been the verdict.
	d = p.Judge(Observation{Values: map[string]*float64{"waiting": v(40)}, Fleet: fleet, Labels: labels})
	if d.Verdict != VerdictCapacityPastKnee || !slices.Equal(d.Missing, []string{"hit_rate"}) ||
		!slices.Contains(d.Notes, "rule prefix-cache-collapse not decidable: hit_rate missing") {
		t.Errorf("verdict %s, missing %v, notes %q; want capacity-past-knee, hit_rate missing for prefix-cache-collapse", d.Verdict, d.Missing, d.Notes)
	}
	// Inconclusive: every rule a missing value left undecided, the fleet's values among them.
	d = p.Judge(Observation{Values: map[string]*float64{"waiting": v(2)}, Labels: labels})
	if d.Verdict != VerdictInconclusive || !slices.Equal(d.Missing, []string{"hit_rate", "arrivals_this", "arrivals_others_mean", "prefill"}) {
		t.Errorf("verdict %s, missing %v; want inconclusive, missing hit_rate, the arrivals and prefill", d.Verdict, d.Missing)
	}
}

// A query that failed is unknown, not absent: a rule that reads its absence (no-data's
// `x == nil`, `(x ?? 0) == 0`) is not decided by it, while one whose answer does not depend
// on it still is.
func TestAFailedQueryIsNoEvidenceOfAbsence(t *testing.T) {
	p, err := Parse("f.yaml", []byte(`name: f
match: {alertname: A}
queries:
  waiting: sum(vllm:num_requests_waiting{$scope})
  running: sum(vllm:num_requests_running{$scope})
verdicts:
  - {id: no-data, when: "waiting == nil && running == nil", title: no series}
  - {id: capacity-past-knee, when: "running > 100 || waiting > 10", title: capacity}
  - {id: healthy, when: "(waiting ?? 0) == 0", title: nothing waits}
  - {id: inconclusive, when: "true", title: none}
`), sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	v := func(f float64) *float64 { return &f }
	failed := map[string]bool{"waiting": true, "running": true}
	if d := p.Judge(Observation{Values: map[string]*float64{}}); d.Verdict != VerdictNoData || len(d.Missing) != 0 {
		t.Errorf("nothing answered: verdict %s, missing %v; want no-data", d.Verdict, d.Missing)
	}
	d := p.Judge(Observation{Values: map[string]*float64{}, Failed: failed})
	if d.Verdict != VerdictInconclusive || !slices.Equal(d.Missing, []string{"waiting", "running"}) {
		t.Errorf("every query failed: verdict %s, missing %v; want inconclusive, both missing", d.Verdict, d.Missing)
	}
	d = p.Judge(Observation{Values: map[string]*float64{"running": v(120)}, Failed: failed})
	if d.Verdict != VerdictCapacityPastKnee || len(d.Missing) != 0 {
		t.Errorf("waiting failed, running 120: verdict %s, missing %v; want capacity-past-knee, nothing missing", d.Verdict, d.Missing)
	}
	d = p.Judge(Observation{Values: map[string]*float64{"running": v(20)}, Failed: failed})
	if d.Verdict != VerdictInconclusive || !slices.Equal(d.Missing, []string{"waiting"}) {
		t.Errorf("waiting failed, running 20: verdict %s, missing %v; want inconclusive, not healthy, waiting missing", d.Verdict, d.Missing)
	}
	// An inconclusive for want of evidence says so before what its playbook says it cannot explain.
	if want := "Not decided for want of evidence (waiting missing): "; !strings.HasPrefix(d.Summary, want) {
		t.Errorf("summary %q; want it to begin %q", d.Summary, want)
	}
	if d = p.Judge(Observation{Values: map[string]*float64{"running": v(20), "waiting": v(2)}}); d.Verdict != VerdictInconclusive || strings.Contains(d.Summary, "want of evidence") {
		t.Errorf("nothing missing: verdict %s, summary %q; want inconclusive without a word of missing evidence", d.Verdict, d.Summary)
	}
}

// playbooks.window is a load option, as params are: the set's playbooks read it, the compiled
// playbooks it was made from keep their own (NewSet may be called again with other options).
func TestTheWindowIsASetOptionThatLeavesTheLoadedPlaybooksAlone(t *testing.T) {
	builtin, err := Builtin(sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	set, err := NewSet(builtin, nil, SetOptions{Window: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range set.All() {
		if p.Window != 2*time.Minute {
			t.Errorf("%s: window %s in the set, want 2m", p.Name, p.Window)
		}
	}
	for _, p := range builtin {
		if p.Window != 5*time.Minute {
			t.Errorf("%s: the loaded playbook's window became %s", p.Name, p.Window)
		}
	}
	p, _ := set.Get("ttft-p99-high")
	q, _ := p.Query("ttft_p99")
	if q := p.Expand(q, map[string]string{"pod": "vllm-0"}); !strings.Contains(q, "[2m]") {
		t.Errorf("the set's window is not in the queries: %s", q)
	}
}
