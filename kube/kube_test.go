package kube

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

type apiQuerier struct{ api v1.API }

func (q apiQuerier) Query(ctx context.Context, query string, ts time.Time) (model.Value, error) {
	v, _, _, err := q.api.Query(ctx, query, ts)
	return v, err
}

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

func TestRestartsAreReadFromKubeStateMetricsOnARealPrometheus(t *testing.T) {
	end := time.Now().Truncate(15 * time.Second).Add(-15 * time.Second)
	prom := testenv.Prometheus(t, testenv.PromOptions{OpenMetrics: ksmSeries(end)})
	client, err := promapi.NewClient(promapi.Config{Address: prom.URL})
	if err != nil {
		t.Fatal(err)
	}
	r := Reader{Q: apiQuerier{v1.NewAPI(client)}}
	ctx := context.Background()

	got, err := r.Restarts(ctx, "llm", "vllm-0", 5*time.Minute, end)
	if err != nil || got == nil {
		t.Fatalf("vllm-0: %+v, %v", got, err)
	}
	if got.InWindow < 0.9 || got.InWindow > 1.5 || got.Total != 5 || got.Container != "vllm" || got.Reason != "OOMKilled" || got.ExitCode == nil || *got.ExitCode != 137 {
		t.Errorf("vllm-0: %+v; want one restart in the window (extrapolated), 5 in all, container vllm OOMKilled with 137", got)
	}
	if want := "kube-state-metrics: pod vllm-0 restarted once in the window (5 times since it was created); container vllm last terminated: OOMKilled (exit code 137)."; got.Summary() != want {
		t.Errorf("summary %q, want %q", got.Summary(), want)
	}

	got, err = r.Restarts(ctx, "llm", "vllm-1", 5*time.Minute, end)
	if err != nil || got == nil || got.Total != 0 || got.Reason != "" || got.ExitCode != nil {
		t.Errorf("vllm-1, never restarted: %+v, %v", got, err)
	}

	// Without honor_labels, the pod's labels are exported_*: the default labels find nothing,
	// and nothing is not an error.
	if got, err := r.Restarts(ctx, "llm", "vllm-2", 5*time.Minute, end); err != nil || got != nil {
		t.Errorf("vllm-2 under the default labels: %+v, %v; want nil, nil", got, err)
	}
	r.Labels = Labels{Namespace: "exported_namespace", Pod: "exported_pod"}
	if got, err := r.Restarts(ctx, "llm", "vllm-2", 5*time.Minute, end); err != nil || got == nil || got.Reason != "Error" || got.Total != 1 {
		t.Errorf("vllm-2 under exported_* labels: %+v, %v; want one restart, Error", got, err)
	}
}
