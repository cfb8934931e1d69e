package kube_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/kube"
)

// ksmSeries is 20 minutes of kube-state-metrics v2's container series (labels namespace, pod,
// uid, container; scraped with honor_labels) for: vllm-0, whose vllm container was OOMKilled 3
// minutes before the end (its 4th restart) beside a sidecar that exited with an Error long ago;
// vllm-1, never restarted; and, scraped without honor_labels (exported_namespace, exported_pod),
// vllm-2, restarted once with an Error.
func ksmSeries(end time.Time) string {
	var b strings.Builder
	start, step := end.Add(-20*time.Minute), 15*time.Second
	restart := end.Add(-3 * time.Minute)
	lbl := func(pod, container string) string {
		return fmt.Sprintf(`job="kube-state-metrics",instance="10.0.9.9:8080",namespace="llm",pod=%q,uid="u-%s",container=%q`, pod, pod, container)
	}
	exported := `job="kube-state-metrics",instance="10.0.9.9:8080",namespace="monitoring",pod="ksm-0",exported_namespace="llm",exported_pod="vllm-2",uid="u-2",container="vllm"`
	var restarts, reasons, exits []string
	for ts := start; !ts.After(end); ts = ts.Add(step) {
		u := ts.Unix()
		n := 3
		if !ts.Before(restart) {
			n = 4
		}
		restarts = append(restarts,
			fmt.Sprintf("kube_pod_container_status_restarts_total{%s} %d %d", lbl("vllm-0", "vllm"), n, u),
			fmt.Sprintf("kube_pod_container_status_restarts_total{%s} 1 %d", lbl("vllm-0", "proxy"), u),
			fmt.Sprintf("kube_pod_container_status_restarts_total{%s} 0 %d", lbl("vllm-1", "vllm"), u),
			fmt.Sprintf("kube_pod_container_status_restarts_total{%s} 1 %d", exported, u))
		reasons = append(reasons,
			fmt.Sprintf("kube_pod_container_status_last_terminated_reason{%s,reason=\"OOMKilled\"} 1 %d", lbl("vllm-0", "vllm"), u),
			fmt.Sprintf("kube_pod_container_status_last_terminated_reason{%s,reason=\"Error\"} 1 %d", lbl("vllm-0", "proxy"), u),
			fmt.Sprintf("kube_pod_container_status_last_terminated_reason{%s,reason=\"Error\"} 1 %d", exported, u))
		exits = append(exits,
			fmt.Sprintf("kube_pod_container_status_last_terminated_exitcode{%s} 137 %d", lbl("vllm-0", "vllm"), u),
			fmt.Sprintf("kube_pod_container_status_last_terminated_exitcode{%s} 1 %d", lbl("vllm-0", "proxy"), u))
	}
	b.WriteString("# TYPE kube_pod_container_status_last_terminated_exitcode gauge\n" + strings.Join(exits, "\n") + "\n")
	b.WriteString("# TYPE kube_pod_container_status_last_terminated_reason gauge\n" + strings.Join(reasons, "\n") + "\n")
	b.WriteString("# TYPE kube_pod_container_status_restarts counter\n" + strings.Join(restarts, "\n") + "\n")
	b.WriteString("# EOF\n")
	return b.String()
}

// Restarts come from the container series alone (a kube-state-metrics that exports no owner
// still says why the pod restarted), under the labels the scrape left them.
func TestRestartsAreReadFromKubeStateMetricsOnARealPrometheus(t *testing.T) {
	end := time.Now().Truncate(15 * time.Second).Add(-15 * time.Second)
	prom := testenv.Prometheus(t, testenv.PromOptions{OpenMetrics: ksmSeries(end)})
	look := func(c *kube.Config, pod string) *kube.Facts {
		t.Helper()
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		return c.Lookup(context.Background(), asker(t, prom.URL, end), kube.PodRef{Namespace: "llm", Name: pod}, end, 5*time.Minute).Facts()
	}
	c := &kube.Config{}
	c.SetDefaults()

	f := look(c, "vllm-0")
	if w := f.Number("kube_restarts_in_window"); w == nil || *w < 0.9 || *w > 1.5 || *f.Number("kube_restarts") != 5 ||
		f.Label("kube_restart_reason") != "OOMKilled" || *f.Number("kube_last_exit_code") != 137 {
		t.Errorf("vllm-0: %v %v; want one restart in the window (extrapolated), 5 in all, container vllm OOMKilled with 137", f.Numbers, f.Labels)
	}
	if want := "kube-state-metrics: pod vllm-0 restarted once in the window (5 times since it was created); container vllm last terminated: OOMKilled (exit code 137)."; f.Label("kube_restarts_summary") != want {
		t.Errorf("summary %q, want %q", f.Label("kube_restarts_summary"), want)
	}
	if f := look(c, "vllm-1"); *f.Number("kube_restarts") != 0 || f.Label("kube_restart_reason") != "" || f.Number("kube_last_exit_code") != nil {
		t.Errorf("vllm-1, never restarted: %v %v", f.Numbers, f.Labels)
	}
	// Without honor_labels, the pod's labels are exported_*: the default labels find nothing.
	if f := look(c, "vllm-2"); f.Number("kube_restarts") != nil {
		t.Errorf("vllm-2 under the default labels: %v", f.Numbers)
	}
	c.NamespaceLabel, c.PodLabel = "exported_namespace", "exported_pod"
	if f := look(c, "vllm-2"); f.Label("kube_restart_reason") != "Error" || *f.Number("kube_restarts") != 1 {
		t.Errorf("vllm-2 under exported_* labels: %v %v; want one restart, Error", f.Numbers, f.Labels)
	}
}
