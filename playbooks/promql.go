package playbooks

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/common/model"
)

// QuoteLabelValue returns v as a PromQL string literal. Label values come from alerts and from
// Slack users: quoting (never concatenating) is what keeps a value such as `"} or vector(1) #`
// inside its string. PromQL string literals follow Go's escaping rules, so strconv.Quote is exact;
// invalid UTF-8 becomes \x escapes and cannot end the string either.
// U+FFFD (what Go's JSON decoder makes of invalid UTF-8) is written as \ufffd: Prometheus's
// lexer refuses it raw in a string ("invalid UTF-8 rune"), which would fail the query.
func QuoteLabelValue(v string) string {
	q := strconv.Quote(v)
	if strings.ContainsRune(q, utf8.RuneError) {
		q = strings.ReplaceAll(q, string(utf8.RuneError), `\ufffd`)
	}
	return q
}

// replacementPattern is the regex matcher for a label value that carries U+FFFD: the alert's
// sender had invalid UTF-8 there, and what it stood for is lost, so each run of U+FFFD matches
// any characters and the rest must match exactly. (A series in Prometheus is valid UTF-8, so an
// exact match would never find one.)
func replacementPattern(v string) string {
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

// hasReplacement reports whether v carries U+FFFD or invalid UTF-8.
func hasReplacement(v string) bool {
	return strings.ContainsRune(v, utf8.RuneError) || !utf8.ValidString(v)
}

// ScopeMatchers builds the `$scope` text: one equality matcher per scope label the alert carries,
// in the playbook's order. It also returns the scope labels that were missing.
func ScopeMatchers(scope []string, labels map[string]string) (matchers string, used map[string]string, missing []string) {
	used = map[string]string{}
	var b strings.Builder
	for _, name := range scope {
		v, ok := labels[name]
		if !ok || v == "" {
			missing = append(missing, name)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(name)
		if hasReplacement(v) {
			b.WriteString("=~")
			b.WriteString(QuoteLabelValue(replacementPattern(v)))
		} else {
			b.WriteByte('=')
			b.WriteString(QuoteLabelValue(v))
		}
		used[name] = v
	}
	return b.String(), used, missing
}

// segment is a piece of a query template: literal text, or a placeholder ($scope, $window or a
// param). Templates are split once when the playbook loads; expansion only concatenates.
type segment struct {
	text string // literal text, or the param name
	kind segmentKind
}

type segmentKind uint8

const (
	segLiteral segmentKind = iota
	segScope
	segWindow
	segParam
)

// splitTemplate splits a query template into segments. Unknown placeholders stay literal (load
// reports them as errors).
func splitTemplate(q string, params map[string]float64) []segment {
	var out []segment
	last := 0
	for _, m := range placeholderRE.FindAllStringSubmatchIndex(q, -1) {
		name := q[m[2]:m[3]]
		var seg segment
		switch {
		case name == "scope":
			seg = segment{kind: segScope}
		case name == "window":
			seg = segment{kind: segWindow}
		default:
			if _, ok := params[name]; !ok {
				continue
			}
			seg = segment{kind: segParam, text: name}
		}
		if m[0] > last {
			out = append(out, segment{text: q[last:m[0]]})
		}
		out = append(out, seg)
		last = m[1]
	}
	if last < len(q) {
		out = append(out, segment{text: q[last:]})
	}
	return out
}

// expand renders a split template. Text substituted in is never scanned again, so a `$` inside
// a label value stays what it is.
func expand(segs []segment, scope string, window time.Duration, params map[string]float64) string {
	var b strings.Builder
	for _, s := range segs {
		switch s.kind {
		case segLiteral:
			b.WriteString(s.text)
		case segScope:
			b.WriteString(scope)
		case segWindow:
			b.WriteString(model.Duration(window).String())
		case segParam:
			b.WriteString(strconv.FormatFloat(params[s.text], 'g', -1, 64))
		}
	}
	return b.String()
}

// Expand returns query q of playbook p for an alert with these labels, as sent to Prometheus.
func (p *Playbook) Expand(q *Query, labels map[string]string) string {
	scope, _, _ := ScopeMatchers(p.Scope, labels)
	return expand(q.segs, scope, p.Window, p.Params)
}

// sortedLabels renders labels deterministically (cache keys, logs).
func sortedLabels(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(m[k]))
	}
	return b.String()
}
