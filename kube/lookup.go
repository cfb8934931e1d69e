package kube

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/facts"
	"github.com/vllm-responder/vllm-responder/internal/promql"
)

// PodRef names a pod: its namespace and name, as kube-state-metrics labels it.
type PodRef struct{ Namespace, Name string }

func (p PodRef) String() string { return p.Namespace + "/" + p.Name }

// Query, Answer and Asker are a lookup step's (package facts).
type (
	Query  = facts.Query
	Answer = facts.Answer
	Asker  = facts.Asker
)

// Lookup reads what kube-state-metrics says about pod as of at, in two steps of one or two
// requests each: the pod (its owner, the owner's owner, node, restarts, in all and over the
// window before at) and then its workload (every pod of the workload with its phase,
// readiness, scheduling and age, and the HorizontalPodAutoscaler that targets the workload,
// with its metric's source). A pod without a namespace is looked up by its name, and its
// series name the namespace. Every label value that a step carries into the next is quoted
// into its PromQL, never concatenated.
func (c *Config) Lookup(ctx context.Context, ask Asker, pod PodRef, at time.Time, window time.Duration) *Report {
	r := &Report{Pod: pod, At: at, Queries: map[string]string{}}
	if (pod.Namespace != "" && !validName(pod.Namespace)) || !validName(pod.Name) {
		r.Missing = fmt.Sprintf("the alert's pod %q is not a Kubernetes pod name, so kube-state-metrics was not read", pod.String())
		return r
	}
	first := c.podQueries(pod, window)
	a := ask(ctx, first)
	r.record(first, a)
	r.readPod(c, a)
	if !r.Found || r.Workload.Kind == "" {
		return r
	}
	second := c.workloadQueries(r.Pod.Namespace, r.Workload)
	a = ask(ctx, second)
	r.record(second, a)
	r.readWorkload(c, a)
	return r
}

// validName reports whether s can be a Kubernetes name: a pod name from an alert may be
// anything (an instance, host:port, where the scrape adds no pod label), and one that cannot be
// a pod's is not looked up. A name that lost characters to invalid UTF-8 on its way (U+FFFD) is
// looked up by what is left of it (promql.Matcher), and its series name the pod.
func validName(s string) bool {
	return s != "" && !strings.ContainsAny(s, "\"\\\n{}:/ ")
}

// matchers writes the selector, then label="value" for each pair with a value, comma-separated.
func (c *Config) matchers(pairs ...string) string {
	var parts []string
	if c.selector != "" {
		parts = append(parts, c.selector)
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			parts = append(parts, promql.Matcher(pairs[i], pairs[i+1]))
		}
	}
	return strings.Join(parts, ",")
}

// podQueries are the first step: what kube-state-metrics says about the pod itself. rs_owner
// joins the pod's ReplicaSet to its owner in PromQL (kube_replicaset_owner and the pod's
// kube_pod_owner share the ReplicaSet's name once label_replace moves it to `replicaset`);
// set operators (`and on`) accept the duplicates two kube-state-metrics replicas would give.
// Without a namespace, namespace_pods counts the pods of that name instead of the namespace's.
func (c *Config) podQueries(p PodRef, window time.Duration) []Query {
	ns, pod := c.NamespaceLabel, c.PodLabel
	this := c.matchers(ns, p.Namespace, pod, p.Name)
	inNS, sets := c.matchers(ns, p.Namespace), c.matchers(ns, p.Namespace)
	if p.Namespace == "" {
		inNS = this
	}
	return []Query{
		{Name: "pod_owner", Expr: "kube_pod_owner{" + this + "}"},
		{Name: "pod_rs_owner", Expr: fmt.Sprintf(`kube_replicaset_owner{%s} and on (%s, replicaset) label_replace(kube_pod_owner{%s,owner_kind="ReplicaSet"}, "replicaset", "$1", "owner_name", "(.+)")`,
			sets, ns, this)},
		{Name: "pod_info", Expr: "kube_pod_info{" + this + "}"},
		{Name: "pod_labels", Expr: "kube_pod_labels{" + this + "}"},
		{Name: "pod_restarts", Expr: "kube_pod_container_status_restarts_total{" + this + "}"},
		{Name: "pod_restarts_window", Expr: "increase(kube_pod_container_status_restarts_total{" + this + "}[" + model.Duration(window).String() + "])"},
		{Name: "pod_last_exitcode", Expr: "kube_pod_container_status_last_terminated_exitcode{" + this + "}"},
		{Name: "pod_last_reason", Expr: "kube_pod_container_status_last_terminated_reason{" + this + "} == 1"},
		{Name: "pod_waiting", Expr: "kube_pod_container_status_waiting_reason{" + this + "} == 1"},
		{Name: "namespace_pods", Expr: "count(kube_pod_owner{" + inNS + "})"},
	}
}

// podsOf is the PromQL of a workload's pods (series labelled by namespace and pod): a
// Deployment's are owned by its ReplicaSets (every revision's, so a rollout's new pods count),
// a LeaderWorkerSet's by its leader StatefulSet (named as the LeaderWorkerSet) and its groups'
// worker StatefulSets (<name>-<group>), any other workload's by the workload itself.
func (c *Config) podsOf(namespace string, w Ref) string {
	ns := c.NamespaceLabel
	switch w.Kind {
	case KindDeployment:
		return fmt.Sprintf(`kube_pod_owner{%s,owner_kind="ReplicaSet"} and on (%s, owner_name) label_replace(kube_replicaset_owner{%s}, "owner_name", "$1", "replicaset", "(.+)")`,
			c.matchers(ns, namespace), ns, c.matchers(ns, namespace, "owner_kind", KindDeployment, "owner_name", w.Name))
	case KindLeaderWorkerSet:
		return fmt.Sprintf(`kube_pod_owner{%s,owner_kind="StatefulSet",owner_name=~%s}`,
			c.matchers(ns, namespace), promql.Quote(regexp.QuoteMeta(w.Name)+"(-[0-9]+)?"))
	default:
		return "kube_pod_owner{" + c.matchers(ns, namespace, "owner_kind", w.Kind, "owner_name", w.Name) + "}"
	}
}

// hpaTarget is the HPA info series of the HPAs that scale w. A StatefulSet is matched as a
// LeaderWorkerSet of its name too: a LeaderWorkerSet's leader StatefulSet carries its name, and
// an HPA on a LeaderWorkerSet names the LeaderWorkerSet.
func (c *Config) hpaTarget(namespace string, w Ref) string {
	kinds := regexp.QuoteMeta(w.Kind)
	if w.Kind == KindStatefulSet {
		kinds = KindStatefulSet + "|" + KindLeaderWorkerSet
	}
	return fmt.Sprintf("kube_horizontalpodautoscaler_info{%s,scaletargetref_kind=~%s}",
		c.matchers(c.NamespaceLabel, namespace, "scaletargetref_name", w.Name), promql.Quote(kinds))
}

// workloadQueries are the second step: the workload's pods, one series per pod and state, and
// the HPA that targets it, with where its metric comes from (KEDA's scaler, llm-d's workload
// variant autoscaler).
func (c *Config) workloadQueries(namespace string, w Ref) []Query {
	ns := c.NamespaceLabel
	inNS := c.matchers(ns, namespace)
	pods := " and on (" + ns + ", " + c.PodLabel + ") (" + c.podsOf(namespace, w) + ")"
	hpa := c.hpaTarget(namespace, w)
	ofHPA := " and on (" + ns + ", horizontalpodautoscaler) " + hpa
	nsOnly := promql.Matcher(ns, namespace)
	return []Query{
		{Name: "pods", Expr: c.podsOf(namespace, w)},
		{Name: "pods_phase", Expr: "kube_pod_status_phase{" + inNS + "} == 1" + pods},
		{Name: "pods_ready", Expr: `kube_pod_status_ready{` + inNS + `,condition="true"}` + pods},
		{Name: "pods_created", Expr: "kube_pod_created{" + inNS + "}" + pods},
		{Name: "pods_unschedulable", Expr: "kube_pod_status_unschedulable{" + inNS + "}" + pods},
		{Name: "pods_unscheduled_time", Expr: "kube_pod_status_unscheduled_time{" + inNS + "}" + pods},
		{Name: "pods_waiting", Expr: "kube_pod_container_status_waiting_reason{" + inNS + "} == 1" + pods},
		{Name: "hpa", Expr: hpa},
		{Name: "hpa_min", Expr: "kube_horizontalpodautoscaler_spec_min_replicas{" + inNS + "}" + ofHPA},
		{Name: "hpa_max", Expr: "kube_horizontalpodautoscaler_spec_max_replicas{" + inNS + "}" + ofHPA},
		{Name: "hpa_current", Expr: "kube_horizontalpodautoscaler_status_current_replicas{" + inNS + "}" + ofHPA},
		{Name: "hpa_desired", Expr: "kube_horizontalpodautoscaler_status_desired_replicas{" + inNS + "}" + ofHPA},
		{Name: "hpa_condition", Expr: "kube_horizontalpodautoscaler_status_condition{" + inNS + "} == 1" + ofHPA},
		{Name: "hpa_target", Expr: "kube_horizontalpodautoscaler_spec_target_metric{" + inNS + "}" + ofHPA},
		{Name: "hpa_reading", Expr: "kube_horizontalpodautoscaler_status_target_metric{" + inNS + "}" + ofHPA},
		// KEDA names the HPA of a ScaledObject keda-hpa-<name> and labels its own metrics by
		// scaledObject.
		{Name: "keda", Expr: fmt.Sprintf(`keda_scaler_metrics_value{%s} and on (%s, scaledObject) label_replace(%s, "scaledObject", "$1", "horizontalpodautoscaler", %s)`,
			nsOnly, ns, hpa, promql.Quote(kedaHPAPrefix+"(.+)"))},
		// llm-d's workload variant autoscaler publishes the replicas it wants per target.
		{Name: "wva", Expr: "wva_desired_replicas{" + nsOnly + "," + promql.Matcher("target_name", w.Name) + "}"},
	}
}
