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

// promQL is the request's PromQL: each query's answer labelled with its name, one query alone
// too (so that every fleet answer reads the same way, however the queries were split).
func (fr *fleetRequest) promQL() string {
	if len(fr.exprs) == 1 {
		return labelled(fr.names[0], fr.exprs[0])
	}
	return foldQueries(fr.names, fr.exprs)
}

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

// fleetOwnSplit is how many requests the playbook's own fleet queries are split into at least
// (when there are as many queries). Prometheus evaluates one request's expression on one goroutine:
// over a model's 50 pods the fleet's dozen queries in one request were the diagnosis' longest wait
// (36 ms of its 56), and two halves in flight at once use two of Prometheus' cores (the bench's time
// to diagnosis on a 50-pod model, BENCHMARKS.md). Two, not one per query: each request costs a round
// trip and Prometheus' own per-request work, and the shared history already travels apart.
const fleetOwnSplit = 2

// newFleetRequests are the requests of p's fleet queries, expanded as exprs, series named as ps
// says: the playbook's own queries in fleetOwnSplit requests (halves by count, in the playbook's
// order), each split further where its PromQL would be longer than maxBytes (the scope's label
// values repeat in every selector). The queries shared marks (the history every playbook shares,
// recorded.go) travel in requests of their own.
func newFleetRequests(p *playbooks.Playbook, exprs []string, shared []bool, ps playbooks.PodScope, maxBytes int) []*fleetRequest {
	var own, common []int
	for i := range exprs {
		if i < len(shared) && shared[i] {
			common = append(common, i)
		} else {
			own = append(own, i)
		}
	}
	size := func(i int) int { return foldedLen(p.Fleet.Queries[i].Name, exprs[i]) }
	var groups [][]int
	for k := range fleetOwnSplit {
		groups = append(groups, own[k*len(own)/fleetOwnSplit:(k+1)*len(own)/fleetOwnSplit])
	}
	groups = append(groups, common)
	var runs [][]int
	for _, g := range groups {
		if len(g) > 0 {
			runs = append(runs, fitted(g, maxBytes, size)...)
		}
	}
	var out []*fleetRequest
	for _, run := range runs {
		fr := &fleetRequest{ps: ps}
		for _, i := range run {
			fr.names = append(fr.names, p.Fleet.Queries[i].Name)
			fr.exprs = append(fr.exprs, exprs[i])
			fr.aggs = append(fr.aggs, p.Fleet.Aggs[i])
		}
		out = append(out, fr)
	}
	return out
}

// queryFleet runs the fleet's queries in their requests (newFleetRequests), the requests at
// once.
func (e *Engine) queryFleet(ctx context.Context, p *playbooks.Playbook, exprs []string, shared []bool, keySuffix string, at time.Time) (playbooks.FleetValues, []string) {
	frs := newFleetRequests(p, exprs, shared, e.pods, e.opt.MaxQueryBytes)
	if len(frs) == 1 {
		return e.queryFleetRequest(ctx, frs[0], keySuffix, at)
	}
	vals := playbooks.FleetValues{}
	notes := make([][]string, len(frs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for k, fr := range frs {
		wg.Go(func() {
			v, n := e.queryFleetRequest(ctx, fr, keySuffix, at)
			mu.Lock()
			defer mu.Unlock()
			maps.Copy(vals, v)
			notes[k] = n
		})
	}
	wg.Wait()
	return vals, slices.Concat(notes...)
}

// queryFleetRequest runs one request of fleet queries. When Prometheus rejects it, each query is
// sent alone, so that one bad query does not cost the others their answer.
func (e *Engine) queryFleetRequest(ctx context.Context, fr *fleetRequest, keySuffix string, at time.Time) (playbooks.FleetValues, []string) {
	r := e.query(ctx, fr.promQL(), keySuffix, at, fr)
	if r.status != QueryError || len(fr.exprs) == 1 {
		var notes []string
		if r.problem != "" && r.status != QueryEmpty {
			what := "fleet queries"
			if len(fr.names) == 1 {
				what = "fleet query " + fr.names[0]
			}
			notes = append(notes, what+": "+r.problem)
		}
		if len(r.warnings) > 0 {
			notes = append(notes, "fleet queries came back with warnings, the sibling comparison may be partial: "+strings.Join(r.warnings, "; "))
		}
		return r.fleet, notes
	}
	vals := playbooks.FleetValues{}
	notes := make([]string, len(fr.exprs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range fr.exprs {
		wg.Go(func() {
			one := &fleetRequest{names: fr.names[i : i+1], exprs: fr.exprs[i : i+1], aggs: fr.aggs[i : i+1], ps: fr.ps}
			r := e.query(ctx, fr.exprs[i], keySuffix, at, one)
			mu.Lock()
			defer mu.Unlock()
			maps.Copy(vals, r.fleet)
			if r.problem != "" && r.status != QueryEmpty {
				notes[i] = fmt.Sprintf("fleet query %s: %s", fr.names[i], r.problem)
			}
		})
	}
	wg.Wait()
	return vals, slices.DeleteFunc(notes, func(n string) bool { return n == "" })
}
