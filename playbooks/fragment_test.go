package playbooks

import (
	"github.com/vllm-responder/vllm-responder/facts/sources"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// Every error of the fragment language names its place, and a name defined twice names both
// files and lines: the author of a user playbook sees what clashes with what.
func TestFragmentErrorsNameBothPlaces(t *testing.T) {
	const d = "testdata/fragments/"
	cases := map[string]string{
		"query-defined-twice": d + `query-defined-twice/mine.yaml: queries.held: line 6: also defined by fragment progress (builtin/common/progress.yaml line 40): to replace it, write override: progress`,
		"two-fragments-one-query": d + `two-fragments-one-query/mine.yaml: uses: fragments a and b both define query "x" (` +
			d + `two-fragments-one-query/a.yaml line 3, ` + d + `two-fragments-one-query/b.yaml line 4)`,
		"template-defined-twice": d + `template-defined-twice/mine.yaml: templates.pod: line 6: also defined by fragment frag (` + d + `template-defined-twice/frag.yaml line 3)`,
		"rule-name-taken":        d + `rule-name-taken/mine.yaml: verdicts[0].name: line 7: fragment progress has a rule named "no-data" too (builtin/common/progress.yaml line 306): to replace it, write override: progress`,
		"override-of-nothing": d + `override-of-nothing/mine.yaml: queries.helt.override: line 5: fragment progress has no query "helt" to override
` + d + `override-of-nothing/mine.yaml: verdicts[0].override: line 9: fragment progress has no rule named "nodata" to override`,
		"override-without-uses": d + `override-without-uses/mine.yaml: queries.held.override: line 4: this playbook does not use fragment "progress"
` + d + `override-without-uses/mine.yaml: verdicts[0]: line 8: ...progress: this playbook does not use fragment "progress"
` + d + `override-without-uses/mine.yaml: queries: at least one query is required`,
		"unknown-fragment": d + `unknown-fragment/mine.yaml: uses[0]: unknown fragment "progres" (known: capacity, decode, deferred, frontend, gpu, kv, kv-transfer, prefill-interference, prefix-cache, progress, series, spec-decode, upstream)`,
		"fragment-with-match": d + `fragment-with-match/frag.yaml: match: a fragment has no match: the playbooks that use it do
` + d + `fragment-with-match/frag.yaml: window: a fragment has no window: the playbooks that use it do
` + d + `fragment-with-match/frag.yaml: queries.x: defined twice (lines 5 and 6)`,
		"fragment-name-taken": d + `fragment-name-taken/progress.yaml: fragment: "progress" is already the name of builtin/common/progress.yaml`,
		"from-nothing": d + `from-nothing/mine.yaml: queries.ttft_p50.from: line 4: fragment series has no query "ttft_p50"
` + d + `from-nothing/mine.yaml: queries.gen_tps: line 5: a query taken from a fragment is the fragment's: write only from
` + d + `from-nothing/mine.yaml: queries: at least one query is required`,
		"error-in-a-fragment": d + `error-in-a-fragment/frag.yaml: verdicts[0].when: unknown name "runing" (1:1) (as used by ` + d + `error-in-a-fragment/mine.yaml)
` + d + `error-in-a-fragment/frag.yaml: verdicts[0].title: unknown name "runing" (as used by ` + d + `error-in-a-fragment/mine.yaml)`,
	}
	for dir, want := range cases {
		t.Run(dir, func(t *testing.T) {
			_, err := LoadDir(filepath.Join("testdata/fragments", dir), sources.Catalog())
			if err == nil {
				t.Fatalf("loaded without error; want\n  %s", want)
			}
			if err.Error() != want {
				t.Fatalf("error\n  %s\nwant\n  %s", err, want)
			}
		})
	}
}

// What merging does, in one user directory: a fragment's rules ahead of the playbook's own (or
// where a spread puts them), its queries after the playbook's own (or where a spread puts them),
// an override in the place of what it replaces, a param set by the playbook, a query taken by
// name, a named condition written in its place and a named template called.
func TestAFragmentMergesIntoThePlaybookThatUsesIt(t *testing.T) {
	fsys := fstest.MapFS{
		"common/gate.yaml": {Data: []byte(`
fragment: gate
scope: [pod]
params: {held_min: 1, busy: 10}
queries:
  held: sum(vllm:num_requests_running{$scope})
  up: min(up)
templates:
  pod: "pod {{ .labels.pod }}"
conditions:
  holding: held >= held_min
verdicts:
  - {name: down, id: engine-restarting, when: "up == 0", title: "{{ template \"pod\" . }} is down"}
  - {name: no-data, id: no-data, when: "held == nil", title: no data}
  - {name: stuck, id: engine-stalled, when: "holding && up == 1", title: "{{ template \"pod\" . }} is stuck"}
`)},
		"mine.yaml": {Data: []byte(`
name: mine
match: {alertname: Mine}
uses: [gate]
params: {busy: 20}
queries:
  waiting: sum(vllm:num_requests_waiting{$scope})
  ...gate:
  gen_tps: {from: series}
  up:
    override: gate
    expr: min(up{job="vllm"})
conditions:
  deep: waiting > busy || waiting > 2 * held
verdicts:
  - name: no-data
    override: gate
    id: no-data
    when: waiting == nil && held == nil
    title: nothing here
  - {id: capacity-past-knee, when: "deep && holding", title: deep}
  - {id: inconclusive, when: "true", title: mine}
`)},
	}
	lib, err := builtinFragments()
	if err != nil {
		t.Fatal(err)
	}
	pbs, err := loadFS(fsys, ".", "dir", lib, sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	p := pbs[0]
	var queries, rules []string
	for _, q := range p.Queries {
		queries = append(queries, q.Name+"="+q.Expr)
	}
	for _, v := range p.Verdicts {
		rules = append(rules, v.ID+": "+v.When)
	}
	wantQueries := []string{
		"waiting=sum(vllm:num_requests_waiting{$scope})",
		"held=sum(vllm:num_requests_running{$scope})",
		`up=min(up{job="vllm"})`,
		"gen_tps=sum(rate(vllm:generation_tokens_total{$scope}[$window]))",
	}
	wantRules := []string{
		"engine-restarting: up == 0",
		"no-data: waiting == nil && held == nil",
		"engine-stalled: held >= held_min && up == 1",
		"capacity-past-knee: (waiting > busy || waiting > 2 * held) && held >= held_min",
		"inconclusive: true",
	}
	if !slices.Equal(queries, wantQueries) {
		t.Errorf("queries\n  %s\nwant\n  %s", strings.Join(queries, "\n  "), strings.Join(wantQueries, "\n  "))
	}
	if !slices.Equal(rules, wantRules) {
		t.Errorf("rules\n  %s\nwant\n  %s", strings.Join(rules, "\n  "), strings.Join(wantRules, "\n  "))
	}
	if p.Params["busy"] != 20 || p.Params["held_min"] != 1 {
		t.Errorf("params %v: want the playbook's busy (20) and the fragment's held_min (1)", p.Params)
	}
	if !slices.Equal(p.Scope, []string{"pod"}) {
		t.Errorf("scope %v: want the fragment's, [pod]", p.Scope)
	}
	if got := p.Verdicts[2].From; got != "dir/common/gate.yaml" {
		t.Errorf("the stuck rule comes from %q, want the fragment's file", got)
	}
	one, zero := 1.0, 0.0
	d := p.Judge(Observation{Values: map[string]*float64{"waiting": &zero, "held": &one, "up": &one}, Labels: map[string]string{"pod": "vllm-0"}})
	if d.Verdict != VerdictEngineStalled || d.Title != "pod vllm-0 is stuck" {
		t.Errorf("judged %s %q, want engine-stalled \"pod vllm-0 is stuck\"", d.Verdict, d.Title)
	}
}
