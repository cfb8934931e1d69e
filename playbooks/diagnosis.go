package playbooks

import (
	"strings"
	"time"

	"github.com/vllm-responder/vllm-responder/traces"
)

// Verdict ids are the machine-readable outcome of a diagnosis. They are a contract: other tools and
// tests match on them (README.md, "What it diagnoses"), so they never change meaning.
const (
	VerdictCapacityPastKnee = "capacity-past-knee"
	VerdictKVPreemption     = "kv-preemption"
	VerdictKVPressure       = "kv-pressure"
	VerdictPrefillBound     = "prefill-bound"
	VerdictDecodeBound      = "decode-bound"
	VerdictClientAborts     = "client-aborts"
	VerdictInconclusive     = "inconclusive"
	VerdictHealthy          = "healthy"
	VerdictNoData           = "no-data"
	VerdictEngineStalled    = "engine-stalled"
	VerdictLoadImbalance    = "load-imbalance"
	VerdictPrefixCollapse   = "prefix-cache-collapse"
)

// KnownVerdicts lists every verdict id a playbook may use.
var KnownVerdicts = []string{
	VerdictCapacityPastKnee, VerdictKVPreemption, VerdictKVPressure, VerdictPrefillBound,
	VerdictDecodeBound, VerdictClientAborts, VerdictInconclusive, VerdictHealthy, VerdictNoData,
	VerdictEngineStalled, VerdictLoadImbalance, VerdictPrefixCollapse,
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
	RecordID   string        `json:"-"`
	Duration   time.Duration `json:"-"`
	DurationMS float64       `json:"duration_ms"`
}

// Evidence is one number behind a diagnosis. Value is nil when the query returned nothing usable.
type Evidence struct {
	Name     string   `json:"name"`
	Title    string   `json:"title,omitempty"`
	Value    *float64 `json:"value"`
	Unit     string   `json:"unit,omitempty"`
	Text     string   `json:"text"`
	Baseline *float64 `json:"baseline,omitempty"`
	// BaselineText is the formatted baseline, or why there is none.
	BaselineText string `json:"baseline_text,omitempty"`
	Query        string `json:"query"`
	// Problem says why Value is nil or untrustworthy (no series, query error, saturated
	// histogram, a partial answer).
	Problem string `json:"problem,omitempty"`
	// Warnings are the warnings Prometheus (or Thanos, Mimir) sent with the answer: set, the
	// value may rest on part of the data only.
	Warnings []string `json:"warnings,omitempty"`
}

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
