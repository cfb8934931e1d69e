package gpu

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/facts"
)

// table is the GPU facts, in the runbooks' order. Clocks are MHz, temperatures °C, power W, as
// dcgm-exporter writes them.
var table = []facts.Fact{
	{Name: "gpu_count", Title: "GPUs of the pod (dcgm-exporter)", Unit: "count", Shown: true, Query: "gpus",
		Doc: "the GPUs dcgm-exporter's series join to the pod: those whose pod labels (gpu.pod_label, gpu.namespace_label) name it, or where none does, every GPU of its node (kube_pod_info's node); each that reported within gpu.recent, a lost one included"},
	{Name: "gpu_join", Title: "How the GPUs were joined to the pod", Label: true, Query: "gpus",
		Doc: "`pod labels` or `node` (then the node's GPUs, which the pod may not all hold)"},
	{Name: "gpu_rows", Title: "GPU rows (dcgm-exporter)", Label: true, Shown: true, Query: "clock",
		Doc: "one line per GPU: its index, UUID and node, its mean SM clock over the window (and over gpu.recent before it), utilisation, hottest temperature, mean power; a lost GPU says so"},
	{Name: "gpu_faults", Title: "GPU faults", Unit: "count", Query: "xid",
		Doc: "faults found on those GPUs (0 when none): a GPU lost within gpu.recent (it stopped reporting while its node's others report), a new XID of gpu.xids within gpu.recent (a series that appeared: the gauge keeps the last XID for ever, so an old one never counts), DCGM_EXP_XID_ERRORS_COUNT of those XIDs where enabled, DCGM_FI_DEV_ROW_REMAP_FAILURE 1 (however old), DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS risen within gpu.recent, NVLink replay or recovery errors risen or CRC errors at 100/s (where enabled)"},
	{Name: "gpu_fault_kind", Title: "GPU fault", Label: true, Shown: true, Query: "xid",
		Doc: "the first fault's kind, as VLLMGPUFault's `fault` label: gpu-lost, xid, row-remap-failure, remapped-rows, nvlink-errors"},
	{Name: "gpu_fault_gpu", Title: "GPU of the fault", Label: true, Shown: true, Query: "xid",
		Doc: "that GPU: `GPU <index> (<UUID>) on node <node>`"},
	{Name: "gpu_fault_node", Title: "Node of the fault", Label: true, Query: "xid", Doc: "that GPU's node"},
	{Name: "gpu_xid", Title: "XID", Query: "xid", Doc: "the XID of an xid fault"},
	{Name: "gpu_fault_detail", Title: "GPU fault, said", Label: true, Query: "xid",
		Doc: "the fault in words, with what it means for the node (the XID's meaning from NVIDIA's catalog as docs/gpu-facts.md gives it), and how many more faults there are"},
	{Name: "gpu_fault_seen", Title: "Times the fault was seen on the pod's GPUs (24h)", Unit: "count", Query: "repeat_seen",
		Doc: "how many times the first fault, an XID or a lost GPU, was seen on the pod's GPUs of that node within 24 h: its XID series appearing again (the gauge hides the same XID again: it shows only after another XID or an exporter restart in between), DCGM_EXP_XID_ERRORS_COUNT's rises where enabled, the GPU's series disappearing again; unknown for the other kinds"},
	{Name: "gpu_fault_since", Title: "First seen", Label: true, Query: "repeat_first",
		Doc: "when it was first seen within those 24 h (UTC; to the 15 s step the occurrences are counted at)"},
	{Name: "gpu_node_cordoned", Title: "Node of the fault cordoned", Query: "node_cordoned",
		Doc: "1 when the fault's node is cordoned (kube_node_spec_unschedulable) or quarantined by NVSentinel (fault_quarantine_current_quarantined_nodes), 0 when neither; unknown without kube-state-metrics"},
	{Name: "gpu_node_conditions", Title: "GPU health conditions of that node", Label: true, Shown: true, Query: "node_conditions",
		Doc: "the node's GPU health conditions that say it is unhealthy, comma-separated: NVSentinel's checks True (SysLogsXIDError, SysLogsGPUFallenOff, Gpu*Watch...), the EKS node agent's AcceleratedHardwareReady=False"},
	{Name: "gpu_cordoned_node", Title: "Cordoned node the workload's pods left", Label: true, Shown: true, Query: "cordoned_left",
		Doc: "a node cordoned now (kube_node_spec_unschedulable 1) that pods of the pod's controller (kube_pod_info's created_by_name) ran on within gpu.recent and run on no more; of several, the one most left"},
	{Name: "gpu_cordoned_pods", Title: "Pods that left it", Unit: "count", Query: "cordoned_left", Doc: "how many pods of the controller left that node within gpu.recent (0 when no cordoned node lost any; unknown without kube-state-metrics)"},
	{Name: "gpu_cordoned_cause", Title: "Why it was cordoned", Label: true, Shown: true, Query: "cordoned_xid",
		Doc: "what the node's GPUs last reported, `XID 79` (the drain-or-reset XIDs of gpu.xids on the gauge, which keeps the last one), else `its GPU health condition SysLogsGPUFallenOff` (NVSentinel's, the EKS node agent's); \"\" when neither says"},
	{Name: "gpu_throttled_gpu", Title: "GPU compared for throttling", Label: true, Query: "clock",
		Doc: "the busy GPU of the pod (utilisation at least 50% over the window) whose SM clock is lowest against its reference: the siblings' clock, else its own recent past"},
	{Name: "gpu_clock", Title: "SM clock (MHz, mean over the window)", Query: "clock", Doc: "that GPU's DCGM_FI_DEV_SM_CLOCK, mean over the window"},
	{Name: "gpu_clock_before", Title: "SM clock before the window (MHz, 90th percentile)", Query: "clock_before", Doc: "its 90th percentile over gpu.recent before the window, while it served this pod"},
	{Name: "gpu_clock_siblings", Title: "Siblings' SM clock (MHz, mean)", Query: "siblings_clock",
		Doc: "the mean SM clock of the busy GPUs (utilisation at least 50%) of the same modelName held by the namespace's other pods"},
	{Name: "gpu_util", Title: "GPU utilisation (%, mean over the window)", Query: "util", Doc: "that GPU's DCGM_FI_DEV_GPU_UTIL, mean over the window"},
	{Name: "gpu_temp", Title: "GPU temperature (C, hottest in the window)", Query: "temp", Doc: "that GPU's DCGM_FI_DEV_GPU_TEMP, highest in the window"},
	{Name: "gpu_temp_siblings", Title: "Siblings' GPU temperature (C, hottest)", Query: "siblings_temp", Doc: "the hottest of the siblings' (as gpu_clock_siblings)"},
	{Name: "gpu_power", Title: "Power draw (W, mean over the window)", Query: "power", Doc: "that GPU's DCGM_FI_DEV_POWER_USAGE, mean over the window"},
	{Name: "gpu_power_siblings", Title: "Siblings' power draw (W, mean)", Query: "siblings_power", Doc: "the siblings' mean power draw"},
	{Name: "gpu_power_limit", Title: "Power limit (W)", Query: "power_limit", Doc: "DCGM_FI_DEV_POWER_MGMT_LIMIT, in no shipped CSV: unknown unless the site enabled it"},
	{Name: "gpu_violation", Title: "Throttled for power or heat (share of the window)", Query: "violation",
		Doc: "the rate of DCGM_FI_DEV_POWER_VIOLATION plus DCGM_FI_DEV_THERMAL_VIOLATION (ns throttled per s) / 1e9: off by default, unknown without them"},
}

// Names lists the GPU facts.
func Names() []facts.Fact {
	out := make([]facts.Fact, len(table))
	for i, f := range table {
		f.Source = SourceName
		out[i] = f
	}
	return out
}

// Facts are the report's facts (none when no GPU was found).
func (r *Report) Facts() *facts.Facts {
	f := facts.New(SourceName)
	if r == nil {
		return f
	}
	if _, read := r.Queries["cordoned_left"]; read && len(r.Problems) == 0 {
		n := float64(r.CordonedPods)
		f.SetNumber("gpu_cordoned_pods", &n)
		f.SetLabel("gpu_cordoned_node", r.CordonedNode)
		f.SetLabel("gpu_cordoned_cause", r.CordonedCause)
	}
	if len(r.GPUs) == 0 {
		return f
	}
	n := float64(len(r.GPUs))
	f.SetNumber("gpu_count", &n)
	f.SetLabel("gpu_join", r.By)
	f.SetLabel("gpu_rows", r.rows())
	nf := float64(len(r.Faults))
	f.SetNumber("gpu_faults", &nf)
	if len(r.Faults) > 0 {
		first := r.Faults[0]
		f.SetLabel("gpu_fault_kind", first.Kind)
		f.SetLabel("gpu_fault_gpu", first.GPU.Name())
		f.SetLabel("gpu_fault_node", first.GPU.Node)
		if first.XID > 0 {
			x := float64(first.XID)
			f.SetNumber("gpu_xid", &x)
		}
		d := first.Said(model.Duration(r.recent).String())
		if more := len(r.Faults) - 1; more > 0 {
			d += fmt.Sprintf(" (and %d more: %s)", more, r.others())
		}
		f.SetLabel("gpu_fault_detail", d)
		if r.Seen > 0 {
			n := float64(r.Seen)
			f.SetNumber("gpu_fault_seen", &n)
			f.SetLabel("gpu_fault_since", r.since())
		}
		f.SetNumber("gpu_node_cordoned", r.Cordoned)
		f.SetLabel("gpu_node_conditions", strings.Join(r.Conditions, ", "))
	}
	if g := r.Throttled; g != nil {
		f.SetLabel("gpu_throttled_gpu", g.Name())
		f.SetNumber("gpu_clock", g.Clock)
		f.SetNumber("gpu_clock_before", g.Before)
		f.SetNumber("gpu_util", g.Util)
		f.SetNumber("gpu_temp", g.Temp)
		f.SetNumber("gpu_power", g.Power)
		f.SetNumber("gpu_power_limit", g.PowerLimit)
		f.SetNumber("gpu_violation", g.Violation)
		f.SetNumber("gpu_clock_siblings", r.SiblingsClock)
		f.SetNumber("gpu_temp_siblings", r.SiblingsTemp)
		f.SetNumber("gpu_power_siblings", r.SiblingsPower)
	}
	return f
}

// Said is the fault in words.
func (x Fault) Said(recent string) string {
	on := x.GPU.Name()
	switch x.Kind {
	case "gpu-lost":
		return on + " stopped reporting in the last " + recent + " while the node's other GPUs still report: it fell off the bus (XID 79 may never reach the exporter: DCGM blanks a lost GPU's series)"
	case "xid":
		return on + " reported XID " + strconv.Itoa(x.XID) + " in the last " + recent + ": " + XIDMeaning(x.XID)
	case "row-remap-failure":
		return on + " failed to remap a memory row (DCGM_FI_DEV_ROW_REMAP_FAILURE 1, standing until the GPU is serviced): it cannot repair its memory any more"
	case "remapped-rows":
		return on + " remapped rows after uncorrectable memory errors in the last " + recent + ": the repair applies at the next GPU reset"
	}
	return on + " counts NVLink errors in the last " + recent + " (replay or recovery errors, or CRC errors at 100/s or more): collectives over that link fail or hang"
}

// since is when the first fault was first seen: "15:04 UTC", with the date when not the
// diagnosis' day.
func (r *Report) since() string {
	if r.Since.IsZero() {
		return ""
	}
	if at := r.at.UTC(); r.Since.Year() == at.Year() && r.Since.YearDay() == at.YearDay() {
		return r.Since.Format("15:04 UTC")
	}
	return r.Since.Format("Jan 2 15:04 UTC")
}

// others names the faults after the first, briefly.
func (r *Report) others() string {
	var parts []string
	for _, x := range r.Faults[1:] {
		s := x.Kind
		if x.XID > 0 {
			s = "XID " + strconv.Itoa(x.XID)
		}
		parts = append(parts, s+" on GPU "+x.GPU.Index)
	}
	return strings.Join(parts, ", ")
}

// rows are the GPU rows of the evidence, one per GPU, "; "-separated.
func (r *Report) rows() string {
	var rows []string
	for _, g := range r.GPUs {
		if g.Lost {
			rows = append(rows, g.Name()+": lost (no series now)")
			continue
		}
		var parts []string
		if g.Clock != nil {
			s := "SM " + num(g.Clock) + " MHz"
			if g.Before != nil {
				s += " (" + num(g.Before) + " before)"
			}
			parts = append(parts, s)
		}
		if g.Util != nil {
			parts = append(parts, "util "+num(g.Util)+"%")
		}
		if g.Temp != nil {
			parts = append(parts, num(g.Temp)+" C")
		}
		if g.Power != nil {
			parts = append(parts, num(g.Power)+" W")
		}
		if len(parts) == 0 {
			rows = append(rows, g.Name())
			continue
		}
		rows = append(rows, g.Name()+": "+strings.Join(parts, ", "))
	}
	return strings.Join(rows, "; ")
}

func num(v *float64) string { return strconv.FormatFloat(*v, 'f', 0, 64) }

// Notes say that no dcgm-exporter series joins the pod (one line: the GPU verdicts were not
// judged), and which queries failed.
func (r *Report) Notes() []string {
	var notes []string
	if len(r.Problems) > 0 {
		notes = append(notes, "dcgm-exporter queries failed: "+strings.Join(r.Problems, "; "))
	} else if len(r.GPUs) == 0 {
		notes = append(notes, "GPU: no dcgm-exporter series for pod "+strings.TrimPrefix(r.Namespace+"/"+r.Pod, "/")+" (by its pod labels or its node): GPU faults and throttling not judged")
	}
	return notes
}
