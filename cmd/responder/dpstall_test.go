package main

import (
	"strings"
	"testing"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

// dpStallLoads is a model on two pods of two data-parallel engines each (a dense model: each
// engine core is its own process and scheduler). dp-0's engine 1 is as `engine1` says; every
// other engine serves the healthy load.
func dpStallLoads(engine1 func(*testenv.VLLMLoad)) []testenv.VLLMLoad {
	load := func(pod, engine string) testenv.VLLMLoad {
		l := testenv.HealthyLoad
		l.Namespace, l.Pod, l.Engine, l.Model = "a", pod, engine, "llama-dp"
		return l
	}
	odd := load("dp-0", "1")
	engine1(&odd)
	return []testenv.VLLMLoad{load("dp-0", "0"), odd, load("dp-1", "0"), load("dp-1", "1")}
}

// Against a real Prometheus: one wedged data-parallel engine (its queue never empties, its token
// counters stay flat) beside a serving sibling engine is engine-stalled with the engine and the
// pod named, from the alert carrying that engine's label and from the queue alert of the pod,
// although the pod's token sum is above 0; an idle engine (empty queue, no token) beside a
// serving one is not stalled.
func TestOneWedgedDataParallelEngineIsNamedOnARealPrometheus(t *testing.T) {
	t.Parallel()
	wedged := testenv.RecordedPrometheus(t, dpStallLoads(func(l *testenv.VLLMLoad) {
		l.ReqRate, l.Waiting, l.Running, l.KV = 0, 20, 8, 0.2
	}))
	cfg := writeConfig(t, wedged.URL, "")
	for _, alert := range []string{"VLLMEngineStalled", "VLLMQueueDepthHigh"} {
		res := triageFleet(t, "--config", cfg, "--alert", alert, "--label", "model_name=llama-dp",
			"--label", "namespace=a", "--label", "pod=dp-0", "--label", "engine=1")
		if res.Verdict != "engine-stalled" || !strings.Contains(res.Title, "engine 1 of dp-0") {
			t.Errorf("%s: verdict %s (%s); want engine-stalled naming engine 1 of dp-0", alert, res.Verdict, res.Title)
		}
		if res.Fleet.Focus != "dp-0" || res.Fleet.Engine != "1" || len(res.Fleet.Engines) != 2 {
			t.Errorf("%s: fleet %+v; want dp-0 in focus, its engine 1 first of 2", alert, res.Fleet)
		}
	}
	res := triageFleet(t, "--config", cfg, "--label", "model_name=llama-dp", "--label", "namespace=a")
	if res.Verdict != "engine-stalled" || res.Fleet.Focus != "dp-0" || !strings.Contains(res.Title, "engine 1 of dp-0") {
		t.Errorf("triage of the model: verdict %s (%s), focus %s; want engine-stalled naming engine 1 of dp-0", res.Verdict, res.Title, res.Fleet.Focus)
	}

	idle := testenv.RecordedPrometheus(t, dpStallLoads(func(l *testenv.VLLMLoad) {
		l.ReqRate, l.Waiting, l.Running = 0, 0, 0
	}))
	cfg = writeConfig(t, idle.URL, "")
	res = triageFleet(t, "--config", cfg, "--alert", "VLLMEngineStalled", "--label", "model_name=llama-dp",
		"--label", "namespace=a", "--label", "pod=dp-0", "--label", "engine=1")
	if res.Verdict == "engine-stalled" {
		t.Errorf("an idle engine beside a serving one: verdict %s (%s); want it not stalled", res.Verdict, res.Title)
	}
}
