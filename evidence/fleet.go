package evidence

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

// The fleet's queries: one PromQL request carrying every fleet query of a run (each answer
// labelled with its query's name, as batch.go folds a run's own queries), read back into a value
// per series key ("[namespace/]pod[#rank]", playbooks.FleetKey). What the values mean is the
// playbook's judgement (playbooks.Playbook.Judge).

// fleetKeyOf names the pod, data-parallel rank and role of one series: the pod by the pod label,
// else pod, else the scrape target's instance; the role by the role label, where there is one.
func fleetKeyOf(m model.Metric, ps playbooks.PodScope) playbooks.FleetKey {
	k := playbooks.FleetKey{Namespace: string(m["namespace"]), Rank: playbooks.DPRank(m["engine"])}
	if ps.Role != "" {
		k.Role = string(m[model.LabelName(ps.Role)])
	}
	for _, l := range []string{ps.Name(), vllmnames.DefaultPodLabel, vllmnames.FallbackPodLabel} {
		if v := string(m[model.LabelName(l)]); l != "" && v != "" {
			k.Pod = v
			break
		}
	}
	if k.Pod == "" {
		k.Pod = playbooks.NoLabel
	}
	return k
}

// interpretVector turns one fleet query's answer into a value per series key. NaN samples (0/0:
// no traffic) are left out, so that pod is missing for this query. Series that share a key (one
// pod scraped at two instances, a query not aggregated by $by) add up by the query's
// aggregation.
func interpretVector(x model.Vector, ps playbooks.PodScope, agg playbooks.Aggregation) map[string]float64 {
	groups := make(map[string][]float64, len(x))
	for _, s := range x {
		f := float64(s.Value)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		k := fleetKeyOf(s.Metric, ps).String()
		groups[k] = append(groups[k], f)
	}
	out := make(map[string]float64, len(groups))
	for k, xs := range groups {
		out[k] = *agg.Of(xs)
	}
	return out
}

// fleetRequest is what one run asks of the fleet: every fleet query in one PromQL request,
// each query's answer labelled with its name (foldQueries, as a run's own queries travel).
// Prometheus evaluates them in one pass; the number of requests stays one whatever the pods and
// the signals.
type fleetRequest struct {
	names, exprs []string
	aggs         []playbooks.Aggregation
	ps           playbooks.PodScope
}

func (fr *fleetRequest) promQL() string { return foldQueries(fr.names, fr.exprs) }

func (fr *fleetRequest) key() string {
	return "fleet by " + fr.ps.Name() + " role " + fr.ps.Role + "\x00"
}

// interpret splits the answer by query; a query without series is absent.
func (fr *fleetRequest) interpret(v model.Value) result {
	x, ok := v.(model.Vector)
	if !ok {
		return result{status: QueryError, problem: "a fleet query must return an instant vector"}
	}
	out := playbooks.FleetValues{}
	bySignal := map[string]model.Vector{fr.names[0]: x}
	if len(fr.names) > 1 {
		bySignal = splitBySignal(x)
	}
	for i, n := range fr.names {
		if vec := interpretVector(bySignal[n], fr.ps, fr.aggs[i]); len(vec) > 0 {
			out[n] = vec
		}
	}
	r := result{status: QueryOK, fleet: out}
	if len(out) == 0 {
		r.status = QueryEmpty
	}
	return r
}

// newFleetRequest is the request of p's fleet queries, expanded as exprs, series named as ps
// says.
func newFleetRequest(p *playbooks.Playbook, exprs []string, ps playbooks.PodScope) *fleetRequest {
	fr := &fleetRequest{exprs: exprs, aggs: p.Fleet.Aggs, ps: ps}
	for _, q := range p.Fleet.Queries {
		fr.names = append(fr.names, q.Name)
	}
	return fr
}

// queryFleet runs the fleet's queries as one request. When Prometheus rejects it, each query
// is sent alone, so that one bad query does not cost the others their answer.
func (e *Engine) queryFleet(ctx context.Context, p *playbooks.Playbook, exprs []string, keySuffix string, at time.Time) (playbooks.FleetValues, []string) {
	fr := newFleetRequest(p, exprs, e.pods)
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
	vals := playbooks.FleetValues{}
	notes := make([]string, len(exprs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range exprs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			one := &fleetRequest{names: fr.names[i : i+1], exprs: exprs[i : i+1], aggs: fr.aggs[i : i+1], ps: fr.ps}
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
