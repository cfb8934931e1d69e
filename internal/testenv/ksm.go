package testenv

import (
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// KSMRelease is the kube-state-metrics release whose exposition KSMState writes: its metric
// names, HELP texts (STABLE families carry "[STABLE] "), label names and label order (the
// object's own labels first: namespace, pod, uid; namespace, replicaset; namespace,
// horizontalpodautoscaler; node), read from that release's internal/store.
const KSMRelease = "v2.17.0"

// KSMPod is one pod as kube-state-metrics exports it.
type KSMPod struct {
	Namespace, Name, Node string
	// OwnerKind and OwnerName name its controller (empty: a bare pod).
	OwnerKind, OwnerName string
	// Phase is Pending, Running, Succeeded, Failed or Unknown (default Running).
	Phase string
	Ready bool
	// Age is how long before the scrape the pod was created.
	Age time.Duration
	// Unschedulable: the scheduler found no node (PodScheduled False) for UnschedulableFor.
	Unschedulable    bool
	UnschedulableFor time.Duration
	// Container is its one container's name (default vllm); Restarts its restarts;
	// LastTerminatedReason (OOMKilled, Error, ...) why it last ended, LastTerminatedAgo when;
	// Waiting why it waits now (ContainerCreating, CrashLoopBackOff, ...).
	Container            string
	Restarts             int
	LastTerminatedReason string
	LastTerminatedAgo    time.Duration
	LastExitCode         int
	Waiting              string
	// Labels are Kubernetes labels kube_pod_labels carries (with --metric-labels-allowlist),
	// by their Kubernetes name (leaderworkerset.sigs.k8s.io/name).
	Labels map[string]string
}

// KSMReplicaSet is a ReplicaSet and its owner.
type KSMReplicaSet struct {
	Namespace, Name, OwnerKind, OwnerName string
	Replicas, Ready                       int
}

// KSMHPA is a HorizontalPodAutoscaler (autoscaling/v2) as kube-state-metrics exports it.
type KSMHPA struct {
	Namespace, Name string
	// TargetKind, TargetName and TargetAPIVersion are its scaleTargetRef.
	TargetKind, TargetName, TargetAPIVersion string
	Min, Max, Current, Desired               int
	// Conditions are its status conditions (AbleToScale, ScalingActive, ScalingLimited) -> True,
	// False or Unknown.
	Conditions map[string]string
	Metrics    []KSMHPAMetric
}

// KSMHPAMetric is one metric of an HPA: its name (cpu for a resource metric, the metric's name
// otherwise), target type (value, average, utilization), target, and the current value its
// status reports (nil: none yet).
type KSMHPAMetric struct {
	Name, TargetType string
	Target           float64
	Current          *float64
}

// KSMNode is a node as kube-state-metrics exports it (internal/store/node.go): whether it is
// cordoned, its conditions, its GPUs.
type KSMNode struct {
	Name string
	// Unschedulable: cordoned (spec.unschedulable), by kubectl cordon, NVSentinel's
	// fault-quarantine or a node-repair controller.
	Unschedulable bool
	// Conditions beside kubelet's own (MemoryPressure, DiskPressure, PIDPressure False, Ready
	// True unless set here): type -> True, False or Unknown. NVSentinel sets its checks' names
	// True while they fail (SysLogsXIDError, SysLogsGPUFallenOff, GpuMemWatch, ...); the EKS node
	// agent sets AcceleratedHardwareReady False while the GPU is unhealthy (docs/gpu-facts.md).
	Conditions map[string]string
	// Taints (key, value, effect), e.g. NVSentinel's nvidia.com/gpu-xid-error=true:NoSchedule.
	Taints []KSMTaint
	// GPUs is the node's nvidia.com/gpu capacity; GPUsAllocatable what the device plugin still
	// offers (it drops the GPUs it marked unhealthy; nil: all of them).
	GPUs            int
	GPUsAllocatable *int
	// Age is how long before the scrape the node was created (default 30 days).
	Age time.Duration
}

// KSMTaint is one taint of a node.
type KSMTaint struct{ Key, Value, Effect string }

// KSMGPUNode is a node with gpus GPUs, Ready, schedulable.
func KSMGPUNode(name string, gpus int) KSMNode { return KSMNode{Name: name, GPUs: gpus} }

// KSMState is what a stand-in kube-state-metrics exports.
type KSMState struct {
	Pods        []KSMPod
	ReplicaSets []KSMReplicaSet
	HPAs        []KSMHPA
	Nodes       []KSMNode
}

// family is one metric family of an exposition, its samples in the order written.
type family struct {
	name, help, typ string
	stable          bool
	samples         []string
}

// expo writes metric families in the text format (0.0.4) in name order, as kube-state-metrics
// sorts its families per store.
type expo struct{ families map[string]*family }

func (e *expo) add(name, help, typ string, stable bool, labels []string, v float64) {
	if e.families == nil {
		e.families = map[string]*family{}
	}
	f := e.families[name]
	if f == nil {
		f = &family{name: name, help: help, typ: typ, stable: stable}
		e.families[name] = f
	}
	var b strings.Builder
	b.WriteString(name)
	if len(labels) > 0 {
		b.WriteByte('{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%s=%s", labels[i], strconv.Quote(labels[i+1]))
		}
		b.WriteByte('}')
	}
	b.WriteString(" " + strconv.FormatFloat(v, 'g', -1, 64))
	f.samples = append(f.samples, b.String())
}

func (e *expo) String() string {
	names := make([]string, 0, len(e.families))
	for n := range e.families {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		f := e.families[n]
		help := f.help
		if f.stable {
			help = "[STABLE] " + help
		}
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", f.name, help, f.name, f.typ)
		for _, s := range f.samples {
			b.WriteString(s + "\n")
		}
	}
	return b.String()
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// uid is a stable stand-in for an object's UID.
func uid(parts ...string) string {
	h := fnv.New64a()
	h.Write([]byte(strings.Join(parts, "/")))
	x := h.Sum64()
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", uint32(x>>32), uint16(x>>16), uint16(x)&0xfff, uint16(x>>4)&0xfff, x&0xffffffffffff)
}

// labelName is how kube-state-metrics writes a Kubernetes label key as a Prometheus label
// (leaderworkerset.sigs.k8s.io/name -> label_leaderworkerset_sigs_k8s_io_name).
func labelName(k string) string {
	var b strings.Builder
	b.WriteString("label_")
	for _, r := range k {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// conditionStatuses are the statuses kube-state-metrics writes one series each for, in its order.
var conditionStatuses = []string{"true", "false", "unknown"}

// Exposition is the state as kube-state-metrics KSMRelease serves it at now.
func (s KSMState) Exposition(now time.Time) string {
	var e expo
	for _, p := range s.Pods {
		writePod(&e, p, now)
	}
	for _, rs := range s.ReplicaSets {
		id := []string{"namespace", rs.Namespace, "replicaset", rs.Name}
		e.add("kube_replicaset_owner", "Information about the ReplicaSet's owner.", "gauge", true,
			append(id, "owner_kind", rs.OwnerKind, "owner_name", rs.OwnerName, "owner_is_controller", "true"), 1)
		e.add("kube_replicaset_spec_replicas", "Number of desired pods for a ReplicaSet.", "gauge", true, id, float64(rs.Replicas))
		e.add("kube_replicaset_status_ready_replicas", "The number of ready replicas per ReplicaSet.", "gauge", true, id, float64(rs.Ready))
	}
	for _, h := range s.HPAs {
		writeHPA(&e, h)
	}
	for i, n := range s.Nodes {
		writeNode(&e, n, i, now)
	}
	return e.String()
}

// kubeletConditions are the conditions kubelet keeps on every node, in its order.
var kubeletConditions = []string{"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"}

// writeNode writes a node's families in v2.17's label order (node first).
func writeNode(e *expo, n KSMNode, i int, now time.Time) {
	node := []string{"node", n.Name}
	with := func(extra ...string) []string { return append(append([]string{}, node...), extra...) }
	e.add("kube_node_info", "Information about a cluster node.", "gauge", true,
		with("kernel_version", "6.8.0-1024-aws", "os_image", "Ubuntu 22.04.5 LTS", "container_runtime_version", "containerd://1.7.27",
			"kubelet_version", "v1.33.4", "kubeproxy_version", "deprecated", "provider_id", "aws:///us-east-1a/i-0"+fmt.Sprintf("%016x", i+1),
			"pod_cidr", fmt.Sprintf("10.42.%d.0/24", i), "system_uuid", uid("node", n.Name), "internal_ip", fmt.Sprintf("10.0.%d.10", i)), 1)
	age := n.Age
	if age == 0 {
		age = 30 * 24 * time.Hour
	}
	e.add("kube_node_created", "Unix creation timestamp", "gauge", true, with(), float64(now.Add(-age).Unix()))
	e.add("kube_node_spec_unschedulable", "Whether a node can schedule new pods.", "gauge", true, with(), boolValue(n.Unschedulable))
	for _, t := range n.Taints {
		e.add("kube_node_spec_taint", "The taint of a cluster node.", "gauge", true, with("key", t.Key, "value", t.Value, "effect", t.Effect), 1)
	}
	conds := map[string]string{"MemoryPressure": "False", "DiskPressure": "False", "PIDPressure": "False", "Ready": "True"}
	order := append([]string{}, kubeletConditions...)
	var extra []string
	for c, st := range n.Conditions {
		if _, kubelet := conds[c]; !kubelet {
			extra = append(extra, c)
		}
		conds[c] = st
	}
	sort.Strings(extra) // third-party conditions come after kubelet's
	for _, c := range append(order, extra...) {
		for _, st := range conditionStatuses {
			e.add("kube_node_status_condition", "The condition of a cluster node.", "gauge", true,
				with("condition", c, "status", st), boolValue(strings.EqualFold(conds[c], st)))
		}
	}
	alloc := n.GPUs
	if n.GPUsAllocatable != nil {
		alloc = *n.GPUsAllocatable
	}
	for _, r := range []struct {
		resource, unit        string
		capacity, allocatable float64
	}{
		{"cpu", "core", 192, 191.45},
		{"memory", "byte", 2063731908608, 2052994490368},
		{"pods", "integer", 110, 110},
		{"nvidia_com_gpu", "integer", float64(n.GPUs), float64(alloc)},
	} {
		if r.resource == "nvidia_com_gpu" && n.GPUs == 0 {
			continue // no device plugin resource on a node without GPUs
		}
		l := with("resource", r.resource, "unit", r.unit)
		e.add("kube_node_status_capacity", "The capacity for different resources of a node.", "gauge", true, l, r.capacity)
		e.add("kube_node_status_allocatable", "The allocatable for different resources of a node that are available for scheduling.", "gauge", true, l, r.allocatable)
	}
}

func writePod(e *expo, p KSMPod, now time.Time) {
	if p.Phase == "" {
		p.Phase = "Running"
	}
	if p.Container == "" {
		p.Container = "vllm"
	}
	id := []string{"namespace", p.Namespace, "pod", p.Name, "uid", uid(p.Namespace, p.Name)}
	with := func(extra ...string) []string { return append(append([]string{}, id...), extra...) }
	controller := ""
	if p.OwnerKind != "" {
		controller = "true"
	}
	e.add("kube_pod_owner", "Information about the Pod's owner.", "gauge", true,
		with("owner_kind", p.OwnerKind, "owner_name", p.OwnerName, "owner_is_controller", controller), 1)
	scheduled := !p.Unschedulable
	node, hostIP, podIP := "", "", ""
	if scheduled {
		node, hostIP, podIP = p.Node, "10.0.0.1", "10.1.0.1"
	}
	e.add("kube_pod_info", "Information about pod.", "gauge", true,
		with("host_ip", hostIP, "pod_ip", podIP, "node", node, "created_by_kind", p.OwnerKind, "created_by_name", p.OwnerName,
			"priority_class", "", "host_network", "false"), 1)
	labels := with()
	keys := make([]string, 0, len(p.Labels))
	for k := range p.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		labels = append(labels, labelName(k), p.Labels[k])
	}
	e.add("kube_pod_labels", "Kubernetes labels converted to Prometheus labels.", "gauge", true, labels, 1)
	created := now.Add(-p.Age)
	e.add("kube_pod_created", "Unix creation timestamp", "gauge", true, with(), float64(created.Unix()))
	for _, ph := range []string{"Pending", "Succeeded", "Failed", "Unknown", "Running"} {
		e.add("kube_pod_status_phase", "The pods current phase.", "gauge", true, with("phase", ph), boolValue(ph == p.Phase))
	}
	schedStatus := "true"
	if !scheduled {
		schedStatus = "false"
	}
	for _, st := range conditionStatuses {
		e.add("kube_pod_status_scheduled", "Describes the status of the scheduling process for the pod.", "gauge", true,
			with("condition", st), boolValue(st == schedStatus))
	}
	if !scheduled {
		e.add("kube_pod_status_unschedulable", "Describes the unschedulable status for the pod.", "gauge", true, with(), 1)
		e.add("kube_pod_status_unscheduled_time", "Unix timestamp when pod moved into unscheduled status", "gauge", false, with(),
			float64(now.Add(-p.UnschedulableFor).Unix()))
		return // no node: no Ready condition, no container statuses
	}
	e.add("kube_pod_status_scheduled_time", "Unix timestamp when pod moved into scheduled status", "gauge", true, with(), float64(created.Unix()))
	e.add("kube_pod_start_time", "Start time in unix timestamp for a pod.", "gauge", true, with(), float64(created.Unix()))
	readyStatus := "false"
	if p.Ready {
		readyStatus = "true"
	}
	for _, st := range conditionStatuses {
		e.add("kube_pod_status_ready", "Describes whether the pod is ready to serve requests.", "gauge", true,
			with("condition", st), boolValue(st == readyStatus))
	}
	c := with("container", p.Container)
	e.add("kube_pod_container_status_restarts_total", "The number of container restarts per container.", "counter", true, c, float64(p.Restarts))
	e.add("kube_pod_container_status_ready", "Describes whether the containers readiness check succeeded.", "gauge", true, c, boolValue(p.Ready))
	e.add("kube_pod_container_status_waiting", "Describes whether the container is currently in waiting state.", "gauge", true, c, boolValue(p.Waiting != ""))
	if p.Waiting != "" {
		e.add("kube_pod_container_status_waiting_reason", "Describes the reason the container is currently in waiting state.", "gauge", true,
			with("container", p.Container, "reason", p.Waiting), 1)
	}
	if p.LastTerminatedReason != "" {
		e.add("kube_pod_container_status_last_terminated_reason", "Describes the last reason the container was in terminated state.", "gauge", false,
			with("container", p.Container, "reason", p.LastTerminatedReason), 1)
		e.add("kube_pod_container_status_last_terminated_exitcode", "Describes the exit code for the last container in terminated state.", "gauge", false,
			c, float64(p.LastExitCode))
		e.add("kube_pod_container_status_last_terminated_timestamp", "Last terminated time for a pod container in unix timestamp.", "gauge", false,
			c, float64(now.Add(-p.LastTerminatedAgo).Unix()))
	}
}

func writeHPA(e *expo, h KSMHPA) {
	id := []string{"namespace", h.Namespace, "horizontalpodautoscaler", h.Name}
	with := func(extra ...string) []string { return append(append([]string{}, id...), extra...) }
	api := h.TargetAPIVersion
	if api == "" {
		api = "apps/v1"
	}
	e.add("kube_horizontalpodautoscaler_info", "Information about this autoscaler.", "gauge", false,
		with("scaletargetref_api_version", api, "scaletargetref_kind", h.TargetKind, "scaletargetref_name", h.TargetName), 1)
	e.add("kube_horizontalpodautoscaler_spec_min_replicas", "Lower limit for the number of pods that can be set by the autoscaler, default 1.", "gauge", true, with(), float64(h.Min))
	e.add("kube_horizontalpodautoscaler_spec_max_replicas", "Upper limit for the number of pods that can be set by the autoscaler; cannot be smaller than MinReplicas.", "gauge", true, with(), float64(h.Max))
	e.add("kube_horizontalpodautoscaler_status_current_replicas", "Current number of replicas of pods managed by this autoscaler.", "gauge", true, with(), float64(h.Current))
	e.add("kube_horizontalpodautoscaler_status_desired_replicas", "Desired number of replicas of pods managed by this autoscaler.", "gauge", true, with(), float64(h.Desired))
	for _, m := range h.Metrics {
		l := with("metric_name", m.Name, "metric_target_type", m.TargetType)
		e.add("kube_horizontalpodautoscaler_spec_target_metric", "The metric specifications used by this autoscaler when calculating the desired replica count.", "gauge", false, l, m.Target)
		if m.Current != nil {
			e.add("kube_horizontalpodautoscaler_status_target_metric", "The current metric status used by this autoscaler when calculating the desired replica count.", "gauge", false, l, *m.Current)
		}
	}
	conds := make([]string, 0, len(h.Conditions))
	for c := range h.Conditions {
		conds = append(conds, c)
	}
	sort.Strings(conds)
	for _, c := range conds {
		for _, st := range conditionStatuses {
			e.add("kube_horizontalpodautoscaler_status_condition", "The condition of this autoscaler.", "gauge", true,
				with("condition", c, "status", st), boolValue(strings.EqualFold(h.Conditions[c], st)))
		}
	}
}

// KEDAScaler is one trigger of a KEDA ScaledObject as the KEDA operator exports it
// (keda_scaler_metrics_value, pkg/metricscollector/prommetrics.go): Metric is the external
// metric name its HPA reads (s<triggerIndex>-<scaler>), Value what the scaler reads now.
type KEDAScaler struct {
	Namespace, ScaledObject, Scaler, Metric string
	TriggerIndex                            int
	Value                                   float64
}

// KEDAExposition is what the KEDA operator's /metrics holds of these scalers (client_golang
// writes label names in order).
func KEDAExposition(scalers []KEDAScaler) string {
	var e expo
	for _, s := range scalers {
		e.add("keda_scaler_metrics_value", "The current value for each scaler's metric that would be used by the HPA in computing the target average.", "gauge", false,
			[]string{"metric", s.Metric, "namespace", s.Namespace, "scaledObject", s.ScaledObject, "scaler", s.Scaler,
				"triggerIndex", strconv.Itoa(s.TriggerIndex), "type", "scaledobject"}, s.Value)
	}
	return e.String()
}

// Exposition serves a text exposition that can change while a test runs.
type Exposition struct {
	// Addr is host:port, for a scrape target.
	Addr string
	mu   sync.Mutex
	body func(now time.Time) string
}

// Set replaces what the exposition serves.
func (x *Exposition) Set(body func(now time.Time) string) {
	x.mu.Lock()
	x.body = body
	x.mu.Unlock()
}

// ServeHTTP writes the exposition as of the request.
func (x *Exposition) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	x.mu.Lock()
	body := x.body
	x.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	fmt.Fprint(w, body(time.Now()))
}

// ServeExposition serves body on a loopback port of its own until the test ends: a stand-in
// exporter (kube-state-metrics with KSMState.Exposition, KEDA with KEDAExposition) for
// Prometheus to scrape.
func ServeExposition(t testing.TB, body func(now time.Time) string) *Exposition {
	t.Helper()
	x := &Exposition{body: body}
	srv := httptest.NewServer(x) // on a loopback port
	t.Cleanup(srv.Close)
	x.Addr = srv.Listener.Addr().String()
	return x
}

// KSMDeployment is a Deployment's objects: the ReplicaSet of its current revision owning the
// pods (named <name>-7d9c5f-<i> where unnamed, created two hours ago where no age is given, on
// node gpu-node-<i> where scheduled and no node is given), and an older revision's ReplicaSet
// scaled to 0, as a rollout leaves it.
func KSMDeployment(namespace, name string, pods ...KSMPod) KSMState {
	rs := name + "-7d9c5f"
	ready := 0
	for i := range pods {
		p := &pods[i]
		p.Namespace, p.OwnerKind, p.OwnerName = namespace, "ReplicaSet", rs
		if p.Name == "" {
			p.Name = fmt.Sprintf("%s-%d", rs, i)
		}
		if p.Node == "" && !p.Unschedulable {
			p.Node = fmt.Sprintf("gpu-node-%d", i)
		}
		if p.Age == 0 {
			p.Age = 2 * time.Hour
		}
		if p.Ready {
			ready++
		}
	}
	return KSMState{Pods: pods, ReplicaSets: []KSMReplicaSet{
		{Namespace: namespace, Name: rs, OwnerKind: "Deployment", OwnerName: name, Replicas: len(pods), Ready: ready},
		{Namespace: namespace, Name: name + "-5b8f7c", OwnerKind: "Deployment", OwnerName: name},
	}}
}

// Add is s with t's objects added.
func (s KSMState) Add(t KSMState) KSMState {
	s.Pods = append(s.Pods, t.Pods...)
	s.ReplicaSets = append(s.ReplicaSets, t.ReplicaSets...)
	s.HPAs = append(s.HPAs, t.HPAs...)
	s.Nodes = append(s.Nodes, t.Nodes...)
	return s
}
