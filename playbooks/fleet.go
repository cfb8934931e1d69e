package playbooks

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
	"github.com/prometheus/common/model"
	promparser "github.com/prometheus/prometheus/promql/parser"

	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
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
	// aggs is how each query's series of one pod add up to the pod's value (its data-parallel
	// engines, or a pod scraped at two instances): the query's own outer aggregation (sum, max,
	// min, avg), sum by default.
	aggs []string
}

// fleetStats are the values a verdict condition or template reads from fleet query q, named
// q_<stat>: the focus pod's value, the max, sum and mean over all pods, and the max and mean over
// the other pods (nil when there are none).
//
// The focus pod's data-parallel engines (vLLM's `engine` label) give q_engine_this (the
// engine the fleet's focus ranking puts first), q_engine_others_max and q_engine_others_mean
// (its sibling engines in the same pod; nil with one engine).
var fleetStats = []string{"this", "max", "sum", "mean", "others_max", "others_mean", "engine_this", "engine_others_max", "engine_others_mean"}

// Names of the fleet totals in conditions and templates.
const (
	fleetPodsName     = "fleet_pods"
	fleetAffectedName = "fleet_affected"
	// fleetEnginesName is how many data-parallel engines the focus pod has (1 without the label).
	fleetEnginesName = "fleet_engines"
)

// FleetGroupBy is the `$by` placeholder of a fleet query: the labels that name one series of a
// pod. The namespace keeps two namespaces' same-named pods apart, the instance names the pod
// where the scrape adds no pod label (static configs), and the engine is vLLM's data-parallel
// index; the engine's series are added up per pod in the responder, not in PromQL, so one query
// answers both "which pod" and "which engine of the pod".
func FleetGroupBy(podLabel string) string {
	if podLabel == "" {
		podLabel = vllmnames.DefaultPodLabel
	}
	if podLabel == vllmnames.FallbackPodLabel {
		return "namespace, instance, engine"
	}
	return "namespace, " + podLabel + ", instance, engine"
}

// FleetKey names one series of a fleet answer: its pod (within its namespace, when the answer
// has one) and its data-parallel engine (empty without the label). It is written
// "[namespace/]pod[#engine]" in recorded fleet values: neither character occurs in Kubernetes
// names or in host:port instances.
type FleetKey struct{ Namespace, Pod, Engine string }

func (k FleetKey) String() string {
	s := k.Pod
	if k.Namespace != "" {
		s = k.Namespace + "/" + s
	}
	if k.Engine != "" {
		s += "#" + k.Engine
	}
	return s
}

// ParseFleetKey reads a key written by FleetKey.String ("vllm-0", "prod/vllm-0", "vllm-0#1").
func ParseFleetKey(s string) FleetKey {
	var k FleetKey
	if i := strings.LastIndexByte(s, '#'); i >= 0 {
		k.Engine, s = s[i+1:], s[:i]
	}
	if i := strings.IndexByte(s, '/'); i >= 0 {
		k.Namespace, s = s[:i], s[i+1:]
	}
	k.Pod = s
	return k
}

func (k FleetKey) pod() FleetKey { return FleetKey{Namespace: k.Namespace, Pod: k.Pod} }

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
	// Engines are the focus pod's data-parallel engines (Pod holds the engine index), when it
	// has more than one; Engine is the one the focus ranking puts first.
	Engine  string     `json:"engine,omitempty"`
	Engines []FleetRow `json:"engines,omitempty"`
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
	Pod       string     `json:"pod"`
	Namespace string     `json:"namespace,omitempty"`
	Values    []*float64 `json:"values"`
	Texts     []string   `json:"texts"`
	Focus     bool       `json:"focus,omitempty"`
	Affected  bool       `json:"affected,omitempty"`
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
		agg := "sum"
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
		} else {
			for _, m := range placeholderRE.FindAllStringSubmatch(q.Expr, -1) {
				if m[1] != "siblings" && m[1] != "window" && m[1] != "by" && names[m[1]] != "param" {
					el.add(path, "unknown placeholder $%s (known: $siblings, $by, $window and the params)", m[1])
				}
			}
			q.segs = splitTemplate(q.Expr, p.Params)
			sample := expand(withGroupBy(q.segs, FleetGroupBy("")), `model_name="m",namespace="n"`, p.Window, p.Params)
			if e, err := promQL.ParseExpr(sample); err != nil {
				el.add(path, "invalid PromQL: %s", firstLine(err.Error()))
			} else if e.Type() != "vector" {
				el.add(path, "must return an instant vector by %s, not a %s", fl.By, e.Type())
			} else {
				agg = outerAggregation(e)
			}
		}
		fl.index[q.Name] = len(fl.Queries)
		fl.Queries = append(fl.Queries, q)
		fl.aggs = append(fl.aggs, agg)
	}
	if _, ok := p.Params["by"]; ok {
		el.add("params.by", "by is the fleet's $by placeholder, not a param name")
	}
	for _, n := range []string{fleetPodsName, fleetAffectedName, fleetEnginesName} {
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

// withGroupBy returns segs with the fleet's `$by` placeholder (left literal by splitTemplate)
// replaced by the grouping labels. Only the playbook's own text is searched, never a substituted
// label value.
func withGroupBy(segs []segment, by string) []segment {
	out := make([]segment, len(segs))
	for i, sg := range segs {
		if sg.kind == segLiteral && strings.Contains(sg.text, "$by") {
			sg.text = strings.ReplaceAll(sg.text, "$by", by)
		}
		out[i] = sg
	}
	return out
}

// outerAggregation is how a fleet query's series of one pod add up: the aggregation the query
// itself ends with (the left side of a binary expression), applied once more across a pod's
// engines and instances.
func outerAggregation(e promparser.Expr) string {
	switch x := e.(type) {
	case *promparser.ParenExpr:
		return outerAggregation(x.Expr)
	case *promparser.BinaryExpr:
		return outerAggregation(x.LHS)
	case *promparser.AggregateExpr:
		switch x.Op {
		case promparser.MAX:
			return "max"
		case promparser.MIN:
			return "min"
		case promparser.AVG:
			return "mean"
		}
	}
	return "sum"
}

// withNaming returns the fleet with its queries' vLLM metrics renamed and router series
// excluded, as withNaming does for a playbook's queries. `$by` stays a placeholder (a label name
// of the same length stands in for it while the query is parsed).
func (fl *Fleet) withNaming(p *Playbook, n vllmnames.Naming) (*Fleet, []error) {
	cp := *fl
	cp.Queries = make([]*Query, len(fl.Queries))
	var errs []error
	for i, q := range fl.Queries {
		qc, err := renamedQuery(p, q, n, "fleet.queries."+q.Name, func(sample string) string {
			return strings.ReplaceAll(sample, "$by", "_by")
		})
		if err != nil {
			errs = append(errs, err)
		}
		cp.Queries[i] = qc
	}
	return &cp, errs
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

// FleetValues are fleet query results: query name -> series key (a FleetKey as written:
// "[namespace/]pod[#engine]") -> value.
type FleetValues map[string]map[string]float64

// fleetKeyOf names the pod and engine of one series: the pod by podLabel, else pod, else the
// scrape target's instance.
func fleetKeyOf(m model.Metric, podLabel string) FleetKey {
	k := FleetKey{Namespace: string(m["namespace"]), Engine: string(m["engine"])}
	for _, l := range []string{podLabel, vllmnames.DefaultPodLabel, vllmnames.FallbackPodLabel} {
		if v := string(m[model.LabelName(l)]); l != "" && v != "" {
			k.Pod = v
			break
		}
	}
	if k.Pod == "" {
		k.Pod = NoLabel
	}
	return k
}

// interpretVector turns one fleet query's answer into a value per series key. NaN samples (0/0:
// no traffic) are left out, so that pod is missing for this query. Series that share a key (one
// pod scraped at two instances, a query not aggregated by $by) add up by the query's
// aggregation.
func interpretVector(x model.Vector, podLabel, agg string) map[string]float64 {
	groups := make(map[string][]float64, len(x))
	for _, s := range x {
		f := float64(s.Value)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		k := fleetKeyOf(s.Metric, podLabel).String()
		groups[k] = append(groups[k], f)
	}
	out := make(map[string]float64, len(groups))
	for k, xs := range groups {
		out[k] = *stat(xs, agg)
	}
	return out
}

// fleetRequest is what one run asks of the fleet: every fleet query in one PromQL request,
// each query's answer labelled with its name (foldQueries, as a run's own queries travel).
// Prometheus evaluates them in one pass; the number of requests stays one whatever the pods and
// the signals.
type fleetRequest struct {
	names, exprs, aggs []string
	podLabel           string
}

func (fr *fleetRequest) promQL() string { return foldQueries(fr.names, fr.exprs) }

func (fr *fleetRequest) key() string { return "fleet by " + fr.podLabel + "\x00" }

// interpret splits the answer by query; a query without series is absent.
func (fr *fleetRequest) interpret(v model.Value) result {
	x, ok := v.(model.Vector)
	if !ok {
		return result{status: QueryError, problem: "a fleet query must return an instant vector"}
	}
	out := FleetValues{}
	bySignal := map[string]model.Vector{fr.names[0]: x}
	if len(fr.names) > 1 {
		bySignal = splitBySignal(x)
	}
	for i, n := range fr.names {
		if vec := interpretVector(bySignal[n], fr.podLabel, fr.aggs[i]); len(vec) > 0 {
			out[n] = vec
		}
	}
	r := result{status: QueryOK, fleet: out}
	if len(out) == 0 {
		r.status = QueryEmpty
	}
	return r
}

// fleetExprs expands the fleet's queries for an alert: the scope without the pod, grouped by
// the pod label in force.
func (p *Playbook) fleetExprs(labels map[string]string, podLabel string) []string {
	siblings, _, _ := ScopeMatchers(siblingScope(p.Scope, p.Fleet.By), labels)
	by := FleetGroupBy(podLabel)
	out := make([]string, len(p.Fleet.Queries))
	for i, q := range p.Fleet.Queries {
		out[i] = expand(withGroupBy(q.segs, by), siblings, p.Window, p.Params)
	}
	return out
}

// FleetRequest is the one PromQL request a run of p sends for its sibling comparison (the
// default pod label).
func (p *Playbook) FleetRequest(labels map[string]string) string {
	if p.Fleet == nil {
		return ""
	}
	return p.fleetRequest(p.fleetExprs(labels, "")).promQL()
}

func (p *Playbook) fleetRequest(exprs []string) *fleetRequest {
	fr := &fleetRequest{exprs: exprs, aggs: p.Fleet.aggs}
	for _, q := range p.Fleet.Queries {
		fr.names = append(fr.names, q.Name)
	}
	return fr
}

// queryFleet runs the fleet's queries as one request. When Prometheus rejects it, each query
// is sent alone, so that one bad query does not cost the others their answer.
func (e *Engine) queryFleet(ctx context.Context, p *Playbook, exprs []string, keySuffix string, at time.Time) (FleetValues, []string) {
	fr := p.fleetRequest(exprs)
	fr.podLabel = e.opt.PodScope.label()
	r := e.query(ctx, fr.promQL(), keySuffix, at, fr)
	if r.status != QueryError || len(exprs) == 1 {
		var notes []string
		if r.problem != "" && r.status != QueryEmpty {
			notes = append(notes, "fleet queries: "+r.problem)
		}
		if len(r.warnings) > 0 {
			notes = append(notes, "fleet queries came back with warnings, the sibling comparison may be partial: "+strings.Join(r.warnings, "; "))
		}
		return r.fleet, notes
	}
	vals := FleetValues{}
	notes := make([]string, len(exprs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range exprs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			one := &fleetRequest{names: fr.names[i : i+1], exprs: exprs[i : i+1], aggs: fr.aggs[i : i+1], podLabel: fr.podLabel}
			r := e.query(ctx, exprs[i], keySuffix, at, one)
			mu.Lock()
			defer mu.Unlock()
			maps.Copy(vals, r.fleet)
			if r.problem != "" && r.status != QueryEmpty {
				notes[i] = fmt.Sprintf("fleet query %s: %s", fr.names[i], r.problem)
			}
		}()
	}
	wg.Wait()
	return vals, slices.DeleteFunc(notes, func(n string) bool { return n == "" })
}

// fleetDecision is what the fleet view adds to a decision: the derived values and the view.
type fleetDecision struct {
	values  map[string]*float64 // q_this, q_max, ..., fleet_pods, fleet_affected, fleet_engines
	view    *FleetView
	missing []string // derived names without a value
	notes   []string
}

// fleetCells are one query's values by pod (engines added up) and by engine of each pod.
type fleetCells struct {
	pod    map[FleetKey]float64
	engine map[FleetKey]map[string]float64
}

// evalFleet builds the sibling comparison from the fleet values. The focus is the alerting pod
// (by the pod label in force, in the alert's namespace); an alert that names none gets the worst
// pod by fl.Focus.
func evalFleet(p *Playbook, vals FleetValues, labels map[string]string, exprs []string, ps PodScope) fleetDecision {
	fl := p.Fleet
	fd := fleetDecision{values: map[string]*float64{}}
	cells := make([]fleetCells, len(fl.Queries))
	podSet := map[FleetKey]bool{}
	namespaces := map[string]bool{}
	for i, q := range fl.Queries {
		byPod := map[FleetKey][]float64{}
		cells[i].engine = map[FleetKey]map[string]float64{}
		for ks, v := range vals[q.Name] {
			k := ParseFleetKey(ks)
			pk := k.pod()
			podSet[pk] = true
			namespaces[pk.Namespace] = true
			byPod[pk] = append(byPod[pk], v)
			if cells[i].engine[pk] == nil {
				cells[i].engine[pk] = map[string]float64{}
			}
			cells[i].engine[pk][k.Engine] = v
		}
		cells[i].pod = make(map[FleetKey]float64, len(byPod))
		for pk, xs := range byPod {
			cells[i].pod[pk] = *stat(xs, fl.aggs[i])
		}
	}
	pods := slices.SortedFunc(maps.Keys(podSet), func(a, b FleetKey) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Pod, b.Pod))
	})
	// Pods are named by their namespace too only when the answer spans several.
	name := func(k FleetKey) string {
		if len(namespaces) > 1 {
			return k.String()
		}
		return k.Pod
	}
	cell := func(qi int, pod FleetKey) *float64 {
		if v, ok := cells[qi].pod[pod]; ok {
			return &v
		}
		return nil
	}
	rankBy := func(val func(qi int, x FleetKey) *float64, tie func(a, b FleetKey) int) func(a, b FleetKey) int {
		return func(a, b FleetKey) int { // worst first
			for _, n := range fl.Focus {
				va, vb := val(fl.index[n], a), val(fl.index[n], b)
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
			return tie(a, b)
		}
	}
	ranked := slices.Clone(pods)
	slices.SortStableFunc(ranked, rankBy(cell, func(a, b FleetKey) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Pod, b.Pod))
	}))

	var focus FleetKey
	chosen := false
	if _, pod, ok := ps.Resolve(labels); ok {
		focus = FleetKey{Namespace: labels["namespace"], Pod: pod}
		// The alert's pod in the answer: one, or one per namespace when the alert names none (an
		// answer without namespaces, a static scrape or a recorded fixture, matches any).
		var same []FleetKey
		for _, k := range ranked {
			if k.Pod == pod && (focus.Namespace == "" || k.Namespace == "" || k.Namespace == focus.Namespace) {
				same = append(same, k)
			}
		}
		switch {
		case len(same) == 1:
			focus = same[0]
		case len(same) > 1:
			focus = same[0]
			fd.notes = append(fd.notes, fmt.Sprintf("the alert names no namespace and %d namespaces have a pod %s: the sibling comparison is the worst of them, %s",
				len(same), pod, focus.String()))
		case focus.Namespace == "" && len(namespaces) == 1:
			for ns := range namespaces {
				focus.Namespace = ns
			}
		}
	} else if len(ranked) > 0 {
		focus, chosen = ranked[0], true
	}

	view := &FleetView{By: fl.By, Focus: name(focus), FocusChosen: chosen, Pods: len(pods), Siblings: map[string]string{}}
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
	row := func(label string, ns string, vals []*float64) FleetRow {
		r := FleetRow{Pod: label, Namespace: ns}
		for i, q := range fl.Queries {
			if !q.Hidden {
				r.Values = append(r.Values, vals[i])
				r.Texts = append(r.Texts, FormatValue(vals[i], q.Unit))
			}
		}
		return r
	}
	affected := map[FleetKey]bool{}
	for _, pod := range ranked {
		vs := make([]*float64, len(fl.Queries))
		for i := range fl.Queries {
			vs[i] = cell(i, pod)
		}
		r := row(name(pod), pod.Namespace, vs)
		r.Focus = pod == focus
		if fl.affected != nil {
			ok, err := expr.Run(fl.affected, fleetPodEnv(p, fl, vs))
			r.Affected = err == nil && ok == true
		}
		if r.Affected {
			affected[pod] = true
			view.AffectedPods = append(view.AffectedPods, name(pod))
		}
		view.Rows = append(view.Rows, r)
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

	// The focus pod's data-parallel engines, worst first by the same ranking.
	engineSet := map[string]bool{}
	for i := range fl.Queries {
		for e := range cells[i].engine[focus] {
			engineSet[e] = true
		}
	}
	engineCell := func(qi int, e FleetKey) *float64 {
		if v, ok := cells[qi].engine[focus][e.Engine]; ok {
			return &v
		}
		return nil
	}
	var engines []FleetKey
	for e := range engineSet {
		engines = append(engines, FleetKey{Engine: e})
	}
	slices.SortStableFunc(engines, rankBy(engineCell, func(a, b FleetKey) int { return compareEngines(a.Engine, b.Engine) }))
	// An alert about one engine (VLLMEngineStalled keeps vLLM's engine label) is about that one,
	// whatever the ranking puts first: with two wedged engines in a pod, each alert names its own.
	if want := labels["engine"]; want != "" && !chosen {
		if i := slices.IndexFunc(engines, func(e FleetKey) bool { return e.Engine == want }); i > 0 {
			e := engines[i]
			engines = slices.Insert(slices.Delete(engines, i, i+1), 0, e)
		}
	}
	if len(engines) > 1 {
		view.Engine = engines[0].Engine
		for _, e := range engines {
			vs := make([]*float64, len(fl.Queries))
			for i := range fl.Queries {
				vs[i] = engineCell(i, e)
			}
			r := row(e.Engine, focus.Namespace, vs)
			r.Focus = e == engines[0]
			view.Engines = append(view.Engines, r)
		}
	}

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
		var engineThis *float64
		var engineOthers []float64
		if len(engines) > 1 {
			engineThis = engineCell(i, engines[0])
			for _, e := range engines[1:] {
				if v := engineCell(i, e); v != nil {
					engineOthers = append(engineOthers, *v)
				}
			}
		}
		set(q.Name+"_engine_this", engineThis)
		set(q.Name+"_engine_others_max", stat(engineOthers, "max"))
		set(q.Name+"_engine_others_mean", stat(engineOthers, "mean"))
	}
	n, a, ne := float64(len(pods)), float64(view.Affected), float64(max(len(engines), 1))
	set(fleetPodsName, &n)
	set(fleetAffectedName, &a)
	set(fleetEnginesName, &ne)
	if len(pods) > 0 {
		fd.view = view
	}
	return fd
}

// compareEngines orders data-parallel engine indexes numerically ("2" before "10").
func compareEngines(a, b string) int {
	if len(a) != len(b) {
		return cmp.Compare(len(a), len(b))
	}
	return strings.Compare(a, b)
}

func stat(xs []float64, kind string) *float64 {
	if len(xs) == 0 {
		return nil
	}
	var r float64
	switch kind {
	case "max":
		r = slices.Max(xs)
	case "min":
		r = slices.Min(xs)
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
		return map[string]any{"pod": "", "pods": 0, "affected": 0, "scope": "no sibling data", "affected_pods": "", "chosen": false,
			"engine": "", "engines": 0}
	}
	return map[string]any{"pod": v.Focus, "pods": v.Pods, "affected": v.Affected, "scope": v.Scope,
		"affected_pods": strings.Join(firstN(v.AffectedPods, 5), ", "), "chosen": v.FocusChosen,
		"engine": v.Engine, "engines": len(v.Engines)}
}

// Table renders the sibling comparison as aligned plain-text lines (a header, then one line per
// pod, the focus pod first marked ">" and affected pods "!", the focus pod's data-parallel engines
// under it when it has several), at most maxRows pods; a last line
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
	marks := []string{"  "}
	for _, r := range rows {
		line := append([]string{r.Pod}, r.Texts...)
		cols = append(cols, line)
		switch {
		case r.Focus && r.Affected:
			marks = append(marks, ">!")
		case r.Focus:
			marks = append(marks, "> ")
		case r.Affected:
			marks = append(marks, " !")
		default:
			marks = append(marks, "  ")
		}
		if r.Focus { // its data-parallel engines under it, when it has several
			for _, e := range v.Engines {
				cols = append(cols, append([]string{"  engine " + e.Pod}, e.Texts...))
				marks = append(marks, "  ")
			}
		}
	}
	width := make([]int, len(head))
	for _, l := range cols {
		for i, c := range l {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	out := make([]string, 0, len(cols)+1)
	for i, l := range cols {
		mark := marks[i]
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
