package sim

import (
	"fmt"
	"io"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"
)

// gatewayClock runs a gateway and the engines behind it in virtual time, in 10 ms ticks.
type gatewayClock struct {
	t    *testing.T
	g    *Gateway
	pods []*vclock
	now  time.Time
}

func newGatewayClock(t *testing.T, kind GatewayKind, pods int, scenario string) *gatewayClock {
	t.Helper()
	c := &gatewayClock{t: t, now: epoch}
	var engines []*Engine
	for i := range pods {
		cfg := DefaultConfig()
		cfg.Seed += uint64(i)
		v := newVirtual(t, cfg, "")
		c.pods, engines = append(c.pods, v), append(engines, v.e)
	}
	g, err := NewGateway(GatewayConfig{Kind: kind, Pool: "llama"}, engines...)
	if err != nil {
		t.Fatal(err)
	}
	c.g = g
	if err := g.Apply(scenario, c.now); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *gatewayClock) run(d time.Duration) {
	end := c.now.Add(d)
	for c.now.Before(end) {
		c.now = c.now.Add(10 * time.Millisecond)
		for _, v := range c.pods {
			for v.now.Before(c.now) {
				res := v.e.Step(v.now)
				next := v.now.Add(res.Duration)
				if !res.Busy && next.After(c.now) {
					next = c.now // an idle engine looks again at the next tick
				}
				v.now = next
			}
		}
		c.g.Advance(c.now)
	}
}

// snap is the gateway's registry at now, keyed as the engines' snapshots are.
func (c *gatewayClock) snap() snapshot {
	c.t.Helper()
	return gatherSnapshot(c.t, c.g.Registry(), c.now)
}

// engines is what Prometheus would read from each pod now.
func (c *gatewayClock) engines() []snapshot {
	var out []snapshot
	for _, v := range c.pods {
		out = append(out, v.snap())
	}
	return out
}

const eppFlow = "fairness_id=default-flow,inference_pool=llama,priority=0,target_model_name=meta-llama/Llama-3.1-8B-Instruct"

// gateway-held: the EPP's scrapes of the pods fail; every endpoint goes stale and scores as
// saturated, so the pool's saturation pins at exactly 1.0 and dispatch halts. Requests wait in
// the EPP while every engine has an empty queue, room in its batch and a free KV cache.
func TestAnEPPWhoseScrapesFailHoldsRequestsWhileEveryEngineIdles(t *testing.T) {
	c := newGatewayClock(t, GatewayEPP, 3, "gateway-held")
	c.run(15 * time.Second)
	before := c.snap()
	if d := before.values["llm_d_epp_flow_control_requests_total{inference_pool=llama,outcome=Dispatched,priority=0}"]; d < 0.8*12*15 {
		t.Fatalf("%g dispatched in 15 s at 12 req/s before the scrapes fail", d)
	}
	if s := before.values["llm_d_epp_flow_control_pool_saturation{inference_pool=llama,stage=effective}"]; s >= 0.5 {
		t.Errorf("saturation %.2f on a healthy pool", s)
	}
	c.run(25 * time.Second) // 40 s: failing for 20 s
	a := c.snap()
	c.run(30 * time.Second) // 70 s
	b := c.snap()
	w := window{a, b}
	sat := b.values["llm_d_epp_flow_control_pool_saturation{inference_pool=llama,stage=effective}"]
	old := b.values["inference_extension_flow_control_pool_saturation{inference_pool=llama,stage=effective}"]
	if sat != 1 || old != 1 {
		t.Errorf("pool saturation %g (deprecated twin %g): stale endpoints score exactly 1.0", sat, old)
	}
	if s := b.values["llm_d_epp_flow_control_stale_endpoints{detector=utilization-detector}"]; s != 3 {
		t.Errorf("%g stale endpoints of 3", s)
	}
	if d := w.rate("llm_d_epp_flow_control_requests_total{inference_pool=llama,outcome=Dispatched,priority=0}"); d != 0 {
		t.Errorf("%.2f dispatched/s with every endpoint stale", d)
	}
	if p := w.rate("llm_d_epp_datalayer_poll_errors_total{source_type=metrics-data-source}"); p < 3*15 {
		t.Errorf("%.1f poll errors/s: 3 pods polled every 50 ms", p)
	}
	q, qOld := b.values["llm_d_epp_flow_control_queue_size{"+eppFlow+"}"], b.values["inference_extension_flow_control_queue_size{"+eppFlow+"}"]
	if q < 0.8*12*50 || q != qOld {
		t.Errorf("EPP queue %g (deprecated twin %g) 50 s into the failure at 12 req/s", q, qOld)
	}
	if r := b.values["llm_d_epp_request_running{fairness_id=default-flow,priority=0,target_model_name=meta-llama/Llama-3.1-8B-Instruct}"]; r != 0 {
		t.Errorf("%g requests still running through the EPP", r)
	}
	// Every engine idles: nothing reaches it.
	for i, s := range c.engines() {
		if s.values["vllm:num_requests_waiting_by_reason{reason=capacity}"] != 0 || s.values["vllm:num_requests_running"] != 0 || s.values["vllm:kv_cache_usage_perc"] > 0.01 {
			t.Errorf("pod %d: waiting %g, running %g, KV %.3f: want an idle engine", i, s.values["vllm:num_requests_waiting"], s.values["vllm:num_requests_running"], s.values["vllm:kv_cache_usage_perc"])
		}
	}
	// The queue's TTL (60 s) evicts what waited too long: from 80 s on, about as many as arrive.
	c.run(30 * time.Second) // 100 s
	d := c.snap()
	c.run(20 * time.Second)
	e := window{d, c.snap()}
	if ev := e.rate("llm_d_epp_flow_control_requests_total{inference_pool=llama,outcome=EvictedTTL,priority=0}"); ev < 0.7*12 {
		t.Errorf("%.1f evicted/s after the 60 s TTL, at 12 req/s", ev)
	}
	if q := e.quantile(0.5, "llm_d_epp_flow_control_request_queue_duration_seconds{"+eppFlow+",outcome=EvictedTTL}"); q < 30 {
		t.Errorf("evicted requests' queue time p50 %.1fs: want the 60 s TTL (the 30-60 s bucket)", q)
	}
	if n := e.rate("llm_d_epp_request_error_total{error_code=ResourceExhausted,fairness_id=default-flow,priority=0,target_model_name=meta-llama/Llama-3.1-8B-Instruct}"); n < 0.7*12 {
		t.Errorf("%.1f errors/s (429, ResourceExhausted) for the evicted requests", n)
	}
}

// Hard negative: a real knee through the EPP. The engines are full (running pinned, KV in use,
// a short queue each, which the EPP keeps near its threshold); the EPP holds the rest. Its
// saturation is above 1, from the pods' own queues, with no stale endpoint.
func TestAKneeThroughTheEPPFillsTheEnginesFirst(t *testing.T) {
	c := newGatewayClock(t, GatewayEPP, 2, "gateway-knee")
	c.run(40 * time.Second)
	b := c.snap()
	if s := b.values["llm_d_epp_flow_control_stale_endpoints{detector=utilization-detector}"]; s != 0 {
		t.Errorf("%g stale endpoints", s)
	}
	if q := b.values["llm_d_epp_flow_control_queue_size{"+eppFlow+"}"]; q < 100 {
		t.Errorf("EPP queue %g past the knee", q)
	}
	// Sampled every 100 ms for 20 s, as a fine scrape would: the reactive detector makes the pods
	// oscillate (a pod drains while the pool's mean holds dispatch), so read means.
	var sat, stale float64
	running, kv := make([]float64, 2), make([]float64, 2)
	const n = 200
	for range n {
		c.run(100 * time.Millisecond)
		g := c.snap()
		sat += g.values["llm_d_epp_flow_control_pool_saturation{inference_pool=llama,stage=effective}"] / n
		stale = max(stale, g.values["llm_d_epp_flow_control_stale_endpoints{detector=utilization-detector}"])
		for i, s := range c.engines() {
			running[i] += s.values["vllm:num_requests_running"] / n
			kv[i] += s.values["vllm:kv_cache_usage_perc"] / n
		}
	}
	if sat <= 1.5 || stale != 0 {
		t.Errorf("saturation mean %.2f, stale endpoints up to %g: a knee reads above 1 from the pods' own queues", sat, stale)
	}
	for i := range running {
		if running[i] < 0.8*256 || kv[i] < 0.2 {
			t.Errorf("pod %d: running %.0f, KV %.2f on average: want it (nearly) full", i, running[i], kv[i])
		}
	}
}

// Hard negative: every engine wedged. The requests are held in the engines (their queues grow,
// nothing is computed); the EPP sees the queues, not stale endpoints.
func TestAStallThroughTheEPPHoldsRequestsInTheEngines(t *testing.T) {
	c := newGatewayClock(t, GatewayEPP, 2, "gateway-stall")
	c.run(20 * time.Second)
	a := c.engines()
	c.run(20 * time.Second)
	b := c.engines()
	g := c.snap()
	if s := g.values["llm_d_epp_flow_control_stale_endpoints{detector=utilization-detector}"]; s != 0 {
		t.Errorf("%g stale endpoints: a wedged engine still publishes its gauges", s)
	}
	for i := range b {
		w := window{a[i], b[i]}
		if q := b[i].values["vllm:num_requests_waiting"]; q < float64(5) {
			t.Errorf("pod %d: waiting %g: the wedged engine holds what the EPP sent it", i, q)
		}
		if tok := w.rate("vllm:generation_tokens_total") + w.rate("vllm:prompt_tokens_total"); tok != 0 {
			t.Errorf("pod %d computes %.0f tokens/s while wedged", i, tok)
		}
	}
}

// production-stack's router passes requests on at once: its in-flight count per server is the
// engine's running plus waiting, its latency the engine's e2e; a knee shows in the engines'
// queues, not in the router; it has no queue of its own to hold requests in.
func TestTheProductionStackRouterPassesRequestsOn(t *testing.T) {
	c := newGatewayClock(t, GatewayProductionStack, 2, "gateway-healthy")
	c.run(20 * time.Second)
	a, ea := c.snap(), c.engines()
	c.run(30 * time.Second)
	b, eb := c.snap(), c.engines()
	w := window{a, b}
	if in := w.rate("vllm:num_incoming_requests_total{model=meta-llama/Llama-3.1-8B-Instruct}"); in < 6 || in > 10 {
		t.Errorf("%.1f incoming req/s: want ~8 (4 per pod)", in)
	}
	for i, s := range []string{"http://pod-0:8000", "http://pod-1:8000"} {
		key := "vllm:request_latency_seconds{model=meta-llama/Llama-3.1-8B-Instruct,server=" + s + ",status=success}"
		router, engine := w.mean(key), (window{ea[i], eb[i]}).mean("vllm:e2e_request_latency_seconds")
		if router < engine || router > engine+0.3 {
			t.Errorf("%s: router latency mean %.2fs, the engine's e2e %.2fs: want the engine's, plus at most the relay", s, router, engine)
		}
		if r, e := b.values["vllm:num_requests_running{server="+s+"}"], eb[i].values["vllm:num_requests_running"]+eb[i].values["vllm:num_requests_waiting"]; r < e-2 || r > e+4 {
			t.Errorf("%s: router in flight %g, engine running + waiting %g", s, r, e)
		}
	}
	if _, ok := b.values["vllm:num_requests_waiting{server=http://pod-0:8000}"]; ok {
		t.Error("vllm:num_requests_waiting{server} has a sample: production-stack declares it and never sets it")
	}
	if err := c.g.Apply("gateway-held", c.now); err == nil {
		t.Error("gateway-held accepted on production-stack, which has no queue to hold requests in")
	}

	k := newGatewayClock(t, GatewayProductionStack, 2, "gateway-knee")
	k.run(30 * time.Second)
	for i, s := range k.engines() {
		if q := s.values["vllm:num_requests_waiting_by_reason{reason=capacity}"]; q < 500 {
			t.Errorf("pod %d: waiting %g for capacity: the router sends everything on, the queue is the engine's", i, q)
		}
	}
}

// gateway-router-held: production-stack's router logs each request as routed and it never
// reaches the engine (production-stack#706). Its in-prefill count grows by every arrival and is
// never taken off, its latency is observed when the clients leave, and every engine receives
// nothing. Hard negative, the same router in front of engines that serve: clients that leave
// before their answer grow the count too, and the engines compute tokens.
func TestAProductionStackRouterThatHoldsSendsTheEnginesNothing(t *testing.T) {
	c := newGatewayClock(t, GatewayProductionStack, 2, "gateway-router-held")
	c.run(30 * time.Second) // held for 10 s
	a, ea := c.snap(), c.engines()
	c.run(30 * time.Second)
	b, eb := c.snap(), c.engines()
	w := window{a, b}
	grew := 0.0
	for i, s := range []string{"http://pod-0:8000", "http://pod-1:8000"} {
		p := "vllm:num_prefill_requests{server=" + s + "}"
		grew += b.values[p] - a.values[p]
		if r := b.values["vllm:num_requests_running{server="+s+"}"]; r != b.values[p] {
			t.Errorf("%s: running %g, in prefill %g: the router's running is prefill + decoding, and nothing decodes", s, r, b.values[p])
		}
		e := window{ea[i], eb[i]}
		if tok := e.rate("vllm:generation_tokens_total") + e.rate("vllm:prompt_tokens_total"); tok != 0 || eb[i].values["vllm:num_requests_running"] != 0 || eb[i].values["vllm:num_requests_waiting"] != 0 {
			t.Errorf("pod %d: %.0f tokens/s, running %g, waiting %g: want an engine that receives nothing", i, tok, eb[i].values["vllm:num_requests_running"], eb[i].values["vllm:num_requests_waiting"])
		}
	}
	if grew < 0.8*8*30 || grew > 1.2*8*30 {
		t.Errorf("the router's in-prefill count grew by %g in 30 s at 8 req/s", grew)
	}
	if in := w.rate("vllm:num_incoming_requests_total{model=meta-llama/Llama-3.1-8B-Instruct}"); in < 6 || in > 10 {
		t.Errorf("%.1f incoming req/s: the router still receives them", in)
	}
	c.run(120 * time.Second) // the first held clients leave at their 120 s timeout
	d := c.snap()
	c.run(20 * time.Second)
	e := window{d, c.snap()}
	if m := e.mean("vllm:request_latency_seconds{model=meta-llama/Llama-3.1-8B-Instruct,server=http://pod-0:8000,status=success}"); m < 119 || m > 121 {
		t.Errorf("router latency mean %.1fs once the held clients leave: want their 120 s timeout", m)
	}
	if err := c.g.Apply("gateway-router-held", c.now); err != nil {
		t.Fatal(err)
	}
	if epp := newGatewayClock(t, GatewayEPP, 1, "gateway-healthy"); epp.g.Apply("gateway-router-held", epp.now) == nil {
		t.Error("gateway-router-held accepted on the EPP: it is production-stack's hold")
	}

	// The hard negative: engines that serve, clients that leave before their answer (past the
	// knee, where the queue outlasts their timeout): the count grows, the engines compute.
	k := newGatewayClock(t, GatewayProductionStack, 1, "gateway-knee")
	k.run(150 * time.Second)
	ka, kea := k.snap(), k.engines()
	k.run(30 * time.Second)
	kb, keb := k.snap(), k.engines()
	p := "vllm:num_prefill_requests{server=http://pod-0:8000}"
	if g := kb.values[p] - ka.values[p]; g < 5 {
		t.Errorf("the router's in-prefill count grew by %g past the knee with clients leaving: want their leak", g)
	}
	if tok := (window{kea[0], keb[0]}).rate("vllm:generation_tokens_total"); tok <= 0 {
		t.Error("the engine computes no token past the knee")
	}
}

// The families are the sources' own: names, types, label names and buckets.
func TestTheGatewaysFamiliesAreTheSources(t *testing.T) {
	type family struct {
		typ     string
		labels  string
		buckets []float64
	}
	ps := map[string]family{
		"vllm:num_requests_running":        {"GAUGE", "server", nil},
		"vllm:num_prefill_requests":        {"GAUGE", "server", nil},
		"vllm:num_decoding_requests":       {"GAUGE", "server", nil},
		"vllm:healthy_pods_total":          {"GAUGE", "server", nil},
		"vllm:num_incoming_requests_total": {"COUNTER", "model", nil},
		"vllm:request_latency_seconds":     {"HISTOGRAM", "model,server,status", []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}},
	}
	fc := "fairness_id,inference_pool,model_name,priority,target_model_name"
	req := "fairness_id,model_name,priority,target_model_name"
	epp := map[string]family{
		"llm_d_epp_flow_control_queue_size":                               {"GAUGE", fc, nil},
		"inference_extension_flow_control_queue_size":                     {"GAUGE", fc, nil},
		"llm_d_epp_flow_control_request_queue_duration_seconds":           {"HISTOGRAM", "fairness_id,inference_pool,model_name,outcome,priority,target_model_name", eppQueueBuckets},
		"inference_extension_flow_control_request_queue_duration_seconds": {"HISTOGRAM", "fairness_id,inference_pool,model_name,outcome,priority,target_model_name", eppQueueBuckets},
		"llm_d_epp_flow_control_requests_total":                           {"COUNTER", "inference_pool,outcome,priority", nil},
		"llm_d_epp_flow_control_pool_saturation":                          {"GAUGE", "inference_pool,stage", nil},
		"inference_extension_flow_control_pool_saturation":                {"GAUGE", "inference_pool,stage", nil},
		"llm_d_epp_flow_control_stale_endpoints":                          {"GAUGE", "detector", nil},
		"llm_d_epp_datalayer_poll_errors_total":                           {"COUNTER", "source_type", nil},
		"llm_d_inference_scheduler_datalayer_poll_errors_total":           {"COUNTER", "source_type", nil},
		"llm_d_epp_request_total":                                         {"COUNTER", req, nil},
		"inference_objective_request_total":                               {"COUNTER", "model_name,priority,target_model_name", nil},
		"llm_d_epp_request_duration_seconds":                              {"HISTOGRAM", req, eppLatencyBuckets},
		"inference_objective_request_duration_seconds":                    {"HISTOGRAM", "model_name,target_model_name", eppLatencyBuckets},
		"llm_d_epp_request_running":                                       {"GAUGE", req, nil},
		"inference_objective_running_requests":                            {"GAUGE", "model_name", nil},
		"llm_d_epp_average_queue_size":                                    {"GAUGE", "name", nil},
		"inference_pool_average_queue_size":                               {"GAUGE", "name", nil},
		"llm_d_epp_average_kv_cache_utilization":                          {"GAUGE", "name", nil},
		"inference_pool_average_kv_cache_utilization":                     {"GAUGE", "name", nil},
		"llm_d_epp_ready_endpoints":                                       {"GAUGE", "name", nil},
		"inference_pool_ready_pods":                                       {"GAUGE", "name", nil},
		"llm_d_epp_per_endpoint_queue_size":                               {"GAUGE", "model_server_endpoint,name", nil},
		"inference_pool_per_pod_queue_size":                               {"GAUGE", "model_server_pod,name", nil},
	}
	for kind, want := range map[GatewayKind]map[string]family{GatewayProductionStack: ps, GatewayEPP: epp} {
		c := newGatewayClock(t, kind, 2, "gateway-healthy")
		c.run(5 * time.Second)
		mfs, err := c.g.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]family{}
		for _, mf := range mfs {
			f := family{typ: mf.GetType().String()}
			if len(mf.GetMetric()) > 0 {
				var names []string
				for _, l := range mf.GetMetric()[0].GetLabel() {
					names = append(names, l.GetName())
				}
				sort.Strings(names)
				f.labels = strings.Join(names, ",")
				for _, b := range mf.GetMetric()[0].GetHistogram().GetBucket() {
					f.buckets = append(f.buckets, b.GetUpperBound())
				}
			}
			got[mf.GetName()] = f
		}
		for name, w := range want {
			g, ok := got[name]
			switch {
			case !ok:
				t.Errorf("%s: %s missing", kind, name)
			case g.typ != w.typ || g.labels != w.labels || fmt.Sprint(g.buckets) != fmt.Sprint(w.buckets):
				t.Errorf("%s: %s is %s {%s} %v, want %s {%s} %v", kind, name, g.typ, g.labels, g.buckets, w.typ, w.labels, w.buckets)
			}
		}
	}
}

// production-stack's /metrics is prometheus_client's text (floats as Python writes them, a
// _created sample per counter); the EPP's is client_golang's.
func TestTheGatewaysExpositions(t *testing.T) {
	for _, tc := range []struct {
		kind       GatewayKind
		want, none string
	}{
		{GatewayProductionStack, `vllm:num_incoming_requests_created{model="meta-llama/Llama-3.1-8B-Instruct"}`, ""},
		{GatewayEPP, `llm_d_epp_flow_control_pool_saturation{inference_pool="llama",stage="effective"}`, "_created"},
	} {
		c := newGatewayClock(t, tc.kind, 1, "gateway-healthy")
		c.run(2 * time.Second)
		srv := httptest.NewServer(c.g.Handler())
		resp, err := srv.Client().Get(srv.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		if !strings.Contains(string(body), tc.want) {
			t.Errorf("%s: /metrics has no %s:\n%s", tc.kind, tc.want, body)
		}
		if tc.none != "" && strings.Contains(string(body), tc.none) {
			t.Errorf("%s: /metrics has %s samples", tc.kind, tc.none)
		}
	}
}
