// Package promql writes the label values the responder sends to Prometheus: the one place where
// a value from an alert, a Slack user, an MCP client or a series becomes PromQL text. Every
// selector the project builds (the playbooks' $scope, the model listing of on-demand triage, the
// kube-state-metrics lookup, the LoRA lookup, the profiler's pod resolution) goes through Matcher
// or Quote, never through strconv.Quote or %q alone.
package promql

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Quote returns v as a PromQL string literal. Quoting (never concatenating) is what keeps a
// value such as `"} or vector(1) #` inside its string. PromQL string literals follow Go's
// escaping rules, so strconv.Quote is exact, and invalid UTF-8 becomes \x escapes that cannot end
// the string either; but U+FFFD (what Go's JSON decoder makes of invalid UTF-8) is written as
// \ufffd, because Prometheus's lexer refuses it raw in a string ("invalid UTF-8 rune"), which
// would fail the whole query.
func Quote(v string) string {
	q := strconv.Quote(v)
	if strings.ContainsRune(q, utf8.RuneError) {
		q = strings.ReplaceAll(q, string(utf8.RuneError), `\ufffd`)
	}
	return q
}

// Lost reports whether v carries U+FFFD or invalid UTF-8: characters its sender had and that
// were lost on the way. No series in Prometheus holds such a value (series are valid UTF-8), so
// an equality matcher on it would find nothing.
func Lost(v string) bool {
	return strings.ContainsRune(v, utf8.RuneError) || !utf8.ValidString(v)
}

// Matcher returns the matcher of label name for value v: name="v", or, when v is Lost,
// name=~"pattern" where each run of lost characters matches any characters and the rest must
// match exactly (what the value stood for is gone; the rest still selects its series).
func Matcher(name, v string) string {
	if Lost(v) {
		return name + "=~" + Quote(lostPattern(v))
	}
	return name + "=" + Quote(v)
}

// lostPattern is the regular expression of Matcher for a Lost value.
func lostPattern(v string) string {
	var b strings.Builder
	start, inRun := 0, false
	for i := 0; i < len(v); {
		r, w := utf8.DecodeRuneInString(v[i:])
		if r == utf8.RuneError {
			if !inRun {
				b.WriteString(regexp.QuoteMeta(v[start:i]))
				b.WriteString(".+")
				inRun = true
			}
			i += w
			start = i
			continue
		}
		inRun = false
		i += w
	}
	b.WriteString(regexp.QuoteMeta(v[start:]))
	return b.String()
}

// MaxLabelValue bounds, in bytes, a label value the responder puts into a query: 253, the
// longest Kubernetes object name (a DNS-1123 subdomain, the longest pod name `/vllm` accepts;
// its model names are bounded at 128 by their own syntax). A longer value names no pod, model or
// namespace anyone runs, and would make every query of a diagnosis as long (a 16 KiB model name
// went to Prometheus in 19 requests): it is refused with LabelValueError before any query. Once
// quoted, a value takes at most 4 bytes a byte (\xff), so queries stay bounded however a value
// is made.
const MaxLabelValue = 253

// LabelValueError is a label value longer than MaxLabelValue.
type LabelValueError struct {
	Label string
	Len   int
}

func (e *LabelValueError) Error() string {
	return "label " + strconv.Quote(e.Label) + ": value too long (" + strconv.Itoa(e.Len) + " bytes, at most " +
		strconv.Itoa(MaxLabelValue) + ")"
}

// CheckLabelValue returns a *LabelValueError when v, the value of label name, is longer than
// MaxLabelValue.
func CheckLabelValue(name, v string) error {
	if len(v) > MaxLabelValue {
		return &LabelValueError{Label: name, Len: len(v)}
	}
	return nil
}
