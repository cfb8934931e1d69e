package evidence

import (
	"context"
	"sync"
	"time"

	"github.com/vllm-responder/vllm-responder/playbooks"
)

// Recorded alternatives: a query whose raw form is costly may carry a cheap form over the series
// of recording rules that the shipped rule files define (deploy/prometheus), in the playbook
// language (a `recorded:` form with its present check beside the query's expr:
// playbooks/recorded.go). The engine sends the recorded form when its Present check, expanded for
// the scope, answers with a series; otherwise the raw form, which needs no rule and says the same.
// The check is sent once per scope and its answer kept for RecordedCheckTTL, so a diagnosis pays
// for it once in a while, not each time.
//
// On the fleet, the queries in their recorded form (the stall history every built-in playbook
// shares, from the progress fragment) travel in a request of their own, whose PromQL is the same
// for every playbook of a model, so that the cache and the sharing of identical requests in
// flight evaluate it once for all of them (fleet.go). Their raw form travels with the rest of the
// fleet's queries, as it did before there were recorded forms.

// Alternative is a query's recorded form, expanded for one run.
type Alternative = playbooks.RecordedForm

// Alternatives are a run's recorded alternatives, by index of the expansion's Queries and
// Fleet (the zero Alternative where a query has none).
type Alternatives struct {
	Queries, Fleet []Alternative
}

// AlternativesFunc gives the recorded alternatives of p's queries for an alert with these labels,
// pods named as ps says: Recorded, or nil (EngineOptions.Alternatives) for the raw forms only.
type AlternativesFunc func(p *playbooks.Playbook, labels map[string]string, ps playbooks.PodScope) Alternatives

// Recorded is the AlternativesFunc of the playbooks' own recorded forms.
func Recorded(p *playbooks.Playbook, labels map[string]string, ps playbooks.PodScope) Alternatives {
	q, f := p.ExpandRecorded(labels, ps)
	return Alternatives{Queries: q, Fleet: f}
}

// defaultRecordedCheckTTL is EngineOptions.RecordedCheckTTL's default.
const defaultRecordedCheckTTL = 5 * time.Minute

// useRecorded replaces, in pl's expansion, each query that has an alternative whose check holds
// by its recorded form. The checks of a run are sent at once, each at most once per
// RecordedCheckTTL.
func (e *Engine) useRecorded(ctx context.Context, pl *plan) {
	if e.opt.Alternatives == nil {
		return
	}
	alts := e.opt.Alternatives(pl.p, pl.labels, e.pods)
	checks := map[string]bool{}
	for _, a := range append(alts.Queries, alts.Fleet...) {
		if a.Expr != "" && a.Present != "" {
			checks[a.Present] = false
		}
	}
	if len(checks) == 0 {
		return
	}
	answered := make([]bool, 0, len(checks))
	asked := make([]string, 0, len(checks))
	for c := range checks {
		asked = append(asked, c)
		answered = append(answered, false)
	}
	var wg sync.WaitGroup
	for i, c := range asked {
		wg.Go(func() { answered[i] = e.present(ctx, c, pl.cacheSuffix, pl.at) })
	}
	wg.Wait()
	for i, c := range asked {
		checks[c] = answered[i]
	}
	pl.x.Queries = swapped(pl.x.Queries, alts.Queries, checks)
	pl.x.Fleet = swapped(pl.x.Fleet, alts.Fleet, checks)
	pl.sharedFleet = make([]bool, len(pl.x.Fleet))
	for i, a := range alts.Fleet {
		pl.sharedFleet[i] = i < len(pl.x.Fleet) && a.Expr != "" && checks[a.Present]
	}
}

// swapped is exprs with each one whose alternative's check holds replaced by its recorded form.
func swapped(exprs []string, alts []Alternative, checks map[string]bool) []string {
	out := exprs
	for i, a := range alts {
		if i < len(exprs) && a.Expr != "" && checks[a.Present] {
			if &out[0] == &exprs[0] {
				out = append([]string(nil), exprs...)
			}
			out[i] = a.Expr
		}
	}
	return out
}

// present reports whether the check answers with a series, from the answer kept for it when it
// is younger than RecordedCheckTTL. A check that fails (unreachable, refused) is false: the raw
// form is the one that needs nothing.
func (e *Engine) present(ctx context.Context, check, keySuffix string, at time.Time) bool {
	key := check + keySuffix
	e.mu.Lock()
	ok, known := e.presence.get(key, e.opt.Now())
	e.mu.Unlock()
	if known {
		return ok
	}
	r := e.query(ctx, check, keySuffix, at, nil)
	if r.status != QueryOK && r.status != QueryEmpty {
		return false
	}
	e.mu.Lock()
	e.presence.put(key, r.status == QueryOK, e.opt.Now())
	e.mu.Unlock()
	return r.status == QueryOK
}
