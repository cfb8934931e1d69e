package playbooks

import (
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/vllm-responder/vllm-responder/facts/sources"
)

// An alert whose label carried invalid UTF-8 reaches the responder with U+FFFD in its place (Go's
// JSON decoder): every query of every built-in playbook must still parse in Prometheus (which
// refuses U+FFFD raw in a string), and the label's matcher must still find the series it stood for.
func TestLabelsWithInvalidUTF8StillGiveQueriesPrometheusAccepts(t *testing.T) {
	b, err := Builtin(sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	set, err := NewSet(b, nil, SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"model_name": "ll\uFFFD\uFFFDma-3", "pod": "vllm-0", "namespace": "llm"}
	checked := 0
	for _, pb := range set.All() {
		for _, q := range pb.Queries {
			e := pb.Expand(q, labels)
			expr, err := parser.NewParser(parser.Options{}).ParseExpr(e)
			if err != nil {
				t.Fatalf("%s: %s: Prometheus would refuse %s: %v", pb.Name, q.Name, e, err)
			}
			for _, sel := range parser.ExtractSelectors(expr) {
				for _, m := range sel {
					if m.Name == "model_name" && !m.Matches("llämma-3") {
						t.Fatalf("%s: %s: matcher %v does not find the series the mangled value stood for", pb.Name, q.Name, m)
					}
				}
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no query checked")
	}
	d := (&Playbook{Name: "x", Scope: []string{"model_name"}})
	_, used, _ := ScopeMatchers(d.Scope, labels)
	if !strings.Contains(used["model_name"], "\uFFFD") {
		t.Fatalf("the scope shown keeps the value as received: %q", used)
	}
}
