package prometheus

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/internal/testenv/simgpu"
	"github.com/vllm-responder/vllm-responder/sim"
)

// The fast rules, in a real Prometheus, fire VLLMGPUFault on vllm-sim's dcgm-exporter stand-in
// scraped as a cluster scrapes it: the exporter is another target whose own pod, namespace and
// container collide with the payload's, so the vLLM pod arrives in exported_pod. Two TP=2 pods
// on two nodes of four GPUs: one fails to remap a row on rank 0 (XID 64 and the failure flag),
// the other loses rank 1 off the bus (its series vanish). Nothing fires before the faults, and
// nothing for the healthy ranks or the idle GPUs.
func TestGPUFaultFiresOnTheSimsExporterThroughTheExportedPodLabels(t *testing.T) {
	b, err := RenderProfile("fast")
	if err != nil {
		t.Fatal(err)
	}
	rules := filepath.Join(t.TempDir(), "vllm-alerts.fast.rules.yml")
	if err := os.WriteFile(rules, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type pod struct {
		eng   *sim.Engine
		fault string
	}
	pods := []pod{{fault: "gpu-row-remap-failure"}, {fault: "gpu-xid79"}}
	var targets []testenv.Target
	for i := range pods {
		var tg []testenv.Target
		pods[i].eng, tg = simgpu.Start(ctx, t, simgpu.Pod{Name: []string{"llama-a", "llama-b"}[i], Node: []string{"gpu-node-0", "gpu-node-1"}[i], TP: 2, Seed: uint64(i + 1)})
		targets = append(targets, tg...)
	}
	prom := testenv.Prometheus(t, testenv.PromOptions{ScrapeTargets: targets, RuleFiles: []string{rules}})

	alerts := func(state string) []string {
		resp, err := http.Get(prom.URL + "/api/v1/alerts")
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var r struct {
			Data struct {
				Alerts []struct {
					Labels map[string]string `json:"labels"`
					State  string            `json:"state"`
				} `json:"alerts"`
			} `json:"data"`
		}
		if json.Unmarshal(body, &r) != nil {
			return nil
		}
		var out []string
		for _, a := range r.Data.Alerts {
			if a.Labels["alertname"] == GPUAlertName && (state == "" || a.State == state) {
				l := a.Labels
				out = append(out, l["namespace"]+"/"+l["pod"]+" "+l["node"]+" gpu "+l["gpu"]+" "+l["fault"]+l["xid"])
			}
		}
		sort.Strings(out)
		return out
	}
	// Healthy first: both pods' GPU series stored (under exported_pod), no alert.
	testenv.WaitFor(t, 60*time.Second, "the GPUs' series under the vLLM pods' names", func() bool {
		resp, err := http.Get(prom.URL + `/api/v1/query?query=count(DCGM_FI_DEV_SM_CLOCK{exported_namespace="inference",pod=~"dcgm-exporter-.*"})`)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(body), `"4"`) // 2 pods x TP 2; the 4 idle GPUs carry no exported_pod
	})
	if got := alerts(""); len(got) != 0 {
		t.Fatalf("alerts on healthy GPUs: %v", got)
	}
	for _, p := range pods {
		sc := sim.Scenarios[p.fault]
		sc.GPU.At = 2 * time.Second
		p.eng.SetScenario(sc, true, time.Now())
	}
	want := []string{
		"inference/llama-a gpu-node-0 gpu 0 row-remap-failure",
		"inference/llama-a gpu-node-0 gpu 0 xid64",
		"inference/llama-b gpu-node-1 gpu 1 gpu-lost",
	}
	testenv.WaitFor(t, 90*time.Second, "VLLMGPUFault firing for the three faults", func() bool {
		return strings.Join(alerts("firing"), "; ") == strings.Join(want, "; ")
	})
	if got := alerts(""); strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("alerts %v, want only %v", got, want)
	}
}
