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

// expand replaces $scope, $window and $<param> in one pass: text substituted in is never scanned
// again, so a `$` inside a label value stays what it is.
func expand(q, scope string, window time.Duration, params map[string]float64) string {
	return placeholderRE.ReplaceAllStringFunc(q, func(m string) string {
		name := m[1:]
		switch name {
		case "scope":
			return scope
		case "window":
			return model.Duration(window).String()
		}
		if v, ok := params[name]; ok {
			return strconv.FormatFloat(v, 'g', -1, 64)
		}
		return m
	})
}

// Expand returns query q of playbook p for an alert with these labels, as sent to Prometheus.
func (p *Playbook) Expand(q *Query, labels map[string]string) string {
	scope, _, _ := ScopeMatchers(p.Scope, labels)
	return expand(q.Expr, scope, p.Window, p.Params)
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
