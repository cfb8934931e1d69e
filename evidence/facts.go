package evidence

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/facts"
	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
	"github.com/vllm-responder/vllm-responder/kube"
	"github.com/vllm-responder/vllm-responder/lora"
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
// has not looked up yet and marks it looked up, a source that is off or has no pod to look up
// marked and passed over. It reports whether a lookup was made. One source at a time: judged
// again with it, the verdict may be decided before the next source's first reader (a LoRA slot
// shortage asks nothing of kube-state-metrics).
func (e *Engine) lookupFacts(ctx context.Context, pl plan, g *gathered, sources []string) bool {
	for _, src := range sources {
		if slices.Contains(g.looked, src) {
			continue
		}
		g.looked = append(g.looked, src)
		switch src {
		case facts.SourceKube:
			if e.opt.Kube == nil || !e.opt.Kube.Enabled {
				continue
			}
			if pod, ok := e.factsPod(pl, g.fleet); ok {
				g.kube = e.opt.Kube.Lookup(ctx, e.factsAsker(pl.cacheSuffix, pl.at), kube.PodRef{Namespace: pod[0], Name: pod[1]}, pl.at, pl.p.Window)
				return true
			}
		case facts.SourceLoRA:
			if sel, ok := e.loraSelector(pl, g.fleet); ok {
				g.lora = lora.Lookup(ctx, e.factsAsker(pl.cacheSuffix, pl.at), sel)
				return true
			}
		}
	}
	return false
}

// factsOf are the facts g looked up (nil: none), with the lookups' notes.
func factsOf(g gathered) (*facts.Facts, []string) {
	if len(g.looked) == 0 {
		return nil, nil
	}
	f := facts.New(g.looked...)
	var notes []string
	if g.kube != nil {
		f.Merge(g.kube.Facts())
		notes = append(notes, kubeNotes(g.kube)...)
	}
	if g.lora != nil {
		f.Merge(g.lora.Facts())
		notes = append(notes, g.lora.Notes()...)
	}
	return f, notes
}

// factsPod is the pod whose facts are looked up: the alert's, or the fleet's focus pod. Its
// namespace is "" when the labels have none.
func (e *Engine) factsPod(pl plan, fleet playbooks.FleetValues) ([2]string, bool) {
	if pod, ok := kubePod(pl.labels, e.pods); ok {
		return [2]string{pod.Namespace, pod.Name}, true
	}
	if pl.p.Fleet != nil {
		if ns, name, ok := pl.p.FocusPod(fleet, pl.labels, e.pods); ok {
			return [2]string{ns, name}, true
		}
	}
	return [2]string{}, false
}

// loraSelector selects the pod's series of vLLM's LoRA family: by namespace and pod (the pod
// scope's label, or the instance standing in for it), never by model_name (the family has
// none), renamed as every vLLM query is.
func (e *Engine) loraSelector(pl plan, fleet playbooks.FleetValues) (string, bool) {
	labels := map[string]string{}
	for _, l := range []string{"namespace", e.pods.Name(), vllmnames.DefaultPodLabel, vllmnames.FallbackPodLabel} {
		if v := pl.labels[l]; v != "" {
			labels[l] = v
		}
	}
	m, used, _ := e.pods.Matchers([]string{"namespace", vllmnames.DefaultPodLabel}, labels)
	if len(used) == 0 || (len(used) == 1 && used["namespace"] != "") {
		pod, ok := e.factsPod(pl, fleet)
		if !ok {
			return "", false
		}
		m, _, _ = e.pods.Matchers([]string{"namespace", vllmnames.DefaultPodLabel}, map[string]string{"namespace": pod[0], e.pods.Name(): pod[1]})
	}
	return e.opt.Naming.Selector(lora.Metric, m), true
}

// kubePod is the pod to look up from the alert's labels: the pod the pod scope selects by the
// pod label (not an instance standing in for it), and its namespace when the alert has one
// (without, the pod's series name it).
func kubePod(labels map[string]string, ps playbooks.PodScope) (kube.PodRef, bool) {
	pod := labels[ps.Name()]
	if pod == "" {
		pod = labels[vllmnames.DefaultPodLabel]
	}
	return kube.PodRef{Namespace: labels["namespace"], Name: pod}, pod != ""
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
		send = func(chunk []kube.Query) {
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

// kubeNotes say what kube-state-metrics lacked and which of its queries failed. A Prometheus
// without kube-state-metrics at all (a fleet outside Kubernetes, or without it) gets no note on
// every diagnosis: the verdicts that would have used the facts say so themselves (kube_missing).
func kubeNotes(r *kube.Report) []string {
	var notes []string
	if r.Missing != "" && !r.Absent {
		notes = append(notes, "Kubernetes: "+r.Missing)
	}
	if len(r.Problems) > 0 {
		notes = append(notes, "kube-state-metrics queries failed: "+strings.Join(r.Problems, "; "))
	}
	return notes
}

// factEvidence lists the shown facts that have a value, each with the query it came from.
func factEvidence(g gathered, f *facts.Facts) []playbooks.Evidence {
	queries := map[string]map[string]string{}
	if g.kube != nil {
		queries[facts.SourceKube] = g.kube.Queries
	}
	if g.lora != nil {
		queries[facts.SourceLoRA] = map[string]string{lora.QueryName: g.lora.Query}
	}
	var out []playbooks.Evidence
	for _, fc := range playbooks.Facts() {
		if !fc.Shown || queries[fc.Source] == nil {
			continue
		}
		ev := playbooks.Evidence{Name: fc.Name, Title: fc.Title, Unit: fc.Unit, Query: queries[fc.Source][fc.Query]}
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
	return out
}
