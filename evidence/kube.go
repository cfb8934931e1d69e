package evidence

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
	"github.com/vllm-responder/vllm-responder/kube"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

// What kube-state-metrics says about the diagnosed pod (package kube): looked up once the
// playbook's queries are judged, and only when a rule on the way to the verdict reads it
// (playbooks.Diagnosis.NeedsFacts: a capacity verdict says what the autoscaler does, a stall
// or an imbalance names the pod's workload and node; a KV or prefill verdict costs nothing
// more), for the alert's pod, or the pod the fleet puts first when the alert names none; sent
// through the same query path (cache, sharing, the bound on requests in flight), a few queries
// to a request.

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

// lookupKube runs the kube-state-metrics lookup of a run: for the alert's pod, or the fleet's
// focus pod. nil when it is off or no pod is known.
func (e *Engine) lookupKube(ctx context.Context, pl plan, fleet playbooks.FleetValues) *kube.Report {
	if e.opt.Kube == nil || !e.opt.Kube.Enabled {
		return nil
	}
	pod, ok := kubePod(pl.labels, e.pods)
	if !ok && pl.p.Fleet != nil {
		var ns, name string
		ns, name, ok = pl.p.FocusPod(fleet, pl.labels, e.pods)
		pod = kube.PodRef{Namespace: ns, Name: name}
	}
	if !ok {
		return nil
	}
	return e.opt.Kube.Lookup(ctx, e.kubeAsker(pl.cacheSuffix, pl.at), pod, pl.at, pl.p.Window)
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

// kubeAsker sends a lookup step's queries QueriesPerRequest to a request, all requests at once;
// a request Prometheus refuses as a whole (a query of it that cannot run) is sent again query by
// query, so that one query costs only itself its answer.
func (e *Engine) kubeAsker(keySuffix string, at time.Time) kube.Asker {
	return func(ctx context.Context, qs []kube.Query) kube.Answer {
		a := kube.Answer{Vectors: map[string]model.Vector{}, Problems: map[string]string{}}
		var mu sync.Mutex
		var send func(chunk []kube.Query)
		send = func(chunk []kube.Query) {
			names, exprs := make([]string, len(chunk)), make([]string, len(chunk))
			for i, q := range chunk {
				names[i], exprs[i] = q.Name, q.Expr
			}
			r := e.query(ctx, foldQueries(names, exprs), keySuffix, at, &vectorBatch{names: names})
			if r.status != QueryOK && len(chunk) > 1 && !r.transport && ctx.Err() == nil {
				var wg sync.WaitGroup
				for _, q := range chunk {
					wg.Go(func() { send([]kube.Query{q}) })
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
		var wg sync.WaitGroup
		for k := range n {
			wg.Go(func() { send(qs[k*len(qs)/n : (k+1)*len(qs)/n]) })
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

// kubeEvidence lists the shown facts that have a value, each with the query it came from.
func kubeEvidence(r *kube.Report, f *kube.Facts) []playbooks.Evidence {
	var out []playbooks.Evidence
	for _, fc := range kube.Names() {
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
	return out
}
