package evidence

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

// A run sends its queries to Prometheus a few to a request: each query's answer is labelled with
// its name (label_replace(q, "vllm_responder_signal", "<name>", "", "")) and the labelled
// answers are joined with `or`; the engine splits the one answer apart again by that label.
//
// Why: every request costs Prometheus its HTTP and query setup and its JSON, and the responder
// its decoding, on top of the query's own work, and Prometheus runs at most
// --query.max-concurrency (20 by default) queries at once for everyone. A diagnosis of
// ttft-p99-high is 18 queries; sent alone they were 18 requests in flight during an incident,
// when Prometheus is busiest, and on the 2-core bench machine they took longer at once than two
// requests of 9 do (BENCHMARKS.md, time to diagnosis). The fleet's queries travel the same way
// (fleetRequest).
//
// What a query keeps: its own answer, interpreted as if it had been sent alone (one number, NaN,
// ±Inf, several series, none). What it shares with the others of its request: the request's
// warnings (Prometheus gives them per request) and the request's failure. When Prometheus (or
// a proxy in front of it) answers the request with an error, or it times out, each of its
// queries is sent again alone, so that one query cannot cost the others their answer; when the
// request cannot reach Prometheus at all (refused, DNS, TLS), every query of it is unreachable.

//
// How long a request may be: at most MaxQueryBytes of PromQL (EngineOptions.MaxQueryBytes).
// VictoriaMetrics refuses a longer query (-search.maxQueryLen, 16 KiB by default: "422: too long
// query"), and a request's length grows with the scope's label values, which every selector
// repeats. The queries of a request are split further until each request fits; a query that
// does not fit alone is not sent (query.go), and the diagnosis says why.

// defaultQueriesPerRequest is EngineOptions.QueriesPerRequest's default.
const defaultQueriesPerRequest = 10

// DefaultMaxQueryBytes is EngineOptions.MaxQueryBytes' default: VictoriaMetrics'
// -search.maxQueryLen default, the shortest bound of the backends docs/deploy.md names.
const DefaultMaxQueryBytes = 16384

// foldedLen is the length foldQueries gives one query of several: the query labelled with its
// name, and the " or " that joins it to the next.
func foldedLen(name, expr string) int { return len(labelled(name, "")) + len(expr) + len(" or ") }

// signalLabel names each query's answer in a request that carries several queries.
const signalLabel = "vllm_responder_signal"

// foldQueries is the PromQL of one request carrying exprs, each answer labelled with its name.
func foldQueries(names, exprs []string) string {
	if len(exprs) == 1 {
		return exprs[0]
	}
	var b strings.Builder
	for i, e := range exprs {
		if i > 0 {
			b.WriteString(" or ")
		}
		b.WriteString(labelled(names[i], e))
	}
	return b.String()
}

// FoldQueries is the PromQL of one request carrying exprs, as the engine folds a run's queries
// into one request (for references that must be shaped as the engine's requests are).
func FoldQueries(names, exprs []string) string { return foldQueries(names, exprs) }

// labelled is expr with its answer labelled with name (signalLabel).
func labelled(name, expr string) string {
	return fmt.Sprintf("label_replace(%s, %q, %q, \"\", \"\")", expr, signalLabel, name)
}

// splitBySignal is foldQueries' answer apart again, by name.
func splitBySignal(x model.Vector) map[string]model.Vector {
	out := map[string]model.Vector{}
	for _, s := range x {
		sig := string(s.Metric[signalLabel])
		out[sig] = append(out[sig], s)
	}
	return out
}

// answerKind is how a request that carries several queries keys its cached answer and reads it.
type answerKind interface {
	// key sets the cached answer apart from an answer of the same PromQL read another way.
	key() string
	// interpret reads Prometheus' answer (err nil).
	interpret(v model.Value) result
}

// queryBatch is one request carrying several of a run's queries, by name.
type queryBatch struct {
	names []string
}

func (b *queryBatch) key() string { return "batch\x00" }

// interpret splits the answer into each query's own result, as interpret would have read its
// answer alone. The request's status is QueryOK whatever its queries' are.
func (b *queryBatch) interpret(v model.Value) result {
	x, ok := v.(model.Vector)
	if !ok {
		return result{status: QueryError, problem: fmt.Sprintf("a request of %d queries came back as a %s, not an instant vector", len(b.names), v.Type())}
	}
	by := splitBySignal(x)
	r := result{status: QueryOK, parts: make([]result, len(b.names))}
	for i, n := range b.names {
		r.parts[i] = interpret(by[n], nil, context.Background())
	}
	return r
}

// groups splits p's queries (but those skip takes) into requests: the instant-vector queries
// at most perRequest to a request, as evenly as can be (18 by 10 are two requests of 9), each
// request split further until its PromQL (exprs, by p.Queries) is at most maxBytes long, and
// every other query alone (a scalar cannot be labelled).
func groups(p *playbooks.Playbook, exprs []string, perRequest, maxBytes int, skip func(i int) bool) [][]int {
	var folded []int
	var out [][]int
	for i, q := range p.Queries {
		switch {
		case skip != nil && skip(i):
		case q.Vector() && perRequest > 1:
			folded = append(folded, i)
		default:
			out = append(out, []int{i})
		}
	}
	if len(folded) > 0 {
		n := (len(folded) + perRequest - 1) / perRequest
		for k := range n {
			out = append(out, fitted(folded[k*len(folded)/n:(k+1)*len(folded)/n], maxBytes, func(i int) int {
				return foldedLen(p.Queries[i].Name, exprs[i])
			})...)
		}
	}
	return out
}

// fitted splits g, in its order, into runs whose folded length (size of each, added up) is at
// most maxBytes; a query longer than that on its own is a run of its own.
func fitted(g []int, maxBytes int, size func(i int) int) [][]int {
	var out [][]int
	start, total := 0, 0
	for k, i := range g {
		n := size(i)
		if k > start && total+n > maxBytes {
			out = append(out, g[start:k])
			start, total = k, 0
		}
		total += n
	}
	return append(out, g[start:])
}

// fold is the request that carries the queries g of p (indexes into p.Queries and exprs, their
// expansions): their names, and its PromQL.
func fold(p *playbooks.Playbook, g []int, exprs []string) (names []string, promQL string) {
	names, folded := make([]string, len(g)), make([]string, len(g))
	for k, i := range g {
		names[k], folded[k] = p.Queries[i].Name, exprs[i]
	}
	return names, foldQueries(names, folded)
}

// queryAll runs a playbook's queries (expressions exprs, keySuffix as for query), a few to a
// request, and returns each query's result: the queries send marks, the others not sent
// (result.notSent). A query whose result is cached is not sent either.
func (e *Engine) queryAll(ctx context.Context, p *playbooks.Playbook, exprs []string, keySuffix string, at time.Time, send []bool) []result {
	results := make([]result, len(exprs))
	gs := groups(p, exprs, e.opt.QueriesPerRequest, e.opt.MaxQueryBytes, func(i int) bool {
		if !send[i] {
			results[i] = result{notSent: true}
			return true
		}
		r, ok := e.cached(exprs[i] + keySuffix)
		if ok {
			results[i] = r
		}
		return ok
	})
	var wg sync.WaitGroup
	for _, g := range gs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.queryGroup(ctx, p, g, exprs, keySuffix, at, results)
		}()
	}
	wg.Wait()
	return results
}

// queryGroup runs the queries g (indexes into p.Queries and exprs) as one request and writes
// each one's result into results[i].
func (e *Engine) queryGroup(ctx context.Context, p *playbooks.Playbook, g []int, exprs []string, keySuffix string, at time.Time, results []result) {
	if len(g) == 1 {
		results[g[0]] = e.query(ctx, exprs[g[0]], keySuffix, at, nil)
		return
	}
	names, promQL := fold(p, g, exprs)
	r := e.query(ctx, promQL, keySuffix, at, &queryBatch{names: names})
	switch {
	case r.status == QueryOK:
		for k, i := range g {
			part := r.parts[k]
			part.warnings = r.warnings
			results[i] = part
			if len(r.warnings) == 0 && (part.status == QueryOK || part.status == QueryEmpty) {
				e.store(exprs[i]+keySuffix, part) // for another playbook's same query
			}
		}
	case !r.transport && ctx.Err() == nil:
		// Rejected, too slow or refused (a 5xx) as a whole: each alone, so that one query costs
		// only itself its answer.
		var wg sync.WaitGroup
		for _, i := range g {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = e.query(ctx, exprs[i], keySuffix, at, nil)
			}()
		}
		wg.Wait()
	default:
		for _, i := range g {
			results[i] = result{status: r.status, problem: r.problem}
		}
	}
}

// Requests is the PromQL of every request a run of p for an alert with these labels sends to
// Prometheus at once, with the default pod label, the default bound on a request's length and
// nothing cached: its queries queriesPerRequest to a request (0: the engine's default), then the
// fleet requests (the playbook's own fleet queries in two halves, more where the labels make
// one longer than the bound, and the shared history in its own). The number of requests
// does not grow with the number of pods. The baselines' fallbacks, sent after them where a
// baseline's first variant has no value, are FallbackRequests.
func Requests(p *playbooks.Playbook, labels map[string]string, queriesPerRequest int) []string {
	return requests(p, labels, queriesPerRequest, playbooks.PodScope{}, nil)
}

// FallbackRequests is the PromQL of the requests a run of p sends after Requests (as Requests
// counts them) when none of its baselines' first variants has a value: every fallback the
// scope can read (playbooks.Playbook.Fallbacks), queriesPerRequest to a request. A run where
// some have a value sends fewer; one where all have, none.
func FallbackRequests(p *playbooks.Playbook, labels map[string]string, queriesPerRequest int) []string {
	if queriesPerRequest == 0 {
		queriesPerRequest = defaultQueriesPerRequest
	}
	x := p.ExpandAll(labels, playbooks.PodScope{})
	need := p.Fallbacks(nil, p.PodScoped(labels, playbooks.PodScope{}))
	var out []string
	for _, g := range groups(p, x.Queries, queriesPerRequest, DefaultMaxQueryBytes, func(i int) bool { return !need[i] }) {
		_, promQL := fold(p, g, x.Queries)
		out = append(out, promQL)
	}
	return out
}

// RequestsWith is what a run sends from an engine configured as serve and triage configure
// theirs (internal/stack): pods named as n says (its pod and role labels) and the playbook's
// recorded forms (Recorded), its cache empty: their checks, then the requests with the recorded
// forms where the rules' series are found (recorded), or with the raw forms where not.
func RequestsWith(p *playbooks.Playbook, labels map[string]string, queriesPerRequest int, n vllmnames.Naming, recorded bool) []string {
	ps := playbooks.PodScope{Label: n.PodLabel, Role: n.RoleLabel}
	alts := AlternativesFunc(Recorded)
	var out []string
	seen := map[string]bool{}
	a := alts(p, labels, ps)
	for _, alt := range append(a.Queries, a.Fleet...) {
		if alt.Expr != "" && alt.Present != "" && !seen[alt.Present] {
			seen[alt.Present] = true
			out = append(out, alt.Present)
		}
	}
	if !recorded {
		alts = nil
	}
	return append(out, requests(p, labels, queriesPerRequest, ps, alts)...)
}

// RecordedRequests is Requests where the recorded alternatives alts gives are used (their
// checks answered), the checks not counted: what a run sends where the shipped recording rules
// run. A nil alts is Requests.
func RecordedRequests(p *playbooks.Playbook, labels map[string]string, queriesPerRequest int, alts AlternativesFunc) []string {
	return requests(p, labels, queriesPerRequest, playbooks.PodScope{}, alts)
}

// requests are the requests of a run of p with pods named as ps says, the recorded forms alts
// gives used (nil: none).
func requests(p *playbooks.Playbook, labels map[string]string, queriesPerRequest int, ps playbooks.PodScope, alts AlternativesFunc) []string {
	if queriesPerRequest == 0 {
		queriesPerRequest = defaultQueriesPerRequest
	}
	x := p.ExpandAll(labels, ps)
	var shared []bool
	if alts != nil {
		a := alts(p, labels, ps)
		yes := func(as []Alternative) map[string]bool {
			m := map[string]bool{}
			for _, alt := range as {
				m[alt.Present] = true
			}
			return m
		}
		x.Queries = swapped(x.Queries, a.Queries, yes(a.Queries))
		x.Fleet = swapped(x.Fleet, a.Fleet, yes(a.Fleet))
		shared = make([]bool, len(x.Fleet))
		for i, alt := range a.Fleet {
			shared[i] = i < len(shared) && alt.Expr != ""
		}
	}
	first := firstRound(p)
	var out []string
	for _, g := range groups(p, x.Queries, queriesPerRequest, DefaultMaxQueryBytes, func(i int) bool { return !first[i] }) {
		_, promQL := fold(p, g, x.Queries)
		out = append(out, promQL)
	}
	if p.Fleet != nil {
		for _, fr := range newFleetRequests(p, x.Fleet, shared, ps, DefaultMaxQueryBytes) {
			out = append(out, fr.promQL())
		}
	}
	return out
}
