// Package router names vLLM production-stack's router in front of a pod: the scrape targets that
// export the router's own `vllm:num_prefill_requests{server}` with a server URL that names the
// pod's scrape target (`http://<pod IP>:<port>`, its Kubernetes pod-IP discovery, against the
// pod's `instance`; docs/vllm-facts.md, "Requests held before the engine"). The router's series
// are selected by `server!=""` and keep the router's own names (vllm.metric_prefix renames the
// engines' series, not the router's); the pod's are selected as every vLLM query's are.
package router

import (
	"context"
	"slices"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/facts"
)

// SourceName names the router's series as a fact source (facts.Source).
const SourceName = "production-stack router"

// QueryName names the lookup's one query (Fact.Query of the router's facts).
const QueryName = "router_targets"

// engineMetric is the pod's series the router's server URL is joined to (by its instance).
const engineMetric = "vllm:num_requests_running"

// Source is the production-stack router's series as a fact source (package facts). It looks
// nothing up when the diagnosis has no pod.
type Source struct{}

// Name implements facts.Source.
func (Source) Name() string { return SourceName }

// Facts implements facts.Source.
func (Source) Facts() []facts.Fact {
	return []facts.Fact{{
		Name:  "router_name",
		Doc:   "the vLLM production-stack router(s) that send requests to the pod: `namespace/pod (instance)` of each scrape target exporting `vllm:num_prefill_requests{server}` whose server URL names the pod's scrape target (`instance`), comma-separated",
		Title: "production-stack router in front of the pod", Label: true, Shown: true,
		Query: QueryName, Source: SourceName,
	}}
}

// Query is the PromQL of the routers in front of the pod whose series of engineMetric pod
// selects (renamed, router series excluded, the pod quoted into it).
func Query(pod string) string {
	return `group by (namespace, pod, instance) (label_replace(vllm:num_prefill_requests{server!=""}, "engine_instance", "$1", "server", "https?://([^/]+).*")` +
		` and on (engine_instance) label_replace(group by (instance) (` + pod + `), "engine_instance", "$1", "instance", "(.*)"))`
}

// Lookup implements facts.Source.
func (Source) Lookup(ctx context.Context, ask facts.Asker, s facts.Subject) *facts.Result {
	sel := s.Series(engineMetric)
	if sel == "" {
		return nil
	}
	q := Query(sel)
	r := &facts.Result{Facts: facts.New(SourceName), Queries: map[string]string{QueryName: q}}
	a := ask(ctx, []facts.Query{{Name: QueryName, Expr: q}})
	if p, ok := a.Problems[QueryName]; ok {
		r.Notes = []string{"the production-stack router query (vllm:num_prefill_requests) failed: " + p}
		return r
	}
	if n := names(a.Vectors[QueryName]); n != "" {
		r.Facts.SetLabel("router_name", n)
	}
	return r
}

// names are the routers as a message names them: namespace/pod (instance), or the instance
// alone where the scrape gives no pod, sorted and comma-separated.
func names(v model.Vector) string {
	var out []string
	for _, s := range v {
		inst, pod, ns := string(s.Metric["instance"]), string(s.Metric["pod"]), string(s.Metric["namespace"])
		n := inst
		switch {
		case pod != "" && ns != "":
			n = ns + "/" + pod + " (" + inst + ")"
		case pod != "":
			n = pod + " (" + inst + ")"
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return strings.Join(slices.Compact(out), ", ")
}
