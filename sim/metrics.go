package sim

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Bucket boundaries as in vllm/v1/metrics/loggers.py (current main).
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	itlBuckets  = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	// e2e, queue, prefill, decode, inference
	requestLatencyBuckets = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
	iterationTokenBuckets = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
)

// build125Buckets is vLLM's build_1_2_5_buckets(max_value): 1 2 5 10 20 50 ... <= max.
func build125Buckets(maxValue int) []float64 {
	var out []float64
	for exp := 1; ; exp *= 10 {
		for _, m := range []int{1, 2, 5} {
			v := m * exp
			if v > maxValue {
				return out
			}
			out = append(out, float64(v))
		}
	}
}

// Finish reasons exported in finished_reason (vllm/v1/engine/__init__.py FinishReason).
const (
	reasonStop       = "stop"
	reasonLength     = "length"
	reasonAbort      = "abort"
	reasonError      = "error"
	reasonRepetition = "repetition"
)

// gauges, counters and observers write to every name a metric is exported under (NamesBoth
// exports the old and the new name of a renamed metric at once).
type (
	gauges    []prometheus.Gauge
	counters  []prometheus.Counter
	observers []prometheus.Observer
)

func (g gauges) Set(v float64) {
	for _, x := range g {
		x.Set(v)
	}
}

func (c counters) Add(v float64) {
	for _, x := range c {
		x.Add(v)
	}
}

func (c counters) Inc() { c.Add(1) }

func (o observers) Observe(v float64) {
	for _, x := range o {
		x.Observe(v)
	}
}

// metrics holds the vLLM metric surface, already curried with model_name and engine.
type metrics struct {
	reg *prometheus.Registry

	running, waiting          prometheus.Gauge
	waitingCapacity           prometheus.Gauge // num_requests_waiting_by_reason{reason="capacity"}; nil with old names only
	kvUsage                   gauges
	preemptions               prometheus.Counter
	success                   *prometheus.CounterVec // finished_reason
	promptTokens, genTokens   prometheus.Counter
	prefixQueries, prefixHits counters

	ttft                                    prometheus.Observer
	itl                                     observers
	tpotRequest                             prometheus.Observer // nil in legacy mode
	e2e, queue, prefill, decode, inference  prometheus.Observer
	reqPromptTokens, reqGenTokens, iterToks prometheus.Observer

	waitingDeferred prometheus.Gauge                // num_requests_waiting_by_reason{reason="deferred"}
	kvFetch         map[fetchStage]prometheus.Gauge // num_requests_kv_fetch_by_stage; nil but on a KV consumer
	nixl            *nixlMetrics                    // nil without the NIXL connector
	spec            *specMetrics                    // nil without speculative decoding
	loraInfo        *prometheus.GaugeVec            // lora_requests_info; nil without LoRA
	externalQueries counters                        // external_prefix_cache_queries_total
	externalHits    counters                        // external_prefix_cache_hits_total
	promptBySource  *prometheus.CounterVec          // prompt_tokens_by_source_total{source}
	promptCached    prometheus.Counter              // prompt_tokens_cached_total

	sleepState          *prometheus.GaugeVec   // sleep_state, curried with model_name and engine
	admissionRejections *prometheus.CounterVec // reason, curried with model_name (no engine label)
	httpRequests        *prometheus.CounterVec // the Instrumentator's: handler, method, status
	// sleep-mode and RL weight-update operation metrics, created on first use as vLLM does
	sleepOps, weightOps *operationMetrics
}

// operationMetrics are vLLM's in-flight gauge and duration histogram of the sleep-mode or RL
// weight-transfer operations (labelled by operation only, on the API server's registry).
type operationMetrics struct {
	inFlight *prometheus.GaugeVec
	duration *prometheus.HistogramVec
}

// operationBuckets are the buckets of both duration histograms.
var operationBuckets = []float64{0.01, 0.1, 1, 10, 30, 60, 120, 300, 600}

// operations returns the sleep-mode (or, with weights, the RL weight-update) operation metrics,
// registering them the first time.
func (m *metrics) operations(weights bool) *operationMetrics {
	p, prefix, help := &m.sleepOps, "vllm:sleep_mode_operation", [2]string{"Duration of one sleep-mode operation.", "Sleep-mode operations currently awaited."}
	if weights {
		p, prefix, help = &m.weightOps, "vllm:rl_weight_update_operation", [2]string{"Duration of one weight-transfer operation.", "Weight-transfer operations currently awaited."}
	}
	if *p == nil {
		o := &operationMetrics{
			duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: prefix + "_duration_seconds", Help: help[0], Buckets: operationBuckets}, []string{"operation"}),
			inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: prefix + "s_in_flight", Help: help[1]}, []string{"operation"}),
		}
		m.reg.MustRegister(o.duration, o.inFlight)
		*p = o
	}
	return *p
}

// newMetrics registers vLLM's metrics on a fresh registry.
func newMetrics(cfg Config) *metrics {
	reg := prometheus.NewRegistry()
	labels := []string{"model_name", "engine"}
	lv := prometheus.Labels{"model_name": cfg.ModelName, "engine": cfg.Engine}
	m := &metrics{reg: reg}
	names := cfg.MetricNames
	if names == "" {
		names = NamesNew
	}

	gauge := func(name, help string) prometheus.Gauge {
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
		reg.MustRegister(v)
		return v.With(lv)
	}
	counter := func(name, help string) prometheus.Counter {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		reg.MustRegister(v)
		return v.With(lv)
	}
	histogram := func(name, help string, buckets []float64) prometheus.Observer {
		v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
		reg.MustRegister(v)
		return v.With(lv)
	}

	m.running = gauge("vllm:num_requests_running", "Number of requests in model execution batches.")
	m.waiting = gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.")
	if names.current() {
		// capacity: waiting for scheduling capacity; deferred: skipped by the scheduler for a
		// reason of their own (a KV transfer not done, no LoRA slot), until scheduled.
		byReason := prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vllm:num_requests_waiting_by_reason",
			Help: "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling capacity; 'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked status). Sum of all reasons equals vllm:num_requests_waiting.",
		}, []string{"model_name", "engine", "reason"})
		reg.MustRegister(byReason)
		m.waitingCapacity = byReason.With(prometheus.Labels{"model_name": cfg.ModelName, "engine": cfg.Engine, "reason": "capacity"})
		m.waitingDeferred = byReason.With(prometheus.Labels{"model_name": cfg.ModelName, "engine": cfg.Engine, "reason": "deferred"})
		m.waitingDeferred.Set(0)
		m.kvUsage = append(m.kvUsage, gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."))
		m.prefixQueries = append(m.prefixQueries, counter("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens."))
		m.prefixHits = append(m.prefixHits, counter("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens."))
	}
	if names.old() {
		m.kvUsage = append(m.kvUsage, gauge("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage."))
		m.prefixQueries = append(m.prefixQueries, counter("vllm:gpu_prefix_cache_queries_total", "GPU prefix cache queries, in terms of number of queried tokens."))
		m.prefixHits = append(m.prefixHits, counter("vllm:gpu_prefix_cache_hits_total", "GPU prefix cache hits, in terms of number of cached tokens."))
	}
	m.preemptions = counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.")
	m.promptTokens = counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.")
	m.genTokens = counter("vllm:generation_tokens_total", "Number of generation tokens processed.")

	m.success = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vllm:request_success_total", Help: "Count of successfully processed requests.",
	}, []string{"model_name", "engine", "finished_reason"})
	reg.MustRegister(m.success)
	m.success = m.success.MustCurryWith(lv)
	reasons := []string{reasonStop, reasonLength, reasonAbort}
	if names.current() {
		reasons = append(reasons, reasonError, reasonRepetition)
	}
	for _, r := range reasons {
		m.success.WithLabelValues(r) // vLLM pre-creates every finished_reason at 0
	}

	m.ttft = histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttftBuckets)
	if names.current() {
		m.itl = append(m.itl, histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", itlBuckets))
		m.tpotRequest = histogram("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", itlBuckets)
	}
	if names.old() {
		m.itl = append(m.itl, histogram("vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds.", itlBuckets))
	}
	m.e2e = histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", requestLatencyBuckets)
	m.queue = histogram("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", requestLatencyBuckets)
	m.prefill = histogram("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", requestLatencyBuckets)
	m.decode = histogram("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", requestLatencyBuckets)
	m.inference = histogram("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", requestLatencyBuckets)
	tokBuckets := build125Buckets(cfg.MaxModelLen)
	m.reqPromptTokens = histogram("vllm:request_prompt_tokens", "Number of prefill tokens processed.", tokBuckets)
	m.reqGenTokens = histogram("vllm:request_generation_tokens", "Number of generation tokens processed.", tokBuckets)
	m.iterToks = histogram("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", iterationTokenBuckets)

	if names.current() {
		m.newerFamilies(cfg, lv)
		m.featureFamilies(cfg, lv)
	}
	// http_requests_total: prometheus-fastapi-instrumentator's counter, children on first use.
	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "http_requests_total", Help: "Total number of requests by method, status and handler.",
	}, []string{"handler", "method", "status"})
	reg.MustRegister(m.httpRequests)

	// cache_config_info: the cache config as labels, no model_name (CacheConfig.metrics_info()).
	info := prometheus.Labels{
		"block_size":               strconv.Itoa(cfg.BlockSize),
		"cache_dtype":              "auto",
		"calculate_kv_scales":      "False",
		"cpu_offload_gb":           "0",
		"enable_prefix_caching":    pyBool(cfg.EnablePrefixCaching),
		"gpu_memory_utilization":   strconv.FormatFloat(cfg.GPUMemoryUtilization, 'f', -1, 64),
		"is_attention_free":        "False",
		"num_cpu_blocks":           "None",
		"num_gpu_blocks":           strconv.Itoa(cfg.NumGPUBlocks),
		"num_gpu_blocks_override":  "None",
		"prefix_caching_hash_algo": "sha256",
		"sliding_window":           "None",
		"swap_space":               "4",
		"engine":                   cfg.Engine,
	}
	infoNames := make([]string, 0, len(info))
	for k := range info {
		infoNames = append(infoNames, k)
	}
	ci := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vllm:cache_config_info", Help: "Information of the LLMEngine CacheConfig"}, infoNames)
	reg.MustRegister(ci)
	ci.With(info).Set(1)
	return m
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// newerFamilies registers the families of current vLLM (0.32) that older versions lack: the
// engine sleep state (always, awake until the API server records a sleep) and the API server's
// admission rejections (per model only, both reasons from the start).
func (m *metrics) newerFamilies(cfg Config, lv prometheus.Labels) {
	reg := m.reg
	sleep := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "vllm:engine_sleep_state",
		Help: "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.",
	}, []string{"model_name", "engine", "sleep_state"})
	reg.MustRegister(sleep)
	m.sleepState = sleep.MustCurryWith(lv)
	m.sleepState.WithLabelValues("awake").Set(1)
	m.sleepState.WithLabelValues("weights_offloaded").Set(0)
	m.sleepState.WithLabelValues("discard_all").Set(0)
	// admission_rejections: counted by the API server (AsyncLLM.check_admission), per model only.
	rej := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vllm:admission_rejections_total", Help: "Number of admission attempts rejected by a queue limit, by reason.",
	}, []string{"model_name", "reason"})
	reg.MustRegister(rej)
	m.admissionRejections = rej.MustCurryWith(prometheus.Labels{"model_name": cfg.ModelName})
	for _, r := range []string{admissionMaxReqs, admissionMaxTokens} {
		m.admissionRejections.WithLabelValues(r)
	}
}

// specMetrics are SpecDecodingProm's counters, with speculative decoding only.
type specMetrics struct {
	drafts, draftTokens, accepted prometheus.Counter
	perPos                        []prometheus.Counter // accepted tokens by draft position
}

// featureFamilies registers what vLLM 0.32 exports only under a feature: the KV connector's
// (kv_fetch_by_stage on a consumer, NIXL's), speculative decoding's, LoRA's; and the prompt-token
// and connector prefix-cache counters it always has.
func (m *metrics) featureFamilies(cfg Config, lv prometheus.Labels) {
	reg := m.reg
	labels := []string{"model_name", "engine"}
	counter := func(name, help string) prometheus.Counter {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		reg.MustRegister(v)
		return v.With(lv)
	}
	m.externalQueries = counters{counter("vllm:external_prefix_cache_queries_total", "External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens.")}
	m.externalHits = counters{counter("vllm:external_prefix_cache_hits_total", "External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens.")}
	bySource := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:prompt_tokens_by_source_total", Help: "Number of prompt tokens by source."}, []string{"model_name", "engine", "source"})
	reg.MustRegister(bySource)
	m.promptBySource = bySource.MustCurryWith(lv)
	for _, src := range []string{"local_compute", "local_cache_hit", "external_kv_transfer"} {
		m.promptBySource.WithLabelValues(src)
	}
	m.promptCached = counter("vllm:prompt_tokens_cached_total", "Number of cached prompt tokens (local + external).")

	if cfg.KVRole == KVConsumer {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vllm:num_requests_kv_fetch_by_stage",
			Help: "Number of waiting requests by async KV load stage. Stage labels: 'waiting_to_start' = needs an async KV load that has not started; 'in_progress' = load started and not yet reported finished; 'completed_waiting' = load finished, request not running yet.",
		}, []string{"model_name", "engine", "stage"})
		reg.MustRegister(g)
		m.kvFetch = map[fetchStage]prometheus.Gauge{}
		for st := fetchWaiting; st <= fetchDone; st++ {
			m.kvFetch[st] = g.With(prometheus.Labels{"model_name": cfg.ModelName, "engine": cfg.Engine, "stage": kvFetchStages[st]})
			m.kvFetch[st].Set(0)
		}
	}
	if cfg.KVRole != "" {
		m.nixl = newNixlMetrics(reg, lv)
	}
	if k := cfg.NumSpeculativeTokens; k > 0 {
		m.spec = &specMetrics{
			drafts:      counter("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts."),
			draftTokens: counter("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens."),
			accepted:    counter("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens."),
		}
		pos := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:spec_decode_num_accepted_tokens_per_pos_total", Help: "Accepted tokens per draft position."}, []string{"model_name", "engine", "position"})
		reg.MustRegister(pos)
		for i := range k {
			m.spec.perPos = append(m.spec.perPos, pos.With(prometheus.Labels{"model_name": cfg.ModelName, "engine": cfg.Engine, "position": strconv.Itoa(i)}))
		}
	}
	if cfg.EnableLoRA {
		// No model_name or engine label: the adapters' state is the label set.
		m.loraInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vllm:lora_requests_info", Help: "Running stats on lora requests."},
			[]string{"max_lora", "waiting_lora_adapters", "running_lora_adapters"})
		reg.MustRegister(m.loraInfo)
	}
}
