package main

import (
	"path/filepath"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

// startRecordedPrometheus starts a real Prometheus holding the recorded vLLM pods the tests use
// (testenv.ScenarioLoads: 20 minutes of each scenario, and a healthy day-ago baseline), and a
// model on testenv.FleetPods pods (testenv.FleetLoads) for the fleet rows, with the shipped
// recording rules (repo's deploy/prometheus/vllm-alerts.rules.yml: the stall history) evaluated
// over the recorded history, as a Prometheus that ran them all along holds them. at is when the
// recorded series end.
func startRecordedPrometheus(t *benchTB, repo string) (*testenv.PromServer, time.Time) {
	rules := filepath.Join(repo, "deploy", "prometheus", "vllm-alerts.rules.yml")
	p := testenv.RecordedPrometheusWithRules(t, append(testenv.ScenarioLoads(), testenv.FleetLoads()...), rules)
	return p, p.RecordedUntil
}
