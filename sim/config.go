// Package sim is vllm-sim's engine: a model of the vLLM V1 scheduler (continuous
// batching, chunked prefill, a KV block pool, preemption by recompute), a synthetic
// load generator (Poisson arrivals, lognormal prompt and output lengths, client
// timeouts), vLLM's Prometheus metric surface, the profiler endpoints and an HTTP
// server that looks like a vLLM OpenAI server to an SRE tool.
//
// The engine is driven by explicit timestamps (Engine.Step(now)), so tests run it
// in virtual time; the server drives it in real time (Engine.Run).
//
// It deliberately shares no code with the rest of the module.
package sim

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Config is the engine configuration: what vLLM would take as server flags,
// plus the step-time cost model of the simulated GPU.
type Config struct {
	ModelName            string
	Engine               string // data-parallel index label, "0"
	MaxNumSeqs           int
	MaxNumBatchedTokens  int
	NumGPUBlocks         int
	BlockSize            int
	MaxModelLen          int
	GPUMemoryUtilization float64
	EnablePrefixCaching  bool
	// MetricNames picks the generation of metric names: NamesNew (default, current vLLM),
	// NamesLegacy (before 0.9.2: gpu_cache_usage_perc, time_per_output_token_seconds,
	// gpu_prefix_cache_*) or NamesBoth (0.9.2 to 0.11: old and new names at once).
	MetricNames MetricNames
	Seed        uint64
	MaxWaiting  int // safety cap on synthetic arrivals queued; 0 = default

	// Start is when the server process started (process_start_time_seconds); zero = now.
	Start time.Time
	// PodName is the pod this server runs as (GET /admin/targets); a rollout replaces it by
	// PodNamePrefix-<replicaset hash>-<suffix>.
	PodName       string
	PodNamePrefix string

	// API server admission limits (vLLM's --max-num-queued-reqs, --max-num-queued-tokens);
	// 0 = none. Refused requests get 503 and count in vllm:admission_rejections_total.
	MaxNumQueuedReqs   int
	MaxNumQueuedTokens int

	// API server CPU model: its event loop runs on one core; each request costs APIPerRequest
	// (parsing, chat template) plus APIPerPromptToken per prompt token (tokenization) before it
	// reaches the engine core; each engine step's outputs cost APIPerStep plus
	// APIPerOutputToken per token (detokenization, responses, metrics). The idle loop takes
	// APIIdleShare of a core; start-up (imports, tokenizer) APIStartupCPU.
	APIPerRequest     time.Duration
	APIPerPromptToken time.Duration
	APIPerStep        time.Duration
	APIPerOutputToken time.Duration
	APIIdleShare      float64
	APIStartupCPU     time.Duration

	// KVRole "consumer" makes the server the decode side of disaggregated prefill/decode
	// (vLLM's kv_role kv_consumer with the NixlConnector): requests of scenarios with
	// RemotePrefill load their prompt's KV (KVBytesPerToken a token) over a link of
	// KVTransferBandwidth bytes/s instead of computing it. "" = no KV connector.
	KVRole              string
	KVBytesPerToken     int
	KVTransferBandwidth float64

	// NumSpeculativeTokens > 0 turns on speculative decoding with that many draft tokens per
	// step (vLLM's --speculative-config num_speculative_tokens).
	NumSpeculativeTokens int

	// EnableLoRA serves LoRA adapters (--enable-lora), at most MaxLoras of them in one batch
	// (--max-loras); LoRAModules names them (--lora-modules), else lora-1, lora-2, ...
	EnableLoRA  bool
	MaxLoras    int
	LoRAModules []string

	// HostUptime: how long the host had been up when the server started. vLLM's engine
	// timestamps are the host's monotonic clock (seconds since boot), which leaks into a few
	// histograms (see finishUnstarted).
	HostUptime time.Duration

	// TensorParallelSize is the GPUs (ranks) the pod holds, one worker process each (vLLM's
	// --tensor-parallel-size; 0 counts as 1). ExecuteModelTimeout is vLLM's deadline on a step's
	// RPC to its workers where the multiprocessing executor runs (TP > 1):
	// VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS, 300 s (gpu.go).
	TensorParallelSize  int
	ExecuteModelTimeout time.Duration

	// Operation times: a level-1/2 sleep (offloading or discarding the weights), a wake-up
	// (reloading them), an RL weight update through /update_weights.
	SleepTime        time.Duration
	WakeTime         time.Duration
	WeightUpdateTime time.Duration

	// Step-time cost model. A step costs
	//   StepBase + PerSeq*scheduled + PerPrefillToken*prefill_tokens + PerContextToken*context_tokens
	// where context_tokens is the total context the batch's attention reads
	// (memory bandwidth), times a small deterministic jitter.
	StepBase        time.Duration
	PerSeq          time.Duration
	PerPrefillToken time.Duration
	PerContextToken time.Duration
	Jitter          float64 // relative standard deviation of the step time
}

// KVConsumer is the KV role of the decode side of disaggregated serving.
const KVConsumer = "consumer"

// MetricNames is a generation of vLLM's metric names.
type MetricNames string

// The metric name generations vllm-sim can export.
const (
	NamesNew    MetricNames = "new"
	NamesLegacy MetricNames = "legacy"
	NamesBoth   MetricNames = "both"
)

// ParseMetricNames parses new, legacy or both.
func ParseMetricNames(s string) (MetricNames, error) {
	switch n := MetricNames(s); n {
	case NamesNew, NamesLegacy, NamesBoth:
		return n, nil
	}
	return "", fmt.Errorf("metric names must be new, legacy or both, got %q", s)
}

func (n MetricNames) old() bool     { return n == NamesLegacy || n == NamesBoth }
func (n MetricNames) current() bool { return n != NamesLegacy }

// DefaultConfig is a Llama-3.1-8B-sized deployment on a mid-size GPU.
func DefaultConfig() Config {
	return Config{
		ModelName:            "meta-llama/Llama-3.1-8B-Instruct",
		Engine:               "0",
		MaxNumSeqs:           256,
		MaxNumBatchedTokens:  2048,
		NumGPUBlocks:         14000,
		BlockSize:            16,
		MaxModelLen:          8192,
		GPUMemoryUtilization: 0.9,
		EnablePrefixCaching:  true,
		MetricNames:          NamesNew,
		Seed:                 1,
		MaxWaiting:           50000,
		PodNamePrefix:        "vllm-sim",
		APIPerRequest:        300 * time.Microsecond,
		APIPerPromptToken:    500 * time.Nanosecond,
		APIPerStep:           150 * time.Microsecond,
		APIPerOutputToken:    15 * time.Microsecond,
		APIIdleShare:         0.01,
		APIStartupCPU:        9 * time.Second,
		KVBytesPerToken:      131072, // Llama-3.1-8B, bf16: 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes
		KVTransferBandwidth:  20e9,
		MaxLoras:             1,
		HostUptime:           72 * time.Hour,
		SleepTime:            2 * time.Second,
		WakeTime:             3 * time.Second,
		WeightUpdateTime:     10 * time.Second,
		TensorParallelSize:   1,
		ExecuteModelTimeout:  300 * time.Second,
		StepBase:             15 * time.Millisecond,
		PerSeq:               50 * time.Microsecond,
		PerPrefillToken:      25 * time.Microsecond,
		PerContextToken:      700 * time.Nanosecond,
		Jitter:               0.03,
	}
}

// Validate checks the configuration for values the engine cannot run with.
func (c Config) Validate() error {
	switch {
	case c.ModelName == "":
		return fmt.Errorf("model name is empty")
	case c.MaxNumSeqs < 1:
		return fmt.Errorf("max_num_seqs must be >= 1, got %d", c.MaxNumSeqs)
	case c.MaxNumBatchedTokens < 1:
		return fmt.Errorf("max_num_batched_tokens must be >= 1, got %d", c.MaxNumBatchedTokens)
	case c.BlockSize < 1:
		return fmt.Errorf("block_size must be >= 1, got %d", c.BlockSize)
	case c.MaxModelLen < 2:
		return fmt.Errorf("max_model_len must be >= 2, got %d", c.MaxModelLen)
	case c.NumGPUBlocks*c.BlockSize < c.MaxModelLen:
		return fmt.Errorf("KV pool of %d blocks x %d tokens cannot hold one request of max_model_len %d", c.NumGPUBlocks, c.BlockSize, c.MaxModelLen)
	case c.StepBase <= 0:
		return fmt.Errorf("step base time must be > 0")
	case c.MetricNames != "" && c.MetricNames != NamesNew && c.MetricNames != NamesLegacy && c.MetricNames != NamesBoth:
		return fmt.Errorf("metric names must be new, legacy or both, got %q", c.MetricNames)
	case c.KVRole != "" && c.KVRole != KVConsumer:
		return fmt.Errorf("kv role must be %q or empty, got %q", KVConsumer, c.KVRole)
	case c.KVRole != "" && (c.KVBytesPerToken < 1 || c.KVTransferBandwidth <= 0):
		return fmt.Errorf("a KV consumer needs KV bytes per token >= 1 and a transfer bandwidth > 0")
	case c.NumSpeculativeTokens < 0:
		return fmt.Errorf("num speculative tokens must be >= 0, got %d", c.NumSpeculativeTokens)
	case c.EnableLoRA && c.MaxLoras < 1:
		return fmt.Errorf("max_loras must be >= 1, got %d", c.MaxLoras)
	case (c.KVRole != "" || c.NumSpeculativeTokens > 0 || c.EnableLoRA) && c.MetricNames == NamesLegacy:
		return fmt.Errorf("KV transfer, speculative decoding and LoRA metrics are current vLLM's: not with legacy names")
	}
	return nil
}

// Scenario is a synthetic load: who the clients are, not what the metrics say.
// Every diagnosis the scenarios produce comes out of the engine model.
type Scenario struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	ArrivalRate float64 `json:"arrival_rate"` // requests per second (Poisson)
	PromptMean  float64 `json:"prompt_mean"`  // lognormal mean, tokens
	PromptSigma float64 `json:"prompt_sigma"` // lognormal sigma of ln(tokens)
	OutputMean  float64 `json:"output_mean"`  // lognormal mean of the natural output length
	OutputSigma float64 `json:"output_sigma"`
	MaxTokens   int     `json:"max_tokens"` // client max_tokens: outputs that reach it finish with "length"
	// A share of clients give up after a timeout drawn uniformly from [TimeoutMin, TimeoutMax].
	TimeoutShare  float64       `json:"timeout_share"`
	TimeoutMin    time.Duration `json:"timeout_min"`
	TimeoutMax    time.Duration `json:"timeout_max"`
	PrefixHitRate float64       `json:"prefix_hit_rate"` // share of each prompt that is a prefix the clients share (a system prompt)
	// UniquePrefixShare of the clients put something unique at the top of the prompt (a request
	// id, a timestamp in the chat template) from UniquePrefixAfter on: their shared part no longer
	// matches any cached block, so the prefix cache misses although the prompts are as long.
	UniquePrefixShare float64       `json:"unique_prefix_share"`
	UniquePrefixAfter time.Duration `json:"unique_prefix_after"`
	// EngineStalled is a fault, not a load: the engine loop stops making steps (a wedged engine,
	// vLLM #39863). Arrivals still join the queue and HTTP, /health and /metrics still answer,
	// but nothing is scheduled, computed or finished.
	EngineStalled bool `json:"engine_stalled"`
	// Hang stops the engine core HangAfter the switch (a hang inside a step, a GPU fault, a
	// collective hang; SIGSTOP of EngineCore), for HangFor (0: until released). Nothing the
	// engine reports moves; the API server keeps accepting requests, which it cannot hand over.
	Hang      bool          `json:"hang,omitempty"`
	HangAfter time.Duration `json:"hang_after,omitempty"`
	HangFor   time.Duration `json:"hang_for,omitempty"`
	// HangIdle makes the hang start at the first moment from HangAfter on when the engine holds
	// nothing (0 running, 0 waiting): an idle engine that hangs, its gauges frozen at 0/0.
	HangIdle bool `json:"hang_idle,omitempty"`
	// Sleep: an operator puts the engine to sleep (level SleepLevel, mode abort) SleepAfter the
	// switch, and wakes it SleepFor later (0: stays asleep until woken).
	Sleep      bool          `json:"sleep,omitempty"`
	SleepAfter time.Duration `json:"sleep_after,omitempty"`
	SleepLevel int           `json:"sleep_level,omitempty"`
	SleepFor   time.Duration `json:"sleep_for,omitempty"`
	// WeightUpdateEvery: an RL trainer pauses generation (mode keep) and updates the weights
	// (WeightUpdateFor, through /update_weights), then resumes; first WeightUpdateAfter the switch.
	WeightUpdateEvery time.Duration `json:"weight_update_every,omitempty"`
	WeightUpdateAfter time.Duration `json:"weight_update_after,omitempty"`
	WeightUpdateFor   time.Duration `json:"weight_update_for,omitempty"`
	// CrashAfter: the server process dies CrashAfter every start (the switch, then each
	// restart) and is down for DownFor (nothing listens), then starts again empty.
	CrashAfter time.Duration `json:"crash_after,omitempty"`
	DownFor    time.Duration `json:"down_for,omitempty"`
	// Replace: ReplaceAfter the switch the pod is replaced by a new pod of rollout revision
	// Revision (a new pod name, an empty engine, every counter at 0).
	Replace      bool          `json:"replace,omitempty"`
	ReplaceAfter time.Duration `json:"replace_after,omitempty"`
	Revision     int           `json:"revision,omitempty"`
	// RemotePrefill: the clients are a P/D proxy's, their prompts prefilled on another pod; on a
	// KV consumer each request loads its prompt's KV (ignored elsewhere: prefilled locally).
	RemotePrefill bool `json:"remote_prefill,omitempty"`
	// KVStuck: KVStuckAfter the switch the prefill side stops answering: new KV transfers never
	// complete, but KVFailShare of them fail with a transport error KVFailAfter after posting.
	KVStuck      bool          `json:"kv_stuck,omitempty"`
	KVStuckAfter time.Duration `json:"kv_stuck_after,omitempty"`
	KVFailShare  float64       `json:"kv_fail_share,omitempty"`
	KVFailAfter  time.Duration `json:"kv_fail_after,omitempty"`
	// DraftAcceptance is how likely a draft token is accepted given the ones before it were,
	// for the clients' traffic (repetitive text: high; random: low); from DraftAcceptanceAfter
	// on, new clients' traffic has DraftAcceptanceLater instead (if set).
	DraftAcceptance      float64       `json:"draft_acceptance,omitempty"`
	DraftAcceptanceLater float64       `json:"draft_acceptance_later,omitempty"`
	DraftAcceptanceAfter time.Duration `json:"draft_acceptance_after,omitempty"`
	// LoRAShare of the requests ask for one of LoRAAdapters adapters, uniformly.
	LoRAAdapters int     `json:"lora_adapters,omitempty"`
	LoRAShare    float64 `json:"lora_share,omitempty"`
	// TemplateCost is API server CPU each request costs beyond its tokens (a heavy chat
	// template, tool schemas, multimodal preprocessing).
	TemplateCost time.Duration `json:"template_cost,omitempty"`
	// GPU is what happens to the GPUs under the pod (gpu.go): an XID, a GPU falling off the
	// bus, a failed row remap, thermal throttling.
	GPU GPUFault `json:"gpu,omitempty"`
	// Burst requests arrive at once when the scenario starts (a batch job
	// fanning out), on top of the Poisson stream; it makes the signature show
	// up in seconds instead of one request lifetime.
	Burst int `json:"burst"`
	// Long clients beside the others (a batch summarization or RAG job): from LongAfter on,
	// LongRate req/s (Poisson, a stream of its own) of ~LongPromptMean-token prompts (lognormal,
	// LongPromptSigma) asking for ~LongOutputMean tokens (sigma 0.3). See thirdring.go.
	LongRate        float64       `json:"long_rate,omitempty"`
	LongPromptMean  float64       `json:"long_prompt_mean,omitempty"`
	LongPromptSigma float64       `json:"long_prompt_sigma,omitempty"`
	LongOutputMean  float64       `json:"long_output_mean,omitempty"`
	LongAfter       time.Duration `json:"long_after,omitempty"`
	// StructuredShare of the requests carry a JSON schema or a tool grammar (structured output):
	// each waits deferred for its grammar, GrammarCompile, before it can be scheduled (vLLM's
	// WAITING_FOR_STRUCTURED_OUTPUT_GRAMMAR).
	StructuredShare float64       `json:"structured_share,omitempty"`
	GrammarCompile  time.Duration `json:"grammar_compile,omitempty"`
	// AdmissionWedge is a fault of the scheduler, as vllm#53130 reports it on 0.27.1: requests
	// parked deferred count against max_num_seqs at admission, and a parked request is promoted
	// only when the admission loop reaches it, so once running + parked reaches max_num_seqs
	// nothing is admitted again (see thirdring.go).
	AdmissionWedge bool `json:"admission_wedge,omitempty"`
}

// Scenarios are the built-in loads, calibrated against DefaultConfig.
var Scenarios = map[string]Scenario{
	"idle": {
		Name: "idle", Description: "no synthetic load; only HTTP requests",
	},
	"healthy": {
		Name: "healthy", Description: "moderate load well below capacity",
		ArrivalRate: 4, PromptMean: 300, PromptSigma: 0.5, OutputMean: 150, OutputSigma: 0.6, MaxTokens: 1024,
		PrefixHitRate: 0.2,
	},
	"overload": {
		Name: "overload", Description: "arrivals about twice capacity with short requests: running pinned at max_num_seqs, queue grows without bound, no preemption",
		ArrivalRate: 70, PromptMean: 200, PromptSigma: 0.5, OutputMean: 100, OutputSigma: 0.5, MaxTokens: 256,
		PrefixHitRate: 0.2,
	},
	"kv-pressure": {
		Name: "kv-pressure", Description: "long prompts and long outputs, many at once: the KV pool fills and requests are preempted",
		ArrivalRate: 0.8, PromptMean: 1200, PromptSigma: 0.4, OutputMean: 1200, OutputSigma: 0.4, MaxTokens: 3000,
		PrefixHitRate: 0.2, Burst: 170,
	},
	"long-prompts": {
		Name: "long-prompts", Description: "prompts about 16x longer than healthy at a low rate: prefill time and TTFT rise, queue stays short",
		ArrivalRate: 0.6, PromptMean: 5000, PromptSigma: 0.15, OutputMean: 120, OutputSigma: 0.6, MaxTokens: 1024,
		PrefixHitRate: 0.2,
	},
	"wide-batch": {
		Name: "wide-batch", Description: "many concurrent requests with long outputs below capacity: the running batch widens, ITL and decode time rise",
		ArrivalRate: 2.8, PromptMean: 400, PromptSigma: 0.3, OutputMean: 500, OutputSigma: 0.3, MaxTokens: 1024,
		PrefixHitRate: 0.2, Burst: 130,
	},
	"client-timeouts": {
		Name: "client-timeouts", Description: "mild load, but 40% of clients give up after 0.5-2.5 s: aborts rise while latency stays normal",
		ArrivalRate: 5, PromptMean: 300, PromptSigma: 0.5, OutputMean: 150, OutputSigma: 0.6, MaxTokens: 1024,
		TimeoutShare: 0.4, TimeoutMin: 500 * time.Millisecond, TimeoutMax: 2500 * time.Millisecond,
		PrefixHitRate: 0.2,
	},
}

func init() {
	// The prefix-cache scenarios: a chat workload whose long system prompt the prefix cache
	// serves (about 90% of every prompt's tokens), then the same clients after a template change.
	shared := Scenario{
		Name: "shared-prefix", Description: "chat clients sharing a long system prompt: ~3000-token prompts, ~90% of them served by the prefix cache, short prefill",
		ArrivalRate: 1, PromptMean: 3000, PromptSigma: 0.15, OutputMean: 120, OutputSigma: 0.6, MaxTokens: 1024,
		PrefixHitRate: 0.9,
	}
	collapse := shared
	collapse.Name = "prefix-collapse"
	collapse.Description = "shared-prefix for 90 s, then a chat-template change puts a request id at the top of every prompt: same prompt lengths, the prefix cache stops hitting, prefill recomputes"
	collapse.UniquePrefixShare, collapse.UniquePrefixAfter = 1, 90*time.Second
	stalled := Scenarios["healthy"]
	stalled.Name = "engine-stalled"
	stalled.Description = "healthy load on a wedged engine: no step is made, the queue grows, /health still answers 200"
	stalled.EngineStalled = true
	for _, sc := range []Scenario{shared, collapse, stalled} {
		Scenarios[sc.Name] = sc
	}
	for _, sc := range lifecycleScenarios() {
		Scenarios[sc.Name] = sc
	}
	for _, sc := range secondRingScenarios() {
		Scenarios[sc.Name] = sc
	}
	for _, sc := range gpuScenarios() {
		Scenarios[sc.Name] = sc
	}
	for _, fs := range gpuFleetScenarios() {
		FleetScenarios[fs.Name] = fs
	}
	for _, sc := range thirdRingScenarios() {
		Scenarios[sc.Name] = sc
	}
}

// secondRingScenarios are the incidents of issue 26: disaggregated prefill/decode (with
// --kv-role consumer), speculative decoding (with --num-speculative-tokens), LoRA (with
// --enable-lora --max-loras 4) and an API server that becomes the bottleneck.
func secondRingScenarios() []Scenario {
	healthy := Scenarios["healthy"]
	pd := Scenario{
		Name: "kv-consumer", Description: "the decode side of disaggregated serving (needs --kv-role consumer): 3 req/s from a P/D proxy, ~1500-token prompts prefilled on the prefill pods, ~150-token outputs; each request loads its prompt's KV over NIXL (~10 ms), waits deferred meanwhile, then decodes",
		ArrivalRate: 3, PromptMean: 1500, PromptSigma: 0.3, OutputMean: 150, OutputSigma: 0.5, MaxTokens: 1024,
		RemotePrefill: true, TimeoutShare: 1, TimeoutMin: 20 * time.Second, TimeoutMax: 40 * time.Second,
	}
	stuck := pd
	stuck.Name = "kv-transfer-stuck"
	stuck.Description = "kv-consumer, then 30 s after the switch the prefill side stops answering: new KV loads never complete (in_progress, holding their blocks; deferred), 30% fail with a transport error after 5 s (nixl_num_failed_transfers, finished_reason error); once the loads fill the KV cache new requests wait to start; clients give up after 20-40 s"
	stuck.KVStuck, stuck.KVStuckAfter, stuck.KVFailShare, stuck.KVFailAfter = true, 30*time.Second, 0.3, 5*time.Second

	spec := healthy
	spec.Name = "spec-decode"
	spec.Description = "healthy load of repetitive text (code edits, quoting RAG): with --num-speculative-tokens, a draft token is accepted with probability 0.8 given the previous one was (mean acceptance length ~2.95 with 3 tokens)"
	spec.DraftAcceptance = 0.8
	drop := spec
	drop.Name = "spec-decode-acceptance-drop"
	drop.Description = "spec-decode for 90 s, then the traffic turns random (acceptance 0.1): ITL (one per step) stays flat, the time per output token (decode time / (tokens - 1)) and e2e rise, acceptance falls, at an unchanged batch"
	drop.DraftAcceptanceLater, drop.DraftAcceptanceAfter = 0.1, 90*time.Second
	wide := Scenarios["wide-batch"]
	wide.Name = "spec-decode-wide-batch"
	wide.Description = "wide-batch's requests of repetitive text (acceptance 0.8, steady), a burst of 100 then 7 req/s: the batch widens to ~80-120, ITL and the time per output token rise together while the acceptance stays (the hard negative of spec-decode-acceptance-drop)"
	wide.DraftAcceptance = 0.8
	wide.ArrivalRate, wide.Burst = 7, 100 // speculation finishes requests ~3x sooner: more of them to widen the batch

	lora := healthy
	lora.Name = "lora-adapters"
	lora.Description = "healthy load spread over 3 LoRA adapters (with --enable-lora --max-loras 4): every adapter finds a slot, nothing waits deferred"
	lora.LoRAAdapters, lora.LoRAShare = 3, 1
	hot := healthy
	hot.Name = "lora-hot-adapters"
	hot.Description = "6 req/s spread over 8 hot LoRA adapters (with --enable-lora --max-loras 4): requests for adapters without a slot wait deferred while the batch has room; the scheduler serves the adapters in the batch and starves the others until their requests drain"
	hot.ArrivalRate, hot.LoRAAdapters, hot.LoRAShare = 6, 8, 1
	hot.TimeoutShare, hot.TimeoutMin, hot.TimeoutMax = 1, 60*time.Second, 120*time.Second

	front := Scenario{
		Name: "frontend-bound", Description: "20 req/s of short chat requests with a heavy chat template (tool schemas: ~52 ms of API server CPU each): the API server's one core saturates (process_cpu_seconds_total ~1 core/s), requests wait for it before the engine sees them: TTFT grows outside queue + prefill, which stay short, as ITL does",
		ArrivalRate: 20, PromptMean: 400, PromptSigma: 0.5, OutputMean: 40, OutputSigma: 0.5, MaxTokens: 512,
		PrefixHitRate: 0.2, TemplateCost: 52 * time.Millisecond,
	}
	return []Scenario{pd, stuck, spec, drop, wide, lora, hot, front}
}

// lifecycleScenarios are the incidents of the server rather than of its load: the healthy load
// on an engine core that hangs, sleeps, is paused for weight updates or keeps crashing.
func lifecycleScenarios() []Scenario {
	healthy := Scenarios["healthy"]
	hang := healthy
	hang.Name = "engine-hang"
	hang.Description = "healthy load; 20 s after the switch the engine core stops (a hang in a step, a GPU fault, a collective hang: SIGSTOP of EngineCore) until released: every vllm: series freezes (a few running, none waiting), /metrics and /health still answer, the API server holds the new requests (process_open_fds climbs)"
	hang.Hang, hang.HangAfter = true, 20*time.Second
	hangQ := healthy
	hangQ.Name = "engine-hang-queued"
	hangQ.Description = "healthy load plus a burst of 400 requests at the switch; 3 s later, with the batch full and a queue, the engine core stops until released: the gauges freeze with running and waiting above 0"
	hangQ.Burst, hangQ.Hang, hangQ.HangAfter = 400, true, 3*time.Second
	sleep := healthy
	sleep.Name = "sleep"
	sleep.Description = "healthy load; 20 s after the switch an operator puts the engine to sleep (level 1, mode abort: the requests in flight are aborted and counted): engine_sleep_state{awake} 0, weights_offloaded 1; new requests are accepted and wait unscheduled (not counted by the gauges) until woken"
	sleep.Sleep, sleep.SleepAfter, sleep.SleepLevel = true, 20*time.Second, 1
	update := healthy
	update.Name = "weight-update"
	update.Description = "healthy load; from 20 s on, every 60 s an RL trainer pauses generation (mode keep: nothing scheduled, the gauges frozen where they were) and updates the weights through /update_weights for 15 s (rl_weight_update_operations_in_flight{operation=\"update\"} 1), then resumes"
	update.WeightUpdateEvery, update.WeightUpdateAfter, update.WeightUpdateFor = 60*time.Second, 20*time.Second, 15*time.Second
	loop := healthy
	loop.Name = "restart-loop"
	loop.Description = "healthy load; the server dies 40 s after each start and is down 15 s (the scrape fails), then starts empty: counters reset to 0, a new process_start_time_seconds, again and again (CrashLoopBackOff)"
	loop.CrashAfter, loop.DownFor = 40*time.Second, 15*time.Second
	// An idle engine that hangs (issue 37): one short request a second, each done in a few steps,
	// so the engine holds nothing most of the time; 20 s after the switch, at a moment it holds
	// nothing, the core stops for 70 s. Its gauges freeze at 0/0 while the requests that keep
	// arriving wait in the API server (process_open_fds +1/s); the same with nothing arriving
	// (engine-hang-idle-quiet) is indistinguishable from idle.
	trickle := Scenarios["idle"]
	trickle.Name = "engine-hang-idle"
	trickle.Description = "one short request a second (prompt ~100, output ~8 tokens); 20 s after the switch, at a moment the engine holds nothing, the core stops for 70 s: the gauges freeze at 0/0, the API server holds the arrivals (process_open_fds +1/s); released, their TTFT holds the hang"
	trickle.ArrivalRate, trickle.PromptMean, trickle.PromptSigma, trickle.OutputMean, trickle.OutputSigma, trickle.MaxTokens = 1, 100, 0.2, 8, 0.2, 16
	trickle.Hang, trickle.HangIdle, trickle.HangAfter, trickle.HangFor = true, true, 20*time.Second, 70*time.Second
	quiet := Scenarios["idle"]
	quiet.Name = "engine-hang-idle-quiet"
	quiet.Description = "nothing arrives; 20 s after the switch the idle engine core stops for 70 s: no series moves, no request is held, nothing to tell from idle (the hard negative of engine-hang-idle)"
	quiet.Hang, quiet.HangIdle, quiet.HangAfter, quiet.HangFor = true, true, 20*time.Second, 70*time.Second
	return []Scenario{hang, hangQ, sleep, update, loop, trickle, quiet}
}

// ScenarioNames lists the built-in scenarios in a stable order.
func ScenarioNames() []string {
	names := make([]string, 0, len(Scenarios))
	for n := range Scenarios {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// LookupScenario returns the named built-in scenario.
func LookupScenario(name string) (Scenario, error) {
	s, ok := Scenarios[strings.TrimSpace(name)]
	if !ok {
		return Scenario{}, fmt.Errorf("unknown scenario %q (known: %s)", name, strings.Join(ScenarioNames(), ", "))
	}
	return s, nil
}
