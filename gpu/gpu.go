// Package gpu reads the GPUs under a vLLM pod from NVIDIA dcgm-exporter's series in Prometheus
// (docs/gpu-facts.md says what the exporter writes and why each query reads it as it does):
// the GPUs the pod holds, joined by the exporter's pod labels (exported_pod/exported_namespace by
// default: gpu.pod_label, gpu.namespace_label), or, where no GPU series names the pod, by its
// node (kube-state-metrics' kube_pod_info) to the node's GPUs. It gives two kinds of facts:
//
//   - a fault on one of those GPUs (gpu_fault...): a new XID of the drain-or-reset kind (the XID
//     gauge holds the last XID for ever, so "new" is a series that appeared within gpu.recent, as
//     VLLMGPUFault reads it), a failed row remap (a state that stands however old), uncorrectable
//     remapped rows or NVLink errors that rose, a GPU that stopped reporting while its node's
//     others still report (it fell off the bus: DCGM blanks a lost GPU's fields);
//   - the throttle of a busy GPU of the pod (gpu_clock...): its SM clock over the window against
//     its own recent past and the busy GPUs of the same model held by the namespace's other
//     pods, with its temperature, power and the throttle violation counters where enabled.
//
// Without dcgm-exporter series for the pod it says so in one note, and the GPU facts are unknown.
package gpu

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/facts"
	"github.com/vllm-responder/vllm-responder/internal/promql"
	"github.com/vllm-responder/vllm-responder/kube"
)

// SourceName names dcgm-exporter as a fact source (facts.Source).
const SourceName = "dcgm-exporter"

// busyUtil is the GPU utilisation (%) over the window from which a GPU counts as busy: an idle
// GPU clocks down (GPU_IDLE), so only busy GPUs' clocks are compared.
const busyUtil = 50

// nvlinkCRCRate is the NVLink CRC errors per second DCGM's health watch fails at
// (DCGM_LIMIT_MAX_NVLINK_CRC_ERROR), as VLLMGPUFault reads it.
const nvlinkCRCRate = 100

// Source is dcgm-exporter as a fact source (package facts), as the gpu: section configures it;
// Kube, where set and enabled, names kube_pod_info's labels for the join by node. It looks
// nothing up when Config is nil or not Enabled, or the diagnosis has no pod.
type Source struct {
	Config *Config
	Kube   *kube.Config
}

// Name implements facts.Source.
func (Source) Name() string { return SourceName }

// Facts implements facts.Source.
func (Source) Facts() []facts.Fact { return Names() }

// Lookup implements facts.Source.
func (s Source) Lookup(ctx context.Context, ask facts.Asker, subj facts.Subject) *facts.Result {
	if s.Config == nil || !s.Config.Enabled || subj.Pod == "" {
		return nil
	}
	r := s.Config.Lookup(ctx, ask, subj, s.Kube)
	return &facts.Result{Facts: r.Facts(), Notes: r.Notes(), Queries: r.Queries}
}

// Report is what dcgm-exporter says about the GPUs of one pod.
type Report struct {
	Namespace, Pod string
	// By says how the GPUs were joined to the pod: "pod labels", "node" or "" (none found).
	By string
	// GPUs are the pod's GPUs (by node: the node's), in node and index order.
	GPUs []*GPU
	// Faults are the faults found, in the order faultKinds lists their kinds.
	Faults []Fault
	// Throttled is the busy GPU of the pod whose clock is lowest against its reference (nil:
	// none busy, or joined by node).
	Throttled *GPU
	// Siblings are the busy GPUs of the same model held by the namespace's other pods: their
	// mean SM clock, hottest temperature and mean power over the window (nil: none).
	SiblingsClock, SiblingsTemp, SiblingsPower *float64
	// Cordoned: the fault's node is cordoned (kube_node_spec_unschedulable 1, or NVSentinel's
	// fault_quarantine_current_quarantined_nodes 1); nil when not read or unknown.
	Cordoned *float64
	// CordonedNode is a node cordoned now that pods of the pod's controller ran on within
	// gpu.recent and run on no more (the one most left), CordonedPods how many left it, and
	// CordonedCause what its GPUs or its conditions say of why ("XID 79"; "" unknown).
	CordonedNode, CordonedCause string
	CordonedPods                int
	// Seen is how many times the first fault was seen on the pod's GPUs (on its node) within
	// repeatSpan: its XID appearing or counted again, or its GPU lost again (0: not read; see
	// repeats for what can be seen). Since is the first time.
	Seen  int
	Since time.Time
	// Conditions are the fault node's GPU health conditions that say it is unhealthy (NVSentinel's
	// checks True, the EKS node agent's AcceleratedHardwareReady False), by name.
	Conditions []string
	// Queries are the PromQL sent, by name; Problems say which failed.
	Queries  map[string]string
	Problems []string
	recent   time.Duration
	at       time.Time
}

// GPU is one GPU's readings over the window.
type GPU struct {
	Node, Index, UUID, Model string
	// Clock is its mean SM clock (MHz) over the window, Before the 90th percentile of its clock
	// over gpu.recent before the window (its own recent past while it served this pod).
	Clock, Before                 *float64
	Util, Temp, Power, PowerLimit *float64
	// Violation is the share of the window it was throttled for power or heat (the
	// DCGM_FI_DEV_{POWER,THERMAL}_VIOLATION counters, off by default: nil without them).
	Violation *float64
	// Lost: it reported within gpu.recent and reports no more, while its node's others do.
	Lost bool
}

func (g *GPU) key() string { return g.Node + "\x00" + g.UUID }

// Name is "GPU 3 (GPU-8a41d0c3-…) on node X".
func (g *GPU) Name() string {
	s := "GPU " + g.Index
	if g.UUID != "" {
		s += " (" + g.UUID + ")"
	}
	if g.Node != "" {
		s += " on node " + g.Node
	}
	return s
}

// Fault is one fault on one GPU.
type Fault struct {
	Kind string // one of faultKinds
	GPU  *GPU
	XID  int // the XID (Kind xid)
}

// faultKinds are the kinds of faults, in the order a diagnosis names the first: the GPU gone,
// then what the driver said, then the memory, then the links. They are VLLMGPUFault's `fault`
// label values.
var faultKinds = []string{"gpu-lost", "xid", "row-remap-failure", "remapped-rows", "nvlink-errors"}

// xidMeaning says what a drain-or-reset XID means (docs/gpu-facts.md's table, from NVIDIA's XID
// catalog as NVSentinel maps it, and dcgm-exporter's err_msg); the others are said generically.
var xidMeaning = map[int]string{
	46:  "the GPU stopped processing (a GPU timeout): reset the GPU",
	48:  "a double-bit ECC error (uncorrectable memory error): reset the GPU",
	62:  "an internal micro-controller halt: reset the GPU",
	64:  "the row remapper could not record a remap: reset the GPU",
	74:  "an NVLink error: tensor-parallel collectives over the link fail or hang; reset the GPU",
	79:  "the GPU has fallen off the bus: reboot the node",
	95:  "an uncontained ECC error (every process on the GPU is affected): reset the GPU",
	109: "a context switch timeout: reset the GPU",
	119: "a GSP RPC timeout (firmware hang): reset the GPU or reboot the node",
	120: "a GSP error (firmware): reset the GPU or reboot the node",
	140: "an unrecovered ECC error: reset the GPU",
}

// XIDMeaning is what xid means for the node, for a message.
func XIDMeaning(xid int) string {
	if m, ok := xidMeaning[xid]; ok {
		return m
	}
	return "an XID NVIDIA's catalog treats as fatal (reset the GPU, reboot the node or run its workflow)"
}

// metric is a dcgm-exporter metric's name as stored (gpu.metric_prefix before it).
func (c *Config) metric(name string) string { return c.MetricPrefix + name }

// by is the labels one GPU's series are grouped by.
func (c *Config) by() string { return c.NodeLabel + ", gpu, UUID, modelName" }

// Lookup reads what dcgm-exporter says about the pod's GPUs as of the asker's time, in one step
// (two where no GPU series names the pod and kube is set: then the node's GPUs), and with kube
// set, whether pods of the pod's controller left a node cordoned now (cordonQueries).
func (c *Config) Lookup(ctx context.Context, ask facts.Asker, s facts.Subject, kc *kube.Config) *Report {
	r := &Report{Namespace: s.Namespace, Pod: s.Pod, Queries: map[string]string{}, recent: c.Recent, at: s.At}
	sel := c.matchers(c.NamespaceLabel, s.Namespace, c.PodLabel, s.Pod)
	qs := c.queries(sel, s)
	if kc != nil && kc.Enabled && s.Namespace != "" && s.Pod != "" {
		qs = append(qs, c.cordonQueries(kc, s)...)
	}
	a := ask(ctx, qs)
	r.record(qs, a)
	r.readCordoned(a)
	if r.read(c, a, true) {
		r.By = "pod labels"
		r.node(ctx, ask)
		r.repeats(ctx, ask, c)
		return r
	}
	if kc == nil || !kc.Enabled || len(r.Problems) > 0 {
		return r
	}
	info := facts.Query{Name: "pod_node", Expr: "group by (node) (kube_pod_info{" + c.matchers(kc.NamespaceLabel, s.Namespace, kc.PodLabel, s.Pod) + "})"}
	a = ask(ctx, []facts.Query{info})
	r.record([]facts.Query{info}, a)
	var node string
	for _, smp := range a.Vectors[info.Name] {
		node = string(smp.Metric["node"])
	}
	if node == "" {
		return r
	}
	qs = c.faultQueries(c.matchers(c.NodeLabel, node))
	a = ask(ctx, qs)
	r.record(qs, a)
	if r.read(c, a, false) {
		r.By = "node"
		r.node(ctx, ask)
		r.repeats(ctx, ask, c)
	}
	return r
}

// nodeConditions are the node conditions that say a GPU node is unhealthy while True: NVSentinel
// names each after its health check (docs/gpu-facts.md, "The node's own state").
const nodeConditions = "SysLogsXIDError|SysLogsSXIDError|SysLogsGPUFallenOff|Gpu[A-Za-z]*Watch"

// node reads, for the node of the first fault, whether it is cordoned or quarantined and which
// GPU health conditions it carries (kube-state-metrics, NVSentinel): one more step, only when
// there is a fault.
func (r *Report) node(ctx context.Context, ask facts.Asker) {
	if len(r.Faults) == 0 || r.Faults[0].GPU.Node == "" {
		return
	}
	n := promql.Matcher("node", r.Faults[0].GPU.Node)
	qs := []facts.Query{
		{Name: "node_cordoned", Expr: "max(kube_node_spec_unschedulable{" + n + "} or fault_quarantine_current_quarantined_nodes{" + n + "})"},
		{Name: "node_conditions", Expr: conditions(n)},
	}
	a := ask(ctx, qs)
	r.record(qs, a)
	r.Cordoned = one(a.Vectors["node_cordoned"])
	for _, s := range a.Vectors["node_conditions"] {
		c := string(s.Metric["condition"])
		if s.Metric["status"] == "false" {
			c += "=False"
		}
		if !slices.Contains(r.Conditions, c) {
			r.Conditions = append(r.Conditions, c)
		}
	}
	slices.Sort(r.Conditions)
}

// The span and the resolution over which the first fault's earlier occurrences are counted.
const (
	repeatSpan = 24 * time.Hour
	repeatStep = 15 * time.Second
)

// repeats counts, for a first fault that is an XID or a lost GPU, how many times it was seen on
// the pod's GPUs of that node within repeatSpan (one more step, only when there is such a
// fault). What the series can show (docs/gpu-facts.md, "A fault seen again"):
//   - the XID gauge holds the last XID and does not change for the same XID again, so a repeat
//     shows on it only as its series appearing again after it went away (another XID came in
//     between, or the exporter restarted): an appearance at the same step as the GPU's own
//     series (the exporter starting, which may replay the kernel log) is not counted;
//   - DCGM_EXP_XID_ERRORS_COUNT (off by default) counts each XID within its window: its rises
//     are counted;
//   - a lost GPU is seen again when its series disappear again while the node's others report.
//
// Per GPU the larger of the counts is taken (both see the same faults), then summed.
func (r *Report) repeats(ctx context.Context, ask facts.Asker, c *Config) {
	if len(r.Faults) == 0 || (r.Faults[0].Kind != "xid" && r.Faults[0].Kind != "gpu-lost") {
		return
	}
	f := r.Faults[0]
	var uuids []string
	for _, g := range r.GPUs {
		if g.Node == f.GPU.Node && g.UUID != "" {
			uuids = append(uuids, regexp.QuoteMeta(g.UUID))
		}
	}
	if len(uuids) == 0 {
		return
	}
	node := c.matchers(c.NodeLabel, f.GPU.Node)
	m := node + ",UUID=~" + promql.Quote(strings.Join(uuids, "|"))
	step := model.Duration(repeatStep).String()
	sub := "[" + model.Duration(repeatSpan).String() + ":" + step + "]"
	// per is max by (UUID) of metric{m, extra}, offset by a step when before.
	per := func(metric, extra string, before bool) string {
		e := "max by (UUID) (" + c.metric(metric) + "{" + m + extra + "}"
		if before {
			e += " offset " + step
		}
		return e + ")"
	}
	sm := func(before bool) string { return per("DCGM_FI_DEV_SM_CLOCK", "", before) }
	var seen, counted string
	if f.Kind == "xid" {
		x := strconv.Itoa(f.XID)
		gauge := func(before bool) string { return per("DCGM_FI_DEV_XID_ERRORS", ",err_code="+promql.Quote(x), before) }
		count := func(before bool) string { return per("DCGM_EXP_XID_ERRORS_COUNT", ",xid="+promql.Quote(x), before) }
		seen = fmt.Sprintf("(%s unless %s) unless on (UUID) (%s unless %s)", gauge(false), gauge(true), sm(false), sm(true))
		counted = fmt.Sprintf("clamp_min(%s - %s, 0) or (%s unless %s)", count(false), count(true), count(false), count(true))
	} else {
		seen = fmt.Sprintf("(%s unless %s) and on () (count(%s{%s}) > 0)", sm(true), sm(false), c.metric("DCGM_FI_DEV_SM_CLOCK"), node)
	}
	qs := []facts.Query{
		{Name: "repeat_seen", Expr: "count_over_time((" + seen + ")" + sub + ")"},
		{Name: "repeat_first", Expr: "min(min_over_time((timestamp(" + seen + "))" + sub + "))"},
	}
	if counted != "" {
		qs = append(qs, facts.Query{Name: "repeat_counted", Expr: "sum_over_time((" + counted + ")" + sub + ")"})
		qs[1].Expr = "min(min_over_time((timestamp((" + seen + ") or ((" + counted + ") > 0)))" + sub + "))"
	}
	a := ask(ctx, qs)
	r.record(qs, a)
	byUUID := map[string]float64{}
	for _, name := range []string{"repeat_seen", "repeat_counted"} {
		for _, smp := range a.Vectors[name] {
			u := string(smp.Metric["UUID"])
			byUUID[u] = max(byUUID[u], float64(smp.Value))
		}
	}
	for _, n := range byUUID {
		r.Seen += int(n)
	}
	if first := one(a.Vectors["repeat_first"]); first != nil && r.Seen > 0 {
		r.Since = time.Unix(int64(*first), 0).UTC()
	}
}

// conditions is the PromQL of the GPU health conditions that say a node (sel: those it
// selects, "" every node) is unhealthy: NVSentinel's True, the EKS node agent's
// AcceleratedHardwareReady False.
func conditions(sel string) string {
	m := func(rest string) string { return strings.TrimPrefix(sel+","+rest, ",") }
	return "kube_node_status_condition{" + m("condition=~"+promql.Quote(nodeConditions)+`,status="true"`) + "} == 1 or kube_node_status_condition{" +
		m(`condition="AcceleratedHardwareReady",status="false"`) + "} == 1"
}

// cordonQueries are the pods a capacity verdict lacks because a GPU node was cordoned
// (kube-state-metrics): per node cordoned now (kube_node_spec_unschedulable 1), the pods of the
// pod's controller (kube_pod_info's created_by_kind and created_by_name: a Deployment's current
// ReplicaSet, a StatefulSet) that ran on it within gpu.recent and run on it no more (drained or
// evicted); with what that node's GPUs last reported (the XID gauge keeps the last XID, which
// is what a cordon after a fault wants to name) and its GPU health conditions.
func (c *Config) cordonQueries(kc *kube.Config, s facts.Subject) []facts.Query {
	ns, pod := kc.NamespaceLabel, kc.PodLabel
	inNS, this := c.matchers(ns, s.Namespace), c.matchers(ns, s.Namespace, pod, s.Pod)
	// (grouped by pod first: two kube-state-metrics replicas give every series twice)
	left := fmt.Sprintf(`count by (node) (group by (node, %s, %s) ((max_over_time(kube_pod_info{%s,created_by_name!=""}[%s]) and on (%s, created_by_kind, created_by_name) kube_pod_info{%s}) unless on (%s, %s, node) kube_pod_info{%s})) and on (node) (max by (node) (kube_node_spec_unschedulable) == 1)`,
		ns, pod, inNS, model.Duration(c.Recent).String(), ns, this, ns, pod, inNS)
	xids := make([]string, len(c.XIDs))
	for i, x := range c.XIDs {
		xids[i] = strconv.Itoa(x)
	}
	return []facts.Query{
		{Name: "cordoned_left", Expr: left},
		{Name: "cordoned_xid", Expr: fmt.Sprintf(`max by (node, err_code) (label_replace(%s{err_code=~%s}, "node", "$1", %s, "(.+)")) and on (node) (%s)`,
			c.metric("DCGM_FI_DEV_XID_ERRORS"), promql.Quote(strings.Join(xids, "|")), promql.Quote(c.NodeLabel), left)},
		{Name: "cordoned_conditions", Expr: "(" + conditions("") + ") and on (node) (" + left + ")"},
	}
}

// readCordoned takes the cordoned node that most pods left, and why.
func (r *Report) readCordoned(a facts.Answer) {
	for _, smp := range a.Vectors["cordoned_left"] {
		n, node := int(smp.Value), string(smp.Metric["node"])
		if n > r.CordonedPods || (n == r.CordonedPods && node < r.CordonedNode) {
			r.CordonedNode, r.CordonedPods = node, n
		}
	}
	if r.CordonedNode == "" {
		return
	}
	var xids, conds []string
	for _, smp := range a.Vectors["cordoned_xid"] {
		if string(smp.Metric["node"]) == r.CordonedNode {
			xids = append(xids, string(smp.Metric["err_code"]))
		}
	}
	for _, smp := range a.Vectors["cordoned_conditions"] {
		if string(smp.Metric["node"]) == r.CordonedNode {
			conds = append(conds, string(smp.Metric["condition"]))
		}
	}
	slices.Sort(xids)
	slices.Sort(conds)
	switch {
	case len(xids) > 0:
		r.CordonedCause = "XID " + strings.Join(slices.Compact(xids), ", ")
	case len(conds) > 0:
		r.CordonedCause = "its GPU health condition " + strings.Join(slices.Compact(conds), ", ")
	}
}

// matchers writes label="value" for each pair with a value, comma-separated.
func (c *Config) matchers(pairs ...string) string {
	var parts []string
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] != "" {
			parts = append(parts, promql.Matcher(pairs[i], pairs[i+1]))
		}
	}
	return strings.Join(parts, ",")
}

// queries are the GPUs of sel (the pod's, by its pod labels): their faults, their readings over
// the window, and the busy GPUs of the same model held by the namespace's other pods.
func (c *Config) queries(sel string, s facts.Subject) []facts.Query {
	w, recent := model.Duration(s.Window).String(), model.Duration(c.Recent).String()
	by := c.by()
	sm, util := c.metric("DCGM_FI_DEV_SM_CLOCK"), c.metric("DCGM_FI_DEV_GPU_UTIL")
	temp, power := c.metric("DCGM_FI_DEV_GPU_TEMP"), c.metric("DCGM_FI_DEV_POWER_USAGE")
	// the busy GPUs of the same model held by another pod of the namespace
	others := c.matchers(c.NamespaceLabel, s.Namespace) + "," + c.PodLabel + "!=" + promql.Quote(s.Pod) + "," + c.PodLabel + `!=""`
	busyOthers := fmt.Sprintf(" and on (%s, UUID) (avg_over_time(%s{%s}[%s]) >= %d) and on (modelName) group by (modelName) (%s{%s})",
		c.NodeLabel, util, strings.TrimPrefix(others, ","), w, busyUtil, sm, sel)
	per := func(fn, metric string) string {
		return fmt.Sprintf("%s(%s{%s}[%s])", fn, metric, strings.TrimPrefix(others, ","), w)
	}
	qs := []facts.Query{
		{Name: "clock", Expr: fmt.Sprintf("avg by (%s) (avg_over_time(%s{%s}[%s]))", by, sm, sel, w)},
		{Name: "clock_before", Expr: fmt.Sprintf("max by (%s) (quantile_over_time(0.9, %s{%s}[%s] offset %s))", by, sm, sel, recent, w)},
		{Name: "util", Expr: fmt.Sprintf("avg by (%s) (avg_over_time(%s{%s}[%s]))", by, util, sel, w)},
		{Name: "temp", Expr: fmt.Sprintf("max by (%s) (max_over_time(%s{%s}[%s]))", by, temp, sel, w)},
		{Name: "power", Expr: fmt.Sprintf("avg by (%s) (avg_over_time(%s{%s}[%s]))", by, power, sel, w)},
		{Name: "power_limit", Expr: fmt.Sprintf("max by (%s) (%s{%s})", by, c.metric("DCGM_FI_DEV_POWER_MGMT_LIMIT"), sel)},
		{Name: "violation", Expr: fmt.Sprintf("sum by (%s) (rate({__name__=~%s,%s}[%s])) / 1e9", by,
			promql.Quote(c.MetricPrefix+"DCGM_FI_DEV_(POWER|THERMAL)_VIOLATION"), sel, w)},
		{Name: "siblings_clock", Expr: "avg(" + per("avg_over_time", sm) + busyOthers + ")"},
		{Name: "siblings_temp", Expr: "max(" + per("max_over_time", temp) + busyOthers + ")"},
		{Name: "siblings_power", Expr: "avg(" + per("avg_over_time", power) + busyOthers + ")"},
	}
	return append(qs, c.faultQueries(sel)...)
}

// faultQueries are the faults of the GPUs sel selects, as VLLMGPUFault reads them
// (deploy/prometheus/vllm-alerts.rules.yml.tmpl), and the GPUs themselves (gpus: every GPU that
// reported within gpu.recent, lost ones included).
func (c *Config) faultQueries(sel string) []facts.Query {
	recent := model.Duration(c.Recent).String()
	by, node := c.by(), c.NodeLabel
	sm, xid := c.metric("DCGM_FI_DEV_SM_CLOCK"), c.metric("DCGM_FI_DEV_XID_ERRORS")
	xids := make([]string, len(c.XIDs))
	for i, x := range c.XIDs {
		xids[i] = strconv.Itoa(x)
	}
	set := promql.Quote(strings.Join(xids, "|"))
	inc := func(metric string) string {
		return fmt.Sprintf("max by (%s) (increase(%s{%s}[%s])) > 0", by, c.metric(metric), sel, recent)
	}
	crc := func(metric string) string {
		return fmt.Sprintf("max by (%s) (rate(%s{%s}[%s])) >= %d", by, c.metric(metric), sel, "5m", nvlinkCRCRate)
	}
	return []facts.Query{
		{Name: "gpus", Expr: fmt.Sprintf("max by (%s) (last_over_time(%s{%s}[%s]))", by, sm, sel, recent)},
		// A GPU that reported within gpu.recent and reports no more while its node's others do.
		{Name: "lost", Expr: fmt.Sprintf("max by (%s) (last_over_time(%s{%s,%s!=\"\"}[%s])) unless on (%s, UUID) %s and on (%s) count by (%s) (%s)",
			by, sm, sel, node, recent, node, sm, node, node, sm)},
		// An XID series is new when it has fewer samples within gpu.recent than the same GPU's
		// clock (scraped together), counted without the pod labels (an old XID shows on the next
		// pod scheduled onto the GPU).
		{Name: "xid", Expr: fmt.Sprintf("max by (%s, err_code) (%s{err_code=~%s,%s}) and on (%s, UUID, err_code) (sum by (%s, UUID, err_code) (count_over_time(%s[%s])) < on (%s, UUID) group_left sum by (%s, UUID) (count_over_time(%s[%s])))",
			by, xid, set, sel, node, node, xid, recent, node, node, sm, recent)},
		// dcgm-exporter's own XID count (off by default) sees repeats.
		{Name: "xid_count", Expr: fmt.Sprintf("max by (%s, xid) (max_over_time(%s{xid=~%s,%s}[%s])) > 0", by, c.metric("DCGM_EXP_XID_ERRORS_COUNT"), set, sel, recent)},
		{Name: "row_remap_failure", Expr: fmt.Sprintf("max by (%s) (%s{%s}) > 0", by, c.metric("DCGM_FI_DEV_ROW_REMAP_FAILURE"), sel)},
		{Name: "remapped_rows", Expr: inc("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS")},
		{Name: "nvlink", Expr: inc("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL") + " or " + inc("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL") +
			" or " + crc("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL") + " or " + crc("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL")},
	}
}

// record keeps the queries sent and the failures.
func (r *Report) record(qs []facts.Query, a facts.Answer) {
	for _, q := range qs {
		r.Queries[q.Name] = q.Expr
		if p, ok := a.Problems[q.Name]; ok {
			r.Problems = append(r.Problems, q.Name+": "+p)
		}
	}
}

// read takes the GPUs and their faults from a (and, withReadings, their readings over the
// window and the siblings'); false when a names no GPU.
func (r *Report) read(c *Config, a facts.Answer, withReadings bool) bool {
	byKey := map[string]*GPU{}
	gpuOf := func(m model.Metric) *GPU {
		g := &GPU{Node: string(m[model.LabelName(c.NodeLabel)]), Index: string(m["gpu"]), UUID: string(m["UUID"]), Model: string(m["modelName"])}
		if old, ok := byKey[g.key()]; ok {
			return old
		}
		byKey[g.key()] = g
		r.GPUs = append(r.GPUs, g)
		return g
	}
	for _, s := range a.Vectors["gpus"] {
		gpuOf(s.Metric)
	}
	for _, s := range a.Vectors["lost"] {
		gpuOf(s.Metric).Lost = true
	}
	if len(r.GPUs) == 0 {
		return false
	}
	slices.SortStableFunc(r.GPUs, func(x, y *GPU) int {
		if x.Node != y.Node {
			return strings.Compare(x.Node, y.Node)
		}
		xi, _ := strconv.Atoi(x.Index)
		yi, _ := strconv.Atoi(y.Index)
		return xi - yi
	})
	add := func(kind string, v model.Vector, xidLabel string) {
		for _, s := range v {
			f := Fault{Kind: kind, GPU: gpuOf(s.Metric)}
			if xidLabel != "" {
				f.XID, _ = strconv.Atoi(string(s.Metric[model.LabelName(xidLabel)]))
				if slices.ContainsFunc(r.Faults, func(o Fault) bool { return o.Kind == kind && o.GPU == f.GPU && o.XID == f.XID }) {
					continue
				}
			}
			r.Faults = append(r.Faults, f)
		}
	}
	for _, g := range r.GPUs {
		if g.Lost {
			r.Faults = append(r.Faults, Fault{Kind: "gpu-lost", GPU: g})
		}
	}
	add("xid", a.Vectors["xid"], "err_code")
	add("xid", a.Vectors["xid_count"], "xid")
	add("row-remap-failure", a.Vectors["row_remap_failure"], "")
	add("remapped-rows", a.Vectors["remapped_rows"], "")
	add("nvlink-errors", a.Vectors["nvlink"], "")
	if !withReadings {
		return true
	}
	for name, set := range map[string]func(g *GPU, v *float64){
		"clock": func(g *GPU, v *float64) { g.Clock = v }, "clock_before": func(g *GPU, v *float64) { g.Before = v },
		"util": func(g *GPU, v *float64) { g.Util = v }, "temp": func(g *GPU, v *float64) { g.Temp = v },
		"power": func(g *GPU, v *float64) { g.Power = v }, "power_limit": func(g *GPU, v *float64) { g.PowerLimit = v },
		"violation": func(g *GPU, v *float64) { g.Violation = v },
	} {
		for _, s := range a.Vectors[name] {
			if g, ok := byKey[gpuOf(s.Metric).key()]; ok {
				set(g, value(s))
			}
		}
	}
	r.SiblingsClock, r.SiblingsTemp, r.SiblingsPower = one(a.Vectors["siblings_clock"]), one(a.Vectors["siblings_temp"]), one(a.Vectors["siblings_power"])
	// The throttled candidate: the busy GPU whose clock is lowest against its reference (its
	// siblings', else its own recent past).
	worst := math.Inf(1)
	for _, g := range r.GPUs {
		if g.Clock == nil || g.Util == nil || *g.Util < busyUtil {
			continue
		}
		ref := r.SiblingsClock
		if ref == nil {
			ref = g.Before
		}
		ratio := *g.Clock
		if ref != nil && *ref > 0 {
			ratio = *g.Clock / *ref
		}
		if ratio < worst {
			worst, r.Throttled = ratio, g
		}
	}
	return true
}

func value(s *model.Sample) *float64 {
	v := float64(s.Value)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func one(v model.Vector) *float64 {
	if len(v) == 0 {
		return nil
	}
	return value(v[0])
}
