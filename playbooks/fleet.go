package playbooks

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
	"github.com/prometheus/common/model"
)

// FleetFile is the `fleet:` section of a playbook: queries that return one value per sibling
// (by default per pod) of the alerting pod, so a diagnosis can compare it with the other pods of
// the same model. Each query is one PromQL vector aggregated `by (<by>)`: the number of queries
// does not grow with the number of pods.
type FleetFile struct {
	// By is the label that tells siblings apart (default pod).
	By string `yaml:"by"`
	// Queries are vectors by the By label; `$siblings` holds the scope labels other than By.
	Queries orderedQueries `yaml:"queries"`
	// Focus ranks the pods when the alert names none (on-demand triage of a model): the pod with
	// the highest value of the first query is the one diagnosed, the next queries break ties.
	// Default: the first query.
	Focus []string `yaml:"focus"`
	// Affected is a condition over one pod's fleet values and the params: the pods it holds for
	// are "affected" ("1 of 3 pods").
	Affected string `yaml:"affected"`
}

// Fleet is a compiled fleet section.
type Fleet struct {
	By       string
	Queries  []*Query
	Focus    []string
	Affected string
	affected *vm.Program
	index    map[string]int
}

// fleetStats are the values a verdict condition or template reads from fleet query q, named
// q_<stat>: the focus pod's value, the max, sum and mean over all pods, and the max and mean over
// the other pods (nil when there are none).
var fleetStats = []string{"this", "max", "sum", "mean", "others_max", "others_mean"}

// Names of the fleet totals in conditions and templates.
const (
	fleetPodsName     = "fleet_pods"
	fleetAffectedName = "fleet_affected"
)

// FleetView is the sibling comparison of a diagnosis: one row per pod of the model.
type FleetView struct {
	By string `json:"by"`
	// Siblings are the labels the compared pods share (model_name, namespace).
	Siblings map[string]string `json:"siblings,omitempty"`
	// Focus is the alerting pod, or the worst pod when the alert named none (FocusChosen).
	Focus        string        `json:"focus"`
	FocusChosen  bool          `json:"focus_chosen,omitempty"`
	Pods         int           `json:"pods"`
	Affected     int           `json:"affected"`
	AffectedPods []string      `json:"affected_pods,omitempty"`
	Scope        string        `json:"scope"`
	Columns      []FleetColumn `json:"columns"`
	Rows         []FleetRow    `json:"rows"`
}

// FleetColumn is one fleet query as shown.
type FleetColumn struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	Unit  string `json:"unit,omitempty"`
	Query string `json:"query"`
}

// FleetRow is one pod: a value per column (nil when the pod has no series for it).
type FleetRow struct {
	Pod      string     `json:"pod"`
	Values   []*float64 `json:"values"`
	Texts    []string   `json:"texts"`
	Focus    bool       `json:"focus,omitempty"`
	Affected bool       `json:"affected,omitempty"`
}

// NoLabel is how a series without the fleet's label is named (vLLM adds no pod label; the
// scrape config does).
const NoLabel = "(no label)"

func compileFleet(el *errList, p *Playbook, f *FleetFile, names map[string]string) {
	fl := &Fleet{By: f.By, Focus: f.Focus, Affected: strings.TrimSpace(f.Affected), index: map[string]int{}}
	if fl.By == "" {
		fl.By = "pod"
	}
	if !labelNameRE.MatchString(fl.By) {
		el.add("fleet.by", "%q is not a valid label name", fl.By)
	}
	if len(f.Queries) == 0 {
		el.add("fleet.queries", "at least one query is required")
	}
	seen := map[string]bool{}
	for _, nq := range f.Queries {
		path := "fleet.queries." + nq.Name
		q := &Query{Name: nq.Name, Expr: strings.TrimSpace(nq.Query.Expr), Title: nq.Query.Title, Unit: nq.Query.Unit,
			Hidden: nq.Query.Hidden}
		if !validName(el, path, nq.Name) {
			continue
		}
		if seen[nq.Name] {
			el.add(path, "defined twice")
			continue
		}
		seen[nq.Name] = true
		if nq.Query.Baseline != "" || nq.Query.Quantile || len(nq.Query.SaturatesAt) > 0 {
			el.add(path, "baseline, quantile and saturates_at are not supported in fleet queries")
		}
		unitAndTitle(el, path, q)
		for _, s := range fleetStats {
			n := nq.Name + "_" + s
			if kind := names[n]; kind != "" {
				el.add(path, "its value %s clashes with a %s of that name", n, kind)
			}
			names[n] = "fleet value"
		}
		if q.Expr == "" {
			el.add(path+".expr", "empty query")
		} else if e := compileExpr(el, p, q, path, "siblings", `model_name="m",namespace="n"`, names); e != nil && e.Type() != "vector" {
			el.add(path, "must return an instant vector by %s, not a %s", fl.By, e.Type())
		}
		fl.index[q.Name] = len(fl.Queries)
		fl.Queries = append(fl.Queries, q)
	}
	for _, n := range []string{fleetPodsName, fleetAffectedName} {
		if kind := names[n]; kind != "" {
			el.add("fleet", "%s is reserved for the fleet totals, but is a %s", n, kind)
		}
		names[n] = "fleet value"
	}
	if len(fl.Focus) == 0 && len(fl.Queries) > 0 {
		fl.Focus = []string{fl.Queries[0].Name}
	}
	for i, n := range fl.Focus {
		if _, ok := fl.index[n]; !ok {
			el.add(fmt.Sprintf("fleet.focus[%d]", i), "unknown fleet query %q", n)
		}
	}
	if fl.Affected != "" {
		prog, err := expr.Compile(fl.Affected, expr.Env(fleetPodEnv(p, fl, nil)), expr.AsBool())
		if err != nil {
			el.add("fleet.affected", "%s", exprError(err))
		} else {
			fl.affected = prog
		}
	}
	p.Fleet = fl
}

// siblingScope is the scope without the fleet label: what a pod shares with its siblings.
func siblingScope(scope []string, by string) []string {
	out := make([]string, 0, len(scope))
	for _, s := range scope {
		if s != by {
			out = append(out, s)
		}
	}
	return out
}

// fleetPodEnv is the environment of the affected condition for one pod (nil: compile-time sample).
func fleetPodEnv(p *Playbook, fl *Fleet, vals []*float64) map[string]any {
	env := map[string]any{"window_seconds": p.Window.Seconds()}
	for k, v := range p.Params {
		env[k] = v
	}
	for i, q := range fl.Queries {
		switch {
		case vals == nil:
			env[q.Name] = 0.0
		case vals[i] != nil:
			env[q.Name] = *vals[i]
		default:
			env[q.Name] = nil
		}
	}
	return env
}

// FleetValues are fleet query results: query name -> label value (pod) -> value.
type FleetValues map[string]map[string]float64

// interpretVector turns a fleet query's answer into a value per label value. NaN samples (0/0:
// no traffic) are left out, so that pod is missing for this query.
func interpretVector(v model.Value, by string) (map[string]float64, string) {
	x, ok := v.(model.Vector)
	if !ok {
		return nil, "a fleet query must return an instant vector"
	}
	out := make(map[string]float64, len(x))
	dup := 0
	for _, s := range x {
		f := float64(s.Value)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		k := string(s.Metric[model.LabelName(by)])
		if k == "" {
			k = NoLabel
		}
		if old, seen := out[k]; seen {
			dup++
			f = math.Max(old, f)
		}
		out[k] = f
	}
	problem := ""
	if dup > 0 {
		problem = fmt.Sprintf("%d series share a %s; showing the largest (aggregate the query by (%s))", dup, by, by)
	}
	return out, problem
}

// fleetDecision is what the fleet view adds to a decision: the derived values and the view.
type fleetDecision struct {
	values  map[string]*float64 // q_this, q_max, ..., fleet_pods, fleet_affected
	view    *FleetView
	missing []string // derived names without a value
}

// evalFleet builds the sibling comparison from the fleet values. focus is the alerting pod; empty
// means the alert named none and the worst pod by fl.Focus is chosen.
func evalFleet(p *Playbook, vals FleetValues, labels map[string]string, exprs []string) fleetDecision {
	fl := p.Fleet
	fd := fleetDecision{values: map[string]*float64{}}
	podSet := map[string]bool{}
	for _, q := range fl.Queries {
		for pod := range vals[q.Name] {
			podSet[pod] = true
		}
	}
	pods := sortedKeys(podSet)
	cell := func(qi int, pod string) *float64 {
		if v, ok := vals[fl.Queries[qi].Name][pod]; ok {
			return &v
		}
		return nil
	}
	focus, chosen := labels[fl.By], false
	rank := func(a, b string) int { // worst first
		for _, n := range fl.Focus {
			va, vb := cell(fl.index[n], a), cell(fl.index[n], b)
			switch {
			case va == nil && vb == nil:
				continue
			case vb == nil:
				return -1
			case va == nil:
				return 1
			case *va > *vb:
				return -1
			case *va < *vb:
				return 1
			}
		}
		return strings.Compare(a, b)
	}
	ranked := slices.Clone(pods)
	slices.SortStableFunc(ranked, rank)
	if focus == "" && len(ranked) > 0 {
		focus, chosen = ranked[0], true
	}

	view := &FleetView{By: fl.By, Focus: focus, FocusChosen: chosen, Pods: len(pods), Siblings: map[string]string{}}
	for _, s := range siblingScope(p.Scope, fl.By) {
		if v := labels[s]; v != "" {
			view.Siblings[s] = v
		}
	}
	for i, q := range fl.Queries {
		if !q.Hidden {
			view.Columns = append(view.Columns, FleetColumn{Name: q.Name, Title: q.Title, Unit: q.Unit, Query: exprs[i]})
		}
	}
	affected := map[string]bool{}
	for _, pod := range ranked {
		row := FleetRow{Pod: pod, Focus: pod == focus}
		cells := make([]*float64, len(fl.Queries))
		for i, q := range fl.Queries {
			cells[i] = cell(i, pod)
			if !q.Hidden {
				row.Values = append(row.Values, cells[i])
				row.Texts = append(row.Texts, FormatValue(cells[i], q.Unit))
			}
		}
		if fl.affected != nil {
			ok, err := expr.Run(fl.affected, fleetPodEnv(p, fl, cells))
			row.Affected = err == nil && ok == true
		}
		if row.Affected {
			affected[pod] = true
			view.AffectedPods = append(view.AffectedPods, pod)
		}
		view.Rows = append(view.Rows, row)
	}
	// The focus pod leads the table, the others follow worst first.
	slices.SortStableFunc(view.Rows, func(a, b FleetRow) int {
		switch {
		case a.Focus == b.Focus:
			return 0
		case a.Focus:
			return -1
		default:
			return 1
		}
	})
	view.Affected = len(view.AffectedPods)
	view.Scope = fleetScope(view, affected[focus])

	set := func(name string, v *float64) {
		fd.values[name] = v
		if v == nil {
			fd.missing = append(fd.missing, name)
		}
	}
	for i, q := range fl.Queries {
		var all, others []float64
		var this *float64
		for _, pod := range pods {
			v := cell(i, pod)
			if v == nil {
				continue
			}
			all = append(all, *v)
			if pod == focus {
				this = v
			} else {
				others = append(others, *v)
			}
		}
		set(q.Name+"_this", this)
		set(q.Name+"_max", stat(all, "max"))
		set(q.Name+"_sum", stat(all, "sum"))
		set(q.Name+"_mean", stat(all, "mean"))
		set(q.Name+"_others_max", stat(others, "max"))
		set(q.Name+"_others_mean", stat(others, "mean"))
	}
	n, a := float64(len(pods)), float64(view.Affected)
	set(fleetPodsName, &n)
	set(fleetAffectedName, &a)
	if len(pods) > 0 {
		fd.view = view
	}
	return fd
}

func stat(xs []float64, kind string) *float64 {
	if len(xs) == 0 {
		return nil
	}
	var r float64
	switch kind {
	case "max":
		r = slices.Max(xs)
	case "sum", "mean":
		for _, x := range xs {
			r += x
		}
		if kind == "mean" {
			r /= float64(len(xs))
		}
	}
	return &r
}

// fleetScope says whether the problem is this pod alone or the whole model.
func fleetScope(v *FleetView, focusAffected bool) string {
	of := fmt.Sprintf("%d of %d pods", v.Affected, v.Pods)
	switch {
	case v.Pods == 1 && v.Affected == 1:
		return "the model's only pod (1 of 1 pods)"
	case v.Pods == 1:
		return "the model's only pod, not affected (0 of 1 pods)"
	case v.Affected == 0:
		return "no pod of the model stands out (0 of " + fmt.Sprint(v.Pods) + " pods)"
	case v.Affected == v.Pods:
		return "the whole model (" + of + ")"
	case v.Affected == 1 && focusAffected:
		return "this pod alone (" + of + ")"
	case focusAffected:
		return "this pod and " + fmt.Sprint(v.Affected-1) + " more (" + of + ": " + strings.Join(firstN(v.AffectedPods, 5), ", ") + ")"
	default:
		return "not this pod: " + of + " (" + strings.Join(firstN(v.AffectedPods, 5), ", ") + ")"
	}
}

func firstN(xs []string, n int) []string {
	if len(xs) <= n {
		return xs
	}
	return append(slices.Clone(xs[:n]), fmt.Sprintf("%d more", len(xs)-n))
}

// fleetTemplateData is `.fleet` in templates.
func fleetTemplateData(v *FleetView) map[string]any {
	if v == nil {
		return map[string]any{"pod": "", "pods": 0, "affected": 0, "scope": "no sibling data", "affected_pods": "", "chosen": false}
	}
	return map[string]any{"pod": v.Focus, "pods": v.Pods, "affected": v.Affected, "scope": v.Scope,
		"affected_pods": strings.Join(firstN(v.AffectedPods, 5), ", "), "chosen": v.FocusChosen}
}

// Table renders the sibling comparison as aligned plain-text lines (a header, then one line per
// pod, the focus pod first marked ">" and affected pods "!"), at most maxRows pods; a last line
// says how many more there are. Notifiers show it as it is (Slack in a code block).
func (v *FleetView) Table(maxRows int) []string {
	if v == nil || len(v.Rows) == 0 {
		return nil
	}
	cols := make([][]string, 0, len(v.Columns)+1)
	head := append([]string{v.By}, make([]string, len(v.Columns))...)
	for i, c := range v.Columns {
		head[i+1] = c.Title
	}
	rows := v.Rows
	if maxRows > 0 && len(rows) > maxRows {
		rows = rows[:maxRows]
	}
	cols = append(cols, head)
	for _, r := range rows {
		line := append([]string{r.Pod}, r.Texts...)
		cols = append(cols, line)
	}
	width := make([]int, len(head))
	for _, l := range cols {
		for i, c := range l {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	out := make([]string, 0, len(cols)+1)
	for i, l := range cols {
		mark := "  "
		if i > 0 {
			r := rows[i-1]
			switch {
			case r.Focus && r.Affected:
				mark = ">!"
			case r.Focus:
				mark = "> "
			case r.Affected:
				mark = " !"
			}
		}
		var b strings.Builder
		b.WriteString(mark + " ")
		for j, c := range l {
			pad := width[j] - len([]rune(c))
			if j == 0 {
				b.WriteString(c + strings.Repeat(" ", pad))
			} else {
				b.WriteString("  " + strings.Repeat(" ", pad) + c)
			}
		}
		out = append(out, strings.TrimRight(b.String(), " "))
	}
	if n := len(v.Rows) - len(rows); n > 0 {
		more := 0
		for _, r := range v.Rows[len(rows):] {
			if r.Affected {
				more++
			}
		}
		out = append(out, fmt.Sprintf("   … %d more %ss (%d of them affected)", n, v.By, more))
	}
	return out
}

// Headline is the one line above the table: "this pod alone (1 of 3 pods) · model_name=m
// namespace=ns", with the pod chosen when the alert named none.
func (v *FleetView) Headline() string {
	if v == nil {
		return ""
	}
	s := v.Scope
	if v.FocusChosen && v.Focus != "" {
		s = fmt.Sprintf("worst %s %s: %s", v.By, v.Focus, s)
	}
	keys := make([]string, 0, len(v.Siblings))
	for k := range v.Siblings {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		sep := " "
		if i == 0 {
			sep = " · "
		}
		s += sep + k + "=" + v.Siblings[k]
	}
	return s
}
