// Package kube reads what kube-state-metrics says about a vLLM pod from Prometheus (never from
// the Kubernetes API): its workload, the HorizontalPodAutoscaler that scales it and where that
// autoscaler's metric comes from, the workload's pods by state (ready, starting, failing to
// start, unschedulable, with their ages), the pod's node and its restarts with their reason. It is
// the one piece of code that knows kube-state-metrics' series and labels; the playbooks read its
// facts by name (Names, Facts), and the evidence engine sends its queries (Config.Lookup).
//
// The mapping, in two steps (lookup.go), each one request or two:
//
//  1. The pod: kube_pod_owner names its controller. A ReplicaSet's owner comes from
//     kube_replicaset_owner, joined in PromQL on the ReplicaSet's name (a Deployment). A
//     StatefulSet is a LeaderWorkerSet's when kube_pod_labels carries the pod label
//     leaderworkerset.sigs.k8s.io/name (exported only with --metric-labels-allowlist), or when
//     an HPA targets a LeaderWorkerSet of the StatefulSet's name (a LeaderWorkerSet's leader
//     StatefulSet is named as the LeaderWorkerSet). kube_pod_info gives the node, the
//     kube_pod_container_status_* series the restarts and their last reason.
//  2. The workload: its pods (a Deployment's through every ReplicaSet it owns, a
//     LeaderWorkerSet's through its leader and group StatefulSets), each with its phase,
//     readiness, creation, scheduling and waiting reason; the HPA whose scale target is the
//     workload (kube_horizontalpodautoscaler_info) with its spec, status, conditions and
//     metric; KEDA's keda_scaler_metrics_value of the ScaledObject whose HPA it is
//     (keda-hpa-<name>), and llm-d's wva_desired_replicas for the workload.
//
// Label values carried from one step to the next are quoted into the next step's PromQL, never
// concatenated. The series and labels are those of kube-state-metrics v2.17.0
// (internal/testenv's stand-in exporter writes them); kube_pod_status_unscheduled_time is new
// in that release, and before it an unschedulable pod's age stands in.
package kube
