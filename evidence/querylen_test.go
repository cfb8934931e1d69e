package evidence

import (
	"context"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/facts"
	"github.com/vllm-responder/vllm-responder/internal/promql"
	"github.com/vllm-responder/vllm-responder/kube"
	"github.com/vllm-responder/vllm-responder/lora"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

// longestLabelValue is the longest label value the responder puts into a query
// (promql.MaxLabelValue: 253 bytes, the longest Kubernetes name; a longer one is refused before
// any query).
const longestLabelValue = promql.MaxLabelValue

// longValue is a value of n bytes that PromQL quoting writes as it is (a Kubernetes name, a
// served model name): what a real scope holds at its longest.
func longValue(prefix string, n int) string {
	return prefix + strings.Repeat("a", n-len(prefix)-1) + "z"
}

// recordingQuerier answers every request with nothing (no series) and keeps every request it was
// sent.
type recordingQuerier struct {
	mu    sync.Mutex
	asked []string
}

func (r *recordingQuerier) Query(_ context.Context, q string, _ time.Time) (model.Value, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, q)
	return model.Vector{}, nil
}

// Every request the responder sends fits DefaultMaxQueryBytes (VictoriaMetrics' default
// -search.maxQueryLen) whatever the scope's labels, at their longest: every built-in playbook's
// queries and its fleet's, with every label a scope or the pod lookup reads at 253 bytes, and the
// fact lookups (kube-state-metrics', the LoRA adapters') for a pod and workload of such names;
// the baselines' fallbacks too.
// A query fits alone, or has a recorded alternative (the stall history, over the shipped
// recording rules) that fits: without the rules such a query is not sent, and says so
// (TestAQueryTooLongForTheBackendIsNotSentAndSaysSo). With the recorded forms used, every
// request fits.
func TestEveryRequestFitsTheBackendsBoundWithTheLongestLabels(t *testing.T) {
	t.Parallel()
	labels := map[string]string{"alertname": "X", "severity": "critical"}
	for _, l := range []string{"namespace", "pod", "model_name", "instance", "engine", "llm_isvc_role"} {
		labels[l] = longValue(l+"-", longestLabelValue)
	}
	alts := AlternativesFunc(Recorded)
	for _, p := range builtinSet(t).All() {
		t.Run(p.Name, func(t *testing.T) {
			for _, withPod := range []bool{true, false} { // an alert's pod, and on-demand triage of the model
				ls := maps.Clone(labels)
				if !withPod {
					delete(ls, "pod")
					delete(ls, "instance")
				}
				for _, req := range append(RecordedRequests(p, ls, 0, alts), FallbackRequests(p, ls, 0)...) {
					if len(req) > DefaultMaxQueryBytes {
						t.Errorf("pod %v: a request of %d bytes (at most %d): %.300s…", withPod, len(req), DefaultMaxQueryBytes, req)
					}
				}
				x := p.ExpandAll(ls, playbooks.PodScope{})
				a := alts(p, ls, playbooks.PodScope{})
				for i, q := range x.Queries {
					if len(q) > DefaultMaxQueryBytes {
						t.Errorf("pod %v: query %s alone is %d bytes", withPod, p.Queries[i].Name, len(q))
					}
				}
				for i, q := range x.Fleet {
					if len(q) > DefaultMaxQueryBytes && (a.Fleet[i].Expr == "" || len(a.Fleet[i].Expr) > DefaultMaxQueryBytes || len(a.Fleet[i].Present) > DefaultMaxQueryBytes) {
						t.Errorf("pod %v: fleet query %s alone is %d bytes, and has no recorded form that fits", withPod, p.Fleet.Queries[i].Name, len(q))
					}
				}
			}
		})
	}

	// The fact lookups through the engine's path (a few queries to a request): every step of the
	// kube-state-metrics lookup for a pod of a Deployment of the longest names, and the LoRA one.
	t.Run("fact lookups", func(t *testing.T) {
		rq := &recordingQuerier{}
		e := NewEngine(rq, EngineOptions{CacheTTL: -1, Logger: zerolog.Nop()})
		ask := e.factsAsker("", time.Now())
		owned := func(ctx context.Context, qs []facts.Query) facts.Answer {
			a := ask(ctx, qs) // sent, for their length; answered as a Deployment's pod
			long := model.LabelValue(longValue("workload-", longestLabelValue))
			for _, q := range qs {
				switch q.Name {
				case "pod_owner":
					a.Vectors[q.Name] = model.Vector{{Metric: model.Metric{"owner_kind": kube.KindReplicaSet, "owner_name": long, "owner_is_controller": "true"}, Value: 1}}
				case "pod_rs_owner":
					a.Vectors[q.Name] = model.Vector{{Metric: model.Metric{"owner_kind": kube.KindDeployment, "owner_name": long, "owner_is_controller": "true"}, Value: 1}}
				}
			}
			return a
		}
		cfg := &kube.Config{}
		cfg.SetDefaults()
		r := cfg.Lookup(context.Background(), owned, kube.PodRef{Namespace: labels["namespace"], Name: labels["pod"]}, time.Now(), 5*time.Minute)
		if !r.Found || r.Workload.Kind != kube.KindDeployment {
			t.Fatalf("the lookup did not reach its second step: %+v", r)
		}
		lora.Lookup(context.Background(), ask, `vllm:lora_requests_info{namespace="`+labels["namespace"]+`",pod="`+labels["pod"]+`"}`)
		if len(rq.asked) < 3 {
			t.Fatalf("%d requests: want both kube steps and the LoRA lookup", len(rq.asked))
		}
		for _, q := range rq.asked {
			if len(q) > DefaultMaxQueryBytes {
				t.Errorf("a fact request of %d bytes: %.300s…", len(q), q)
			}
		}
	})
}

// A scope whose label values quote to more than the bound allows for a query (253 bytes of
// control characters, 4 bytes each once quoted) gets no request longer than the bound: a query
// that does not fit alone is not sent, and its evidence says why; the others are sent.
func TestAQueryTooLongForTheBackendIsNotSentAndSaysSo(t *testing.T) {
	t.Parallel()
	p, _ := builtinSet(t).Get("ttft-p99-high")
	v := strings.Repeat("\x01", longestLabelValue)
	rq := &recordingQuerier{}
	d, err := NewEngine(rq, EngineOptions{CacheTTL: -1, Logger: zerolog.Nop()}).
		Run(context.Background(), p, map[string]string{"alertname": "X", "namespace": v, "pod": v, "model_name": v})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range rq.asked {
		if len(q) > DefaultMaxQueryBytes {
			t.Errorf("a request of %d bytes was sent", len(q))
		}
	}
	notSent := 0
	for _, ev := range d.Evidence {
		if strings.HasPrefix(ev.Problem, "not sent: the query is ") {
			notSent++
		}
	}
	if notSent == 0 || len(rq.asked) == 0 || !strings.Contains(d.Error, "were refused by the backend or too long to send") {
		t.Errorf("%d requests sent, %d queries not sent, error %q; want the short ones sent, the long ones named with why", len(rq.asked), notSent, d.Error)
	}
	t.Logf("%d requests sent; %d queries too long to send; %s", len(rq.asked), notSent, d.Error)
}
