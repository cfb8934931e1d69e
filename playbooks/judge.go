package playbooks

import (
	"bytes"
	"fmt"
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
// ??), and the diagnosis says which rules could not be checked. The winner's templates render
// the title, summary and actions. The diagnosis carries the fleet view and a Record of o. Judge
// is pure: fixtures, `responder playbooks test` and the evidence engine all call it.
func (p *Playbook) Judge(o Observation) *Diagnosis {
	d := &Diagnosis{Playbook: p.Name, Scope: o.Labels, SlowestRequests: o.Traces, EvaluatedAt: o.At}
	// A baseline is its first variant with a value (baseline.go); the variants are not values of
	// their own.
	values, from := p.resolveBaselines(o.Values, p.PodScoped(o.Labels, o.PodScope))
	env := exprEnv(p)
	for _, q := range p.Queries {
		if q.Variant() {
			continue
		}
		if values[q.Name] == nil && !q.Optional {
			d.Missing = append(d.Missing, q.Name)
		}
		setEnv(env, q.Name, values[q.Name])
	}
	missing := map[string]bool{}
	for _, m := range d.Missing {
		missing[m] = true
	}
	if p.Fleet != nil {
		fj := judgeFleet(p, o.Fleet, o.Labels, p.fleetColumnExprs(o.Labels, o.PodScope), o.PodScope)
		d.Fleet = fj.view
		d.Notes = append(d.Notes, fj.notes...)
		values = mergeValues(values, fj.values)
		for k, v := range fj.values {
			setEnv(env, k, v)
		}
		for _, m := range fj.missing {
			missing[m] = true
		}
	}
	data := templateData(p, values, o.Labels, d.Fleet, d.SlowestRequests, o.Facts)
	data["baseline_from"] = baselineFromData(p, from)
	factEnv(env, p.catalog, o.Facts, false)
	p.choose(d, env, missing, data)
	d.needsFacts = slices.DeleteFunc(d.needsFacts, o.Facts.Looked)
	d.record(o.Values, o.Fleet, o.Labels, o.Facts)
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
func (p *Playbook) choose(d *Diagnosis, env map[string]any, missing map[string]bool, data map[string]any) {
	var chosen *Verdict
	for _, v := range p.Verdicts {
		for _, src := range v.facts {
			if !slices.Contains(d.needsFacts, src) {
				d.needsFacts = append(d.needsFacts, src)
			}
		}
		ok, err := expr.Run(v.program, env)
		if err == nil && ok == true {
			chosen = v
			break
		}
		if err == nil {
			continue // decided false (a rule that handles nil itself is decided, not skipped)
		}
		var needs []string
		for _, n := range v.needs {
			if missing[n] {
				needs = append(needs, n)
			}
		}
		if len(needs) > 0 {
			d.Notes = append(d.Notes, fmt.Sprintf("rule %s not decidable: %s missing", v.ID, strings.Join(needs, ", ")))
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
	d.Actions = make([]string, 0, len(chosen.Actions))
	for _, a := range chosen.Actions {
		d.Actions = append(d.Actions, render(a, data))
	}
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
