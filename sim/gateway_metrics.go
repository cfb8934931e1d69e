package sim

import "github.com/prometheus/client_golang/prometheus"

// The gateways' own series, as their sources declare them (docs/vllm-facts.md, "Requests held
// before the engine"). Only the series the stand-in's model can produce are exported: each
// family's name, type, labels and buckets are the source's.

// prodStackMetrics are vLLM production-stack's router series
// (src/vllm_router/services/metrics_service/__init__.py at a6c01db), rendered by
// prometheus_client. Its vllm:num_requests_waiting{server} is declared and never set: no sample.
type prodStackMetrics struct {
	running  *prometheus.GaugeVec     // vllm:num_requests_running{server}: prefill + decoding
	prefillG *prometheus.GaugeVec     // vllm:num_prefill_requests{server}
	decoding *prometheus.GaugeVec     // vllm:num_decoding_requests{server}
	healthy  *prometheus.GaugeVec     // vllm:healthy_pods_total{server}
	incoming *prometheus.CounterVec   // vllm:num_incoming_requests_total{model}
	errors   *prometheus.CounterVec   // vllm:request_errors_total{server,model,error_type}
	latency  *prometheus.HistogramVec // vllm:request_latency_seconds{server,model,status}
	// prefill is the router's in_prefill_requests per server: +1 when sent, -1 when its answer
	// comes back; a request whose client left or whose call failed is never taken off
	// (request.py calls the stats only on its success path).
	prefill []int
}

// reset starts the router's counts afresh (a scenario switch drops the old requests).
func (m *prodStackMetrics) reset() { clear(m.prefill) }

func newProdStackMetrics(reg prometheus.Registerer, cfg GatewayConfig) *prodStackMetrics {
	m := &prodStackMetrics{
		running:  prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vllm:num_requests_running", Help: "Number of running requests"}, []string{"server"}),
		prefillG: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vllm:num_prefill_requests", Help: "Number of Prefill Requests"}, []string{"server"}),
		decoding: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vllm:num_decoding_requests", Help: "Number of Decoding Requests"}, []string{"server"}),
		healthy:  prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vllm:healthy_pods_total", Help: "Number of healthy vLLM pods"}, []string{"server"}),
		incoming: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:num_incoming_requests_total",
			Help: "Total valid incoming requests to router (including when no backends available)."}, []string{"model"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:request_errors_total", Help: "Total request errors"},
			[]string{"server", "model", "error_type"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "vllm:request_latency_seconds",
			Help:    "End-to-end request latency observed at the router",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0}}, []string{"server", "model", "status"}),
	}
	m.prefill = make([]int, len(cfg.Servers))
	reg.MustRegister(m.running, m.prefillG, m.decoding, m.healthy, m.incoming, m.errors, m.latency)
	m.incoming.WithLabelValues(cfg.ModelName)
	return m
}

// eppMetrics are llm-d's EPP series (llm-d/llm-d-router at ebab687: pkg/epp/metrics/
// llm_d_router_metrics.go, metrics.go, collectors/inference_pool.go), each current llm_d_epp_*
// family with the deprecated twin the EPP still writes beside it, rendered by client_golang.
type eppMetrics struct {
	queueSize, queueSizeOld          *prometheus.GaugeVec     // flow_control_queue_size
	queueDuration, queueDurationOld  *prometheus.HistogramVec // flow_control_request_queue_duration_seconds
	fcRequests                       *prometheus.CounterVec   // flow_control_requests_total (no twin)
	saturationG, saturationOld       *prometheus.GaugeVec     // flow_control_pool_saturation{inference_pool,stage}
	staleEndpoints                   *prometheus.GaugeVec     // flow_control_stale_endpoints{detector} (no twin)
	pollErrors, pollErrorsOld        prometheus.Counter       // datalayer_poll_errors_total{source_type}
	requests, requestsOld            *prometheus.CounterVec   // request_total
	reqErrors, reqErrorsOld          *prometheus.CounterVec   // request_error_total
	duration, durationOld            *prometheus.HistogramVec // request_duration_seconds
	running, runningOld              *prometheus.GaugeVec     // request_running / inference_objective_running_requests
	avgQueue, avgQueueOld            *prometheus.GaugeVec     // average_queue_size{name}
	avgKV, avgKVOld                  *prometheus.GaugeVec     // average_kv_cache_utilization{name}
	avgRunning, avgRunningOld        *prometheus.GaugeVec     // average_running_requests{name}
	ready, readyOld                  *prometheus.GaugeVec     // ready_endpoints / inference_pool_ready_pods
	perEndpointQueue, perPodQueueOld *prometheus.GaugeVec     // per-endpoint queue sizes
	fairnessID, priority             string
	// the label values of the stand-in's one flow (metadata.DefaultFairnessID, priority 0)
	fcLabels, reqLabels, reqLabelsOld []string
}

// The EPP's buckets (metrics.go generalLatencyBuckets; the flow-control queue duration's).
var (
	eppLatencyBuckets = []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6,
		8, 10, 15, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}
	eppQueueBuckets = []float64{0.0001, 0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0}
)

func newEPPMetrics(reg prometheus.Registerer, cfg GatewayConfig) *eppMetrics {
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	hist := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	}
	fc := []string{"fairness_id", "priority", "inference_pool", "model_name", "target_model_name"}
	fcDur := []string{"fairness_id", "priority", "outcome", "inference_pool", "model_name", "target_model_name"}
	req := []string{"model_name", "target_model_name", "fairness_id", "priority"}
	m := &eppMetrics{
		queueSize:        gauge("llm_d_epp_flow_control_queue_size", "[ALPHA] Current number of requests actively held in the Flow Control queue.", fc...),
		queueSizeOld:     gauge("inference_extension_flow_control_queue_size", "[ALPHA] [Deprecated: Use llm_d_epp_flow_control_queue_size] Current number of requests actively held in the Flow Control queue.", fc...),
		queueDuration:    hist("llm_d_epp_flow_control_request_queue_duration_seconds", "[ALPHA] Distribution of total time requests spend in the Flow Control layer (from enqueue to final outcome).", eppQueueBuckets, fcDur...),
		queueDurationOld: hist("inference_extension_flow_control_request_queue_duration_seconds", "[ALPHA] [Deprecated: Use llm_d_epp_flow_control_request_queue_duration_seconds] Distribution of total time requests spend in the Flow Control layer (from enqueue to final outcome).", eppQueueBuckets, fcDur...),
		fcRequests:       counter("llm_d_epp_flow_control_requests_total", "[ALPHA] Total number of requests processed by the Flow Control layer.", "outcome", "priority", "inference_pool"),
		saturationG:      gauge("llm_d_epp_flow_control_pool_saturation", "[ALPHA] Pool saturation signal gating Flow Control dispatch. 1.0 is the gating set point; an empty pool or stale endpoints read 1.0.", "inference_pool", "stage"),
		saturationOld:    gauge("inference_extension_flow_control_pool_saturation", "[ALPHA] [Deprecated: Use llm_d_epp_flow_control_pool_saturation] Pool saturation signal gating Flow Control dispatch.", "inference_pool", "stage"),
		staleEndpoints:   gauge("llm_d_epp_flow_control_stale_endpoints", "[ALPHA] Number of candidate endpoints whose metrics are missing or older than the staleness threshold, as of the most recent saturation evaluation.", "detector"),
		requests:         counter("llm_d_epp_request_total", "[ALPHA] Total number of processed requests.", req...),
		requestsOld:      counter("inference_objective_request_total", "[ALPHA] [Deprecated: Use llm_d_epp_request_total] Counter of inference objective requests broken out for each model and target model.", "model_name", "target_model_name", "priority"),
		reqErrors:        counter("llm_d_epp_request_error_total", "[ALPHA] Total number of request errors.", append(append([]string{}, req...), "error_code")...),
		reqErrorsOld:     counter("inference_objective_request_error_total", "[ALPHA] [Deprecated: Use llm_d_epp_request_error_total] Counter of inference objective requests errors broken out for each model and target model.", "model_name", "target_model_name", "error_code"),
		duration:         hist("llm_d_epp_request_duration_seconds", "[ALPHA] End-to-end request latency distribution in seconds.", eppLatencyBuckets, req...),
		durationOld:      hist("inference_objective_request_duration_seconds", "[ALPHA] [Deprecated: Use llm_d_epp_request_duration_seconds] Inference objective response latency distribution in seconds for each model and target model.", eppLatencyBuckets, "model_name", "target_model_name"),
		running:          gauge("llm_d_epp_request_running", "[ALPHA] Current number of active running requests.", req...),
		runningOld:       gauge("inference_objective_running_requests", "[ALPHA] [Deprecated: Use llm_d_epp_request_running] Inference objective number of running requests in each model.", "model_name"),
		avgQueue:         gauge("llm_d_epp_average_queue_size", "[ALPHA] The average number of requests pending in the model server queue.", "name"),
		avgQueueOld:      gauge("inference_pool_average_queue_size", "[ALPHA] [Deprecated: Use llm_d_epp_average_queue_size] The average number of requests pending in the model server queue.", "name"),
		avgKV:            gauge("llm_d_epp_average_kv_cache_utilization", "[ALPHA] The average kv cache utilization for an inference server pool.", "name"),
		avgKVOld:         gauge("inference_pool_average_kv_cache_utilization", "[ALPHA] [Deprecated: Use llm_d_epp_average_kv_cache_utilization] The average kv cache utilization for an inference server pool.", "name"),
		avgRunning:       gauge("llm_d_epp_average_running_requests", "[ALPHA] The average number of running requests across model servers in the pool.", "name"),
		avgRunningOld:    gauge("inference_pool_average_running_requests", "[ALPHA] [Deprecated: Use llm_d_epp_average_running_requests] The average number of running requests across model servers in the pool.", "name"),
		ready:            gauge("llm_d_epp_ready_endpoints", "[ALPHA] The number of ready endpoints in the inference server pool.", "name"),
		readyOld:         gauge("inference_pool_ready_pods", "[ALPHA] [Deprecated: Use llm_d_epp_ready_endpoints] The number of ready pods in the inference server pool.", "name"),
		perEndpointQueue: gauge("llm_d_epp_per_endpoint_queue_size", "[ALPHA] The total number of requests pending in the model server queue for each underlying endpoint.", "name", "model_server_endpoint"),
		perPodQueueOld:   gauge("inference_pool_per_pod_queue_size", "[ALPHA] The total number of requests pending in the model server queue for each underlying pod.", "name", "model_server_pod"),
		fairnessID:       "default-flow",
		priority:         "0",
	}
	poll := counter("llm_d_epp_datalayer_poll_errors_total", "[ALPHA] Data-source poll errors per source type.", "source_type")
	pollOld := counter("llm_d_inference_scheduler_datalayer_poll_errors_total", "[ALPHA] [Deprecated: Use llm_d_epp_datalayer_poll_errors_total] Data-source poll errors per source type.", "source_type")
	m.pollErrors, m.pollErrorsOld = poll.WithLabelValues("metrics-data-source"), pollOld.WithLabelValues("metrics-data-source")
	reg.MustRegister(m.queueSize, m.queueSizeOld, m.queueDuration, m.queueDurationOld, m.fcRequests, m.saturationG,
		m.saturationOld, m.staleEndpoints, poll, pollOld, m.requests, m.requestsOld, m.reqErrors, m.reqErrorsOld,
		m.duration, m.durationOld, m.running, m.runningOld, m.avgQueue, m.avgQueueOld, m.avgKV, m.avgKVOld,
		m.avgRunning, m.avgRunningOld, m.ready, m.readyOld, m.perEndpointQueue, m.perPodQueueOld)
	m.fcLabels = []string{m.fairnessID, m.priority, cfg.Pool, cfg.ModelName, cfg.ModelName}
	m.reqLabels = []string{cfg.ModelName, cfg.ModelName, m.fairnessID, m.priority}
	m.reqLabelsOld = []string{cfg.ModelName, cfg.ModelName, m.priority}
	// The gauges exist from the start; the counters' and histograms' children appear with their
	// first request, as client_golang's vectors do.
	m.state(cfg, 0, 0, nil, nil)
	return m
}

// dequeued records a request leaving the queue for an endpoint after wait seconds.
func (m *eppMetrics) dequeued(cfg GatewayConfig, wait float64) {
	m.outcome(cfg, "Dispatched", wait)
}

// dispatched counts a request handed to an endpoint: the EPP counts a request once scheduled.
func (m *eppMetrics) dispatched(GatewayConfig) {
	m.requests.WithLabelValues(m.reqLabels...).Inc()
	m.requestsOld.WithLabelValues(m.reqLabelsOld...).Inc()
}

// evicted records a queued request that left without an endpoint: its flow-control outcome and
// the error the client got.
func (m *eppMetrics) evicted(cfg GatewayConfig, outcome, code string, wait float64) {
	m.outcome(cfg, outcome, wait)
	m.failed(cfg, code)
}

func (m *eppMetrics) outcome(cfg GatewayConfig, outcome string, wait float64) {
	l := []string{m.fairnessID, m.priority, outcome, cfg.Pool, cfg.ModelName, cfg.ModelName}
	m.queueDuration.WithLabelValues(l...).Observe(wait)
	m.queueDurationOld.WithLabelValues(l...).Observe(wait)
	m.fcRequests.WithLabelValues(outcome, m.priority, cfg.Pool).Inc()
}

// failed counts a request error with its canonical code.
func (m *eppMetrics) failed(cfg GatewayConfig, code string) {
	m.reqErrors.WithLabelValues(append(append([]string{}, m.reqLabels...), code)...).Inc()
	m.reqErrorsOld.WithLabelValues(cfg.ModelName, cfg.ModelName, code).Inc()
}

// completed records a response that completed, seconds after the EPP received its request.
func (m *eppMetrics) completed(_ GatewayConfig, seconds float64) {
	m.duration.WithLabelValues(m.reqLabels...).Observe(seconds)
	m.durationOld.WithLabelValues(m.reqLabels[:2]...).Observe(seconds)
}

// saturation records the detector's evaluation: the pool's saturation (all endpoints are in the
// decode stage in a deployment without roles, and effective is the max over stages) and the stale
// endpoints it counted.
func (m *eppMetrics) saturation(cfg GatewayConfig, sat float64, stale int) {
	for _, g := range []*prometheus.GaugeVec{m.saturationG, m.saturationOld} {
		g.WithLabelValues(cfg.Pool, "decode").Set(sat)
		g.WithLabelValues(cfg.Pool, "effective").Set(sat)
	}
	m.staleEndpoints.WithLabelValues("utilization-detector").Set(float64(stale))
}

// state sets the gauges of the EPP's state: its queue, the requests dispatched and not finished,
// and the pool as it last scraped it (ready: the pods up).
func (m *eppMetrics) state(cfg GatewayConfig, queued, inflight int, views []endpointView, up []bool) {
	m.queueSize.WithLabelValues(m.fcLabels...).Set(float64(queued))
	m.queueSizeOld.WithLabelValues(m.fcLabels...).Set(float64(queued))
	m.running.WithLabelValues(m.reqLabels...).Set(float64(inflight))
	m.runningOld.WithLabelValues(cfg.ModelName).Set(float64(inflight))
	var q, kv, run float64
	scraped, ready := 0, 0
	for i, v := range views {
		if up[i] {
			ready++
		}
		if v.at.IsZero() {
			continue
		}
		scraped++
		q, kv, run = q+v.waiting, kv+v.kv, run+v.running
		m.perEndpointQueue.WithLabelValues(cfg.Pool, cfg.Pods[i]).Set(v.waiting)
		m.perPodQueueOld.WithLabelValues(cfg.Pool, cfg.Pods[i]).Set(v.waiting)
	}
	if scraped > 0 {
		q, kv, run = q/float64(scraped), kv/float64(scraped), run/float64(scraped)
	}
	set := func(cur, old *prometheus.GaugeVec, v float64) {
		cur.WithLabelValues(cfg.Pool).Set(v)
		old.WithLabelValues(cfg.Pool).Set(v)
	}
	set(m.avgQueue, m.avgQueueOld, q)
	set(m.avgKV, m.avgKVOld, kv)
	set(m.avgRunning, m.avgRunningOld, run)
	set(m.ready, m.readyOld, float64(ready))
}
