// Package playbooks is the playbook language: which alerts a playbook diagnoses, the PromQL it
// runs, the fleet it compares the pod with and the ordered verdicts it decides between, and the
// one pure judgement of a verdict from the values those queries gave. It sends no query: the
// evidence package asks Prometheus and calls Judge with the answers.
//
// A playbook travels through the package in these steps:
//
//  1. YAML. A playbook is a file: the built-ins in builtin/*.yaml (embedded, see Builtin in
//     set.go), the user's from playbooks.dir (LoadDir in load.go). model.go holds the YAML shape
//     (File, QueryFile, VerdictFile, ChartFile; FleetFile in fleet.go) next to the compiled one
//     (Playbook, Query, Verdict, Chart, Matcher). A fragment (builtin/common/*.yaml, or a file
//     of playbooks.dir with `fragment: NAME`) is a part several playbooks share, taken with
//     `uses:` (fragment.go): the gate of progress, scrapes, restarts and pauses is one.
//
//  2. Parse (load.go, yaml.go). Parse decodes one file strictly with internal/strictyaml, the
//     loader the configuration uses too: an unknown key is an error named with its line and full
//     key ("x.yaml: line 4: unknown key \"queries.waiting.unitt\""), and yaml.go keeps the
//     queries and params in the order they are written. Every error names its file and place
//     ("x.yaml: verdicts[2].when: ..."): see Error.
//
//  3. Compile (load.go; the fleet section in fleet.go). compile first merges the fragments the
//     playbook uses (fragment.go: by name, a name defined twice an error naming both files,
//     override: to replace, spreads to place), then checks and compiles every section once, at
//     load time, so that a typo fails `responder check` rather than an incident: match (label
//     matchers, regexps anchored), scope, window, params, queries
//     (placeholders known, PromQL parsed after a sample expansion; a baseline_of query's three
//     expressions derived from its query's template, baseline.go), fleet, named conditions
//     (conditions.go: written into each rule's condition), named templates, verdicts (expr
//     conditions and Go templates, each tried against sample data) and charts. It reports every
//     error of a file at once. NewSet (set.go) then combines built-ins and user playbooks, applies
//     the config's window and param overrides and renames the vLLM metrics (vllm.metric_prefix, the router
//     exclusion; promql.go and internal/vllmnames).
//
//  4. Expansion (promql.go). ExpandAll renders every query for one alert's labels: $scope from
//     the labels, every value quoted as a PromQL string, the pod named by the label PodScope
//     says; the fleet's queries, and a baseline's "model a day ago", by the scope without the pod
//     ($siblings), the fleet's grouped $by pod and data-parallel rank. It also says how the scope
//     was read (notes).
//
//  5. Judge (judge.go; the fleet in fleetjudge.go). Playbook.Judge decides over an Observation
//     (each query's value or nil, the fleet's values by pod and rank, the alert's labels, the
//     slowest traces, and the facts: what the sources of the playbook's facts.Catalog say about
//     the pod, each a number or a label value read by one name, facts.go): each baseline is its first variant with a
//     value (Baseline), the fleet's values become the sibling comparison (FleetView) and the
//     q_this, q_max, ..., fleet_pods values, each named and computed by one entry of fleetStats
//     or fleetTotals; then the verdicts are tried in order and the first whose condition holds
//     wins. A condition that needs a missing value is false and the diagnosis notes it, and lists
//     the values such rules tried before the verdict needed as Missing (choose). The
//     winner's templates render the title, summary and actions with the values formatted for
//     people (format.go). The Diagnosis (diagnosis.go) carries a Record of what was judged
//     (record.go), from which a fixture can be written (package fixture), and, when it was
//     judged without facts that a rule on the way to its verdict reads, says so (NeedsFacts).
//
// Judge is pure and the only judgement: the evidence engine calls it with what Prometheus
// answered, and fixtures (package fixture, tests/*_test.yaml; `responder playbooks test`) call
// it with recorded values, so a fixture decides exactly as an incident would.
//
// What is not here: sending queries, batching, caching, decoding Prometheus' answers, the fleet
// request, the traces lookup and the facts' lookup are the evidence package's
// (evidence.Engine.Run; what each source's series are is its own package's, such as kube's, and
// their list is facts/sources'); the degraded diagnosis when Prometheus cannot be reached is its
// too.
package playbooks
