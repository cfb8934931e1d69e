package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/vllm-responder/vllm-responder/dispatch"
)

// runBare is the baseline: a bare net/http handler that only reads and decodes the same JSON into
// the same type (dispatch.Message) and answers 200.
func runBare(listen string) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		var msg dispatch.Message
		if err := json.Unmarshal(body, &msg); err != nil {
			http.Error(w, "decode", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	return http.Serve(ln, h)
}

// startBare runs the baseline handler as a subprocess of this binary, like the responder.
func startBare(t *benchTB) string {
	self, err := os.Executable()
	if err != nil {
		t.Fatalf("%v", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(self, "bare", addr)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start bare handler: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	url := "http://" + addr
	waitFor(t, 10*time.Second, "bare handler", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return url
}

// ingestMode is one kind of webhook traffic, measured against the bare handler.
type ingestMode struct {
	name string
	// What the responder did with the alerts of this mode's measurements (from its /metrics):
	// alerts diagnosed, alerts superseded by a newer state of the same alert before their
	// diagnosis, notifications merged into a waiting one of their group.
	diagnosed, superseded, coalesced float64
	backlog                          float64 // notifications still queued when the rounds ended
	bareTP, respTP                   loadResult
	bareLat, respLat                 loadResult
	// CPU the responder and Prometheus used during the responder's open-loop rounds (the
	// background diagnoses' queries included), and how long those rounds lasted.
	respCPU, promCPU, latWall time.Duration
}

type ingestReport struct {
	conns, rate, queueSize int
	rounds                 int
	closedRound, openRound time.Duration
	modes                  []*ingestMode
	distinct               *ingestMode // information only: closed loop, no drain
	drainWait              time.Duration
	cut                    bool // the phase's deadline ended rounds early
}

// benchIngest measures POST /alertmanager on the responder against the bare handler, side by
// side in alternating rounds: closed loop for throughput, open loop at a fixed rate for latency.
// Two kinds of traffic: every alert new (the full path, each one diagnosed in the background),
// and re-sends of a group already diagnosed (duplicates, what Alertmanager sends most). Rounds
// not begun by deadline are not run (the report says so), and each drain of the queue between
// rounds waits 20 s at most.
func benchIngest(t *benchTB, responderBin, promURL string, promPid int, o options, deadline time.Time) ingestReport {
	rep := ingestReport{conns: o.conns, rate: o.rate, queueSize: o.ingestQueue, rounds: o.rounds,
		closedRound: o.closedRound, openRound: o.openRound}
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer devnull.Close()
	bare := startBare(t)
	bareURL := bare + "/alertmanager"
	// Each measurement (mode × closed or open loop) starts on a fresh responder, so that none
	// inherits another's state: after the closed loop of new alerts the in-memory dedup store
	// holds 300,000+ claims (far more than a real 4 h window), whose GC marking would then be
	// charged to the open loop's latency.
	var resp *responderProc
	var respURL string
	// stop adds up what the responder did with the alerts of mode m, then stops it.
	stop := func(m *ingestMode) {
		for _, c := range []struct {
			to     *float64
			series string
		}{
			{&m.diagnosed, `vllm_responder_alerts_received_total{outcome="diagnosed"}`},
			{&m.superseded, `vllm_responder_alerts_received_total{outcome="superseded"}`},
			{&m.coalesced, "vllm_responder_notifications_coalesced_total"},
		} {
			if v, ok := metric(resp.URL, c.series); ok {
				*c.to += v
			}
		}
		resp.stop()
	}
	fresh := func() {
		resp = startResponder(t, responderBin, fmt.Sprintf(`prometheus: {url: %q}
log: {level: info, format: json}
dispatch: {workers: 4, queue_size: %d}
`, promURL, o.ingestQueue), devnull)
		respURL = resp.URL + "/alertmanager"
	}
	drain := func() {
		t0 := time.Now()
		until := t0.Add(20 * time.Second)
		if deadline.Before(until) {
			until = deadline
		}
		for time.Now().Before(until) {
			if v, ok := metric(resp.URL, "vllm_responder_queue_depth"); ok && v == 0 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		rep.drainWait += time.Since(t0)
	}
	for _, resend := range []bool{false, true} {
		m := &ingestMode{name: "every alert a new state (claimed, queued)"}
		if resend {
			m.name = "re-sends (duplicates)"
		}
		p := newIngestPayload()
		p.resend = resend
		// Warm up both (connections, caches, the first diagnoses; the re-sent group's first send).
		warm := func() {
			closedLoop(bareURL, p, o.conns, 500*time.Millisecond)
			closedLoop(respURL, p, o.conns, 500*time.Millisecond)
			drain()
		}
		fresh()
		warm()
		for r := range o.rounds {
			if r > 0 && time.Now().After(deadline) {
				rep.cut = true
				break
			}
			for _, bareTurn := range []bool{r%2 == 0, r%2 != 0} { // alternate who goes first
				if bareTurn {
					m.bareTP.add(closedLoop(bareURL, p, o.conns, o.closedRound))
				} else {
					m.respTP.add(closedLoop(respURL, p, o.conns, o.closedRound))
					drain()
				}
			}
		}
		stop(m)
		fresh()
		warm()
		for r := range o.rounds {
			if r > 0 && time.Now().After(deadline) {
				rep.cut = true
				break
			}
			for _, bareTurn := range []bool{r%2 == 0, r%2 != 0} {
				if bareTurn {
					m.bareLat.add(openLoop(bareURL, p, o.rate, o.openRound))
				} else {
					r0, p0, w0 := cpuTime(resp.cmd.Process.Pid), cpuTime(promPid), time.Now()
					m.respLat.add(openLoop(respURL, p, o.rate, o.openRound))
					m.respCPU += cpuTime(resp.cmd.Process.Pid) - r0
					m.promCPU += cpuTime(promPid) - p0
					m.latWall += time.Since(w0)
					drain()
				}
			}
		}
		stop(m)
		for _, r := range []*loadResult{&m.bareTP, &m.respTP, &m.bareLat, &m.respLat} {
			sortDurations(r.lat)
		}
		rep.modes = append(rep.modes, m)
	}

	// Distinct alerts (information, no target): every request a group of its own on pods of its
	// own, so every alert is diagnosed, 13 Prometheus queries each, on the same 2 cores. Far
	// more than any fleet sends (tens of thousands of distinct alerts a second), so the backlog is
	// not drained: each round runs on a fresh responder, stopped after it with its queue full.
	d := &ingestMode{name: "distinct alerts (every one diagnosed)"}
	p := newIngestPayload()
	p.distinct = true
	for r := range o.rounds {
		if time.Now().After(deadline) {
			rep.cut = true
			break
		}
		for _, bareTurn := range []bool{r%2 == 0, r%2 != 0} {
			if bareTurn {
				d.bareTP.add(closedLoop(bareURL, p, o.conns, o.closedRound))
				continue
			}
			fresh()
			closedLoop(respURL, p, o.conns, 500*time.Millisecond) // connections
			d.respTP.add(closedLoop(respURL, p, o.conns, o.closedRound))
			if v, ok := metric(resp.URL, "vllm_responder_queue_depth"); ok {
				d.backlog += v
			}
			stop(d)
		}
	}
	sortDurations(d.bareTP.lat)
	sortDurations(d.respTP.lat)
	rep.distinct = d
	return rep
}
