package playbooks

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	promparser "github.com/prometheus/prometheus/promql/parser"
)

// A baseline query (`baseline_of: q` in YAML) is what query q was before the incident. It has no
// expression of its own: the compiler derives three from q's template, and the judgement takes
// the first that has a value, in this order:
//
//  1. the same scope one day earlier (every selector `offset 1d`): the pod a day ago;
//  2. the model one day earlier, when the pod is newer than a day (a rollout replaces every
//     pod): the same query over the pod's siblings (the scope without its pod), `offset 1d`,
//     and, where q is a sum, normalised per pod (`avg(sum by (instance) (...))`);
//  3. the recent past, when there is no day of history at all (a new model, a new cluster):
//     every range widened to recentWindows times the window ($recent: 30m with the default 5m)
//     and the whole query offset by the window, so the window itself is left out.
//
// All three are queries of the playbook (the first under the baseline's own name, the others
// under name.model_day and name.recent), and a fixture can give any of them. A run sends the
// first with the others, and the later two only where the first has no value (Fallbacks), in
// a second round. The diagnosis says which one it used.
const (
	baselineModelDay = ".model_day"
	baselineRecent   = ".recent"
	// recentWindows is how far back the recent past reaches before the window, in windows.
	recentWindows = 6
)

// Where a baseline came from, as a diagnosis says it (the recent past: RecentFrom).
const (
	BaselineFromPodDay   = "the pod a day ago"
	BaselineFromDayAgo   = "a day ago" // the scope names no pod: the model (or more) a day ago
	BaselineFromModelDay = "the model a day ago"
)

// RecentFrom is where p's recent-past baselines come from: "the 30m before the window".
func (p *Playbook) RecentFrom() string {
	return "the " + model.Duration(recentWindows*p.Window).String() + " before the window"
}

// baselineVariants are the names of baseline query b's derived queries, in the order they are
// tried (b itself first).
func baselineVariants(b string) []string {
	return []string{b, b + baselineModelDay, b + baselineRecent}
}

// compileBaselines derives the queries of every `baseline_of` query of p: its own expression
// (the scope a day ago) and its two variants, appended to p.Queries.
func compileBaselines(el *errList, p *Playbook, names map[string]string) {
	for _, q := range slices.Clone(p.Queries) {
		if q.BaselineOf == "" {
			continue
		}
		path := "queries." + q.Name + ".baseline_of"
		of, ok := p.byName[q.BaselineOf]
		switch {
		case !ok:
			el.add(path, "unknown query %q", q.BaselineOf)
			continue
		case of.BaselineOf != "":
			el.add(path, "%s is a baseline itself", q.BaselineOf)
			continue
		case of.Expr == "" || of.segs == nil:
			continue // its own error is reported
		}
		dayAgo, err := shiftedTemplate(of.segs, " offset 1d", "")
		if err != nil {
			el.add(path, "%v", err)
			continue
		}
		model, err := perPod(splitTemplate(dayAgo, p.Params))
		if err != nil {
			el.add(path, "%v", err)
			continue
		}
		recent, err := shiftedTemplate(of.segs, " offset $window", "$recent")
		if err != nil {
			el.add(path, "%v", err)
			continue
		}
		q.Expr = dayAgo
		q.variantOf = q.Name
		for _, v := range []struct {
			suffix, expr string
			siblings     bool
		}{{baselineModelDay, model, true}, {baselineRecent, recent, false}} {
			vq := &Query{Name: q.Name + v.suffix, Expr: v.expr, Title: q.Title + " (" + strings.TrimPrefix(v.suffix, ".") + ")",
				Unit: q.Unit, Hidden: true, variantOf: q.Name, siblings: v.siblings}
			names[vq.Name] = "query"
			p.index[vq.Name] = len(p.Queries)
			p.Queries = append(p.Queries, vq)
			p.byName[vq.Name] = vq
		}
	}
}

// shiftedTemplate is a query template with offset appended to every selector and subquery that
// is evaluated at the query's time (not those inside a subquery, which follow it), and, when
// rng is set, every range replaced by it. The edits are made in the template at the positions
// the parser reports for its same-length sample, so placeholders stay placeholders.
func shiftedTemplate(segs []segment, offset, rng string) (string, error) {
	tmpl, sample := sameLengthSample(segs)
	e, err := promQL.ParseExpr(sample)
	if err != nil {
		return "", err
	}
	type edit struct {
		pos, drop int
		insert    string
	}
	var edits []edit
	var firstErr error
	promparser.Inspect(e, func(node promparser.Node, path []promparser.Node) error {
		for _, a := range path {
			if _, ok := a.(*promparser.SubqueryExpr); ok {
				return nil // evaluated at its subquery's times
			}
		}
		end := -1
		switch x := node.(type) {
		case *promparser.SubqueryExpr:
			if x.OriginalOffset != 0 || x.Timestamp != nil || x.StartOrEnd != 0 {
				firstErr = errors.New("the query already has an offset or @: a baseline derives its own")
			}
			end = int(x.PositionRange().End)
		case *promparser.MatrixSelector:
			vs := x.VectorSelector.(*promparser.VectorSelector)
			if vs.OriginalOffset != 0 || vs.Timestamp != nil || vs.StartOrEnd != 0 {
				firstErr = errors.New("the query already has an offset or @: a baseline derives its own")
			}
			end = int(x.PositionRange().End)
			if rng != "" {
				open := strings.LastIndexByte(tmpl[:end], '[')
				edits = append(edits, edit{pos: open + 1, drop: end - 1 - (open + 1), insert: rng})
			}
		case *promparser.VectorSelector:
			if len(path) > 0 {
				if _, ok := path[len(path)-1].(*promparser.MatrixSelector); ok {
					return nil // its matrix carries the offset
				}
			}
			if x.OriginalOffset != 0 || x.Timestamp != nil || x.StartOrEnd != 0 {
				firstErr = errors.New("the query already has an offset or @: a baseline derives its own")
			}
			end = int(x.PositionRange().End)
		}
		if end >= 0 {
			edits = append(edits, edit{pos: end, insert: offset})
		}
		return nil
	})
	if firstErr != nil {
		return "", firstErr
	}
	return applyEdits(tmpl, edits, func(e edit) (int, int, string) { return e.pos, e.drop, e.insert }), nil
}

// perPod is a day-ago template over the model's pods: where the query is a plain sum (of its
// engines, for one pod), the sum per pod averaged over the pods, so that it compares with one
// pod's value; means, maxima and ratios of sums are left as they are.
func perPod(segs []segment) (string, error) {
	tmpl, sample := sameLengthSample(segs)
	e, err := promQL.ParseExpr(sample)
	if err != nil {
		return "", err
	}
	inner := e
	for {
		pe, ok := inner.(*promparser.ParenExpr)
		if !ok {
			break
		}
		inner = pe.Expr
	}
	agg, ok := inner.(*promparser.AggregateExpr)
	if !ok || agg.Op != promparser.SUM || len(agg.Grouping) > 0 || agg.Without {
		return tmpl, nil
	}
	start, end := int(agg.PositionRange().Start), int(agg.PositionRange().End)
	if !strings.HasPrefix(tmpl[start:], "sum") {
		return "", fmt.Errorf("cannot place the per-pod grouping in %q: write the sum as sum(...)", tmpl[start:end])
	}
	type edit struct {
		pos    int
		insert string
	}
	edits := []edit{{start, "avg("}, {start + len("sum"), " by (instance) "}, {end, ")"}}
	return applyEdits(tmpl, edits, func(e edit) (int, int, string) { return e.pos, 0, e.insert }), nil
}

// applyEdits applies position edits (drop bytes at pos, then insert) to s, from the end so that
// earlier positions stay valid.
func applyEdits[E any](s string, edits []E, at func(E) (pos, drop int, insert string)) string {
	slices.SortStableFunc(edits, func(a, b E) int {
		pa, _, _ := at(a)
		pb, _, _ := at(b)
		return pb - pa
	})
	for _, e := range edits {
		pos, drop, insert := at(e)
		s = s[:pos] + insert + s[pos+drop:]
	}
	return s
}

// BaselineUse is the baseline a diagnosis compared with: its value (nil when none of its
// variants had one) and where it came from (BaselineFrom*; "" when none).
type BaselineUse struct {
	Value *float64
	From  string
}

// Baseline resolves baseline query name over the values of a run: a `baseline_of` query's first
// variant with a value, and where it came from. podScoped says whether the scope named a pod:
// without one, the scope a day ago is the model itself, and the per-pod variant does not apply.
// Any other query is its own value, with no source.
func (p *Playbook) Baseline(name string, values map[string]*float64, podScoped bool) BaselineUse {
	q, ok := p.byName[name]
	if !ok || q.BaselineOf == "" {
		return BaselineUse{Value: values[name]}
	}
	from := []string{BaselineFromPodDay, BaselineFromModelDay, p.RecentFrom()}
	if !podScoped {
		from[0], from[1] = BaselineFromDayAgo, ""
	}
	for i, n := range baselineVariants(name) {
		if v := values[n]; v != nil && from[i] != "" {
			return BaselineUse{Value: v, From: from[i]}
		}
	}
	return BaselineUse{}
}

// Fallbacks are the baseline variants (Query.Variant) that Baseline may read for these values:
// by index of p.Queries, true for each later variant of a baseline whose first (the scope a day
// ago) has no value, but the model a day ago where the scope names no pod (never read then). The
// others cannot change a judgement: a baseline is its first variant with a value. A run sends
// the variants only where they are fallbacks (evidence: in a second round, after the first
// variants answered), so that a pod with a day of history, the common case, costs none of them.
// values nil: every variant that can be read (none of the first variants has a value).
func (p *Playbook) Fallbacks(values map[string]*float64, podScoped bool) []bool {
	out := make([]bool, len(p.Queries))
	for i, q := range p.Queries {
		out[i] = q.Variant() && values[q.variantOf] == nil && (podScoped || !q.siblings)
	}
	return out
}

// PodScoped reports whether p's scope names a pod for these labels (the baselines then start
// with the pod a day ago).
func (p *Playbook) PodScoped(labels map[string]string, ps PodScope) bool {
	if !slices.Contains(p.Scope, "pod") {
		return false
	}
	_, _, ok := ps.resolve(labels)
	return ok
}

// resolveBaselines is values with every `baseline_of` query replaced by its first variant that
// has a value, and where each came from.
func (p *Playbook) resolveBaselines(values map[string]*float64, podScoped bool) (map[string]*float64, map[string]string) {
	var out map[string]*float64
	from := map[string]string{}
	for _, q := range p.Queries {
		if q.BaselineOf == "" || q.variantOf != q.Name {
			continue
		}
		if out == nil {
			out = mergeValues(values, nil)
		}
		b := p.Baseline(q.Name, values, podScoped)
		out[q.Name] = b.Value
		from[q.Name] = b.From
	}
	if out == nil {
		out = values
	}
	return out, from
}
