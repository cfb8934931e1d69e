package playbooks

import (
	"strings"
	"testing"

	"github.com/vllm-responder/vllm-responder/facts/sources"
	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
)

// recordedPlaybook has a recorded form on a query and on a fleet query.
const recordedPlaybook = `name: rec
match: {alertname: X}
scope: [namespace, pod, model_name]
window: 5m
params: {least: 2}
queries:
  busy:
    expr: sum(rate(vllm:generation_tokens_total{$scope}[$window])) > $least
    recorded:
      expr: sum(job:vllm_tokens:rate5m{$scope}) > $least
      present: group(job:vllm_tokens:rate5m{$scope} offset $window)
  waiting: sum(vllm:num_requests_waiting{$scope})
fleet:
  queries:
    tokens:
      expr: sum by ($by) (rate(vllm:generation_tokens_total{$siblings}[$window]))
      recorded:
        expr: sum by ($by) (job:vllm_tokens:rate5m{$siblings})
        present: group(vllm:num_requests_running{$siblings} offset 1h)
    running: sum by ($by) (vllm:num_requests_running{$siblings})
verdicts:
  - {id: healthy, when: "true", title: ok}
`

// A recorded form takes its query's placeholders; ExpandRecorded expands it (and its check) as
// ExpandAll expands the query, by the same index, and nothing for a query without one.
func TestARecordedFormIsExpandedAsItsQuery(t *testing.T) {
	p, err := Parse("rec.yaml", []byte(recordedPlaybook), sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"namespace": "n", "pod": "p", "model_name": "m"}
	qs, fl := p.ExpandRecorded(labels, PodScope{})
	x := p.ExpandAll(labels, PodScope{})
	if len(qs) != len(x.Queries) || len(fl) != len(x.Fleet) {
		t.Fatalf("%d and %d recorded forms for %d queries and %d fleet queries", len(qs), len(fl), len(x.Queries), len(x.Fleet))
	}
	want := map[string]RecordedForm{
		"busy": {`sum(job:vllm_tokens:rate5m{namespace="n",pod="p",model_name="m"}) > 2`, `group(job:vllm_tokens:rate5m{namespace="n",pod="p",model_name="m"} offset 5m)`},
	}
	for i, q := range p.Queries {
		if qs[i] != want[q.Name] {
			t.Errorf("%s: %+v, want %+v", q.Name, qs[i], want[q.Name])
		}
	}
	by := fleetGroupBy(PodScope{})
	wantFleet := map[string]RecordedForm{
		"tokens": {`sum by (` + by + `) (job:vllm_tokens:rate5m{namespace="n",model_name="m"})`, `group(vllm:num_requests_running{namespace="n",model_name="m"} offset 1h)`},
	}
	for i, q := range p.Fleet.Queries {
		if fl[i] != wantFleet[q.Name] {
			t.Errorf("fleet %s: %+v, want %+v", q.Name, fl[i], wantFleet[q.Name])
		}
	}
	// vllm.metric_prefix renames the recorded forms' vLLM series too (the check reads one).
	n := vllmnames.Naming{Prefix: "kserve_vllm:"}
	builtin, err := Builtin(sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	set, err := NewSet(builtin, []*Playbook{p}, SetOptions{Naming: &n})
	if err != nil {
		t.Fatal(err)
	}
	rp, _ := set.Get("rec")
	_, fl = rp.ExpandRecorded(labels, PodScope{})
	if !strings.HasPrefix(fl[0].Present, "group(kserve_vllm:num_requests_running{") {
		t.Errorf("renamed check: %s", fl[0].Present)
	}
	// A playbook without recorded forms has none to expand.
	plain := strings.Replace(recordedPlaybook, "    recorded:\n      expr: sum(job:vllm_tokens:rate5m{$scope}) > $least\n      present: group(job:vllm_tokens:rate5m{$scope} offset $window)\n", "", 1)
	plain = strings.Replace(plain, "      recorded:\n        expr: sum by ($by) (job:vllm_tokens:rate5m{$siblings})\n        present: group(vllm:num_requests_running{$siblings} offset 1h)\n", "", 1)
	pp, err := Parse("plain.yaml", []byte(plain), sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	if qs, fl := pp.ExpandRecorded(labels, PodScope{}); qs != nil || fl != nil {
		t.Errorf("recorded forms of a playbook without any: %v %v", qs, fl)
	}
}

// A recorded form is checked as its query is, and needs both its expr and its check.
func TestARecordedFormsErrorsNameTheirPlace(t *testing.T) {
	cases := map[string]struct{ old, new, want string }{
		"no check": {"      present: group(job:vllm_tokens:rate5m{$scope} offset $window)\n", "",
			"queries.busy.recorded.present: empty query (a recorded form needs both expr and present)"},
		"a scalar check": {"present: group(job:vllm_tokens:rate5m{$scope} offset $window)", "present: scalar(sum(job:vllm_tokens:rate5m{$scope}))",
			"queries.busy.recorded.present: must return an instant vector"},
		"another type": {"expr: sum(job:vllm_tokens:rate5m{$scope}) > $least", "expr: scalar(sum(job:vllm_tokens:rate5m{$scope}))",
			"queries.busy.recorded.expr: returns a scalar where the query's expr returns a vector"},
		"a fleet placeholder in a query": {"expr: sum(job:vllm_tokens:rate5m{$scope}) > $least", "expr: sum(job:vllm_tokens:rate5m{$siblings}) > $least",
			"queries.busy.recorded.expr: unknown placeholder $siblings"},
		"a fleet form that does not parse": {"expr: sum by ($by) (job:vllm_tokens:rate5m{$siblings})", "expr: sum by ($by) (job:vllm_tokens:rate5m{$siblings}",
			"fleet.queries.tokens.recorded.expr: invalid PromQL"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			src := strings.Replace(recordedPlaybook, c.old, c.new, 1)
			if src == recordedPlaybook {
				t.Fatal("the case changes nothing")
			}
			_, err := Parse("rec.yaml", []byte(src), sources.Catalog())
			if err == nil || !strings.Contains(err.Error(), "rec.yaml: "+c.want) {
				t.Fatalf("error %v; want %q", err, c.want)
			}
		})
	}
	base := "name: b\nmatch: {alertname: X}\nqueries:\n  w: sum(vllm:num_requests_waiting{$scope})\n  w_base:\n    baseline_of: w\n    recorded: {expr: \"sum(x{$scope})\", present: \"group(x{$scope})\"}\nverdicts: [{id: healthy, when: 'true', title: ok}]\n"
	if _, err := Parse("b.yaml", []byte(base), sources.Catalog()); err == nil || !strings.Contains(err.Error(), "queries.w_base.recorded: a baseline_of query derives its expressions: leave recorded out") {
		t.Errorf("a baseline_of query with a recorded form: %v", err)
	}
}
