package playbooks

import (
	"strings"

	promparser "github.com/prometheus/prometheus/promql/parser"
)

// Recorded forms: a query whose PromQL is costly (the stall history: a minute-long stall
// condition at 5 s steps over 15 minutes, per pod) may say the same over the series of
// recording rules (deploy/prometheus ships them), beside its expr:
//
//	stalled_for:
//	  expr: <the raw form: needs no rule>
//	  recorded:
//	    expr: <the same answer over the rules' series>
//	    present: <a series when the rules recorded this scope for as long as expr looks back>
//
// Both take the query's placeholders. The evidence engine sends the present check first (once in
// a while per scope) and then the recorded form where it answered with a series, the raw form
// where not: the two must say the same on the same series (a test on a real Prometheus for each,
// as evidence/recorded_test.go does for the stall history).

// RecordedFile is a query's recorded form as written.
type RecordedFile struct {
	// Expr is the query over recording rules' series.
	Expr string `yaml:"expr"`
	// Present answers with a series when Expr may stand for the raw form in this scope.
	Present string `yaml:"present"`
}

// Recorded is a compiled recorded form.
type Recorded struct {
	Expr, Present     string
	segs, presentSegs []segment
}

// RecordedForm is a recorded form expanded for one run.
type RecordedForm struct {
	// Expr is the query over recording rules' series.
	Expr string
	// Present answers with a series when Expr may stand for the raw form in this scope: the
	// rules recorded it for as long as the raw form looks back.
	Present string
}

// compileRecorded compiles a query's recorded form f (nil: none) with compile, which checks an
// expression's placeholders as for the query's own expr, and parses it (nil: it does not). The
// recorded form answers as the query does (a vector where it does); its check is a vector.
func compileRecorded(el *errList, path string, f *RecordedFile, own promparser.Expr, compile func(path, expr string) ([]segment, promparser.Expr)) *Recorded {
	if f == nil {
		return nil
	}
	r := &Recorded{Expr: strings.TrimSpace(f.Expr), Present: strings.TrimSpace(f.Present)}
	for _, c := range []struct {
		name, expr string
		segs       *[]segment
	}{{"expr", r.Expr, &r.segs}, {"present", r.Present, &r.presentSegs}} {
		p := path + ".recorded." + c.name
		if c.expr == "" {
			el.add(p, "empty query (a recorded form needs both expr and present)")
			continue
		}
		segs, e := compile(p, c.expr)
		*c.segs = segs
		switch {
		case e == nil:
		case c.name == "present" && e.Type() != promparser.ValueTypeVector:
			el.add(p, "must return an instant vector (a series when the recorded form holds), not a %s", e.Type())
		case c.name == "expr" && own != nil && e.Type() != own.Type():
			el.add(p, "returns a %s where the query's expr returns a %s", e.Type(), own.Type())
		}
	}
	return r
}

// expanded is r for one run: its placeholders filled as expand fills the query's own.
func (r *Recorded) expanded(expand func([]segment) string) RecordedForm {
	if r == nil {
		return RecordedForm{}
	}
	return RecordedForm{Expr: expand(r.segs), Present: expand(r.presentSegs)}
}

// ExpandRecorded expands the recorded forms of p's queries and of its fleet's for an alert with
// these labels, pods named by ps, by index of ExpandAll's Queries and Fleet (the zero
// RecordedForm where a query has none; both nil when no query has one).
func (p *Playbook) ExpandRecorded(labels map[string]string, ps PodScope) (queries, fleet []RecordedForm) {
	var scope, siblings string
	for i, q := range p.Queries {
		if q.Recorded == nil {
			continue
		}
		if queries == nil {
			queries = make([]RecordedForm, len(p.Queries))
			scope, _, _ = ps.Matchers(p.Scope, labels)
		}
		queries[i] = q.Recorded.expanded(func(segs []segment) string { return expand(segs, scope, p.Window, p.Params) })
	}
	if p.Fleet == nil {
		return queries, nil
	}
	by := fleetGroupBy(ps)
	for i, q := range p.Fleet.Queries {
		if q.Recorded == nil {
			continue
		}
		if fleet == nil {
			fleet = make([]RecordedForm, len(p.Fleet.Queries))
			siblings, _, _ = ScopeMatchers(siblingScope(p.Scope, p.Fleet.By), labels)
		}
		fleet[i] = q.Recorded.expanded(func(segs []segment) string {
			return expand(withGroupBy(segs, by), siblings, p.Window, p.Params)
		})
	}
	return queries, fleet
}
