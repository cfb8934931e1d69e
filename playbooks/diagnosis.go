package playbooks

import (
	"slices"
	"strings"
	"time"

	"github.com/vllm-responder/vllm-responder/traces"
)

// Verdict ids are the machine-readable outcome of a diagnosis. They are a contract: other tools and
// tests match on them (README.md, "What it diagnoses"), so they never change meaning.
const (
	VerdictCapacityPastKnee    = "capacity-past-knee"
	VerdictKVPreemption        = "kv-preemption"
	VerdictKVPressure          = "kv-pressure"
	VerdictPrefillBound        = "prefill-bound"
	VerdictDecodeBound         = "decode-bound"
	VerdictClientAborts        = "client-aborts"
	VerdictInconclusive        = "inconclusive"
	VerdictHealthy             = "healthy"
	VerdictNoData              = "no-data"
	VerdictEngineStalled       = "engine-stalled"
	VerdictLoadImbalance       = "load-imbalance"
	VerdictPrefixCollapse      = "prefix-cache-collapse"
	VerdictEnginePaused        = "engine-paused"
	VerdictEngineRestarting    = "engine-restarting"
	VerdictKVTransfer          = "kv-transfer-stalled"
	VerdictSpecDecode          = "spec-decode-regression"
	VerdictLoRACapacity        = "lora-capacity"
	VerdictFrontendBound       = "frontend-bound"
	VerdictPrefillInterference = "prefill-interference"
	VerdictHeldUpstream        = "held-upstream"
	VerdictGPUFault            = "gpu-fault"
	VerdictGPUThrottled        = "gpu-throttled"
)

// Class is how a verdict reads at a glance: what every integration marks it by (Slack's
// emoji, Teams' colour) and how triage orders the verdicts of several models. It is kept once,
// beside each verdict's meaning (verdicts).
type Class string

// The classes of verdicts.
const (
	// ClassProblem: something is wrong and the verdict names why: act on it.
	ClassProblem Class = "problem"
	// ClassPressure: nothing fails yet, but it will soon (KV cache near full).
	ClassPressure Class = "pressure"
	// ClassPaused: the engine is held on purpose: do not act on it as a failure.
	ClassPaused Class = "paused"
	// ClassUnexplained: the alert is real and no rule explains it.
	ClassUnexplained Class = "unexplained"
	// ClassHealthy: nothing is wrong.
	ClassHealthy Class = "healthy"
	// ClassNoData: there is nothing to judge.
	ClassNoData Class = "no-data"
)

// Urgency orders classes for choosing among the diagnoses of several models (0 first): a named
// problem (or pressure, or a pause, which names its cause too), then one no rule explains, then
// healthy, then no data. An unknown class comes with the named problems.
func (c Class) Urgency() int {
	switch c {
	case ClassUnexplained:
		return 1
	case ClassHealthy:
		return 2
	case ClassNoData:
		return 3
	}
	return 0
}

// verdictDef is one verdict id a playbook may use: its class, its causal rank and what it means.
type verdictDef struct {
	ID    string
	Class Class
	// Rank is the verdict's place in the causal order, cause before symptom (1 first): of the
	// verdicts of one incident's alerts, the one of the lowest rank is the incident's. Each
	// place and why: docs/incidents.md ("The causal order"), which lists them in this order.
	Rank    int
	Meaning string
}

// verdicts is the table of verdict ids, the one place each verdict's class and meaning are
// kept: the contract of README.md ("What it diagnoses") and docs/playbooks/README.md.
var verdicts = []verdictDef{
	{VerdictCapacityPastKnee, ClassProblem, 14, "arrivals exceed service capacity: queue grows, queueing dominates TTFT, running batch pinned, no preemption. Add capacity or shed load; not a bug"},
	{VerdictKVPreemption, ClassProblem, 13, "KV cache near full and requests are being preempted. Lower `--max-num-seqs`/`--max-model-len`, raise `--gpu-memory-utilization`, or add capacity"},
	{VerdictKVPressure, ClassPressure, 19, "KV cache near full, no preemptions yet: preemption imminent"},
	{VerdictPrefillInterference, ClassProblem, 15, "long prompts' prefill chunks share the decode steps (chunked prefill, one token budget a step) and stretch the inter-token latency of the requests decoding beside them: a bimodal ITL, the batch not the cause. `--long-prefill-token-threshold`, a smaller `--max-num-batched-tokens`, or the long prompts on pods of their own"},
	{VerdictPrefillBound, ClassProblem, 16, "prefill time dominates the TTFT rise (longer prompts, batching); queue is short"},
	{VerdictDecodeBound, ClassProblem, 17, "decode time / ITL rose with a wider running batch: batch width or memory bandwidth"},
	{VerdictClientAborts, ClassProblem, 18, "abort share rose while latency is normal: look at client or load-balancer timeouts"},
	{VerdictInconclusive, ClassUnexplained, 20, "the alert is real but no rule explains it: offer a bounded profile capture"},
	{VerdictHealthy, ClassHealthy, 22, "on-demand triage found nothing wrong: tokens flow wherever requests run, no frozen gauges, latencies under the thresholds, the scope's series present and scraped (otherwise `inconclusive`)"},
	{VerdictNoData, ClassNoData, 21, "Prometheus has no vLLM series for this scope (wrong labels, scrape down, metric names unknown)"},
	{VerdictEngineStalled, ClassProblem, 3, "a pod's engine makes no progress (no prompt or generation tokens) while requests wait, or admits none of its queue while its batch has room and its KV cache is free (an admission wedge, vllm#53130); `/health` may still say 200. Restart, take a stack dump, read the logs"},
	{VerdictHeldUpstream, ClassProblem, 8, "requests wait in the router or gateway in front of the model (llm-d's Endpoint Picker's flow-control queue; vLLM production-stack's router sending requests that never arrive) while every engine of the model has room: the gateway, not capacity (with stale model-server metrics the EPP reads the pool as saturated and stops dispatching)"},
	{VerdictLoadImbalance, ClassProblem, 9, "one pod (or DP engine) of a model carries far more of the load or queue than its siblings while the fleet has room: the router, not capacity"},
	{VerdictPrefixCollapse, ClassProblem, 10, "the prefix-cache hit rate fell far below its baseline with unchanged prompts, and prefill rose: routing affinity, prompt/template changes, evictions"},
	{VerdictEnginePaused, ClassPaused, 4, "the engine sleeps or is paused on purpose (`engine_sleep_state`, weight updates): do not restart"},
	{VerdictEngineRestarting, ClassProblem, 2, "the pod's server is gone or restarting (scrape down, counters reset, process start time changing), with the reason where kube-state-metrics says it (OOMKilled, Error)"},
	{VerdictKVTransfer, ClassProblem, 5, "on a KV consumer (decode side of disaggregated serving), requests wait deferred for KV that does not arrive (fetch stuck, failed or expired transfers): the connector or the prefill side, not capacity"},
	{VerdictSpecDecode, ClassProblem, 11, "speculative decoding's acceptance fell well below its baseline while the time per output token rose at an unchanged batch (ITL, recorded per engine step, stays flat)"},
	{VerdictLoRACapacity, ClassProblem, 12, "requests wait deferred for a LoRA slot while the batch has room: the running adapters fill `max_lora` (which adapters wait, vLLM 0.32 does not export)"},
	{VerdictFrontendBound, ClassProblem, 7, "TTFT outside the engine (neither queue nor prefill) dominates, with the API server's CPU saturated: tokenization, chat templates, detokenization"},
	{VerdictGPUFault, ClassProblem, 1, "a GPU of the pod reported a fault that needs the node drained (dcgm-exporter): it fell off the bus, a new XID of the drain-or-reset kind, a failed row remap, uncorrectable remapped rows or NVLink errors rising. Names the node and the GPU; said with the stall or restart it causes. Cordon and drain the node"},
	{VerdictGPUThrottled, ClassProblem, 6, "a busy GPU of the pod runs its SM clock well below its siblings' (or its own recent past) while hot or at its power limit, and the pod's ITL is up against its siblings': the node's cooling or power cap, not vLLM"},
}

// KnownVerdicts lists every verdict id a playbook may use.
var KnownVerdicts = func() []string {
	ids := make([]string, len(verdicts))
	for i, v := range verdicts {
		ids[i] = v.ID
	}
	return ids
}()

// lookupVerdict returns the table's entry of verdict id.
func lookupVerdict(id string) (verdictDef, bool) {
	for _, v := range verdicts {
		if v.ID == id {
			return v, true
		}
	}
	return verdictDef{}, false
}

// VerdictMeaning is what verdict id means ("" for an unknown id).
func VerdictMeaning(id string) string {
	v, _ := lookupVerdict(id)
	return v.Meaning
}

// CausalRank is verdict id's place in the causal order, cause before symptom (1 first); an
// unknown id (an alert no playbook matched) ranks after every verdict.
func CausalRank(id string) int {
	if v, ok := lookupVerdict(id); ok {
		return v.Rank
	}
	return maxRank + 1
}

// maxRank is the last rank of the causal order.
var maxRank = func() int {
	n := 0
	for _, v := range verdicts {
		n = max(n, v.Rank)
	}
	return n
}()

// NamesCause reports whether verdict id says why an alert fires: a problem, a pressure or a
// pause, not inconclusive, healthy, no data or an unknown id.
func NamesCause(id string) bool {
	switch ClassOf(id) {
	case ClassProblem, ClassPressure, ClassPaused:
		return true
	}
	return false
}

// ClassOf is the class of verdict id ("" for an unknown id: an alert that resolved or that no
// playbook matched has no verdict).
func ClassOf(id string) Class {
	v, _ := lookupVerdict(id)
	return v.Class
}

// Diagnosis is the result of running one playbook for one scope. It is what notifiers render and
// what `responder triage --output json` prints.
type Diagnosis struct {
	Playbook string            `json:"playbook"`
	Verdict  string            `json:"verdict"`
	Title    string            `json:"title"`
	Summary  string            `json:"summary"`
	Actions  []string          `json:"actions"`
	Evidence []Evidence        `json:"evidence"`
	Missing  []string          `json:"missing,omitempty"`
	Notes    []string          `json:"notes,omitempty"`
	Scope    map[string]string `json:"scope"`
	// PodLabel is the series label the pod scope selected on: pod, or instance where the alert
	// had no pod label (static scrape configs), or the configured vllm.pod_label.
	PodLabel     string      `json:"pod_label,omitempty"`
	OfferProfile bool        `json:"offer_profile,omitempty"`
	Charts       []ChartSpec `json:"charts,omitempty"`
	// Fleet compares the pod with its siblings (same model and namespace), pod by pod.
	Fleet *FleetView `json:"fleet,omitempty"`
	// SlowestRequests is what the traces show (nil when traces are not configured): the slowest
	// traced requests of the scope in the window, or why they could not be read.
	SlowestRequests *traces.Report `json:"slowest_requests,omitempty"`
	// Error is set when the evidence could not be gathered at all (Prometheus unreachable):
	// the diagnosis is then degraded and says so.
	Error       string    `json:"error,omitempty"`
	EvaluatedAt time.Time `json:"evaluated_at"`
	// Record is what the verdict was decided from (nil when no evidence was gathered); it is
	// not part of the triage JSON. RecordID names it in the store once kept there.
	Record     *Record       `json:"-"`
	needsFacts []string      // see FactSources
	RecordID   string        `json:"-"`
	Duration   time.Duration `json:"-"`
	DurationMS float64       `json:"duration_ms"`
}

// Evidence is one number behind a diagnosis. Value is nil when the query returned nothing usable.
type Evidence struct {
	Name  string   `json:"name"`
	Title string   `json:"title,omitempty"`
	Value *float64 `json:"value"`
	// Label is the value of a label-valued fact (a workload, an HPA, a node, a reason; Value
	// is then null): kube-state-metrics' facts are numbers and names.
	Label    string   `json:"label,omitempty"`
	Unit     string   `json:"unit,omitempty"`
	Text     string   `json:"text"`
	Baseline *float64 `json:"baseline,omitempty"`
	// BaselineText is the formatted baseline (with where it came from), or why there is none.
	BaselineText string `json:"baseline_text,omitempty"`
	// BaselineFrom says where a derived baseline came from: "the pod a day ago", "the model a
	// day ago", "the 30m before the window" (playbooks' BaselineFrom*).
	BaselineFrom string `json:"baseline_from,omitempty"`
	Query        string `json:"query"`
	// Problem says why Value is nil or untrustworthy (no series, query error, saturated
	// histogram, a partial answer).
	Problem string `json:"problem,omitempty"`
	// Warnings are the warnings Prometheus (or Thanos, Mimir) sent with the answer: set, the
	// value may rest on part of the data only.
	Warnings []string `json:"warnings,omitempty"`
}

// HasValue reports whether the evidence holds a number or a label value.
func (e Evidence) HasValue() bool { return e.Value != nil || e.Label != "" }

// ChartSpec is a chart a playbook declares, with its queries already expanded for the scope.
type ChartSpec struct {
	Title  string        `json:"title"`
	Series []ChartSeries `json:"series"`
	Range  time.Duration `json:"range"`
}

// ChartSeries is one line of a chart.
type ChartSeries struct {
	Name  string `json:"name"`
	Title string `json:"title,omitempty"`
	Unit  string `json:"unit,omitempty"`
	Query string `json:"query"`
}

// FactSources are the sources (facts.Source*) of facts the diagnosis' decision reads and that
// were not looked up (Observation.Facts): a rule tried before the verdict (or the verdict's own
// title, summary or actions) reads one. Judging again with them may give another verdict or
// text; the evidence engine looks a source up only then, so that a diagnosis no fact could
// change costs Prometheus nothing more.
func (d *Diagnosis) FactSources() []string { return slices.Clone(d.needsFacts) }

// NeedsFacts reports whether FactSources names any.
func (d *Diagnosis) NeedsFacts() bool { return len(d.needsFacts) > 0 }

// Degraded reports whether the diagnosis was made without all of its evidence.
// A partial answer (evidence with warnings) is degraded too.
func (d *Diagnosis) Degraded() bool {
	if d.Error != "" || len(d.Missing) > 0 {
		return true
	}
	for _, e := range d.Evidence {
		if len(e.Warnings) > 0 {
			return true
		}
	}
	return false
}

// SummaryCitesTraces reports whether the summary already says what the slowest traced requests
// show (an inconclusive diagnosis leads with it, and a verdict's summary template may cite
// .traces.summary), so that a renderer does not say it twice. An empty traces summary has
// nothing to add and counts as said.
func (d *Diagnosis) SummaryCitesTraces() bool {
	tr := d.SlowestRequests
	return tr != nil && strings.Contains(d.Summary, tr.Summary)
}
