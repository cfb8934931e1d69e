// Package playbooks turns an alert into a diagnosis: it loads the declarative playbooks (which
// alerts each diagnoses, the PromQL it runs, the ordered verdicts it decides between), runs their
// queries against Prometheus and decides the verdict from the answers.
//
// A playbook travels through the package in five steps, each in its own file:
//
//  1. YAML. A playbook is a file: the built-ins in builtin/*.yaml (embedded, see Builtin in
//     set.go), the user's from playbooks.dir (LoadDir and LoadFS in load.go). model.go holds the
//     YAML shape (File, QueryFile, VerdictFile, ChartFile; FleetFile in fleet.go) next to the
//     compiled one (Playbook, Query, Verdict, Chart, Matcher).
//
//  2. Parse (load.go, yaml.go). Parse decodes one file strictly: an unknown key is an error, and
//     yaml.go keeps the queries and params in the order they are written and makes yaml.v3's
//     messages readable. Every error names its file and place ("x.yaml: verdicts[2].when: ..."):
//     see Error.
//
//  3. Compile (load.go; the fleet section in fleet.go). compile checks and compiles every
//     section once, at load time, so that a typo fails `responder check` rather than an
//     incident: match (label matchers, regexps anchored), scope, window, params, queries
//     (placeholders known, PromQL parsed after a sample expansion), fleet, verdicts (expr
//     conditions and Go templates, each tried against sample data) and charts. It reports every
//     error of a file at once. NewSet (set.go) then combines built-ins and user playbooks, applies
//     the config's param overrides and renames the vLLM metrics (vllm.metric_prefix, the router
//     exclusion; promql.go and internal/vllmnames).
//
//  4. Engine.Run (run.go). For one alert's labels, the Engine expands each query ($scope from the
//     alert's labels, every value quoted as a PromQL string: promql.go), sends them all to the
//     Querier at once (identical queries in flight shared, recent answers cached, a bound on
//     queries in flight), looks up the slowest traces beside them when traces are configured, and
//     interprets every answer as one number or a reason there is none (interpret: no series, NaN,
//     ±Inf, several series, a range vector, a rejected or timed-out query, Prometheus
//     unreachable). A fleet query keeps one number per pod instead (interpretVector, fleet.go).
//
//  5. Diagnosis (run.go's decide, diagnosis.go, format.go). The verdicts are tried in order and
//     the first whose condition holds wins; a condition that needs a missing value is false and
//     the diagnosis notes it. The winner's templates render the title, summary and actions with
//     the values formatted for people (format.go). The Diagnosis carries the evidence (with the
//     query behind each number and why a value is missing or not trusted), the notes, the fleet
//     comparison, the charts, and a Record of what was decided from (record.go), from which a
//     fixture can be written.
//
// Fixtures (fixture.go, tests/*_test.yaml) replay recorded values through steps 3 and 5 without
// Prometheus, as `responder playbooks test` does; Decide and DecideFleet are that entry point.
//
// Run always returns a diagnosis. When no query reached Prometheus the diagnosis is degraded
// (inconclusive, with Error set) and the error is an *UnavailableError, which matches
// ErrPrometheusUnavailable.
package playbooks
