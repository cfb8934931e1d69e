package promql

import (
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// Every value, whatever it holds, gives a selector Prometheus parses, with exactly one matcher on
// the label, which selects the series the value names (or, for a value that lost characters to
// invalid UTF-8, the series it stood for).
func TestMatcherKeepsEveryValueInsideItsStringAndSelectsItsSeries(t *testing.T) {
	for _, tc := range []struct {
		name, value, text, selects string
	}{
		{"a plain value", "vllm-0", `pod="vllm-0"`, "vllm-0"},
		{"a quote and a brace cannot end the string", `"} or vector(1) #`, `pod="\"} or vector(1) #"`, `"} or vector(1) #`},
		{"a backslash", `a\b`, `pod="a\\b"`, `a\b`},
		{"a newline", "a\nb", `pod="a\nb"`, "a\nb"},
		{"U+FFFD, refused raw by Prometheus's lexer, matches what it stood for", "ll\uFFFDma", `pod=~"ll.+ma"`, "llÃ¤ma"},
		{"a run of U+FFFD is one wildcard", "ll\uFFFD\uFFFDma", `pod=~"ll.+ma"`, "llämma"},
		{"invalid UTF-8 bytes alike", "ll\xff\xfema", `pod=~"ll.+ma"`, "llæma"},
		{"regex characters around a lost one are literal", "a.b\uFFFD*", `pod=~"a\\.b.+\\*"`, "a.bé*"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := Matcher("pod", tc.value)
			if text != tc.text {
				t.Errorf("Matcher = %s; want %s", text, tc.text)
			}
			ms, err := parser.NewParser(parser.Options{}).ParseMetricSelector("x{" + text + "}")
			if err != nil {
				t.Fatalf("Prometheus would refuse x{%s}: %v", text, err)
			}
			var pod []*labels.Matcher
			for _, m := range ms {
				if m.Name == "pod" {
					pod = append(pod, m)
				}
			}
			if len(ms) != 2 || len(pod) != 1 || !pod[0].Matches(tc.selects) {
				t.Fatalf("x{%s} parses to %v; want one pod matcher selecting %q", text, ms, tc.selects)
			}
		})
	}
}

func TestQuoteWritesUFFFDEscaped(t *testing.T) {
	if got := Quote("a\uFFFDb"); got != `"a\ufffdb"` {
		t.Fatalf("Quote = %s", got)
	}
	if _, err := parser.NewParser(parser.Options{}).ParseExpr(`label_replace(up, "x", ` + Quote("a\uFFFDb") + `, "", "")`); err != nil {
		t.Fatal(err)
	}
}
