package sim

import "time"

// The hardware ring (issue 35): what happens to the GPUs under a pod, as vLLM's engine feels it
// (this file) and as dcgm-exporter reports it (dcgm.go). The facts both follow are in
// docs/gpu-facts.md; nothing there was measured on a GPU, so neither is this model.

// GPUFault is what happens to the GPUs a pod holds (ranks 0..TensorParallelSize-1, one GPU
// each), counted from the scenario switch. The zero value: healthy GPUs.
type GPUFault struct {
	// Rank is the tensor-parallel rank (the pod's GPU) the fault hits; a rank past the pod's
	// last hits its last.
	Rank int `json:"rank"`
	// At is when the fault happens after the switch.
	At time.Duration `json:"at"`
	// XID is the XID the driver reports on that GPU at At (0: none). dcgm-exporter's gauge
	// holds it from then on (the last XID, sticky until the exporter restarts).
	XID int `json:"xid,omitempty"`
	// Lost: the GPU falls off the bus at At. DCGM blanks a lost GPU, so its series vanish. The
	// engine feels it as vLLM does: with TP > 1 the other ranks wait in a collective for the lost
	// one, the engine core hangs until vLLM's RPC deadline (Config.ExecuteModelTimeout, vLLM's
	// VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS, 300 s), then dies; every restart fails in engine
	// init (the pod keeps its GPUs), so the server stays down until the scenario switches (the
	// node was rebooted). With TP = 1 nothing times out: the core hangs for good.
	Lost bool `json:"lost,omitempty"`
	// RowRemapFailure: at At the GPU fails to record a row remap (XID 64 with it): the
	// DCGM_FI_DEV_ROW_REMAP_FAILURE flag is 1 from then on. vLLM notices nothing.
	RowRemapFailure bool `json:"row_remap_failure,omitempty"`
	// RemappedRows: at At that many rows are remapped after uncorrectable errors
	// (DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS rises; XID 63 with it).
	RemappedRows int `json:"remapped_rows,omitempty"`
	// ThrottleClock in (0, 1): from At on, the GPU's SM clock is held at that share of its
	// maximum at its thermal limit (HW/SW thermal slowdown), and every engine step takes
	// 1/ThrottleClock as long: with tensor parallelism every rank waits for the slowest at each
	// all-reduce. The step-time scaling is an inference (docs/gpu-facts.md, Unconfirmed).
	ThrottleClock float64 `json:"throttle_clock,omitempty"`
	// Every > 0: the fault happens again every Every after At (its XID recorded again each
	// time), as a GPU that faults whenever the engine runs on it does. dcgm-exporter's gauge
	// does not change for the same XID again (docs/gpu-facts.md); DCGM_EXP_XID_ERRORS_COUNT
	// counts each.
	Every time.Duration `json:"every,omitempty"`
	// StaleXID is an XID DCGM's cache already held when the exporter started (an old fault on
	// that GPU, the hostengine not restarted since): it is on the gauge from the exporter's first
	// scrape. It counts only for the scenario a stand-in exporter starts with.
	StaleXID int `json:"stale_xid,omitempty"`
}

// active reports whether the fault has happened at now, for a scenario switched to at start.
func (g GPUFault) active(start, now time.Time) bool { return !now.Before(start.Add(g.At)) }

// rank is the fault's rank in a pod of tp GPUs.
func (g GPUFault) rank(tp int) int { return max(0, min(g.Rank, tp-1)) }

// gpuScenarios are the hardware ring's pod scenarios, on the healthy load.
func gpuScenarios() []Scenario {
	healthy := Scenarios["healthy"]
	lost := healthy
	lost.Name = "gpu-xid79"
	lost.Description = "healthy load; 20 s after the switch the GPU of rank 1 falls off the bus (XID 79): its dcgm-exporter series vanish, the engine core hangs in the collective (every vllm: series frozen) until vLLM's RPC deadline (--execute-model-timeout, 300 s), then the server dies and stays down (its restarts fail on the lost GPU) until the next switch (the node rebooted). Needs --tensor-parallel-size 2; with 1 the core hangs for good"
	lost.GPU = GPUFault{Rank: 1, At: 20 * time.Second, XID: 79, Lost: true}
	throttle := healthy
	throttle.Name = "gpu-throttle"
	throttle.Description = "healthy load; 30 s after the switch the GPU of rank 0 reaches its thermal limit: SM clock held at 64% (1267 of 1980 MHz), GPU at 87 C, and every engine step takes 1/0.64 as long: ITL and decode time up ~1.9x against the same load on a cool GPU (each step 1.56x, and the slower steps keep more requests in the batch)"
	throttle.GPU = GPUFault{Rank: 0, At: 30 * time.Second, ThrottleClock: 0.64}
	remap := healthy
	remap.Name = "gpu-row-remap-failure"
	remap.Description = "healthy load; 20 s after the switch the GPU of rank 0 fails to record a row remap (XID 64, DCGM_FI_DEV_ROW_REMAP_FAILURE 1): the memory can no longer be repaired; vLLM serves on"
	remap.GPU = GPUFault{Rank: 0, At: 20 * time.Second, XID: 64, RowRemapFailure: true}
	repeat := healthy
	repeat.Name = "gpu-xid-repeat"
	repeat.Description = "healthy load; 20 s after the switch the GPU of rank 0 reports XID 95 (an uncontained ECC error) and the server dies with it; it starts again 10 s later on the same GPU (a restarted container keeps its GPUs) and dies of XID 95 again 20 s after each start (CrashLoopBackOff). dcgm-exporter's XID gauge shows the first XID 95 only (the same XID again changes nothing); DCGM_EXP_XID_ERRORS_COUNT (--dcgm-optional) counts each"
	repeat.CrashAfter, repeat.DownFor = 20*time.Second, 10*time.Second
	repeat.GPU = GPUFault{Rank: 0, At: 20 * time.Second, Every: 30 * time.Second, XID: 95}
	stale := healthy
	stale.Name = "gpu-stale-xid"
	stale.Description = "healthy load on GPUs whose rank 1 still shows XID 48 from an old fault (dcgm-exporter's gauge keeps the last XID until the exporter restarts): nothing happens now. Start vllm-sim with it (--scenario gpu-stale-xid): the XID is then on the gauge from the first scrape, as an old one is"
	stale.GPU = GPUFault{Rank: 1, StaleXID: 48}
	return []Scenario{lost, throttle, remap, repeat, stale}
}

// gpuFleetScenarios are the hardware ring's fleet scenarios (three pods or more).
func gpuFleetScenarios() []FleetScenario {
	return []FleetScenario{
		{
			Name: "gpu-thermal-throttle", Description: "healthy load on every pod; 30 s after the switch pod 0's GPU reaches its thermal limit (gpu-throttle): its SM clock drops to 64%, its ITL rises ~1.9x against its siblings' at the same load",
			Load: "healthy", FirstPods: 1, FirstPodsLoad: "gpu-throttle",
		},
		{
			Name: "gpu-idle-pod", Description: "healthy load on every pod but pod 0, which the router sends nothing: pod 0's GPUs idle, their SM clock down at 345 MHz (GPU_IDLE), no token, no ITL; its siblings busy at 1980 MHz (the hard negative of gpu-thermal-throttle)",
			Load: "healthy", FirstPods: 1, FirstPodsLoad: "idle",
		},
	}
}

// planGPU plans what a lost GPU does to the engine: the core hangs at the loss; with tensor
// parallelism vLLM's RPC deadline kills the engine ExecuteModelTimeout later and the server
// stays down (every restart fails on the lost GPU) until the scenario switches.
func (e *Engine) planGPU(s Scenario, now time.Time) {
	if !s.GPU.Lost {
		return
	}
	l := &e.life
	l.hangAt = now.Add(s.GPU.At)
	if e.cfg.TensorParallelSize > 1 {
		l.crashAt = l.hangAt.Add(e.cfg.ExecuteModelTimeout)
		l.downFor = gpuLostDown
	}
}

// gpuLostDown stands for "until the scenario switches": planLife restarts a server that is down.
const gpuLostDown = 10 * 365 * 24 * time.Hour

// gpuSlowdown is the factor a throttled GPU stretches the step in flight by (1: none).
func (e *Engine) gpuSlowdown() float64 {
	g := e.scenario.GPU
	if g.ThrottleClock > 0 && g.ThrottleClock < 1 && g.active(e.scenarioAt, e.clock) {
		return 1 / g.ThrottleClock
	}
	return 1
}

// gpuView is what dcgm-exporter's stand-in reads of a pod at a scrape.
type gpuView struct {
	pod      string
	tp       int
	busy     bool // the engine computed in the last second (a kernel running most of the time)
	hung     bool // the engine core hangs (a collective waiting): the GPUs still spin
	down     bool // the server process is gone: the GPUs hold no memory
	fault    GPUFault
	faultAt  time.Time // the scenario switch the fault counts from
	scenario string
}

// gpuView reads the engine for the stand-in exporter.
func (e *Engine) gpuView() gpuView {
	e.mu.Lock()
	defer e.mu.Unlock()
	return gpuView{
		pod: e.life.podName, tp: max(1, e.cfg.TensorParallelSize),
		busy: e.coreReports() && len(e.running) > 0, hung: e.life.hung, down: e.life.down,
		fault: e.scenario.GPU, faultAt: e.scenarioAt, scenario: e.scenario.Name,
	}
}
