package playbooks

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// QuoteLabelValue returns v as a PromQL string literal. Label values come from alerts and from
// Slack users: quoting (never concatenating) is what keeps a value such as `"} or vector(1) #`
// inside its string. PromQL string literals follow Go's escaping rules, so strconv.Quote is exact;
// invalid UTF-8 becomes \x escapes and cannot end the string either.
func QuoteLabelValue(v string) string { return strconv.Quote(v) }

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
		b.WriteByte('=')
		b.WriteString(QuoteLabelValue(v))
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
		case name == "scope" || name == "siblings": // a fleet query's scope is its siblings'
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

// ExpandFleet returns fleet query q of playbook p for an alert with these labels: the scope
// without the fleet's label, so the vector holds every sibling.
func (p *Playbook) ExpandFleet(q *Query, labels map[string]string) string {
	siblings, _, _ := ScopeMatchers(siblingScope(p.Scope, p.Fleet.By), labels)
	return expand(q.segs, siblings, p.Window, p.Params)
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
