package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/vllm-responder/vllm-responder/notify/slack/fakeslack"
)

// The hostile storm (issue 33.4): after storms of hostile webhooks the responder's RSS stayed at
// 205-208 MB (45 before) and its goroutines at 46 (15 before). What stays is measured here: the
// in-memory store's records (bounded at store.MemoryMaxBytes, read from its gauges), the live
// heap, the RSS right after the drain and a while later (freed heap goes back to the system as
// the Go runtime scavenges it), and the goroutines once the peers' idle connections are closed.

const (
	hostileWebhooks = 400 // each its own group
	hostileAlerts   = 10  // per webhook
	hostileLabel    = 16 << 10
	hostileConns    = 32
	hostileSettle   = 10 * time.Second
)

type hostileReport struct {
	sentBytes                       int
	accepted, refused               int
	drained                         bool
	idleRSS, peakRSS, afterRSS, rss int64
	idleG, afterG, beforeG          float64
	goroutinesBack                  bool
	storeBytes, storeEntries        float64
	storeMax, idleStore             float64
	heapInuse                       float64
}

// benchHostileStorm sends hostileWebhooks webhooks at once, each a group of its own whose alerts
// carry 16 KiB label and annotation values, to a responder whose Prometheus is unreachable (each
// diagnosis is quick: what is measured is what the webhooks leave behind, not query cost), Slack
// the recording fake.
func benchHostileStorm(t *benchTB, responderBin string) hostileReport {
	var rep hostileReport
	slack := fakeslack.New(t, "chat.postMessage", "chat.update")
	resp := startResponder(t, responderBin, fmt.Sprintf(`prometheus: {url: "http://127.0.0.1:%d", query_timeout: 2s}
log: {level: error, format: json}
slack: {bot_token: xoxb-bench, channel: C0INCIDENT, api_url: %q, charts: false, post_interval: 1ms}
`, freePort(t), slack.APIURL()), io.Discard)
	time.Sleep(time.Second)
	rep.idleG, _ = metric(resp.URL, "go_goroutines")
	rep.idleRSS, _ = procStatus(resp.cmd.Process.Pid, "VmRSS")
	rep.idleStore, _ = metric(resp.URL, "vllm_responder_store_memory_bytes")

	big := strings.Repeat("x", hostileLabel)
	c := newLoadClient(hostileConns)
	sem := make(chan struct{}, hostileConns)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := range hostileWebhooks {
		var alerts []map[string]any
		for j := range hostileAlerts {
			alerts = append(alerts, map[string]any{"status": "firing",
				"labels": map[string]string{"alertname": "VLLMKVCacheNearFull", "pod": fmt.Sprintf("hostile-%d-%d", i, j),
					"namespace": "llm", "model_name": "llama", "junk": big},
				"annotations": map[string]string{"summary": big}, "startsAt": time.Now().UTC().Format(time.RFC3339),
				"endsAt": "0001-01-01T00:00:00Z", "fingerprint": fmt.Sprintf("h%d-%d", i, j)})
		}
		body, _ := json.Marshal(map[string]any{"version": "4", "groupKey": fmt.Sprintf("{}:{hostile=%q}", fmt.Sprint(i)), "status": "firing",
			"receiver": "vllm-responder", "groupLabels": map[string]string{}, "commonLabels": map[string]string{"alertname": "VLLMKVCacheNearFull"},
			"commonAnnotations": map[string]string{}, "externalURL": "http://alertmanager.example", "alerts": alerts})
		rep.sentBytes += len(body)
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			status, err := post(c, resp.URL+"/alertmanager", body)
			mu.Lock()
			defer mu.Unlock()
			if err == nil && status == 200 {
				rep.accepted++
			} else {
				rep.refused++
			}
		}()
	}
	wg.Wait()
	c.CloseIdleConnections()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		q, _ := metric(resp.URL, "vllm_responder_queue_depth")
		n, _ := metric(resp.URL, "vllm_responder_notifications_total{")
		if q == 0 && int(n) >= rep.accepted {
			rep.drained = true
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	rep.peakRSS, _ = resp.peakRSS()
	rep.afterRSS, _ = procStatus(resp.cmd.Process.Pid, "VmRSS")
	rep.beforeG, _ = metric(resp.URL, "go_goroutines")
	// Idle keep-alive connections hold two goroutines each until the client's idle timeout
	// (httpconfig.IdleConnTimeout, 90 s; Slack's client, Go's default, 90 s): closed on the peers'
	// side as that timeout would.
	slack.CloseClientConnections()
	settle := time.Now().Add(hostileSettle)
	for time.Now().Before(settle) {
		rep.afterG, _ = metric(resp.URL, "go_goroutines")
		if rep.afterG <= rep.idleG {
			rep.goroutinesBack = true
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(time.Until(settle))
	rep.rss, _ = procStatus(resp.cmd.Process.Pid, "VmRSS")
	rep.storeBytes, _ = metric(resp.URL, "vllm_responder_store_memory_bytes")
	rep.storeEntries, _ = metric(resp.URL, "vllm_responder_store_memory_entries")
	rep.storeMax, _ = metric(resp.URL, "vllm_responder_store_memory_max_bytes")
	rep.heapInuse, _ = metric(resp.URL, "go_memstats_heap_inuse_bytes")
	resp.stop()
	return rep
}

// renderHostile writes the hostile storm's rows.
func renderHostile(w func(string, ...any), h hostileReport) {
	mb := func(b float64) string { return fmt.Sprintf("%.1f MB", b/1e6) }
	w("| hostile storm: %d webhooks at once, each its own group of %d alerts with 16 KiB label and annotation values (%s sent): what stays | store %s in %.0f records (bound %s); heap in use %s; RSS %s after the drain, %s %s later (peak %s); %d accepted, %d refused (queue full) | idle before: store %s, RSS %s | store ≤ its bound, drained | %s |\n",
		hostileWebhooks, hostileAlerts, mb(float64(h.sentBytes)), mb(h.storeBytes), h.storeEntries, mb(h.storeMax), mb(h.heapInuse),
		mb(float64(h.afterRSS)), mb(float64(h.rss)), hostileSettle, mb(float64(h.peakRSS)), h.accepted, h.refused, mb(h.idleStore), mb(float64(h.idleRSS)),
		passFail(h.drained && h.storeMax > 0 && h.storeBytes <= h.storeMax))
	w("| hostile storm: goroutines after the drain | %.0f (%.0f before peers closed idle connections) | %.0f idle before the storm | back to idle | %s |\n",
		h.afterG, h.beforeG, h.idleG, passFail(h.goroutinesBack))
}
