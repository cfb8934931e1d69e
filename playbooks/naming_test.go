package playbooks

import (
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/vllm-responder/vllm-responder/facts/sources"
	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
)

// Series without vLLM's model_name, matched to a scope by the scrape targets (instance) that
// export its vLLM series: the scrape's own up, the API server's process_* series (not vLLM's
// names, so never renamed), and vLLM's sleep and RL weight-update operation series (renamed).
var (
	targetSeries = []string{"up", "process_start_time_seconds", "process_open_fds", "process_cpu_seconds_total"}
	podSeries    = []string{"sleep_mode_operations_in_flight", "rl_weight_update_operations_in_flight", "rl_weight_update_operation_duration_seconds_count"}
	// gatewayPrefixes name llm-d's Endpoint Picker's series (common/upstream.yaml): not vLLM's,
	// so never renamed, and no router among them; those without model_name are read beside one
	// with it (the EPP's queue), by its scrape target.
	gatewayPrefixes = []string{"llm_d_epp_", "inference_extension_", "llm_d_inference_scheduler_"}
)

// routerSelector reports whether vs reads vLLM production-stack's router's own series
// (common/upstream.yaml): a server matcher the empty value does not satisfy. The router writes
// those names itself: they are never renamed, and they carry no model_name (read beside a
// selector of the scope, by the engines' scrape target).
func routerSelector(vs *parser.VectorSelector) bool {
	return slices.ContainsFunc(vs.LabelMatchers, func(m *labels.Matcher) bool { return m.Name == "server" && !m.Matches("") })
}

// gatewaySeries reports whether name is one of the Endpoint Picker's series.
func gatewaySeries(name string) bool {
	return slices.ContainsFunc(gatewayPrefixes, func(p string) bool { return strings.HasPrefix(name, p) })
}

// TestBuiltinQueriesUnderKServeNames: with vllm.metric_prefix kserve_vllm:, every selector of
// every built-in query (and fleet query) names a kserve_vllm: metric and excludes router series
// (but those that read the router's own, which keep its names), the query still
// parses once expanded, and a hostile label value stays inside its string. A series without
// model_name (targetSeries, podSeries) is only read beside a selector of the scope.
func TestBuiltinQueriesUnderKServeNames(t *testing.T) {
	builtin, err := Builtin(sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	n := vllmnames.Naming{Prefix: "kserve_vllm:", RouterLabel: "server"}
	set, err := NewSet(builtin, nil, SetOptions{Naming: &n})
	if err != nil {
		t.Fatal(err)
	}
	hostile := map[string]string{"model_name": `"} or vector(1) #`, "pod": "vllm-0", "namespace": "llm"}
	selectors := 0
	for _, p := range set.All() {
		queries := slices.Clone(p.Queries)
		if p.Fleet != nil { // the fleet's queries too
			queries = append(queries, p.Fleet.Queries...)
		}
		for i, q := range queries {
			for _, lbls := range []map[string]string{hostile, {}} {
				e := p.Expand(q, lbls)
				if i >= len(p.Queries) {
					e = p.ExpandFleet(q, lbls)
				}
				expr, err := parser.NewParser(parser.Options{}).ParseExpr(e)
				if err != nil {
					t.Fatalf("%s/%s: %v\n%s", p.Name, q.Name, err, e)
				}
				scoped, unscoped := false, false
				parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
					vs, ok := node.(*parser.VectorSelector)
					if !ok {
						return nil
					}
					selectors++
					if slices.Contains(targetSeries, vs.Name) {
						unscoped = true
						return nil
					}
					if routerSelector(vs) {
						if !strings.HasPrefix(vs.Name, "vllm:") {
							t.Errorf("%s/%s: the router's selector %s renamed", p.Name, q.Name, vs)
						}
						unscoped = true
						return nil
					}
					if gatewaySeries(vs.Name) {
						// the EPP's queue and its queue time carry the scope (no matcher when the labels are empty)
						if slices.ContainsFunc(vs.LabelMatchers, func(m *labels.Matcher) bool { return m.Name == "model_name" }) ||
							len(lbls) == 0 && (strings.Contains(vs.Name, "_queue_size") || strings.Contains(vs.Name, "_request_queue_duration")) {
							scoped = true
						} else {
							unscoped = true
						}
						return nil
					}
					if !strings.HasPrefix(vs.Name, "kserve_vllm:") {
						t.Errorf("%s/%s: selector %s not renamed", p.Name, q.Name, vs)
					}
					var router, model bool
					for _, m := range vs.LabelMatchers {
						switch {
						case m.Name == "server" && m.Type == labels.MatchEqual && m.Value == "":
							router = true
						case m.Name == "model_name":
							model = m.Value == hostile["model_name"]
						}
					}
					if !router {
						t.Errorf("%s/%s: selector %s does not exclude router series", p.Name, q.Name, vs)
					}
					if slices.Contains(podSeries, strings.TrimPrefix(vs.Name, "kserve_vllm:")) {
						unscoped = true
						return nil
					}
					if len(lbls) > 0 && !model {
						t.Errorf("%s/%s: selector %s lost the scope's model_name", p.Name, q.Name, vs)
					}
					scoped = true
					return nil
				})
				if unscoped && !scoped {
					t.Errorf("%s/%s: series without model_name read without a selector of the scope to match them by", p.Name, q.Name)
				}
			}
		}
		// The playbook as loaded is not changed by the rename: a copy carries it.
		if orig, _ := Builtin(sources.Catalog()); len(orig) > 0 && strings.Contains(orig[0].Queries[0].Expr, "kserve_vllm:") {
			t.Fatal("the rename changed the loaded playbook in place")
		}
	}
	if selectors == 0 {
		t.Fatal("no selectors seen")
	}
}

// TestUserPlaybookRenameError: a user query the rename cannot place fails when it loads, with
// its place.
func TestUserPlaybookRenameError(t *testing.T) {
	src := "name: mine\nmatch: {alertname: X}\nqueries: {w: \"count({__name__=~'vllm:.*'})\"}\nverdicts: [{id: healthy, when: 'true', title: ok}]\n"
	p, err := Parse("mine.yaml", []byte(src), sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	n := vllmnames.Naming{Prefix: "kserve_vllm:"}
	builtin, _ := Builtin(sources.Catalog())
	_, err = NewSet(builtin, []*Playbook{p}, SetOptions{Naming: &n})
	if err == nil || !strings.Contains(err.Error(), "mine.yaml: queries.w: vllm.metric_prefix: cannot rename") {
		t.Fatalf("got %v", err)
	}
}

func TestPodScopeFallsBackToInstance(t *testing.T) {
	scope := []string{"namespace", "pod", "model_name"}
	cases := []struct {
		name   string
		ps     PodScope
		labels map[string]string
		want   string
	}{
		{"a pod label is used as it is", PodScope{}, map[string]string{"pod": "p", "instance": "i:1", "model_name": "m"}, `pod="p",model_name="m"`},
		{"no pod label: the instance stands in", PodScope{}, map[string]string{"instance": "10.0.0.1:8000", "model_name": "m"}, `instance="10.0.0.1:8000",model_name="m"`},
		{"pod_label instance: the pod a person names is an instance", PodScope{Label: "instance"}, map[string]string{"pod": "10.0.0.1:8000"}, `instance="10.0.0.1:8000"`},
		{"a custom pod label is read from the alert", PodScope{Label: "kubernetes_pod_name"}, map[string]string{"kubernetes_pod_name": "p", "pod": "q"}, `kubernetes_pod_name="p"`},
		{"nothing names a pod: missing", PodScope{}, map[string]string{"model_name": "m"}, `model_name="m"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _, _ := c.ps.Matchers(scope, c.labels)
			if got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
	// A scope that names instance itself does not get it twice.
	if got, _, missing := (PodScope{}).Matchers([]string{"pod", "instance"}, map[string]string{"instance": "i"}); got != `instance="i"` || len(missing) != 1 {
		t.Errorf("got %s, missing %v", got, missing)
	}
}
