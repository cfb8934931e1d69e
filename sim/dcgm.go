package sim

import (
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// A stand-in for NVIDIA's dcgm-exporter on one GPU node, as docs/gpu-facts.md describes it from
// the exporter's source (4.5.3-4.8.2 and main): the default CSV's families in DCGM field-id
// order, written by a text template (not client_golang): no _total on counters, int64 fields
// with %d, doubles with %f, labels in the template's order, the pod that holds a GPU as
// pod/namespace/container labels in the payload (none on a GPU no pod holds), a GPU that fell
// off the bus absent altogether, HTTP 500 for the whole scrape on a collector error. It is served
// on a listener of its own, as the exporter is another pod: another scrape target whose own
// pod/namespace labels collide with the payload's.
//
// The node's GPUs 0..TP-1 are held by one simulated vLLM pod (an Engine); the rest are idle
// and held by no pod. What they report follows the engine (busy, idle, hung, down) and the
// scenario's GPUFault (gpu.go). Nothing here is measured: the clock, temperature and power
// numbers are an H100's published ballpark, for shape, not calibration.

// DCGMFlavor is the dcgm-exporter release and deployer whose exposition the stand-in writes.
type DCGMFlavor struct {
	Name string
	// HostnameLabel names the node label: Hostname up to 4.8.x, hostname on main (PR #655).
	HostnameLabel string
	// PCIBusID: the pci_bus_id label (since 3.3.7-3.5.0).
	PCIBusID bool
	// XIDAttributes: err_code and err_msg on DCGM_FI_DEV_XID_ERRORS (since 3.3.6-3.4.2).
	XIDAttributes bool
	// XIDBeforeFirst: a 0 series ("No Error") before a GPU's first XID (up to 4.7, per the
	// reporter of dcgm-exporter #700); 4.5.3-4.8.2 writes none.
	XIDBeforeFirst bool
	// ImageCSV: the image's CSV (the GPU Operator's), with DCGM_FI_DEV_FB_RESERVED and the
	// DCGM_FI_DRIVER_VERSION label; the Helm chart's own CSV has neither.
	ImageCSV bool
}

// DCGMFlavors are the flavors the stand-in writes. The default is "4.8-gpu-operator".
var DCGMFlavors = map[string]DCGMFlavor{
	"4.8-gpu-operator": {Name: "4.8-gpu-operator", HostnameLabel: "Hostname", PCIBusID: true, XIDAttributes: true, ImageCSV: true},
	"4.8-helm":         {Name: "4.8-helm", HostnameLabel: "Hostname", PCIBusID: true, XIDAttributes: true},
	"4.7-gpu-operator": {Name: "4.7-gpu-operator", HostnameLabel: "Hostname", PCIBusID: true, XIDAttributes: true, XIDBeforeFirst: true, ImageCSV: true},
	"main":             {Name: "main", HostnameLabel: "hostname", PCIBusID: true, XIDAttributes: true, ImageCSV: true},
	"3.4":              {Name: "3.4", HostnameLabel: "Hostname", XIDBeforeFirst: true, ImageCSV: true},
}

// DefaultDCGMFlavor is the newest release read: 4.5.3-4.8.2 with the GPU Operator's CSV.
const DefaultDCGMFlavor = "4.8-gpu-operator"

// DCGMOptions configures a stand-in exporter.
type DCGMOptions struct {
	Flavor DCGMFlavor
	// Node is the node's name (the Hostname label; NODE_NAME in both deployers).
	Node string
	// GPUs on the node (at least the pod's tensor-parallel size).
	GPUs int
	// Namespace and Container of the vLLM pod, as kubelet's pod-resources report them.
	Namespace, Container string
	// Optional enables fields dcgm-exporter's CSV ships commented out: the NVLink error
	// counters and DCGM_EXP_XID_ERRORS_COUNT (window 300000 ms).
	Optional bool
}

func (o *DCGMOptions) defaults() {
	if o.Flavor.Name == "" {
		o.Flavor = DCGMFlavors[DefaultDCGMFlavor]
	}
	if o.Node == "" {
		o.Node = "gpu-node-0"
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.Container == "" {
		o.Container = "vllm"
	}
}

// The simulated GPU: an H100 SXM (its published clocks; temperatures and power for shape only).
const (
	gpuModel        = "NVIDIA H100 80GB HBM3"
	gpuDriver       = "570.133.20"
	smClockMax      = 1980 // MHz, boost
	smClockIdle     = 345  // MHz, GPU_IDLE
	memClock        = 2619 // MHz, HBM3
	fbTotalMiB      = 81559
	fbReservedMiB   = 487
	fbVLLMMiB       = 73842 // --gpu-memory-utilization 0.9 of the rest, held while the server runs
	xidCountWindow  = 5 * time.Minute
	pcieBytesPerSec = 104773
)

// dcgmGPU is one GPU's state across scrapes.
type dcgmGPU struct {
	index     int
	uuid, bus string
	xid       int         // the last XID (0: none yet)
	xids      []xidSample // XIDs in DCGM_EXP_XID_ERRORS_COUNT's window
	lost      bool
	remapFail bool
	uncorrect int // uncorrectable remapped rows
	energyMJ  float64
	nvlinkB   float64
}

type xidSample struct {
	at  time.Time
	xid int
}

// DCGMExporter is the stand-in exporter of one node.
type DCGMExporter struct {
	opts DCGMOptions
	pod  *Engine

	mu       sync.Mutex
	gpus     []*dcgmGPU
	last     time.Time // the previous scrape
	faultAt  time.Time // the scenario switch whose fault applied (or is pending)
	occurred int       // how many times that fault happened (GPUFault.Every: more than once)
	failWith error
}

// NewDCGMExporter is the exporter of a node whose first GPUs the pod holds (nil: none). An
// XID the pod's scenario has as stale is in DCGM's cache from the start.
func NewDCGMExporter(pod *Engine, opts DCGMOptions, now time.Time) (*DCGMExporter, error) {
	opts.defaults()
	tp := 0
	var v gpuView
	if pod != nil {
		v = pod.gpuView()
		tp = v.tp
	}
	if opts.GPUs < max(tp, 1) {
		return nil, fmt.Errorf("dcgm-exporter stand-in: %d GPUs on node %s, but the pod holds %d", opts.GPUs, opts.Node, tp)
	}
	x := &DCGMExporter{opts: opts, pod: pod, last: now}
	x.boot(now)
	if pod != nil {
		x.faultAt = v.faultAt
		if s := v.fault.StaleXID; s > 0 {
			x.gpus[v.fault.rank(tp)].xid = s
		}
	}
	return x, nil
}

// boot is a fresh hostengine on a freshly booted node: no XID, no GPU lost.
func (x *DCGMExporter) boot(now time.Time) {
	x.gpus = make([]*dcgmGPU, x.opts.GPUs)
	for i := range x.gpus {
		h := fnv.New64a()
		fmt.Fprintf(h, "%s/%d", x.opts.Node, i)
		s := h.Sum64()
		x.gpus[i] = &dcgmGPU{
			index: i,
			uuid: fmt.Sprintf("GPU-%08x-%04x-4%03x-%04x-%012x", uint32(s>>32), uint16(s>>16), uint16(s)&0xfff,
				0x8000|uint16(s>>20)&0x3fff, s&0xffffffffffff),
			bus:      fmt.Sprintf("00000000:%02X:00.0", 0x18+0x10*i),
			energyMJ: float64(4e11 + s%1e11), // since boot, in mJ
		}
	}
	x.last, x.occurred = now, 0
}

// SetCollectorError makes every scrape fail with HTTP 500 (err != nil), as a collector error
// does in dcgm-exporter's server.go, or succeed again (nil).
func (x *DCGMExporter) SetCollectorError(err error) {
	x.mu.Lock()
	x.failWith = err
	x.mu.Unlock()
}

// ServeHTTP answers a scrape as dcgm-exporter's Metrics handler does.
func (x *DCGMExporter) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	body, err := x.Exposition(time.Now())
	if err != nil {
		http.Error(w, "internal server error", http.StatusInternalServerError)
		return
	}
	_, _ = w.Write([]byte(body)) // Content-Type sniffed by net/http: text/plain; charset=utf-8
}

// Exposition is the node's scrape at now.
func (x *DCGMExporter) Exposition(now time.Time) (string, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.failWith != nil {
		return "", x.failWith
	}
	var v gpuView
	if x.pod != nil {
		v = x.pod.gpuView()
		x.follow(v, now)
	}
	dt := now.Sub(x.last).Seconds()
	x.last = now
	var gs []gpuReading
	for _, g := range x.gpus {
		if g.lost {
			continue // DCGM blanks a lost GPU: no series at all
		}
		r := x.read(g, v, now)
		g.energyMJ += r.power * 1000 * max(dt, 0)
		if r.nvlinkRate > 0 {
			g.nvlinkB += r.nvlinkRate * max(dt, 0)
		}
		r.energyMJ, r.nvlinkB = g.energyMJ, g.nvlinkB
		gs = append(gs, r)
	}
	return x.render(gs, now), nil
}

// follow applies the pod's scenario to the GPUs: a switch away from a scenario that lost a GPU
// is the node's reboot (a fresh hostengine: XIDs gone); a fault is recorded each time it happens.
func (x *DCGMExporter) follow(v gpuView, now time.Time) {
	if !v.faultAt.Equal(x.faultAt) {
		for _, g := range x.gpus {
			if g.lost {
				x.boot(now)
				break
			}
		}
		x.faultAt, x.occurred = v.faultAt, 0
	}
	f := v.fault
	if f == (GPUFault{StaleXID: f.StaleXID, Rank: f.Rank}) || !f.active(v.faultAt, now) {
		return
	}
	n := 1
	if f.Every > 0 {
		n += int(now.Sub(v.faultAt.Add(f.At)) / f.Every)
	}
	g := x.gpus[f.rank(v.tp)]
	for ; x.occurred < n; x.occurred++ {
		at := v.faultAt.Add(f.At + time.Duration(x.occurred)*f.Every)
		if f.XID > 0 {
			g.xid = f.XID
			g.xids = append(g.xids, xidSample{at: at, xid: f.XID})
		}
		g.lost = g.lost || f.Lost
		g.remapFail = g.remapFail || f.RowRemapFailure
		g.uncorrect += f.RemappedRows
	}
}

// gpuReading is what one GPU reports at a scrape.
type gpuReading struct {
	g                          *dcgmGPU
	held                       bool
	smClock, gpuTemp, memTemp  int
	power                      float64
	util, memUtil              int
	fbUsed                     int
	grActive, tensor, dram     float64
	pcie                       int
	nvlinkRate                 float64 // bytes/s
	energyMJ, nvlinkB          float64
	xidWindow                  map[int]int
	xidBeforeFirst, xidVisible bool
}

func (x *DCGMExporter) read(g *dcgmGPU, v gpuView, now time.Time) gpuReading {
	r := gpuReading{g: g, held: x.pod != nil && g.index < v.tp, smClock: smClockIdle, gpuTemp: 33, memTemp: 31, power: 71.204}
	r.fbUsed = 0
	if !r.held {
		return x.window(r, now)
	}
	if !v.down {
		r.fbUsed = fbVLLMMiB
	}
	// A busy engine runs kernels nearly all the time; a hung one's surviving ranks spin in the
	// collective (reported at ~100% utilization, vLLM #8087, #14449: at startup hangs).
	spinning := v.hung && !v.down
	if v.busy || spinning {
		r.smClock, r.gpuTemp, r.memTemp, r.power = smClockMax, 61, 68, 612.345
		r.util, r.memUtil = 97, 41
		r.grActive, r.tensor, r.dram, r.pcie = 0.912437, 0.318660, 0.702215, pcieBytesPerSec
		if spinning {
			r.util, r.memUtil, r.power, r.tensor, r.dram = 100, 0, 389.117, 0, 0.001253
		}
		if v.tp > 1 && !spinning {
			r.nvlinkRate = 18e9 // the all-reduces of a TP group
		}
	}
	f := v.fault
	if f.ThrottleClock > 0 && f.ThrottleClock < 1 && g.index == f.rank(v.tp) && f.active(v.faultAt, now) {
		// At its thermal limit: hot whether busy or not, the clock held down under load (an idle
		// GPU's clock is down anyway, GPU_IDLE).
		r.gpuTemp, r.memTemp = 87, 84
		if r.smClock == smClockMax {
			r.smClock = int(math.Round(smClockMax * f.ThrottleClock))
			r.power = 548.906
			r.grActive = 0.957302
		}
	}
	return x.window(r, now)
}

// window fills the XID family's view of a reading.
func (x *DCGMExporter) window(r gpuReading, now time.Time) gpuReading {
	g := r.g
	kept := g.xids[:0]
	for _, s := range g.xids {
		if now.Sub(s.at) < xidCountWindow {
			kept = append(kept, s)
		}
	}
	g.xids = kept
	r.xidWindow = map[int]int{}
	for _, s := range g.xids {
		r.xidWindow[s.xid]++
	}
	r.xidVisible = g.xid > 0
	r.xidBeforeFirst = g.xid == 0 && x.opts.Flavor.XIDBeforeFirst
	return r
}

// dcgmField is one family of the CSV: DCGM field id (the family order), name, type, HELP, and
// whether DCGM types it as a double (written %f).
type dcgmField struct {
	id     int
	name   string
	typ    string
	help   string
	double bool
	value  func(r gpuReading) float64
}

// dcgmDefaultFields are etc/default-counters.csv's enabled fields (4.5.3-4.8.2), HELP as in
// the CSV, field ids as in DCGM 4.6's dcgm_fields.h.
var dcgmDefaultFields = []dcgmField{
	{100, "DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", false, func(r gpuReading) float64 { return float64(r.smClock) }},
	{101, "DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", false, func(gpuReading) float64 { return memClock }},
	{140, "DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", false, func(r gpuReading) float64 { return float64(r.memTemp) }},
	{150, "DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", false, func(r gpuReading) float64 { return float64(r.gpuTemp) }},
	{155, "DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", true, func(r gpuReading) float64 { return r.power }},
	{156, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).", false, func(r gpuReading) float64 { return math.Floor(r.energyMJ) }},
	{202, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.", false, func(gpuReading) float64 { return 0 }},
	{203, "DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", false, func(r gpuReading) float64 { return float64(r.util) }},
	{204, "DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", false, func(r gpuReading) float64 { return float64(r.memUtil) }},
	{206, "DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).", false, func(gpuReading) float64 { return 0 }},
	{207, "DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).", false, func(gpuReading) float64 { return 0 }},
	{230, "DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", false, func(r gpuReading) float64 { return float64(r.g.xid) }},
	{251, "DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", false, func(r gpuReading) float64 { return float64(fbTotalMiB - fbReservedMiB - r.fbUsed) }},
	{252, "DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", false, func(r gpuReading) float64 { return float64(r.fbUsed) }},
	{253, "DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB).", false, func(gpuReading) float64 { return fbReservedMiB }},
	{393, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors", false, func(r gpuReading) float64 { return float64(r.g.uncorrect) }},
	{394, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors", false, func(gpuReading) float64 { return 0 }},
	{395, "DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed", false, func(r gpuReading) float64 { return b2f(r.g.remapFail) }},
	{449, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "Total number of NVLink bandwidth counters for all lanes.", false, func(r gpuReading) float64 { return math.Floor(r.nvlinkB) }},
	{526, "DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU License status", false, func(gpuReading) float64 { return 0 }},
	{1001, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active.", true, func(r gpuReading) float64 { return r.grActive }},
	{1004, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active.", true, func(r gpuReading) float64 { return r.tensor }},
	{1005, "DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "Ratio of cycles the device memory interface is active sending or receiving data.", true, func(r gpuReading) float64 { return r.dram }},
	{1009, "DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second.", false, func(r gpuReading) float64 { return float64(r.pcie) * 0.37 }},
	{1010, "DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second.", false, func(r gpuReading) float64 { return float64(r.pcie) }},
}

// dcgmOptionalFields are fields the CSV ships commented out, written with DCGMOptions.Optional
// (DCGM_EXP_XID_ERRORS_COUNT is rendered apart: a series per XID in its window).
var dcgmOptionalFields = []dcgmField{
	{409, "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink flow-control CRC errors.", false, func(gpuReading) float64 { return 0 }},
	{419, "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink data CRC errors.", false, func(gpuReading) float64 { return 0 }},
	{429, "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink retries.", false, func(gpuReading) float64 { return 0 }},
	{439, "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink recovery errors.", false, func(gpuReading) float64 { return 0 }},
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// xidMessages are the exporter's err_msg texts of the XIDs the scenarios use
// (internal/pkg/collector/xid_errors.go).
var xidMessages = map[int]string{
	0: "No Error", 13: "Graphics Engine Exception", 31: "GPU memory page fault", 48: "Double Bit ECC Error",
	63: "ECC page retirement or row remapping recording event", 64: "ECC page retirement or row remapper recording failure",
	74: "NVLINK Error", 79: "GPU has fallen off the bus", 94: "Contained ECC error", 95: "Uncontained ECC error",
	119: "GSP RPC Timeout", 120: "GSP Error",
}

func xidMessage(x int) string {
	if m, ok := xidMessages[x]; ok {
		return m
	}
	return "Unknown Error"
}

// render writes the families in field-id order, each GPU's series in index order.
func (x *DCGMExporter) render(gs []gpuReading, now time.Time) string {
	fields := append([]dcgmField(nil), dcgmDefaultFields...)
	if x.opts.Optional {
		fields = append(fields, dcgmOptionalFields...)
	}
	sort.SliceStable(fields, func(i, j int) bool { return fields[i].id < fields[j].id })
	var b strings.Builder
	for _, f := range fields {
		if f.name == "DCGM_FI_DEV_FB_RESERVED" && !x.opts.Flavor.ImageCSV {
			continue
		}
		var lines []string
		for _, r := range gs {
			attrs := x.attributes(r)
			if f.name == "DCGM_FI_DEV_XID_ERRORS" {
				if !r.xidVisible && !r.xidBeforeFirst {
					continue // 4.5.3-4.8.2: no series before a GPU's first XID
				}
				if x.opts.Flavor.XIDAttributes {
					attrs = mergeAttrs(attrs, [][2]string{{"err_code", fmt.Sprint(r.g.xid)}, {"err_msg", xidMessage(r.g.xid)}})
				}
			}
			lines = append(lines, x.series(f.name, r, nil, attrs, formatDCGM(f.value(r), f.double)))
		}
		if len(lines) == 0 {
			continue // a family without series is not written
		}
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name, f.typ)
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
	}
	if x.opts.Optional {
		x.renderXIDCount(&b, gs)
	}
	return b.String()
}

// renderXIDCount writes DCGM_EXP_XID_ERRORS_COUNT: per GPU one series per XID seen in the
// window (its count), or one 0 series without an xid label.
func (x *DCGMExporter) renderXIDCount(b *strings.Builder, gs []gpuReading) {
	const name = "DCGM_EXP_XID_ERRORS_COUNT"
	fmt.Fprintf(b, "# HELP %s reported XIDs during last window\n# TYPE %s counter\n", name, name)
	win := fmt.Sprint(xidCountWindow.Milliseconds())
	for _, r := range gs {
		attrs := x.attributes(r)
		if len(r.xidWindow) == 0 {
			b.WriteString(x.series(name, r, [][2]string{{"window_size_in_ms", win}}, attrs, "0") + "\n")
			continue
		}
		xids := make([]int, 0, len(r.xidWindow))
		for k := range r.xidWindow {
			xids = append(xids, k)
		}
		sort.Ints(xids)
		for _, k := range xids {
			b.WriteString(x.series(name, r, [][2]string{{"window_size_in_ms", win}, {"xid", fmt.Sprint(k)}}, attrs, fmt.Sprint(r.xidWindow[k])) + "\n")
		}
	}
}

// attributes are the pod's labels of a GPU it holds (sorted, as the template writes them).
func (x *DCGMExporter) attributes(r gpuReading) [][2]string {
	if !r.held {
		return nil
	}
	return [][2]string{{"container", x.opts.Container}, {"namespace", x.opts.Namespace}, {"pod", x.pod.PodName()}}
}

// mergeAttrs merges sorted attribute lists, keeping them sorted by name.
func mergeAttrs(a, b [][2]string) [][2]string {
	out := append(append([][2]string(nil), a...), b...)
	sort.SliceStable(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// series writes one line in the template's label order: gpu, UUID, pci_bus_id, device,
// modelName, the node, the label fields (sorted), the attributes (sorted).
func (x *DCGMExporter) series(name string, r gpuReading, fields, attrs [][2]string, value string) string {
	fl := x.opts.Flavor
	var b strings.Builder
	fmt.Fprintf(&b, `%s{gpu="%d",UUID="%s"`, name, r.g.index, r.g.uuid)
	if fl.PCIBusID {
		fmt.Fprintf(&b, `,pci_bus_id="%s"`, r.g.bus)
	}
	fmt.Fprintf(&b, `,device="nvidia%d",modelName="%s",%s="%s"`, r.g.index, gpuModel, fl.HostnameLabel, x.opts.Node)
	labels := fields
	if fl.ImageCSV {
		labels = mergeAttrs([][2]string{{"DCGM_FI_DRIVER_VERSION", gpuDriver}}, fields)
	}
	for _, l := range append(labels, attrs...) {
		fmt.Fprintf(&b, `,%s="%s"`, l[0], l[1])
	}
	b.WriteString("} " + value)
	return b.String()
}

// formatDCGM writes a value as the exporter's toString does: int64 fields with %d, doubles
// with %f.
func formatDCGM(v float64, double bool) string {
	if double {
		return fmt.Sprintf("%f", v)
	}
	return fmt.Sprintf("%d", int64(v))
}

// Node is the node the exporter runs on.
func (x *DCGMExporter) Node() string { return x.opts.Node }
