package main

import "github.com/vllm-responder/vllm-responder/internal/testenv"

// startRecordedPrometheus starts a real Prometheus holding the recorded vLLM pods the tests use
// (testenv.ScenarioLoads: 20 minutes of each scenario, and a healthy day-ago baseline), and a
// model on testenv.FleetPods pods (testenv.FleetLoads) for the fleet row.
func startRecordedPrometheus(t *benchTB) *testenv.PromServer {
	return testenv.RecordedPrometheus(t, append(testenv.ScenarioLoads(), testenv.FleetLoads()...))
}
