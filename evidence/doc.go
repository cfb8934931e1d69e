// Package evidence gathers what a playbook is judged over, from Prometheus (and Jaeger), and
// hands it to the playbook's judgement (playbooks.Playbook.Judge). It is the talk to the
// backends; what the numbers mean is the playbooks package's.
//
// Engine.Run (engine.go) reads as three steps, and a fourth where a verdict needs it:
//
//  1. plan: the playbook's queries and fleet queries expanded for the alert's labels
//     (playbooks.Playbook.ExpandAll), at the time asked for.
//  2. gather: every query sent at once, a few to a request (batch.go), the fleet's queries as one
//     request (fleet.go), the slowest traces looked up beside them (traces.go); identical
//     requests in flight shared and recent answers cached, a bound on requests in flight
//     (query.go). Each answer becomes one number or the reason there is none (no series, NaN,
//     ±Inf, several series, a range vector, a rejected or timed-out query, Prometheus
//     unreachable, a partial answer); a quantile pinned at a top bucket is marked.
//  3. judge: playbooks.Playbook.Judge over the values, with the evidence (each number with its
//     query and its problem), the notes on how it was gathered and the charts added; when no
//     query reached Prometheus, a degraded diagnosis (inconclusive, Error set) and an
//     *UnavailableError, which matches ErrPrometheusUnavailable.
//  4. facts, only when the judgement says a rule on the way to its verdict reads them
//     (playbooks.Diagnosis.NeedsFacts): the first such source of EngineOptions.Facts (the list:
//     facts/sources; kube-state-metrics, vLLM's LoRA series) looks them up for the pod (the
//     alert's, or the fleet's focus), its queries sent as the others are (facts.go), then the
//     judgement again with them, their evidence and notes; a source at a time.
//
// The transport (transport.go) and the instant-vector decoder (vectorjson.go) keep an incident's
// queries cheap for Prometheus and for the responder.
package evidence
