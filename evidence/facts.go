package evidence

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/facts"
	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

// The facts of a diagnosis (package facts): looked up once the playbook's queries are judged,
// and only when a rule on the way to the verdict reads one of a source's facts
// (playbooks.Diagnosis.FactSources: a capacity verdict says what the autoscaler does, a stall or
// an imbalance names the pod's workload and node, the LoRA rule reads the pod's adapters; a KV or
// prefill verdict costs nothing more), for the alert's pod, or the pod the fleet puts first when
// the alert names none; sent through the same query path (cache, sharing, the bound on requests
// in flight), a few queries to a request. One source at a time, in the order of the rules that
// read them, each once in a run: judged again with one source's facts, the verdict may be
// decided before the next source is needed.

// lookupFacts looks up the first of sources (in the order of the rules that read them) that g
// has not looked up yet and marks it looked up, a source that is not in the engine's list,
// is off or has nothing to look up (no pod) marked and passed over. It reports whether a lookup
// was made. One source at a time: judged again with it, the verdict may be decided before the
// next source's first reader (a LoRA slot shortage asks nothing of kube-state-metrics).
func (e *Engine) lookupFacts(ctx context.Context, pl plan, g *gathered, sources []string) bool {
	for _, name := range sources {
		if slices.Contains(g.looked, name) {
			continue
		}
		g.looked = append(g.looked, name)
		i := slices.IndexFunc(e.opt.Facts, func(s facts.Source) bool { return s.Name() == name })
		if i < 0 {
			continue
		}
		if r := e.opt.Facts[i].Lookup(ctx, e.factsAsker(pl.cacheSuffix, pl.at), e.subject(pl, g.fleet)); r != nil {
			if g.found == nil {
				g.found = map[string]*facts.Result{}
			}
			g.found[name] = r
			return true
		}
	}
	return false
}

// factsOf are the facts g looked up (nil: none), with the lookups' notes, in the order of the
// engine's sources.
func (e *Engine) factsOf(g gathered) (*facts.Facts, []string) {
	if len(g.looked) == 0 {
		return nil, nil
	}
	f := facts.New(g.looked...)
	var notes []string
	for _, src := range e.opt.Facts {
		if r := g.found[src.Name()]; r != nil {
			f.Merge(r.Facts)
			notes = append(notes, r.Notes...)
		}
	}
	return f, notes
}

// subject is what a lookup is about: the alert's pod, or the fleet's focus pod, and the
// selector of its vLLM series.
func (e *Engine) subject(pl plan, fleet playbooks.FleetValues) facts.Subject {
	pod, ok := e.factsPod(pl, fleet)
	s := facts.Subject{Namespace: pod[0], Pod: pod[1], At: pl.at, Window: pl.p.Window}
	s.Series = e.podSeries(pl, pod, ok)
	return s
}

// factsPod is the pod whose facts are looked up: the alert's, or the fleet's focus pod. Its
// namespace is "" when the labels have none.
func (e *Engine) factsPod(pl plan, fleet playbooks.FleetValues) ([2]string, bool) {
	if pod, ok := kubePod(pl.labels, e.pods); ok {
		return pod, true
	}
	if pl.p.Fleet != nil {
		if ns, name, ok := pl.p.FocusPod(fleet, pl.labels, e.pods); ok {
			return [2]string{ns, name}, true
		}
	}
	return [2]string{}, false
}

// podSeries selects the pod's series of a vLLM metric: by namespace and pod (the pod scope's
// label, or the instance standing in for it), never by model_name (the API server's families,
// vLLM's LoRA family among them, have none), renamed as every vLLM query is. Without a pod in
// the alert's labels, the pod is the facts' pod (pod, ok false: none, and the selector "").
func (e *Engine) podSeries(pl plan, pod [2]string, ok bool) func(metric string) string {
	labels := map[string]string{}
	for _, l := range []string{"namespace", e.pods.Name(), vllmnames.DefaultPodLabel, vllmnames.FallbackPodLabel} {
		if v := pl.labels[l]; v != "" {
			labels[l] = v
		}
	}
	m, used, _ := e.pods.Matchers([]string{"namespace", vllmnames.DefaultPodLabel}, labels)
	if len(used) == 0 || (len(used) == 1 && used["namespace"] != "") {
		if !ok {
			return func(string) string { return "" }
		}
		m, _, _ = e.pods.Matchers([]string{"namespace", vllmnames.DefaultPodLabel}, map[string]string{"namespace": pod[0], e.pods.Name(): pod[1]})
	}
	return func(metric string) string { return e.opt.Naming.Selector(metric, m) }
}

// kubePod is the pod to look up from the alert's labels: the pod the pod scope selects by the
// pod label (not an instance standing in for it), and its namespace when the alert has one
// (without, the pod's series name it).
func kubePod(labels map[string]string, ps playbooks.PodScope) ([2]string, bool) {
	pod := labels[ps.Name()]
	if pod == "" {
		pod = labels[vllmnames.DefaultPodLabel]
	}
	return [2]string{labels["namespace"], pod}, pod != ""
}

// vectorBatch is a request carrying several named queries whose answers are kept as series,
// split apart by name as a run's own queries are (batch.go).
type vectorBatch struct{ names []string }

func (b *vectorBatch) key() string { return "vectors\x00" }

func (b *vectorBatch) interpret(v model.Value) result {
	x, ok := v.(model.Vector)
	if !ok {
		return result{status: QueryError, problem: fmt.Sprintf("came back as a %s, not an instant vector", v.Type())}
	}
	by := map[string]model.Vector{b.names[0]: x}
	if len(b.names) > 1 {
		by = splitBySignal(x)
	}
	return result{status: QueryOK, vectors: by}
}

// factsAsker sends a lookup step's queries QueriesPerRequest to a request, all requests at once;
// a request Prometheus refuses as a whole (a query of it that cannot run) is sent again query by
// query, so that one query costs only itself its answer.
func (e *Engine) factsAsker(keySuffix string, at time.Time) facts.Asker {
	return func(ctx context.Context, qs []facts.Query) facts.Answer {
		a := facts.Answer{Vectors: map[string]model.Vector{}, Problems: map[string]string{}}
		var mu sync.Mutex
		var send func(chunk []facts.Query)
		send = func(chunk []facts.Query) {
			names, exprs := make([]string, len(chunk)), make([]string, len(chunk))
			for i, q := range chunk {
				names[i], exprs[i] = q.Name, q.Expr
			}
			r := e.query(ctx, foldQueries(names, exprs), keySuffix, at, &vectorBatch{names: names})
			if r.status != QueryOK && len(chunk) > 1 && !r.transport && ctx.Err() == nil {
				var wg sync.WaitGroup
				for _, q := range chunk {
					wg.Go(func() { send([]facts.Query{q}) })
				}
				wg.Wait()
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, n := range names {
				if r.status != QueryOK {
					a.Problems[n] = r.problem
				} else if v := r.vectors[n]; len(v) > 0 {
					a.Vectors[n] = v
				}
			}
		}
		per := max(e.opt.QueriesPerRequest, 1)
		n := (len(qs) + per - 1) / per
		all := make([]int, len(qs))
		for i := range all {
			all[i] = i
		}
		var wg sync.WaitGroup
		for k := range n {
			// at most per to a request, and each request within MaxQueryBytes (batch.go)
			for _, run := range fitted(all[k*len(qs)/n:(k+1)*len(qs)/n], e.opt.MaxQueryBytes, func(i int) int { return foldedLen(qs[i].Name, qs[i].Expr) }) {
				chunk := make([]facts.Query, len(run))
				for j, i := range run {
					chunk[j] = qs[i]
				}
				wg.Go(func() { send(chunk) })
			}
		}
		wg.Wait()
		return a
	}
}

// factEvidence lists the shown facts that have a value, each with the query it came from, in
// the order of the engine's sources.
func (e *Engine) factEvidence(g gathered, f *facts.Facts) []playbooks.Evidence {
	var out []playbooks.Evidence
	for _, src := range e.opt.Facts {
		r := g.found[src.Name()]
		if r == nil {
			continue
		}
		for _, fc := range src.Facts() {
			if !fc.Shown {
				continue
			}
			ev := playbooks.Evidence{Name: fc.Name, Title: fc.Title, Unit: fc.Unit, Query: r.Queries[fc.Query]}
			if fc.Label {
				if ev.Label = f.Label(fc.Name); ev.Label == "" {
					continue
				}
				ev.Text = ev.Label
			} else {
				if ev.Value = f.Number(fc.Name); ev.Value == nil {
					continue
				}
				ev.Text = playbooks.FormatValue(ev.Value, fc.Unit)
			}
			out = append(out, ev)
		}
	}
	return out
}
