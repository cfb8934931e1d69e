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
	PrefixHitRate float64       `json:"prefix_hit_rate"` // share of prompt tokens found in the prefix cache
	// Burst requests arrive at once when the scenario starts (a batch job
	// fanning out), on top of the Poisson stream; it makes the signature show
	// up in seconds instead of one request lifetime.
	Burst int `json:"burst"`
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
