package router_test

import (
	"context"
	"testing"

	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/facts"
	"github.com/vllm-responder/vllm-responder/router"
)

// The router's series as a source: no pod, no query; a pod, one query joining the router's
// server URLs to the pod's scrape target, and the routers it answers named.
func TestTheRouterInFrontOfAPodIsNamedByItsScrapeTarget(t *testing.T) {
	var asked []string
	ask := func(_ context.Context, qs []facts.Query) facts.Answer {
		for _, q := range qs {
			asked = append(asked, q.Expr)
		}
		return facts.Answer{Vectors: map[string]model.Vector{router.QueryName: {
			{Metric: model.Metric{"namespace": "llm", "pod": "vllm-router-1", "instance": "10.0.0.9:8001"}},
			{Metric: model.Metric{"instance": "10.0.0.8:8001"}},
			{Metric: model.Metric{"namespace": "llm", "pod": "vllm-router-0", "instance": "10.0.0.7:8001"}},
		}}}
	}
	none := facts.Subject{Series: func(string) string { return "" }}
	if r := (router.Source{}).Lookup(context.Background(), ask, none); r != nil || len(asked) > 0 {
		t.Fatalf("without a pod: %+v, asked %q", r, asked)
	}
	pod := facts.Subject{Series: func(m string) string { return m + `{server="",namespace="llm",pod="vllm-0"}` }}
	r := (router.Source{}).Lookup(context.Background(), ask, pod)
	want := `group by (namespace, pod, instance) (label_replace(vllm:num_prefill_requests{server!=""}, "engine_instance", "$1", "server", "https?://([^/]+).*")` +
		` and on (engine_instance) label_replace(group by (instance) (vllm:num_requests_running{server="",namespace="llm",pod="vllm-0"}), "engine_instance", "$1", "instance", "(.*)"))`
	if r == nil || len(asked) != 1 || asked[0] != want || r.Queries[router.QueryName] != want {
		t.Fatalf("with a pod: %+v, asked %q", r, asked)
	}
	if got := r.Facts.Label("router_name"); got != "10.0.0.8:8001, llm/vllm-router-0 (10.0.0.7:8001), llm/vllm-router-1 (10.0.0.9:8001)" || !r.Facts.Looked(router.SourceName) {
		t.Errorf("router_name %q, facts %+v", got, r.Facts)
	}
	failed := func(context.Context, []facts.Query) facts.Answer {
		return facts.Answer{Problems: map[string]string{router.QueryName: "timed out"}}
	}
	if r := (router.Source{}).Lookup(context.Background(), failed, pod); r.Facts.Label("router_name") != "" || len(r.Notes) != 1 {
		t.Errorf("a failed query: %+v", r)
	}
}
