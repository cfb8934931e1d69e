// Package kube reads what Kubernetes says about vLLM's pods from kube-state-metrics series in
// Prometheus (no Kubernetes API access): today a pod's container restarts and why the last one
// ended. It is the one reader of those series; the autoscaler's view (pod owners, HPAs) is meant
// to join it here.
//
// kube-state-metrics exports, per container of a pod (labels namespace, pod, container, plus
// the scrape's own):
//
//	kube_pod_container_status_restarts_total                 counter
//	kube_pod_container_status_last_terminated_reason{reason} 1 for the reason of the last exit
//	                                                         (OOMKilled, Error, Completed, ...)
//	kube_pod_container_status_last_terminated_exitcode       the last exit code (newer releases)
//
// Its namespace and pod labels are the pod's only when Prometheus keeps them (honor_labels, as
// the kube-prometheus ServiceMonitor does); otherwise the scrape renames them exported_namespace
// and exported_pod: Labels says which.
package kube

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// Querier runs one instant query (the evidence engine's querier).
type Querier interface {
	Query(ctx context.Context, query string, ts time.Time) (model.Value, error)
}

// Labels are the names kube-state-metrics' series carry the pod's namespace and name under.
type Labels struct {
	Namespace, Pod string
}

// DefaultLabels are kube-state-metrics' own, kept by the scrape (honor_labels).
var DefaultLabels = Labels{Namespace: "namespace", Pod: "pod"}

// Reader reads kube-state-metrics series through a Querier.
type Reader struct {
	Q      Querier
	Labels Labels // zero: DefaultLabels
}

// Restarts is what kube-state-metrics says about one pod's restarts. A pod it has no series for
// reads as nil.
type Restarts struct {
	Namespace string `json:"namespace,omitempty" yaml:"namespace,omitempty"`
	Pod       string `json:"pod" yaml:"pod"`
	// InWindow is how many times its containers restarted in the window, Total since the pod
	// was created.
	InWindow float64 `json:"in_window" yaml:"in_window"`
	Total    float64 `json:"total" yaml:"total"`
	// Container, Reason and ExitCode are the last terminated container's, when one has
	// terminated (the one that restarted most, of several).
	Container string   `json:"container,omitempty" yaml:"container,omitempty"`
	Reason    string   `json:"reason,omitempty" yaml:"reason,omitempty"`
	ExitCode  *float64 `json:"exit_code,omitempty" yaml:"exit_code,omitempty"`
}

// Summary says it in one sentence for a diagnosis ("" for nil).
func (r *Restarts) Summary() string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "kube-state-metrics: pod %s restarted %s in the window (%s since it was created)",
		r.Pod, times(r.InWindow), times(r.Total))
	if r.Reason != "" {
		b.WriteString("; ")
		if r.Container != "" {
			fmt.Fprintf(&b, "container %s ", r.Container)
		}
		fmt.Fprintf(&b, "last terminated: %s", r.Reason)
		if r.ExitCode != nil {
			fmt.Fprintf(&b, " (exit code %s)", strconv.FormatFloat(*r.ExitCode, 'f', -1, 64))
		}
	}
	b.WriteString(".")
	return b.String()
}

func times(n float64) string {
	s := strconv.FormatFloat(math.Round(n), 'f', -1, 64)
	if s == "1" {
		return "once"
	}
	return s + " times"
}

// signal labels each part of the one request Restarts sends.
const signal = "vllm_responder_kube"

// Query is the one PromQL request Restarts sends for a pod: the restart counts (now and their
// increase over window), the last terminated reason and exit code, each labelled by signal.
func (r Reader) Query(namespace, pod string, window time.Duration) string {
	l := r.labels()
	sel := fmt.Sprintf("%s=%s", l.Pod, strconv.Quote(pod))
	if namespace != "" {
		sel = fmt.Sprintf("%s=%s,%s", l.Namespace, strconv.Quote(namespace), sel)
	}
	by := "container"
	w := model.Duration(window).String()
	part := func(name, expr string) string {
		return fmt.Sprintf(`label_replace(%s, %q, %q, "", "")`, expr, signal, name)
	}
	return strings.Join([]string{
		part("total", fmt.Sprintf("max by (%s) (kube_pod_container_status_restarts_total{%s})", by, sel)),
		part("in_window", fmt.Sprintf("max by (%s) (increase(kube_pod_container_status_restarts_total{%s}[%s]))", by, sel, w)),
		part("reason", fmt.Sprintf("max by (%s, reason) (kube_pod_container_status_last_terminated_reason{%s}) == 1", by, sel)),
		part("exit_code", fmt.Sprintf("max by (%s) (kube_pod_container_status_last_terminated_exitcode{%s})", by, sel)),
	}, " or ")
}

func (r Reader) labels() Labels {
	if r.Labels == (Labels{}) {
		return DefaultLabels
	}
	return r.Labels
}

// Restarts reads a pod's restarts over the window before at. It returns nil (and no error) when
// kube-state-metrics has no series for the pod: not installed, or another label layout.
func (r Reader) Restarts(ctx context.Context, namespace, pod string, window time.Duration, at time.Time) (*Restarts, error) {
	v, err := r.Q.Query(ctx, r.Query(namespace, pod, window), at)
	if err != nil {
		return nil, err
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("kube-state-metrics query returned a %s, not a vector", v.Type())
	}
	return restartsOf(vec, namespace, pod), nil
}

// restartsOf reads the answer of Query: the counts added over the pod's containers, the last
// reason of the container that restarted most (its exit code with it).
func restartsOf(vec model.Vector, namespace, pod string) *Restarts {
	if len(vec) == 0 {
		return nil
	}
	out := &Restarts{Namespace: namespace, Pod: pod}
	total := map[string]float64{}
	reason := map[string]string{}
	exit := map[string]float64{}
	for _, s := range vec {
		c := string(s.Metric["container"])
		f := float64(s.Value)
		if math.IsNaN(f) {
			continue
		}
		switch s.Metric[signal] {
		case "total":
			out.Total += f
			total[c] = f
		case "in_window":
			out.InWindow += f
		case "reason":
			reason[c] = string(s.Metric["reason"])
		case "exit_code":
			exit[c] = f
		}
	}
	containers := make([]string, 0, len(reason))
	for c := range reason {
		containers = append(containers, c)
	}
	slices.SortFunc(containers, func(a, b string) int { // the one that restarted most, then by name
		if total[a] != total[b] {
			if total[a] > total[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	if len(containers) > 0 {
		c := containers[0]
		out.Container, out.Reason = c, reason[c]
		if e, ok := exit[c]; ok {
			out.ExitCode = &e
		}
	}
	return out
}
