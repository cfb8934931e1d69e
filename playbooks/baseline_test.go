package playbooks

import (
	"strings"
	"testing"

	"github.com/vllm-responder/vllm-responder/facts/sources"
)

func baselinePlaybook(t *testing.T, of string) *Playbook {
	t.Helper()
	src := "name: b\nmatch: {alertname: X}\nscope: [namespace, pod, model_name]\nqueries:\n" +
		"  q: {expr: '" + of + "', unit: s}\n" +
		"  q_base: {baseline_of: q, unit: s, hidden: true}\n" +
		"verdicts: [{id: inconclusive, when: 'true', title: t}]\n"
	p, err := Parse("b.yaml", []byte(src), sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A baseline_of query derives the pod a day ago, the model a day ago (per pod where the query is
// a sum) and the recent past from its query's template, placeholders kept.
func TestABaselineDerivesThreeQueriesFromItsQuerysTemplate(t *testing.T) {
	cases := []struct {
		name, of, dayAgo, model, recent string
	}{
		{"a ratio of sums: every range offset, no per-pod grouping",
			`sum(rate(vllm:x_sum{$scope}[$window])) / sum(rate(vllm:x_count{$scope}[$window]))`,
			`sum(rate(vllm:x_sum{$scope}[$window] offset 1d)) / sum(rate(vllm:x_count{$scope}[$window] offset 1d))`,
			`sum(rate(vllm:x_sum{$scope}[$window] offset 1d)) / sum(rate(vllm:x_count{$scope}[$window] offset 1d))`,
			`sum(rate(vllm:x_sum{$scope}[$recent] offset $window)) / sum(rate(vllm:x_count{$scope}[$recent] offset $window))`},
		{"a sum is averaged per pod over the model",
			`sum(avg_over_time(vllm:num_requests_running{$scope}[$window]))`,
			`sum(avg_over_time(vllm:num_requests_running{$scope}[$window] offset 1d))`,
			`avg(sum by (instance) (avg_over_time(vllm:num_requests_running{$scope}[$window] offset 1d)))`,
			`sum(avg_over_time(vllm:num_requests_running{$scope}[$recent] offset $window))`},
		{"old and new names joined with or",
			`(sum(rate(vllm:a{$scope}[$window])) or sum(rate(vllm:b{$scope}[$window]))) / sum(rate(vllm:c{$scope}[$window]))`,
			`(sum(rate(vllm:a{$scope}[$window] offset 1d)) or sum(rate(vllm:b{$scope}[$window] offset 1d))) / sum(rate(vllm:c{$scope}[$window] offset 1d))`,
			`(sum(rate(vllm:a{$scope}[$window] offset 1d)) or sum(rate(vllm:b{$scope}[$window] offset 1d))) / sum(rate(vllm:c{$scope}[$window] offset 1d))`,
			`(sum(rate(vllm:a{$scope}[$recent] offset $window)) or sum(rate(vllm:b{$scope}[$recent] offset $window))) / sum(rate(vllm:c{$scope}[$recent] offset $window))`},
		{"a gauge read now: the value a day ago, and the value at the window's start",
			`max(vllm:kv_cache_usage_perc{$scope})`,
			`max(vllm:kv_cache_usage_perc{$scope} offset 1d)`,
			`max(vllm:kv_cache_usage_perc{$scope} offset 1d)`,
			`max(vllm:kv_cache_usage_perc{$scope} offset $window)`},
		{"a subquery is offset as a whole, its range kept",
			`max(max_over_time(rate(vllm:x{$scope}[1m])[10m:1m]))`,
			`max(max_over_time(rate(vllm:x{$scope}[1m])[10m:1m] offset 1d))`,
			`max(max_over_time(rate(vllm:x{$scope}[1m])[10m:1m] offset 1d))`,
			`max(max_over_time(rate(vllm:x{$scope}[1m])[10m:1m] offset $window))`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := baselinePlaybook(t, c.of)
			for name, want := range map[string]string{"q_base": c.dayAgo, "q_base.model_day": c.model, "q_base.recent": c.recent} {
				q, ok := p.Query(name)
				if !ok {
					t.Fatalf("no query %s", name)
				}
				if q.Expr != want {
					t.Errorf("%s:\n got %s\nwant %s", name, q.Expr, want)
				}
			}
		})
	}
}

// The model's variant selects the pod's siblings: the scope without the pod.
func TestTheModelsBaselineSelectsThePodsSiblings(t *testing.T) {
	p := baselinePlaybook(t, `sum(rate(vllm:x{$scope}[$window]))`)
	x := p.ExpandAll(map[string]string{"namespace": "n", "pod": "vllm-0", "model_name": "m"}, PodScope{})
	got := map[string]string{}
	for i, q := range p.Queries {
		got[q.Name] = x.Queries[i]
	}
	if want := `sum(rate(vllm:x{namespace="n",pod="vllm-0",model_name="m"}[5m] offset 1d))`; got["q_base"] != want {
		t.Errorf("q_base: %s, want %s", got["q_base"], want)
	}
	if want := `avg(sum by (instance) (rate(vllm:x{namespace="n",model_name="m"}[5m] offset 1d)))`; got["q_base.model_day"] != want {
		t.Errorf("q_base.model_day: %s, want %s", got["q_base.model_day"], want)
	}
	if want := `sum(rate(vllm:x{namespace="n",pod="vllm-0",model_name="m"}[30m] offset 5m))`; got["q_base.recent"] != want {
		t.Errorf("q_base.recent: %s, want %s", got["q_base.recent"], want)
	}
}

// The first variant with a value is the baseline, and the diagnosis says which; without a pod
// in the scope, the model's per-pod mean is no baseline of the model's sum.
func TestTheBaselineIsTheFirstVariantWithAValue(t *testing.T) {
	p := baselinePlaybook(t, `sum(rate(vllm:x{$scope}[$window]))`)
	f := func(x float64) *float64 { return &x }
	cases := []struct {
		name      string
		values    map[string]*float64
		podScoped bool
		want      *float64
		from      string
	}{
		{"the pod a day ago first", map[string]*float64{"q_base": f(1), "q_base.model_day": f(2), "q_base.recent": f(3)}, true, f(1), BaselineFromPodDay},
		{"the model a day ago for a pod newer than a day", map[string]*float64{"q_base.model_day": f(2), "q_base.recent": f(3)}, true, f(2), BaselineFromModelDay},
		{"the recent past without a day of history", map[string]*float64{"q_base.recent": f(3)}, true, f(3), "the 30m before the window"},
		{"none", map[string]*float64{}, true, nil, ""},
		{"no pod: the scope a day ago", map[string]*float64{"q_base": f(1), "q_base.model_day": f(2)}, false, f(1), BaselineFromDayAgo},
		{"no pod: the per-pod mean is skipped", map[string]*float64{"q_base.model_day": f(2), "q_base.recent": f(3)}, false, f(3), "the 30m before the window"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := p.Baseline("q_base", c.values, c.podScoped)
			if (b.Value == nil) != (c.want == nil) || (b.Value != nil && *b.Value != *c.want) || b.From != c.from {
				t.Errorf("got %v %q, want %v %q", b.Value, b.From, c.want, c.from)
			}
		})
	}
}

func TestBaselineErrorsNameTheirPlace(t *testing.T) {
	cases := []struct{ name, queries, want string }{
		{"an unknown query", "  b: {baseline_of: nope}\n", `queries.b.baseline_of: unknown query "nope"`},
		{"an expression as well", "  q: 'sum(x{$scope})'\n  b: {baseline_of: q, expr: 'sum(x{$scope} offset 1d)'}\n", "queries.b.expr: a baseline_of query derives its expressions: leave expr out"},
		{"a baseline of a baseline", "  q: 'sum(x{$scope})'\n  b: {baseline_of: q}\n  c: {baseline_of: b}\n", "queries.c.baseline_of: b is a baseline itself"},
		{"an offset already", "  q: 'sum(x{$scope} offset 1h)'\n  b: {baseline_of: q}\n", "queries.b.baseline_of: the query already has an offset or @"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := "name: b\nmatch: {alertname: X}\nqueries:\n" + c.queries + "verdicts: [{id: inconclusive, when: 'true', title: t}]\n"
			_, err := Parse("b.yaml", []byte(src), sources.Catalog())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}
