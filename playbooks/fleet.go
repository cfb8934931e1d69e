package playbooks

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
	promparser "github.com/prometheus/prometheus/promql/parser"

	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
)

// The fleet in the playbook language: the `fleet:` section as written (FleetFile) and compiled
// (Fleet), the names it adds to conditions and templates (the stat and total tables below, one
// entry per name), the keys its values are recorded under (FleetKey) and the expansion of its
// queries. The judgement over its values is in fleetjudge.go, the comparison as shown in
// fleetview.go; the evidence package queries it.

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
	// Columns are the queries the comparison shows, in order (default: every query not hidden,
	// in the order written). A query not shown is still read by conditions and templates.
	Columns []string `yaml:"columns"`
}

// Fleet is a compiled fleet section.
type Fleet struct {
	By       string
	Queries  []*Query
	Focus    []string
	Affected string
	// Aggs is how each query's series of one pod add up to the pod's value (its data-parallel
	// ranks, or a pod scraped at two instances): the query's own outer aggregation (sum, max,
	// min, avg), sum by default.
	Aggs []Aggregation
	// shown are the indexes in Queries of the columns shown, in order.
	shown    []int
	affected *vm.Program
	index    map[string]int
}

// Query returns the fleet query of that name (false without it, or without a fleet section).
func (fl *Fleet) Query(name string) (*Query, bool) {
	if fl == nil {
		return nil, false
	}
	i, ok := fl.index[name]
	if !ok {
		return nil, false
	}
	return fl.Queries[i], true
}

// Aggregation is how several values add up to one: a pod's series to the pod's value, the pods'
// values to the fleet's max, sum or mean.
type Aggregation string

const (
	aggSum  Aggregation = "sum"
	aggMax  Aggregation = "max"
	aggMin  Aggregation = "min"
	aggMean Aggregation = "mean"
)

// Of is xs aggregated; nil when xs is empty.
func (a Aggregation) Of(xs []float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	var r float64
	switch a {
	case aggMax:
		r = slices.Max(xs)
	case aggMin:
		r = slices.Min(xs)
	case aggSum, aggMean:
		for _, x := range xs {
			r += x
		}
		if a == aggMean {
			r /= float64(len(xs))
		}
	}
	return &r
}

// fleetStat is one value a verdict condition or template reads from each fleet query q, named
// q_<name>, and how it is computed from the query's tally.
type fleetStat struct {
	name string
	of   func(t *queryTally) *float64
}

// fleetStats name and compute the values of each fleet query q: the focus pod's value, the max,
// sum and mean over all pods, and the max and mean over the other pods (nil when there are none).
// Where pods carry a role (disaggregated serving: PodScope.Role), "all pods" are the focus pod's
// pool (the pods of its role), and q_prefill_* and q_decode_* are the max, min, mean and sum over
// the prefill and the decode pool (nil without such pods). The focus pod's data-parallel ranks
// (vLLM's `engine` label) give q_engine_this (the rank the fleet's focus ranking puts first),
// q_engine_others_max and q_engine_others_mean (its sibling ranks in the same pod; nil with one
// rank). The names are a contract of the playbook language.
var fleetStats = []fleetStat{
	{"this", func(t *queryTally) *float64 { return t.this }},
	{"max", func(t *queryTally) *float64 { return aggMax.Of(t.all) }},
	{"sum", func(t *queryTally) *float64 { return aggSum.Of(t.all) }},
	{"mean", func(t *queryTally) *float64 { return aggMean.Of(t.all) }},
	{"others_max", func(t *queryTally) *float64 { return aggMax.Of(t.others) }},
	{"others_mean", func(t *queryTally) *float64 { return aggMean.Of(t.others) }},
	{"engine_this", func(t *queryTally) *float64 { return t.rankThis }},
	{"engine_others_max", func(t *queryTally) *float64 { return aggMax.Of(t.rankOthers) }},
	{"engine_others_mean", func(t *queryTally) *float64 { return aggMean.Of(t.rankOthers) }},
	{"prefill_max", func(t *queryTally) *float64 { return aggMax.Of(t.byRole[RolePrefill]) }},
	{"prefill_min", func(t *queryTally) *float64 { return aggMin.Of(t.byRole[RolePrefill]) }},
	{"prefill_mean", func(t *queryTally) *float64 { return aggMean.Of(t.byRole[RolePrefill]) }},
	{"prefill_sum", func(t *queryTally) *float64 { return aggSum.Of(t.byRole[RolePrefill]) }},
	{"decode_max", func(t *queryTally) *float64 { return aggMax.Of(t.byRole[RoleDecode]) }},
	{"decode_min", func(t *queryTally) *float64 { return aggMin.Of(t.byRole[RoleDecode]) }},
	{"decode_mean", func(t *queryTally) *float64 { return aggMean.Of(t.byRole[RoleDecode]) }},
	{"decode_sum", func(t *queryTally) *float64 { return aggSum.Of(t.byRole[RoleDecode]) }},
}

// The roles of disaggregated prefill/decode serving whose pools the fleet values name
// (q_prefill_max, fleet_decode_pods, ...), as KServe's llm_isvc_role and llm-d's role label
// write them.
const (
	RolePrefill = "prefill"
	RoleDecode  = "decode"
)

// fleetTotal is one value of the whole comparison, and how it is computed.
type fleetTotal struct {
	name string
	of   func(t *fleetTable) float64
}

// fleetTotals name and compute the fleet's totals: how many pods answered (of the focus pod's
// pool, where pods have roles), how many of them are affected, how many data-parallel ranks the
// focus pod has (1 without the label), and how many pods the prefill and decode pools have (0
// without roles).
var fleetTotals = []fleetTotal{
	{"fleet_pods", func(t *fleetTable) float64 { return float64(len(t.pool)) }},
	{"fleet_affected", func(t *fleetTable) float64 { return float64(t.view.Affected) }},
	{"fleet_engines", func(t *fleetTable) float64 { return float64(max(len(t.ranks), 1)) }},
	{"fleet_prefill_pods", func(t *fleetTable) float64 { return float64(t.roleCount(RolePrefill)) }},
	{"fleet_decode_pods", func(t *fleetTable) float64 { return float64(t.roleCount(RoleDecode)) }},
}

// fleetNames are the names the fleet section adds to conditions and templates.
func fleetNames(p *Playbook) []string {
	if p.Fleet == nil {
		return nil
	}
	out := make([]string, 0, len(p.Fleet.Queries)*len(fleetStats)+len(fleetTotals))
	for _, q := range p.Fleet.Queries {
		for _, s := range fleetStats {
			out = append(out, q.Name+"_"+s.name)
		}
	}
	for _, t := range fleetTotals {
		out = append(out, t.name)
	}
	return out
}

// fleetGroupBy is the `$by` placeholder of a fleet query: the labels that name one series of a
// pod. The namespace keeps two namespaces' same-named pods apart, the instance names the pod
// where the scrape adds no pod label (static configs), and the engine label is vLLM's
// data-parallel rank; the ranks' series are added up per pod in the responder, not in PromQL, so
// one query answers both "which pod" and "which rank of the pod". With a role label
// (disaggregated serving) each series also says its pod's role.
func fleetGroupBy(ps PodScope) string {
	by := "namespace, " + ps.Name() + ", instance, engine"
	if ps.Name() == vllmnames.FallbackPodLabel {
		by = "namespace, instance, engine"
	}
	if ps.Role != "" {
		by += ", " + ps.Role
	}
	return by
}

// DPRank is vLLM's data-parallel rank of a series: its `engine` label ("0", "1", ...), empty
// without data parallelism. (vLLM calls each rank an engine; here "engine" is the evidence
// engine, and a rank is a DPRank.)
type DPRank string

// compareRanks orders data-parallel ranks numerically ("2" before "10").
func compareRanks(a, b DPRank) int {
	if len(a) != len(b) {
		return cmp.Compare(len(a), len(b))
	}
	return strings.Compare(string(a), string(b))
}

// FleetKey names one series of a fleet answer: its pod (within its namespace, when the answer
// has one), its data-parallel rank (empty without the label) and its pod's role in
// disaggregated serving (empty without a role label). It is written
// "[namespace/]pod[#rank][@role]" in recorded fleet values: none of the three characters occurs
// in Kubernetes names or in host:port instances.
type FleetKey struct {
	Namespace, Pod string
	Rank           DPRank
	Role           string
}

func (k FleetKey) String() string {
	s := k.Pod
	if k.Namespace != "" {
		s = k.Namespace + "/" + s
	}
	if k.Rank != "" {
		s += "#" + string(k.Rank)
	}
	if k.Role != "" {
		s += "@" + k.Role
	}
	return s
}

// ParseFleetKey reads a key written by FleetKey.String ("vllm-0", "prod/vllm-0", "vllm-0#1",
// "prod/vllm-d-0#0@decode").
func ParseFleetKey(s string) FleetKey {
	var k FleetKey
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		k.Role, s = s[i+1:], s[:i]
	}
	if i := strings.LastIndexByte(s, '#'); i >= 0 {
		k.Rank, s = DPRank(s[i+1:]), s[:i]
	}
	if i := strings.IndexByte(s, '/'); i >= 0 {
		k.Namespace, s = s[:i], s[i+1:]
	}
	k.Pod = s
	return k
}

func (k FleetKey) pod() FleetKey { return FleetKey{Namespace: k.Namespace, Pod: k.Pod} }

// FleetValues are fleet query results: query name -> series key (a FleetKey as written:
// "[namespace/]pod[#rank]") -> value.
type FleetValues map[string]map[string]float64

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
		el := el.from(nq.Source)
		q := &Query{Name: nq.Name, source: nq.Source, Expr: strings.TrimSpace(nq.Query.Expr), Title: nq.Query.Title, Unit: nq.Query.Unit,
			Hidden: nq.Query.Hidden}
		if !validName(el, path, nq.Name) {
			continue
		}
		if seen[nq.Name] {
			el.add(path, "defined twice")
			continue
		}
		seen[nq.Name] = true
		agg := aggSum
		if nq.Query.Baseline != "" || nq.Query.Quantile || len(nq.Query.SaturatesAt) > 0 {
			el.add(path, "baseline, quantile and saturates_at are not supported in fleet queries")
		}
		unitAndTitle(el, path, q)
		for _, s := range fleetStats {
			n := nq.Name + "_" + s.name
			if kind := names[n]; kind != "" {
				el.add(path, "its value %s clashes with a %s of that name", n, kind)
			}
			names[n] = "fleet value"
		}
		if q.Expr == "" {
			el.add(path+".expr", "empty query")
		} else {
			var e promparser.Expr
			q.segs, e = compileFleetExpr(el, p, path, q.Expr, names)
			if e != nil && e.Type() != "vector" {
				el.add(path, "must return an instant vector by %s, not a %s", fl.By, e.Type())
			} else if e != nil {
				agg = outerAggregation(e)
			}
			q.Recorded = compileRecorded(el, path, nq.Query.Recorded, e, func(path, expr string) ([]segment, promparser.Expr) {
				return compileFleetExpr(el, p, path, expr, names)
			})
		}
		fl.index[q.Name] = len(fl.Queries)
		fl.Queries = append(fl.Queries, q)
		fl.Aggs = append(fl.Aggs, agg)
	}
	if _, ok := p.Params["by"]; ok {
		el.add("params.by", "by is the fleet's $by placeholder, not a param name")
	}
	for _, t := range fleetTotals {
		n := t.name
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
	compileColumns(el, fl, f.Columns)
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

// compileColumns sets the columns shown: those named, in their order, else every query not
// hidden.
func compileColumns(el *errList, fl *Fleet, columns []string) {
	if len(columns) == 0 {
		for i, q := range fl.Queries {
			if !q.Hidden {
				fl.shown = append(fl.shown, i)
			}
		}
		return
	}
	for i, name := range columns {
		qi, ok := fl.index[name]
		switch {
		case !ok:
			el.add(fmt.Sprintf("fleet.columns[%d]", i), "unknown fleet query %q", name)
		case fl.Queries[qi].Hidden:
			el.add(fmt.Sprintf("fleet.columns[%d]", i), "%s is hidden: a hidden query is not shown", name)
		case slices.Contains(fl.shown, qi):
			el.add(fmt.Sprintf("fleet.columns[%d]", i), "%s shown twice", name)
		default:
			fl.shown = append(fl.shown, qi)
		}
	}
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
// data-parallel ranks and instances.
func outerAggregation(e promparser.Expr) Aggregation {
	switch x := e.(type) {
	case *promparser.ParenExpr:
		return outerAggregation(x.Expr)
	case *promparser.BinaryExpr:
		return outerAggregation(x.LHS)
	case *promparser.AggregateExpr:
		switch x.Op {
		case promparser.MAX:
			return aggMax
		case promparser.MIN:
			return aggMin
		case promparser.AVG:
			return aggMean
		}
	}
	return aggSum
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

// compileFleetExpr checks a fleet expression's placeholders ($siblings, $by, $window and the
// params), splits it at them and parses it expanded with a sample: its segments, and the parsed
// sample (nil when it does not parse).
func compileFleetExpr(el *errList, p *Playbook, path, expr string, names map[string]string) ([]segment, promparser.Expr) {
	for _, m := range placeholderRE.FindAllStringSubmatch(expr, -1) {
		if m[1] != "siblings" && m[1] != "window" && m[1] != "by" && names[m[1]] != "param" {
			el.add(path, "unknown placeholder $%s (known: $siblings, $by, $window and the params)", m[1])
		}
	}
	segs := splitTemplate(expr, p.Params)
	sample := expand(withGroupBy(segs, fleetGroupBy(PodScope{})), `model_name="m",namespace="n"`, p.Window, p.Params)
	e, err := promQL.ParseExpr(sample)
	if err != nil {
		el.add(path, "invalid PromQL: %s", firstLine(err.Error()))
		return segs, nil
	}
	return segs, e
}

// fleetPodEnv is the environment of the affected condition for one pod (nil: compile-time sample).
func fleetPodEnv(p *Playbook, fl *Fleet, vals []*float64) map[string]any {
	env := make(map[string]any, 1+len(p.Params)+len(fl.Queries))
	env["window_seconds"] = p.Window.Seconds()
	for k, v := range p.Params {
		env[k] = v
	}
	setFleetPodValues(env, fl, vals)
	return env
}

// setFleetPodValues sets one pod's values (vals, by fl.Queries; nil: zeros, for the compiler) in
// an env of fleetPodEnv, so that one env serves every pod of a judgement in turn.
func setFleetPodValues(env map[string]any, fl *Fleet, vals []*float64) {
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
}

// fleetColumnExprs is fleetExprs for the queries the fleet view shows (a column each, with its
// query as sent), "" for the hidden ones: a judgement needs no more (the stall history alone is
// 10 KB of PromQL, hidden, and expanding it on every judgement was a third of Judge's bytes).
func (p *Playbook) fleetColumnExprs(labels map[string]string, ps PodScope) []string {
	siblings, _, _ := ScopeMatchers(siblingScope(p.Scope, p.Fleet.By), labels)
	by := fleetGroupBy(ps)
	out := make([]string, len(p.Fleet.Queries))
	for i, q := range p.Fleet.Queries {
		if !q.Hidden {
			out[i] = expand(withGroupBy(q.segs, by), siblings, p.Window, p.Params)
		}
	}
	return out
}

// fleetExprs expands the fleet's queries for an alert: the scope without the pod, grouped by
// the pod label in force (and the role label, where pods have roles).
func (p *Playbook) fleetExprs(labels map[string]string, ps PodScope) []string {
	siblings, _, _ := ScopeMatchers(siblingScope(p.Scope, p.Fleet.By), labels)
	by := fleetGroupBy(ps)
	out := make([]string, len(p.Fleet.Queries))
	for i, q := range p.Fleet.Queries {
		out[i] = expand(withGroupBy(q.segs, by), siblings, p.Window, p.Params)
	}
	return out
}
