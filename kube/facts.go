package kube

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-responder/vllm-responder/facts"
)

// fact is one row of the table: a fact (facts.Fact) and how a Report gives it.
type fact struct {
	Name, Title, Doc, Unit string
	Label, Shown           bool
	Query                  string
	of                     func(r *Report) any // *float64 or string
}

// Facts are the facts of one lookup (package facts).
type Facts = facts.Facts

func num(x float64) *float64 { return &x }

func count(n int) *float64 { return num(float64(n)) }

func boolNum(b bool) *float64 {
	if b {
		return num(1)
	}
	return num(0)
}

func seconds(d time.Duration) *float64 { return num(d.Seconds()) }

// pods returns f of the workload's pods, nil when they were not looked up.
func pods(f func(p *PodStates) *float64) func(r *Report) any {
	return func(r *Report) any {
		if r.Pods == nil {
			return (*float64)(nil)
		}
		return f(r.Pods)
	}
}

// podsLabel returns f of the workload's pods, "" when they were not looked up.
func podsLabel(f func(p *PodStates) string) func(r *Report) any {
	return func(r *Report) any {
		if r.Pods == nil {
			return ""
		}
		return f(r.Pods)
	}
}

// hpa returns f of the HPA, nil when there is none.
func hpa(f func(h *HPA) *float64) func(r *Report) any {
	return func(r *Report) any {
		if r.HPA == nil {
			return (*float64)(nil)
		}
		return f(r.HPA)
	}
}

// hpaLabel returns f of the HPA, "" when there is none.
func hpaLabel(f func(h *HPA) string) func(r *Report) any {
	return func(r *Report) any {
		if r.HPA == nil {
			return ""
		}
		return f(r.HPA)
	}
}

// condition is 1 when the HPA's condition c is true, 0 when it is false or unknown, nil when
// the HPA does not report it.
func condition(c string) func(h *HPA) *float64 {
	return func(h *HPA) *float64 {
		s, ok := h.Conditions[c]
		if !ok {
			return nil
		}
		return boolNum(s == "true")
	}
}

// facts name and compute every fact: one table, the names a contract of the playbook language
// (docs/playbooks/README.md lists them).
var table = []fact{
	{Name: "kube_found", Doc: "1 when kube-state-metrics has the pod (`kube_pod_owner`), 0 when it has not; unknown when not looked up (off, or the alert names no pod and namespace)", Title: "kube-state-metrics has the pod", Query: "pod_owner",
		of: func(r *Report) any { return boolNum(r.Found) }},
	{Name: "kube_missing", Doc: "what kube-state-metrics lacked, in words: no series for the namespace, no such pod, a pod without a controller", Title: "What kube-state-metrics lacked", Label: true, Query: "pod_owner",
		of: func(r *Report) any { return r.Missing }},
	{Name: "kube_namespace", Doc: "the pod's namespace", Title: "The pod's namespace", Label: true, Query: "pod_owner",
		of: func(r *Report) any {
			if !r.Found {
				return ""
			}
			return r.Pod.Namespace
		}},
	{Name: "kube_workload_kind", Doc: "`Deployment`, `StatefulSet`, `LeaderWorkerSet`, or the pod's controller kind when none of those owns it", Title: "Workload kind", Label: true, Query: "pod_owner",
		of: func(r *Report) any { return r.Workload.Kind }},
	{Name: "kube_workload", Doc: "the workload's name", Title: "Workload name", Label: true, Query: "pod_owner",
		of: func(r *Report) any { return r.Workload.Name }},
	{Name: "kube_workload_ref", Doc: "the workload as kubectl names it: `deployment/vllm-llama`", Title: "Workload (kube-state-metrics)", Label: true, Shown: true, Query: "pod_owner",
		of: func(r *Report) any { return r.Workload.ref() }},
	{Name: "kube_node", Doc: "the pod's node (`kube_pod_info`)", Title: "Node", Label: true, Shown: true, Query: "pod_info",
		of: func(r *Report) any { return r.Node }},
	{Name: "kube_pod_place", Doc: "the workload and node for a summary: `deployment/vllm-llama, node gpu-7`", Title: "The pod's workload and node", Label: true, Query: "pod_info",
		of: func(r *Report) any { return r.place() }},
	{Name: "kube_hpa_found", Doc: "1 when an HPA targets the workload (`kube_horizontalpodautoscaler_info`'s scale target), 0 when none does; unknown without a workload", Title: "An HPA targets the workload", Query: "hpa",
		of: func(r *Report) any {
			if r.Pods == nil || slices.ContainsFunc(r.Problems, func(p string) bool { return strings.HasPrefix(p, "hpa:") }) {
				return (*float64)(nil)
			}
			return boolNum(r.HPA != nil)
		}},
	{Name: "kube_hpa_count", Doc: "how many HPAs target it (Kubernetes scales none of them when several do)", Title: "HPAs that target the workload", Unit: "count", Query: "hpa",
		of: func(r *Report) any {
			if r.Pods == nil {
				return (*float64)(nil)
			}
			return count(r.HPAs)
		}},
	{Name: "kube_hpa", Doc: "the HPA's name", Title: "HorizontalPodAutoscaler", Label: true, Shown: true, Query: "hpa",
		of: hpaLabel(func(h *HPA) string { return h.Name })},
	{Name: "kube_scaledobject", Doc: "the KEDA ScaledObject whose HPA it is (`keda-hpa-<name>`)", Title: "KEDA ScaledObject of the HPA", Label: true, Query: "hpa",
		of: hpaLabel(func(h *HPA) string {
			if so, ok := strings.CutPrefix(h.Name, kedaHPAPrefix); ok {
				return so
			}
			return ""
		})},
	{Name: "kube_hpa_min", Doc: "`kube_horizontalpodautoscaler_spec_min_replicas`", Title: "HPA min replicas", Unit: "count", Shown: true, Query: "hpa_min",
		of: hpa(func(h *HPA) *float64 { return h.Min })},
	{Name: "kube_hpa_max", Doc: "`kube_horizontalpodautoscaler_spec_max_replicas`", Title: "HPA max replicas", Unit: "count", Shown: true, Query: "hpa_max",
		of: hpa(func(h *HPA) *float64 { return h.Max })},
	{Name: "kube_hpa_current", Doc: "`kube_horizontalpodautoscaler_status_current_replicas`", Title: "HPA current replicas", Unit: "count", Shown: true, Query: "hpa_current",
		of: hpa(func(h *HPA) *float64 { return h.Current })},
	{Name: "kube_hpa_desired", Doc: "`kube_horizontalpodautoscaler_status_desired_replicas`", Title: "HPA desired replicas", Unit: "count", Shown: true, Query: "hpa_desired",
		of: hpa(func(h *HPA) *float64 { return h.Desired })},
	{Name: "kube_hpa_limited", Doc: "1 when its condition `ScalingLimited` is true (it wants more than its max, or fewer than its min, or a rate limit holds it), 0 otherwise", Title: "HPA ScalingLimited", Query: "hpa_condition",
		of: hpa(condition("ScalingLimited"))},
	{Name: "kube_hpa_active", Doc: "1 when `ScalingActive` is true, 0 when it cannot compute a scale from its metric", Title: "HPA ScalingActive", Query: "hpa_condition",
		of: hpa(condition("ScalingActive"))},
	{Name: "kube_hpa_able", Doc: "1 when `AbleToScale` is true", Title: "HPA AbleToScale", Query: "hpa_condition",
		of: hpa(condition("AbleToScale"))},
	{Name: "kube_hpa_metric", Doc: "the metric it scales on (`kube_horizontalpodautoscaler_spec_target_metric`; of several, the furthest above its target)", Title: "HPA metric", Label: true, Query: "hpa_target",
		of: hpaLabel(func(h *HPA) string { return h.Metric })},
	{Name: "kube_hpa_metric_type", Doc: "`value`, `average` (per pod) or `utilization` (percent of the pods' requests)", Title: "HPA metric target type", Label: true, Query: "hpa_target",
		of: hpaLabel(func(h *HPA) string { return h.MetricType })},
	{Name: "kube_hpa_target", Doc: "that metric's target", Title: "HPA metric target", Query: "hpa_target",
		of: hpa(func(h *HPA) *float64 { return h.Target })},
	{Name: "kube_hpa_reading", Doc: "what the HPA reads of it now (`kube_horizontalpodautoscaler_status_target_metric`)", Title: "HPA metric now", Query: "hpa_reading",
		of: hpa(func(h *HPA) *float64 { return h.Reading })},
	{Name: "kube_hpa_source", Doc: "where an external metric comes from: `KEDA ScaledObject <name>, <scaler> scaler` (`keda_scaler_metrics_value`), `llm-d's workload variant autoscaler` (`wva_desired_replicas`)", Title: "Where the HPA's metric comes from", Label: true, Query: "keda",
		of: hpaLabel(func(h *HPA) string { return h.Source })},
	{Name: "kube_hpa_source_reading", Doc: "what that source reads now", Title: "The HPA metric's source now", Query: "keda",
		of: hpa(func(h *HPA) *float64 { return h.SourceValue })},
	{Name: "kube_hpa_signal", Doc: "one clause for a summary: \"it scales on X (from S, which reads V), which it reads as R now against a target of T\", and whether it cannot read it (`ScalingActive` false)", Title: "What the HPA scales on", Label: true, Shown: true, Query: "hpa_reading",
		of: hpaLabel((*HPA).signal)},
	{Name: "kube_pods", Doc: "the workload's pods (a Deployment's through every ReplicaSet it owns)", Title: "Pods of the workload", Unit: "count", Shown: true, Query: "pods",
		of: pods(func(p *PodStates) *float64 { return count(p.Total) })},
	{Name: "kube_ready", Doc: "of them, ready (`kube_pod_status_ready`)", Title: "Pods ready", Unit: "count", Shown: true, Query: "pods_ready",
		of: pods(func(p *PodStates) *float64 { return count(p.Ready) })},
	{Name: "kube_pending", Doc: "in phase Pending (`kube_pod_status_phase`)", Title: "Pods Pending", Unit: "count", Shown: true, Query: "pods_phase",
		of: pods(func(p *PodStates) *float64 { return count(p.Pending) })},
	{Name: "kube_unschedulable", Doc: "waiting for a node (`kube_pod_status_unschedulable`: PodScheduled false)", Title: "Pods unschedulable", Unit: "count", Shown: true, Query: "pods_unschedulable",
		of: pods(func(p *PodStates) *float64 { return count(p.Unschedulable) })},
	{Name: "kube_unschedulable_for", Doc: "how long the longest of them has waited (`kube_pod_status_unscheduled_time`, kube-state-metrics v2.17; else since its creation)", Title: "Unschedulable for (longest)", Unit: "s", Shown: true, Query: "pods_unscheduled_time",
		of: pods(func(p *PodStates) *float64 {
			if p.Unschedulable == 0 {
				return nil
			}
			return seconds(p.UnschedulableFor)
		})},
	{Name: "kube_unschedulable_pod", Doc: "that pod's name", Title: "An unschedulable pod", Label: true, Query: "pods_unschedulable",
		of: podsLabel(func(p *PodStates) string { return p.UnschedulablePod })},
	{Name: "kube_starting", Doc: "scheduled, not ready, and no container failing: pulling the image, loading weights", Title: "Pods starting (scheduled, not ready)", Unit: "count", Shown: true, Query: "pods_ready",
		of: pods(func(p *PodStates) *float64 { return count(p.Starting) })},
	{Name: "kube_starting_for", Doc: "the oldest starting pod's age (`kube_pod_created`)", Title: "Starting for (oldest)", Unit: "s", Shown: true, Query: "pods_created",
		of: pods(func(p *PodStates) *float64 {
			if p.Starting == 0 {
				return nil
			}
			return seconds(p.StartingFor)
		})},
	{Name: "kube_starting_reason", Doc: "why most of them wait (`kube_pod_container_status_waiting_reason`: `ContainerCreating`, ...; `Running, not ready` while the weights load)", Title: "Why the starting pods wait", Label: true, Query: "pods_waiting",
		of: podsLabel(func(p *PodStates) string { return p.StartingReason })},
	{Name: "kube_failing", Doc: "pods with a container waiting for a reason that does not pass by waiting: `CrashLoopBackOff`, `ImagePullBackOff`, `ErrImagePull`, `CreateContainerConfigError`, `CreateContainerError`, `InvalidImageName`, `RunContainerError`", Title: "Pods failing to start", Unit: "count", Shown: true, Query: "pods_waiting",
		of: pods(func(p *PodStates) *float64 { return count(p.Failing) })},
	{Name: "kube_failing_reason", Doc: "the reason most of them share", Title: "Why they fail", Label: true, Shown: true, Query: "pods_waiting",
		of: podsLabel(func(p *PodStates) string { return p.FailingReason })},
	{Name: "kube_restarts", Doc: "the diagnosed pod's container restarts (`kube_pod_container_status_restarts_total`)", Title: "Container restarts of the pod", Unit: "count", Shown: true, Query: "pod_restarts",
		of: func(r *Report) any { return r.Restarts }},
	{Name: "kube_restarts_in_window", Doc: "of them, in the window before the evaluation (`increase(kube_pod_container_status_restarts_total[$window])`)",
		Title: "Container restarts in the window", Unit: "count", Shown: true, Query: "pod_restarts_window",
		of: func(r *Report) any { return r.RestartsInWindow }},
	{Name: "kube_restart_reason", Doc: "why its container last ended: `OOMKilled`, `Error`, ... (`kube_pod_container_status_last_terminated_reason`)", Title: "Why its container last ended", Label: true, Shown: true, Query: "pod_last_reason",
		of: func(r *Report) any { return r.RestartReason }},
	{Name: "kube_last_exit_code", Doc: "its exit code (`kube_pod_container_status_last_terminated_exitcode`: 137 is a SIGKILL, an OOM kill among them)",
		Title: "Its last exit code", Query: "pod_last_exitcode",
		of: func(r *Report) any { return r.LastExitCode }},
	{Name: "kube_restarts_summary", Doc: "one sentence for a summary: \"kube-state-metrics: pod vllm-0 restarted once in the window (4 times since it was created); container vllm last terminated: OOMKilled (exit code 137).\"",
		Title: "Restarts", Label: true, Query: "pod_restarts",
		of: func(r *Report) any { return r.restartsSummary() }},
	{Name: "kube_waiting_reason", Doc: "why its container waits now (`CrashLoopBackOff`, ...)", Title: "Why its container waits now", Label: true, Query: "pod_waiting",
		of: func(r *Report) any { return r.Waiting }},
}

// Names lists every fact, in table order.
func Names() []facts.Fact {
	out := make([]facts.Fact, len(table))
	for i, f := range table {
		out[i] = facts.Fact{Name: f.Name, Title: f.Title, Doc: f.Doc, Unit: f.Unit, Label: f.Label, Shown: f.Shown,
			Query: f.Query, Source: SourceName}
	}
	return out
}

// Facts are the report's facts by name.
func (r *Report) Facts() *Facts {
	f := facts.New(SourceName)
	for _, fc := range table {
		switch v := fc.of(r).(type) {
		case *float64:
			f.SetNumber(fc.Name, v)
		case string:
			f.SetLabel(fc.Name, v)
		}
	}
	return f
}

// FactsFrom reads recorded kube-state-metrics facts (a fixture's `kube:` section).
func FactsFrom(m map[string]any) (*Facts, error) {
	f := facts.New(SourceName)
	if err := f.From(Names(), m); err != nil {
		return nil, err
	}
	return f, nil
}

// ref is how kubectl names the object ("deployment/vllm-llama").
func (w Ref) ref() string {
	if w.Kind == "" {
		return ""
	}
	return strings.ToLower(w.Kind) + "/" + w.Name
}

// place is the pod's workload and node, for a summary: "deployment/vllm-llama, node gpu-7".
func (r *Report) place() string {
	var parts []string
	if w := r.Workload.ref(); w != "" {
		parts = append(parts, w)
	}
	if r.Node != "" {
		parts = append(parts, "node "+r.Node)
	}
	return strings.Join(parts, ", ")
}

// formatNumber writes a reading or a target as people read it: at most two decimals.
func formatNumber(x float64) string {
	return strconv.FormatFloat(math.Round(x*100)/100, 'f', -1, 64)
}

// signal says what the HPA scales on and what that reads now: "it scales on s0-prometheus (KEDA
// ScaledObject llama, prometheus scaler, which reads 412), which reads 137 per pod now against a
// target of 10 per pod". Empty when the HPA declares no metric kube-state-metrics exports.
func (h *HPA) signal() string {
	if h.Metric == "" {
		return ""
	}
	unit := map[string]string{"average": " per pod", "utilization": "% of the pods' requests"}[h.MetricType]
	var b strings.Builder
	b.WriteString("it scales on " + h.Metric)
	var about []string
	if h.Metrics > 1 {
		about = append(about, fmt.Sprintf("the furthest above its target of its %d metrics", h.Metrics))
	}
	if h.Source != "" {
		src := "from " + h.Source
		if h.SourceValue != nil {
			src += ", which reads " + formatNumber(*h.SourceValue)
		}
		about = append(about, src)
	}
	if len(about) > 0 {
		b.WriteString(" (" + strings.Join(about, "; ") + ")")
	}
	switch {
	case h.Reading != nil && h.Target != nil:
		fmt.Fprintf(&b, ", which it reads as %s%s now against a target of %s%s", formatNumber(*h.Reading), unit, formatNumber(*h.Target), unit)
	case h.Target != nil:
		fmt.Fprintf(&b, " against a target of %s%s (its status has no reading yet)", formatNumber(*h.Target), unit)
	}
	if h.Conditions["ScalingActive"] == "false" {
		b.WriteString("; ScalingActive is false: it cannot compute a scale from that metric now")
	}
	return b.String()
}

// restartsSummary says the pod's restarts in one sentence ("" when kube-state-metrics has no
// restart count for it).
func (r *Report) restartsSummary() string {
	if r.Restarts == nil {
		return ""
	}
	var b strings.Builder
	if r.RestartsInWindow != nil {
		fmt.Fprintf(&b, "kube-state-metrics: pod %s restarted %s in the window (%s since it was created)",
			r.Pod.Name, times(*r.RestartsInWindow), times(*r.Restarts))
	} else {
		fmt.Fprintf(&b, "kube-state-metrics: pod %s restarted %s since it was created", r.Pod.Name, times(*r.Restarts))
	}
	if r.RestartReason != "" {
		b.WriteString("; ")
		if r.LastContainer != "" {
			fmt.Fprintf(&b, "container %s ", r.LastContainer)
		}
		b.WriteString("last terminated: " + r.RestartReason)
		if r.LastExitCode != nil {
			fmt.Fprintf(&b, " (exit code %s)", strconv.FormatFloat(*r.LastExitCode, 'f', -1, 64))
		}
		// vLLM's API server exits 0 when its engine core dies (EngineDeadError) and on SIGTERM:
		// Kubernetes then records Completed, which reads like a job that finished.
		if r.RestartReason == "Completed" && (r.LastExitCode == nil || *r.LastExitCode == 0) {
			b.WriteString(", which is no clean finish for a vLLM server: its API server exits 0 when its engine core dies (EngineDeadError, measured on vLLM 0.32) and when it is stopped (SIGTERM, as after a failed liveness probe); its previous logs say which")
		}
	}
	return b.String() + "."
}

// times says a count of times: "once", "4 times".
func times(n float64) string {
	s := strconv.FormatFloat(math.Round(n), 'f', -1, 64)
	if s == "1" {
		return "once"
	}
	return s + " times"
}
