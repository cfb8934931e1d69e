package playbooks

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/internal/promql"
	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
)

// ScopeMatchers builds the `$scope` text: one equality matcher per scope label the alert carries,
// in the playbook's order. It also returns the scope labels that were missing. The scope's pod
// entry names pods by the pod label, falling back to instance (see PodScope).
func ScopeMatchers(scope []string, labels map[string]string) (matchers string, used map[string]string, missing []string) {
	return PodScope{}.Matchers(scope, labels)
}

// PodScope says which series label names a pod: the scope entry "pod" of a playbook stands for
// it. Static scrape configs (vLLM's own example has only job and instance) carry no pod label,
// so where the alert has none, its instance stands in.
type PodScope struct {
	// Label is the series label that names a pod (vllm.pod_label); empty: pod.
	Label string
	// Role is the series label that names a pod's role in disaggregated prefill/decode serving
	// (vllm.role_label: KServe's llm_isvc_role; llm-d's pods by their llm-d.ai/role as the scrape
	// maps it): the fleet's queries are grouped by it too and the sibling comparison splits into
	// pools (prefill, decode). Empty: no pools.
	Role string
}

// Name is the series label that names a pod: Label, or pod.
func (ps PodScope) Name() string {
	if ps.Label == "" {
		return vllmnames.DefaultPodLabel
	}
	return ps.Label
}

// resolve returns the label and value the scope's pod entry selects: the pod label's value; else
// the alert's (or triage request's) pod, which is what a person names, under the pod label; else
// the instance. ok is false when the labels name no pod.
func (ps PodScope) resolve(labels map[string]string) (label, value string, ok bool) {
	l := ps.Name()
	switch {
	case labels[l] != "":
		return l, labels[l], true
	case labels[vllmnames.DefaultPodLabel] != "":
		return l, labels[vllmnames.DefaultPodLabel], true
	case labels[vllmnames.FallbackPodLabel] != "":
		return vllmnames.FallbackPodLabel, labels[vllmnames.FallbackPodLabel], true
	}
	return "", "", false
}

// Matchers builds the `$scope` text (see ScopeMatchers); used is keyed by the series label each
// matcher selects on (instance when it stood in for pod).
func (ps PodScope) Matchers(scope []string, labels map[string]string) (matchers string, used map[string]string, missing []string) {
	used = map[string]string{}
	var b strings.Builder
	for _, name := range scope {
		label, v, ok := name, labels[name], labels[name] != ""
		if name == vllmnames.DefaultPodLabel {
			label, v, ok = ps.resolve(labels)
			if ok && label != name && slices.Contains(scope, label) {
				ok = false // the scope names that label itself
			}
		}
		if !ok {
			missing = append(missing, name)
			continue
		}
		if _, dup := used[label]; dup {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		// Quoted by the project's one function: a value from an alert or a user stays inside its
		// string, and one whose sender had invalid UTF-8 still selects its series.
		b.WriteString(promql.Matcher(label, v))
		used[label] = v
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
	segRecent // a baseline's recent past: recentWindows times the window (baseline.go)
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
		case name == "recent":
			seg = segment{kind: segRecent}
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
		case segRecent:
			b.WriteString(model.Duration(recentWindows * window).String())
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

// Expansion is a playbook's PromQL for one alert's labels, as a run sends it.
type Expansion struct {
	// Queries are the expressions of p.Queries, in their order.
	Queries []string
	// Fleet are the expressions of p.Fleet.Queries (nil without a fleet section).
	Fleet []string
	// Scope are the series labels the scope selects on, with the alert's values.
	Scope map[string]string
	// PodLabel is the series label the scope's pod entry selected on ("" when none did).
	PodLabel string
	// Notes say how the scope was read: a pod selected by another label than pod, a label
	// value that carries invalid UTF-8, scope labels the alert lacks.
	Notes []string
}

// ExpandAll expands every query of p (and of its fleet) for an alert with these labels, pods
// named by ps.
func (p *Playbook) ExpandAll(labels map[string]string, ps PodScope) Expansion {
	scope, used, missing := ps.Matchers(p.Scope, labels)
	siblings, _, _ := ps.Matchers(siblingScope(p.Scope, "pod"), labels)
	x := Expansion{Queries: make([]string, len(p.Queries)), Scope: used}
	for i, q := range p.Queries {
		s := scope
		if q.siblings { // a baseline over the model's pods (baseline.go)
			s = siblings
		}
		x.Queries[i] = expand(q.segs, s, p.Window, p.Params)
	}
	if p.Fleet != nil {
		x.Fleet = p.fleetExprs(labels, ps)
	}
	if slices.Contains(p.Scope, "pod") {
		if lbl, v, ok := ps.resolve(labels); ok && used[lbl] == v {
			x.PodLabel = lbl
			if lbl != "pod" {
				why := "vllm.pod_label"
				if lbl != ps.Name() {
					why = "the alert has no " + ps.Name() + " label"
				}
				x.Notes = append(x.Notes, fmt.Sprintf("pod selected by the %s label (%s=%q; %s)", lbl, lbl, v, why))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(used)) {
		if promql.Lost(used[name]) {
			x.Notes = append(x.Notes, fmt.Sprintf("label %s carries invalid UTF-8 (shown as \uFFFD): matched as a pattern, any characters in its place", name))
		}
	}
	if len(missing) > 0 && len(p.Scope) > 0 {
		x.Notes = append(x.Notes, fmt.Sprintf("scope labels missing from the alert: %s; the evidence covers every value of them",
			strings.Join(missing, ", ")))
	}
	return x
}

// ExpandFleet returns fleet query q of playbook p for an alert with these labels: the scope
// without the fleet's label, so the vector holds every sibling.
func (p *Playbook) ExpandFleet(q *Query, labels map[string]string) string {
	siblings, _, _ := ScopeMatchers(siblingScope(p.Scope, p.Fleet.By), labels)
	return expand(withGroupBy(q.segs, fleetGroupBy(PodScope{})), siblings, p.Window, p.Params)
}

// Placeholder stand-ins of the same length as the placeholders, so that the parser's positions
// in a sample are positions in the template (see vllmnames.RewriteTemplate).
const (
	scopeStandIn  = `_s="1"`  // $scope
	windowStandIn = `999999s` // $window
)

// sameLengthSample renders a split template twice: as written, and with every placeholder
// replaced by a stand-in of the same length that parses.
func sameLengthSample(segs []segment) (tmpl, sample string) {
	var t, s strings.Builder
	for _, sg := range segs {
		switch sg.kind {
		case segLiteral:
			t.WriteString(sg.text)
			s.WriteString(sg.text)
		case segScope:
			t.WriteString("$scope")
			s.WriteString(scopeStandIn)
		case segWindow:
			t.WriteString("$window")
			s.WriteString(windowStandIn)
		case segRecent:
			t.WriteString("$recent")
			s.WriteString(windowStandIn)
		case segParam:
			t.WriteString("$" + sg.text)
			s.WriteString(strings.Repeat("1", len(sg.text)+1))
		}
	}
	return t.String(), s.String()
}

// withNaming returns p with every query's vLLM metrics renamed and router series excluded
// (vllmnames), rewritten through the PromQL parser once, when the playbooks load. p itself is
// not changed: a copy is returned whenever a query changes.
func (p *Playbook) withNaming(n vllmnames.Naming) (*Playbook, error) {
	if n.Identity() {
		return p, nil
	}
	cp := *p
	cp.Queries = make([]*Query, len(p.Queries))
	cp.byName = make(map[string]*Query, len(p.Queries))
	var errs []error
	for i, q := range p.Queries {
		qc, err := renamedQuery(p, q, n, "queries."+q.Name, nil)
		if err != nil {
			errs = append(errs, err)
		}
		cp.Queries[i] = qc
		cp.byName[qc.Name] = qc
	}
	if p.Fleet != nil {
		var ferrs []error
		cp.Fleet, ferrs = p.Fleet.withNaming(p, n)
		errs = append(errs, ferrs...)
	}
	return &cp, errors.Join(errs...)
}

// renamedQuery is a copy of q with vllm.metric_prefix's names (the PromQL parser rewrites its
// template); fixSample, when set, adjusts the sample the template is parsed with. On an error
// the copy keeps q's expression, and the error names path.
func renamedQuery(p *Playbook, q *Query, n vllmnames.Naming, path string, fixSample func(string) string) (*Query, error) {
	qc := *q
	var errs []error
	rename := func(expr *string, segs *[]segment, path string) {
		tmpl, sample := sameLengthSample(*segs)
		if fixSample != nil {
			sample = fixSample(sample)
		}
		out, err := n.RewriteTemplate(tmpl, sample)
		if err != nil {
			errs = append(errs, &Error{Source: p.Source, Path: path, Msg: "vllm.metric_prefix: " + firstLine(err.Error())})
		} else if out != tmpl {
			*expr, *segs = out, splitTemplate(out, p.Params)
		}
	}
	rename(&qc.Expr, &qc.segs, path)
	if q.Recorded != nil {
		r := *q.Recorded
		rename(&r.Expr, &r.segs, path+".recorded.expr")
		rename(&r.Present, &r.presentSegs, path+".recorded.present")
		qc.Recorded = &r
	}
	return &qc, errors.Join(errs...)
}
