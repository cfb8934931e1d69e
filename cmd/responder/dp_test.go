package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

// dpLoads is a model on two namespaces' pods of the same name: in namespace a, pod dp-0 runs two
// data-parallel engines and sends nearly all of its load to engine 0 (past the knee) while
// engine 1 idles, beside a quiet sibling dp-1; namespace b has a quiet dp-0 of its own.
func dpLoads() []testenv.VLLMLoad {
	quiet := func(ns, pod, engine string) testenv.VLLMLoad {
		l := testenv.HealthyLoad
		l.Namespace, l.Pod, l.Engine, l.Model = ns, pod, engine, "llama-dp"
		return l
	}
	hot := quiet("a", "dp-0", "0")
	hot.ReqRate, hot.TTFT, hot.Queue, hot.Waiting, hot.Running, hot.KV = 40, 35, 34, 140, 256, 0.6
	return []testenv.VLLMLoad{hot, quiet("a", "dp-0", "1"), quiet("a", "dp-1", "0"), quiet("b", "dp-0", "0")}
}

type fleetJSON struct {
	Verdict string   `json:"verdict"`
	Title   string   `json:"title"`
	Notes   []string `json:"notes"`
	Fleet   struct {
		Focus   string `json:"focus"`
		Pods    int    `json:"pods"`
		Engine  string `json:"engine"`
		Engines []struct {
			Pod string `json:"pod"`
		} `json:"engines"`
	} `json:"fleet"`
}

func triageFleet(t *testing.T, args ...string) fleetJSON {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(context.Background(), append([]string{"triage", "--output", "json"}, args...), &out, &errb); code != 0 {
		t.Fatalf("triage exited %d: %s", code, errb.String())
	}
	var res fleetJSON
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("triage printed invalid JSON: %v\n%s", err, out.String())
	}
	return res
}

// Against a real Prometheus: one data-parallel engine of the alerting pod holding the queue is
// load imbalance with the engine named, from the same one fleet request (series by namespace,
// pod, instance and engine, added up per pod by the responder); and a pod name two namespaces
// share is two pods, not one sum.
func TestADataParallelEngineImbalanceAndSameNamedPodsOfTwoNamespacesOnARealPrometheus(t *testing.T) {
	t.Parallel()
	prom := testenv.RecordedPrometheus(t, dpLoads())
	cfg := writeConfig(t, prom.URL, "")

	res := triageFleet(t, "--config", cfg, "--alert", "VLLMTimeToFirstTokenP99High",
		"--label", "model_name=llama-dp", "--label", "namespace=a", "--label", "pod=dp-0")
	if res.Verdict != "load-imbalance" || !strings.Contains(res.Title, "engine 0 of dp-0") {
		t.Errorf("verdict %s (%s); want load-imbalance naming engine 0 of dp-0", res.Verdict, res.Title)
	}
	if res.Fleet.Pods != 2 || res.Fleet.Focus != "dp-0" || res.Fleet.Engine != "0" || len(res.Fleet.Engines) != 2 {
		t.Errorf("fleet %+v; want namespace a's 2 pods, dp-0 in focus with its 2 engines, engine 0 first", res.Fleet)
	}

	res = triageFleet(t, "--config", cfg, "--label", "model_name=llama-dp", "--label", "pod=dp-0")
	if res.Fleet.Pods != 3 || res.Fleet.Focus != "a/dp-0" {
		t.Errorf("fleet %+v; without a namespace want 3 pods (a/dp-0, a/dp-1, b/dp-0), the worst dp-0 (a/dp-0) in focus", res.Fleet)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "2 namespaces have a pod dp-0") {
		t.Errorf("notes %q should say the pod name is in two namespaces", res.Notes)
	}
}
