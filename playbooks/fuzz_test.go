package playbooks

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/vllm-responder/vllm-responder/facts/sources"
	"github.com/vllm-responder/vllm-responder/internal/promql"
)

// FuzzScopeMatchers is the escaping property: whatever a label value holds (it comes from alerts
// and from Slack users), the $scope text placed into a selector parses, and yields exactly the
// matchers the scope asks for, each an equality on the value itself. Nothing a value holds can
// end its string and add a matcher or an operator.
func FuzzScopeMatchers(f *testing.F) {
	for _, s := range []string{
		"llama", `"} or vector(1) #`, `\`, `\"`, "a\nb", "$scope", "$window", "`", "'", `",pod=~".*`,
		"}", "{", "\x00", "\xff\xfe", "ll\uFFFDma", "\uFFFD", "é日本", "\u2028", `\x41`, `\u0041`, "a\"b\\c", "x\tb\r",
	} {
		f.Add(s, "vllm-0")
	}
	f.Fuzz(func(t *testing.T, v, pod string) {
		scope := []string{"model_name", "pod", "namespace"}
		lbls := map[string]string{"model_name": v, "pod": pod, "namespace": "llm"}
		text, used, missing := ScopeMatchers(scope, lbls)

		want := map[string]string{}
		for _, name := range scope {
			if lbls[name] != "" {
				want[name] = lbls[name]
			}
		}
		if len(used)+len(missing) != len(scope) || len(used) != len(want) {
			t.Fatalf("used %v, missing %v for labels %q", used, missing, lbls)
		}

		ms, err := parser.NewParser(parser.Options{}).ParseMetricSelector("x{" + text + "}")
		if err != nil {
			t.Fatalf("x{%s} does not parse: %v", text, err)
		}
		got := map[string]string{}
		for _, m := range ms {
			if m.Name == labels.MetricName {
				if m.Value != "x" || m.Type != labels.MatchEqual {
					t.Fatalf("metric name matcher changed: %v", m)
				}
				continue
			}
			if promql.Lost(lbls[m.Name]) {
				// Invalid UTF-8 (or U+FFFD standing for it): a pattern that matches the value.
				if m.Type != labels.MatchRegexp || !m.Matches(lbls[m.Name]) {
					t.Fatalf("matcher %v for %q is not a pattern matching it", m, lbls[m.Name])
				}
				if _, dup := got[m.Name]; dup {
					t.Fatalf("label %q matched twice in x{%s}", m.Name, text)
				}
				got[m.Name] = lbls[m.Name]
				continue
			}
			if m.Type != labels.MatchEqual {
				t.Fatalf("matcher %v is not an equality", m)
			}
			if _, dup := got[m.Name]; dup {
				t.Fatalf("label %q matched twice in x{%s}", m.Name, text)
			}
			got[m.Name] = m.Value
		}
		if len(got) != len(want) {
			t.Fatalf("x{%s} has matchers %q, want %q", text, got, want)
		}
		for name, val := range want {
			g, ok := got[name]
			if !ok {
				t.Fatalf("x{%s} lacks a matcher on %s", text, name)
			}
			expect := val
			if !utf8.ValidString(val) {
				// Invalid UTF-8 is written as \x escapes; the parser reads back what Go's
				// unquoting gives (the bytes themselves).
				u, err := strconv.Unquote(promql.Quote(val))
				if err != nil {
					t.Fatalf("quoted value %s does not unquote: %v", promql.Quote(val), err)
				}
				expect = u
			}
			if g != expect {
				t.Fatalf("label %s: parsed value %q, want %q (scope text %s)", name, g, expect, text)
			}
		}
		if strings.Count(text, ",") < len(want)-1 {
			t.Fatalf("scope text %q joins fewer matchers than %d", text, len(want))
		}
	})
}

// FuzzParse feeds arbitrary YAML to the playbook loader: it must never panic, and an error must
// name the file it came from.
func FuzzParse(f *testing.F) {
	seeds := []string{
		`name: ttft
match: {alertname: VLLMTimeToFirstTokenP99High}
scope: [model_name, pod]
window: 5m
queries:
  waiting: {expr: 'sum(vllm:num_requests_waiting{$scope})'}
verdicts:
  - id: capacity-past-knee
    when: waiting > 10
    title: "{{ .waiting }} waiting"
  - id: inconclusive
    when: "true"
`,
		"name: x\nmatch: {alertname: A}\nqueries: {q: 'up{$scope}'}\nverdicts: [{id: healthy, when: 'q >'}]\n",
		"name: x\nmatch: {alertname: '=~(('}\n",
		"name: [\n",
		"{}",
		"",
		"---\n---\n",
		"name: x\nunknown_key: 1\n",
		"name: x\nwindow: -1s\n",
		"name: x\nmatch: {alertname: A}\nqueries: {q: 'up{$scope} offset $windw'}\n",
		"&a [*a, *a, *a]",
		"name: !!binary AAAA\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	// The built-in playbooks are the best seeds of all.
	entries, _ := builtinFS.ReadDir("builtin")
	for _, e := range entries {
		if b, err := builtinFS.ReadFile("builtin/" + e.Name()); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.yaml", data, sources.Catalog())
		if err != nil {
			if p != nil {
				t.Fatalf("a playbook and an error: %v", err)
			}
			if !strings.Contains(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name its file: %v", err)
			}
			return
		}
		if p == nil {
			t.Fatal("no playbook and no error")
		}
	})
}
