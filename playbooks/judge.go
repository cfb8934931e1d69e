package playbooks

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/expr-lang/expr"

	"github.com/vllm-responder/vllm-responder/facts"
	"github.com/vllm-responder/vllm-responder/traces"
)

// Observation is what a playbook is judged over: the values its queries gave, the fleet's values
// pod by pod, the alert's labels and what the traces showed. The evidence engine gathers it from
// Prometheus; a fixture and a Record hold it as recorded.
type Observation struct {
	// Values are the queries' values by name; nil (or absent) is a missing value.
	Values map[string]*float64
	// Failed are the queries without a value whose request failed (an error, a timeout, a
	// refusal: not "no series"; the evidence says why). An optional query's feature may then be
	// on: unlike one that returned nothing, it is missing where a rule needs it; and no rule
	// decides on its absence (choose). A Record keeps them, a fixture lists them (failed:).
	Failed map[string]bool
	// Fleet are the fleet queries' values: query -> series key (FleetKey as written) -> value.
	Fleet FleetValues
	// Labels are the alert's (or the triage request's) labels.
	Labels map[string]string
	// Traces are the slowest traced requests (nil: traces are off).
	Traces *traces.Report
	// PodScope names the series label a pod is selected by (the zero value: pod, else instance).
	PodScope PodScope
	// At is when the evidence was evaluated (zero for a recorded fixture).
	At time.Time
	// Facts are the facts of the sources looked up (nil: none); see facts.go.
	Facts *facts.Facts
}

// Judge decides p's verdict over o: the verdicts are tried in order and the first whose condition
// holds wins; a condition that needs a missing value is false (unless it tests for nil or uses
// ??), and the diagnosis says which rules could not be checked and lists, as Missing, the
// values they read that were missing (see choose). The winner's templates render the title,
// summary and actions. The diagnosis carries the fleet view and a Record of o. Judge is pure:
// fixtures, `responder playbooks test` and the evidence engine all call it.
func (p *Playbook) Judge(o Observation) *Diagnosis {
	d := &Diagnosis{Playbook: p.Name, Scope: o.Labels, SlowestRequests: o.Traces, EvaluatedAt: o.At}
	// A baseline is its first variant with a value (baseline.go); the variants are not values of
	// their own.
	values, from := p.resolveBaselines(o.Values, p.PodScoped(o.Labels, o.PodScope))
	env := exprEnv(p)
	// An optional query without a value is its feature off, not missing evidence (Query.Optional);
	// one without a value because it failed (a baseline's, when a variant failed) is unknown.
	off, unknown := map[string]bool{}, map[string]bool{}
	for _, q := range p.Queries {
		name := cmp.Or(q.variantOf, q.Name)
		if values[name] == nil && o.Failed[q.Name] {
			unknown[name] = true
		}
		if q.Variant() {
			continue
		}
		if values[q.Name] == nil && q.Optional && !o.Failed[q.Name] {
			off[q.Name] = true
		}
		setEnv(env, q.Name, values[q.Name])
	}
	if p.Fleet != nil {
		fj := judgeFleet(p, o.Fleet, o.Labels, p.fleetColumnExprs(o.Labels, o.PodScope), o.PodScope)
		d.Fleet = fj.view
		d.Notes = append(d.Notes, fj.notes...)
		values = mergeValues(values, fj.values)
		for k, v := range fj.values {
			setEnv(env, k, v)
		}
	}
	data := templateData(p, values, o.Labels, d.Fleet, d.SlowestRequests, o.Facts)
	data["baseline_from"] = baselineFromData(p, from)
	factEnv(env, p.catalog, o.Facts, false)
	p.choose(d, env, off, unknown, data)
	d.needsFacts = slices.DeleteFunc(d.needsFacts, o.Facts.Looked)
	d.record(o.Values, o.Failed, o.Fleet, o.Labels, o.Facts)
	return d
}

// setEnv puts a value into a condition's environment: a missing value is nil there.
func setEnv(env map[string]any, name string, v *float64) {
	if v != nil {
		env[name] = *v
	} else {
		env[name] = nil
	}
}

// mergeValues is a and b in one map (b wins), a left as it is.
func mergeValues(a, b map[string]*float64) map[string]*float64 {
	out := make(map[string]*float64, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// choose runs the ordered verdicts over env and renders the first that holds with data; with
// none, the diagnosis is inconclusive and offers a profile.
//
// A rule whose condition fails on a missing value (nil where it compares; a rule that handles
// nil itself is decided) is not decidable: the diagnosis notes it with the values it reads that
// are missing, and those values are its Missing. Only the rules tried before the verdict count:
// each could have been the verdict had its values been there, while a rule after it could not
// change it. So a confident verdict lists as missing only what a rule ranked above it needed
// (its own condition held), and an inconclusive one what every rule that could not be decided
// needed; a value no rule needed is not missing, whatever its query said. The values off (an
// optional query that returned nothing: its feature is off) are never missing: a rule they
// leave undecided does not apply.
//
// A value unknown (its query failed: Observation.Failed) is no evidence of absence: a rule that
// reads one is decided only when it gives the same answer with the value nil and NaN (so
// `x == nil` or `(x ?? 0) == 0` over an unknown x is not decidable, `a > 5 || x > 1` with a
// at 6 is).
func (p *Playbook) choose(d *Diagnosis, env map[string]any, off, unknown map[string]bool, data map[string]any) {
	var chosen *Verdict
	for _, v := range p.Verdicts {
		for _, src := range v.facts {
			if !slices.Contains(d.needsFacts, src) {
				d.needsFacts = append(d.needsFacts, src)
			}
		}
		ok, err := expr.Run(v.program, env)
		if err == nil && !decidedWithout(v, env, unknown, ok) {
			err = errUnknown
		}
		if err == nil && ok == true {
			chosen = v
			break
		}
		if err == nil {
			continue // decided false (a rule that handles nil itself is decided, not skipped)
		}
		var needs []string
		for _, n := range v.needs {
			if env[n] == nil && !off[n] {
				needs = append(needs, n)
				if !slices.Contains(d.Missing, n) {
					d.Missing = append(d.Missing, n)
				}
			}
		}
		note := fmt.Sprintf("rule %s not decidable: %s missing", v.ID, strings.Join(needs, ", "))
		if len(needs) > 0 && !slices.Contains(d.Notes, note) { // said once for the rules of one id
			d.Notes = append(d.Notes, note)
		}
	}
	if chosen == nil {
		d.Verdict = VerdictInconclusive
		d.Title = "Inconclusive: no rule of the playbook explains this"
		d.Summary = "None of the playbook's verdicts matched the evidence."
		if tr := d.SlowestRequests; tr != nil && len(tr.Requests) > 0 {
			d.Summary = "Traces: " + tr.Summary + " " + d.Summary
		}
		d.OfferProfile = true
		return
	}
	d.Verdict = chosen.ID
	d.OfferProfile = chosen.OfferProfile
	d.Title = render(chosen.Title, data)
	d.Summary = render(chosen.Summary, data)
	if chosen.ID == VerdictInconclusive && len(d.Missing) > 0 {
		// A playbook's own inconclusive says what its evidence does not explain; where values
		// were missing, the rules that read them were not decided either: say so first.
		d.Summary = "Not decided for want of evidence (" + strings.Join(d.Missing, ", ") + " missing): the rules that read it could not be judged. " + d.Summary
	}
	d.Actions = make([]string, 0, len(chosen.Actions))
	for _, a := range chosen.Actions {
		d.Actions = append(d.Actions, render(a, data))
	}
}

// errUnknown marks a rule whose answer depends on a value that is unknown.
var errUnknown = errors.New("depends on an unknown value")

// decidedWithout reports whether v's condition, which gave ok with the unknown values it reads
// nil, gives it with them NaN too: its answer does not rest on their absence.
func decidedWithout(v *Verdict, env map[string]any, unknown map[string]bool, ok any) bool {
	var reads []string
	for _, n := range v.needs {
		if unknown[n] && env[n] == nil {
			reads = append(reads, n)
		}
	}
	if len(reads) == 0 {
		return true
	}
	for _, n := range reads {
		env[n] = math.NaN()
	}
	again, err := expr.Run(v.program, env)
	for _, n := range reads {
		env[n] = nil
	}
	return err == nil && again == ok
}

func render(t *template.Template, data map[string]any) string {
	if t == nil {
		return ""
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return fmt.Sprintf("(template error: %v)", err)
	}
	return strings.TrimSpace(b.String())
}
