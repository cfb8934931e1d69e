package kube

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/internal/promql"
)

// Workload kinds the mapping knows.
const (
	KindDeployment      = "Deployment"
	KindReplicaSet      = "ReplicaSet"
	KindStatefulSet     = "StatefulSet"
	KindLeaderWorkerSet = "LeaderWorkerSet"
)

// lwsNameLabel is the pod label LeaderWorkerSet sets on every pod of a group
// (leaderworkerset.sigs.k8s.io/name), as kube-state-metrics writes it in kube_pod_labels when
// --metric-labels-allowlist exports it.
const lwsNameLabel = "label_leaderworkerset_sigs_k8s_io_name"

// Ref is a Kubernetes object by kind and name.
type Ref struct{ Kind, Name string }

// Report is what kube-state-metrics says about a pod and its workload. Facts turns it into the
// values playbooks read.
type Report struct {
	Pod PodRef
	At  time.Time
	// Found: kube-state-metrics has series for the pod. Absent: none for its namespace at all
	// (kube-state-metrics not scraped, or under other label names).
	Found, Absent bool
	// Missing says, in words, what was not found that the facts need ("" when nothing was).
	Missing string
	Node    string
	// Owner is the pod's controller (a ReplicaSet, a StatefulSet, ...); Workload what scales it
	// (the ReplicaSet's Deployment, the StatefulSet's LeaderWorkerSet). Zero: no controller.
	Owner, Workload Ref
	// HPA is the HorizontalPodAutoscaler that targets the workload; nil when none does (or the
	// workload was not found). HPAs counts them (a workload should have at most one).
	HPA  *HPA
	HPAs int
	// Pods are the workload's pods by state (nil when the workload was not looked up).
	Pods *PodStates
	// Restarts are the pod's container restarts, RestartsInWindow those of the window before
	// At; LastContainer is the terminated container that restarted most, RestartReason why it
	// last ended (OOMKilled, Error, ...), LastExitCode with what code; Waiting why a container
	// waits now (CrashLoopBackOff, ...).
	Restarts, RestartsInWindow, LastExitCode *float64
	LastContainer, RestartReason             string
	Waiting                                  string
	// Queries are the PromQL of every query sent, by name; Problems the queries that failed.
	Queries  map[string]string
	Problems []string
}

// HPA is a HorizontalPodAutoscaler as kube-state-metrics exports it.
type HPA struct {
	Name                       string
	Min, Max, Current, Desired *float64
	// Conditions are its status conditions: ScalingLimited, ScalingActive, AbleToScale -> true,
	// false or unknown.
	Conditions map[string]string
	// Metric is the metric it scales on (the one furthest above its target when it has
	// several), its target type (value, average, utilization), its target and what it reads now.
	Metric, MetricType string
	Target, Reading    *float64
	Metrics            int
	// Source names where an external metric comes from (KEDA's ScaledObject and scaler, llm-d's
	// workload variant autoscaler) and SourceValue what that source reads now.
	Source      string
	SourceValue *float64

	targetKind string // the kind its scale target names
}

// PodStates are a workload's pods by state. A pod is starting when it is scheduled but not ready
// (pulling its image, loading weights), failing when a container of it waits for a reason that
// does not pass by waiting (CrashLoopBackOff, ImagePullBackOff, ...), unschedulable while the
// scheduler finds no node for it.
type PodStates struct {
	Total, Ready, Pending, Unschedulable, Starting, Failing int
	// UnschedulableFor is how long the longest unschedulable pod has been so (since
	// kube_pod_status_unscheduled_time, kube-state-metrics v2.17; before, since its creation);
	// StartingFor the age of the oldest starting pod.
	UnschedulableFor, StartingFor time.Duration
	// UnschedulablePod names the longest unschedulable pod; StartingReason and FailingReason
	// the container waiting reason most of those pods share.
	UnschedulablePod, StartingReason, FailingReason string
}

// failingReasons are the container waiting reasons that do not pass by waiting.
var failingReasons = []string{"CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError",
	"CreateContainerError", "InvalidImageName", "RunContainerError"}

// record keeps the PromQL of a step and notes its failed queries.
func (r *Report) record(qs []Query, a Answer) {
	for _, q := range qs {
		r.Queries[q.Name] = q.Expr
		if p := a.Problems[q.Name]; p != "" {
			r.Problems = append(r.Problems, q.Name+": "+p)
		}
	}
}

// label is label l of the first series (in label order) of v that has it, "" when none has.
func label(v model.Vector, l string) string {
	for _, s := range sortedSeries(v) {
		if x := string(s.Metric[model.LabelName(l)]); x != "" {
			return x
		}
	}
	return ""
}

// sortedSeries orders v by labels, so that a choice among duplicates does not depend on the
// order Prometheus answered in.
func sortedSeries(v model.Vector) model.Vector {
	out := slices.Clone(v)
	slices.SortFunc(out, func(a, b *model.Sample) int { return strings.Compare(a.Metric.String(), b.Metric.String()) })
	return out
}

// readPod reads the first step. The pod's restarts are read even without its owner (a
// kube-state-metrics that exports only the container series still says why the pod restarted).
func (r *Report) readPod(c *Config, a Answer) {
	if promql.Lost(r.Pod.Name) && !r.resolveLostName(c, a) {
		return
	}
	r.readRestarts(a)
	r.Waiting = label(a.Vectors["pod_waiting"], "reason")
	owners := a.Vectors["pod_owner"]
	if len(owners) == 0 {
		switch {
		case a.Problems["pod_owner"] != "":
			r.Missing = "kube-state-metrics could not be read: " + a.Problems["pod_owner"]
		case r.Pod.Namespace == "":
			r.Absent = true // by name alone, no namespace to tell "not scraped" from "no such pod"
			r.Missing = fmt.Sprintf("kube-state-metrics has no pod named %s (kube_pod_owner{%s}), and the alert names no namespace",
				r.Pod.Name, c.matchers(c.PodLabel, r.Pod.Name))
		case len(a.Vectors["namespace_pods"]) == 0:
			r.Absent = true
			r.Missing = fmt.Sprintf("no kube-state-metrics series for namespace %s (kube_pod_owner{%s})",
				r.Pod.Namespace, c.matchers(c.NamespaceLabel, r.Pod.Namespace))
		default:
			r.Missing = fmt.Sprintf("kube-state-metrics has no pod %s (kube_pod_owner{%s}): gone, or the alert's pod label is not its name",
				r.Pod, c.matchers(c.NamespaceLabel, r.Pod.Namespace, c.PodLabel, r.Pod.Name))
		}
		return
	}
	if r.Pod.Namespace == "" || promql.Lost(r.Pod.Namespace) {
		namespaces := map[string]bool{}
		for _, s := range owners {
			namespaces[string(s.Metric[model.LabelName(c.NamespaceLabel)])] = true
		}
		if len(namespaces) != 1 {
			names := "the alert names none"
			if r.Pod.Namespace != "" {
				names = fmt.Sprintf("the alert's namespace %q lost characters to invalid UTF-8", r.Pod.Namespace)
			}
			r.Missing = fmt.Sprintf("pods named %s in %d namespaces (%s), and %s", r.Pod.Name, len(namespaces),
				strings.Join(slices.Sorted(maps.Keys(namespaces)), ", "), names)
			return
		}
		for ns := range namespaces {
			r.Pod.Namespace = ns
		}
	}
	r.Found = true
	r.Node = label(a.Vectors["pod_info"], "node")
	r.Owner = controller(owners)
	r.Workload = r.Owner
	switch {
	case r.Owner.Kind == "":
		r.Missing = fmt.Sprintf("pod %s has no controller (kube_pod_owner): nothing scales it", r.Pod)
	case r.Owner.Kind == KindReplicaSet:
		if d := controller(a.Vectors["pod_rs_owner"]); d.Kind == KindDeployment {
			r.Workload = d
		}
	case r.Owner.Kind == KindStatefulSet:
		if lws := label(a.Vectors["pod_labels"], lwsNameLabel); lws != "" {
			r.Workload = Ref{KindLeaderWorkerSet, lws}
		}
	}
}

// resolveLostName names the pod from its series when the alert's pod name lost characters to
// invalid UTF-8 on its way: the first step selected the pods whose names match what is left of
// it (promql.Matcher). One pod is the alert's; several are not guessed between (their restarts
// would add up). It reports whether the pod was named.
func (r *Report) resolveLostName(c *Config, a Answer) bool {
	pods := map[string]bool{}
	for _, q := range []string{"pod_owner", "pod_info", "pod_restarts"} {
		for _, s := range a.Vectors[q] {
			pods[string(s.Metric[model.LabelName(c.PodLabel)])] = true
		}
	}
	switch len(pods) {
	case 0:
		return true // nothing found: said as for any pod kube-state-metrics does not know
	case 1:
		for p := range pods {
			r.Pod.Name = p
		}
		return true
	}
	r.Missing = fmt.Sprintf("the alert's pod %q lost characters to invalid UTF-8, and %d pods match what is left (%s): none is guessed",
		r.Pod.Name, len(pods), strings.Join(slices.Sorted(maps.Keys(pods)), ", "))
	return false
}

// readRestarts reads the pod's restarts, added over its containers, and its last terminated
// container: of those that terminated, the one that restarted most (a sidecar's old exit does
// not hide the server's), with its reason and exit code.
func (r *Report) readRestarts(a Answer) {
	byContainer := func(q string) map[string]float64 {
		out := map[string]float64{}
		for _, s := range dedupBy(a.Vectors[q], "container") {
			if f := float64(s.Value); !math.IsNaN(f) {
				out[string(s.Metric["container"])] = f
			}
		}
		return out
	}
	sum := func(m map[string]float64) *float64 {
		if len(m) == 0 {
			return nil
		}
		n := 0.0
		for _, v := range m {
			n += v
		}
		return &n
	}
	restarts := byContainer("pod_restarts")
	r.Restarts, r.RestartsInWindow = sum(restarts), sum(byContainer("pod_restarts_window"))
	reasons := map[string]string{}
	for _, s := range a.Vectors["pod_last_reason"] {
		reasons[string(s.Metric["container"])] = string(s.Metric["reason"])
	}
	containers := slices.Sorted(maps.Keys(reasons))
	slices.SortStableFunc(containers, func(x, y string) int { return cmp.Compare(restarts[y], restarts[x]) })
	if len(containers) == 0 {
		return
	}
	c := containers[0]
	r.LastContainer, r.RestartReason = c, reasons[c]
	if code, ok := byContainer("pod_last_exitcode")[c]; ok {
		r.LastExitCode = &code
	}
}

// controller is the owner a pod (or ReplicaSet) names as its controller: owner_is_controller
// "true", else the first named owner.
func controller(v model.Vector) Ref {
	var first Ref
	for _, s := range sortedSeries(v) {
		ref := Ref{string(s.Metric["owner_kind"]), string(s.Metric["owner_name"])}
		if ref.Kind == "" || ref.Name == "" {
			continue
		}
		if s.Metric["owner_is_controller"] == "true" {
			return ref
		}
		if first.Kind == "" {
			first = ref
		}
	}
	return first
}

// dedupBy keeps one series per value of the labels (two kube-state-metrics replicas, or one
// scraped by two jobs, export every series twice).
func dedupBy(v model.Vector, labels ...string) model.Vector {
	seen := map[string]bool{}
	var out model.Vector
	for _, s := range sortedSeries(v) {
		var k strings.Builder
		for _, l := range labels {
			k.WriteString(string(s.Metric[model.LabelName(l)]) + "\x00")
		}
		if !seen[k.String()] {
			seen[k.String()] = true
			out = append(out, s)
		}
	}
	return out
}

// readWorkload reads the second step.
func (r *Report) readWorkload(c *Config, a Answer) {
	r.readHPA(a)
	if r.HPA != nil && r.Workload.Kind == KindStatefulSet && r.HPA.targetKind == KindLeaderWorkerSet {
		r.Workload.Kind = KindLeaderWorkerSet // the HPA says whose StatefulSet it is
	}
	r.Pods = readPods(c, a, r.At)
}

// podState is one pod of the workload as the second step saw it.
type podState struct {
	phase                      string
	ready, unschedulable       bool
	created, unscheduled       float64
	waiting                    []string
	failing                    string
	startingReason, failReason string
}

// readPods classifies the workload's pods.
func readPods(c *Config, a Answer, at time.Time) *PodStates {
	pods := map[string]*podState{}
	get := func(s *model.Sample) *podState {
		name := string(s.Metric[model.LabelName(c.PodLabel)])
		if pods[name] == nil {
			pods[name] = &podState{}
		}
		return pods[name]
	}
	for _, s := range a.Vectors["pods"] {
		get(s)
	}
	for _, s := range a.Vectors["pods_phase"] {
		get(s).phase = string(s.Metric["phase"])
	}
	for _, s := range a.Vectors["pods_ready"] {
		get(s).ready = get(s).ready || s.Value == 1
	}
	for _, s := range a.Vectors["pods_created"] {
		get(s).created = float64(s.Value)
	}
	for _, s := range a.Vectors["pods_unschedulable"] {
		get(s).unschedulable = s.Value == 1
	}
	for _, s := range a.Vectors["pods_unscheduled_time"] {
		get(s).unscheduled = float64(s.Value)
	}
	for _, s := range sortedSeries(a.Vectors["pods_waiting"]) {
		p := get(s)
		reason := string(s.Metric["reason"])
		p.waiting = append(p.waiting, reason)
		if slices.Contains(failingReasons, reason) && p.failing == "" {
			p.failing = reason
		}
	}
	st := &PodStates{Total: len(pods)}
	starting, failing := map[string]int{}, map[string]int{}
	age := func(since float64) time.Duration {
		if since <= 0 || at.IsZero() {
			return 0
		}
		return max(0, at.Sub(time.Unix(int64(since), 0)))
	}
	for _, name := range slices.Sorted(maps.Keys(pods)) {
		p := pods[name]
		if p.phase == "Pending" {
			st.Pending++
		}
		switch {
		case p.ready:
			st.Ready++
		case p.phase == "Succeeded" || p.phase == "Failed":
			// done: neither serving nor on its way
		case p.unschedulable:
			st.Unschedulable++
			since := cmp.Or(p.unscheduled, p.created)
			if d := age(since); d > st.UnschedulableFor || st.UnschedulablePod == "" {
				st.UnschedulableFor, st.UnschedulablePod = max(d, st.UnschedulableFor), name
			}
		case p.failing != "":
			st.Failing++
			failing[p.failing]++
		case p.phase == "Pending" || p.phase == "Running":
			st.Starting++
			st.StartingFor = max(st.StartingFor, age(p.created))
			reason := "Running, not ready"
			if len(p.waiting) > 0 {
				reason = p.waiting[0]
			}
			starting[reason]++
		}
	}
	st.StartingReason, st.FailingReason = mostCommon(starting), mostCommon(failing)
	return st
}

// mostCommon is the key with the highest count (the first in name order among equals).
func mostCommon(m map[string]int) string {
	best := ""
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if best == "" || m[k] > m[best] {
			best = k
		}
	}
	return best
}

// readHPA reads the HPA of the workload: with several, the one named first (Kubernetes refuses
// to scale a workload two HPAs target: each reports AmbiguousSelector).
func (r *Report) readHPA(a Answer) {
	infos := dedupBy(a.Vectors["hpa"], "horizontalpodautoscaler")
	r.HPAs = len(infos)
	if len(infos) == 0 {
		return
	}
	h := &HPA{Name: string(infos[0].Metric["horizontalpodautoscaler"]), Conditions: map[string]string{},
		targetKind: string(infos[0].Metric["scaletargetref_kind"])}
	mine := func(q string) model.Vector {
		var out model.Vector
		for _, s := range a.Vectors[q] {
			if string(s.Metric["horizontalpodautoscaler"]) == h.Name {
				out = append(out, s)
			}
		}
		return out
	}
	one := func(q string) *float64 {
		if v := mine(q); len(v) > 0 {
			f := float64(sortedSeries(v)[0].Value)
			return &f
		}
		return nil
	}
	h.Min, h.Max, h.Current, h.Desired = one("hpa_min"), one("hpa_max"), one("hpa_current"), one("hpa_desired")
	for _, s := range mine("hpa_condition") {
		h.Conditions[string(s.Metric["condition"])] = string(s.Metric["status"])
	}
	h.readMetric(mine("hpa_target"), mine("hpa_reading"))
	h.readSource(a.Vectors["keda"], a.Vectors["wva"])
	r.HPA = h
}

// metricKey names one metric of an HPA: its name and target type.
type metricKey struct{ name, typ string }

func keyOf(s *model.Sample) metricKey {
	return metricKey{string(s.Metric["metric_name"]), string(s.Metric["metric_target_type"])}
}

// readMetric picks the metric the HPA scales on: the one whose reading is furthest above its
// target (the HPA follows the largest of its metrics' proposals), else the first by name.
func (h *HPA) readMetric(targets, readings model.Vector) {
	reading := map[metricKey]float64{}
	for _, s := range readings {
		reading[keyOf(s)] = float64(s.Value)
	}
	best, bestRatio := -1, math.Inf(-1)
	targets = dedupBy(targets, "metric_name", "metric_target_type")
	h.Metrics = len(targets)
	for i, s := range targets {
		ratio := math.Inf(-1)
		if v, ok := reading[keyOf(s)]; ok && s.Value > 0 {
			ratio = v / float64(s.Value)
		}
		if best < 0 || ratio > bestRatio {
			best, bestRatio = i, ratio
		}
	}
	if best < 0 {
		return
	}
	s := targets[best]
	k := keyOf(s)
	t := float64(s.Value)
	h.Metric, h.MetricType, h.Target = k.name, k.typ, &t
	if v, ok := reading[k]; ok {
		h.Reading = &v
	}
}

// kedaHPAPrefix starts the name KEDA gives the HPA of a ScaledObject (keda-hpa-<ScaledObject>).
const kedaHPAPrefix = "keda-hpa-"

// wvaMetrics are the names llm-d's workload variant autoscaler publishes its desired replicas
// under (inferno_ before it was renamed).
var wvaMetrics = []string{"wva_desired_replicas", "inferno_desired_replicas"}

// readSource says where the HPA's metric comes from: a KEDA ScaledObject's scaler (its HPA is
// keda-hpa-<ScaledObject>, and keda_scaler_metrics_value carries the HPA's metric name), or llm-d's
// workload variant autoscaler (the HPA reads wva_desired_replicas).
func (h *HPA) readSource(keda, wva model.Vector) {
	for _, s := range sortedSeries(keda) {
		if string(s.Metric["metric"]) == h.Metric || h.Metric == "" {
			scaler := strings.TrimSuffix(string(s.Metric["scaler"]), "Scaler")
			h.Source = fmt.Sprintf("KEDA ScaledObject %s, %s scaler", s.Metric["scaledObject"], scaler)
			v := float64(s.Value)
			h.SourceValue = &v
			return
		}
	}
	if slices.Contains(wvaMetrics, h.Metric) {
		h.Source = "llm-d's workload variant autoscaler"
		if len(wva) > 0 {
			v := float64(sortedSeries(wva)[0].Value)
			h.SourceValue = &v
		}
	}
}
