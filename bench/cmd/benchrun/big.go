package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/vllm-responder/vllm-responder/notify/slack/fakeslack"
)

const bigAlerts = 10_000

type bigReport struct {
	alerts, bodyBytes int
	status            int
	accepted          int
	drained           bool
	took              time.Duration
	parents, replies  int
	queries           int
	peakRSS           int64
	peakG             float64
}

// benchBigNotification sends one notification of 10,000 alerts on distinct pods (one group) to
// the responder, Slack pointed at the recording fake: the work per notification must be bounded
// (a storm summarised from group-wide queries), whatever its size.
func benchBigNotification(t *benchTB, responderBin string, proxy *countingProxy) bigReport {
	rep := bigReport{alerts: bigAlerts}
	slack := fakeslack.New(t, "chat.postMessage", "chat.update")
	resp := startResponder(t, responderBin, fmt.Sprintf(`prometheus: {url: %q}
log: {level: warn, format: json}
webhook: {max_body_bytes: 4194304}
slack: {bot_token: xoxb-bench, channel: C0INCIDENT, api_url: %q, charts: false, post_interval: 10ms}
`, proxy.URL, slack.APIURL()), io.Discard)
	var alerts []stormAlert
	for i := range bigAlerts {
		alerts = append(alerts, stormAlert{labels: map[string]string{"alertname": "VLLMQueueDepthHigh", "model_name": "mdl-big",
			"namespace": "llm", "pod": fmt.Sprintf("big-pod-%05d", i)}})
	}
	body := stormPayload("VLLMQueueDepthHigh", "mdl-big", alerts, time.Now().Add(-time.Minute).UTC().Format(time.RFC3339))
	rep.bodyBytes = len(body)
	proxy.reset()

	// Sample goroutines while it works.
	stop := make(chan struct{})
	sampled := make(chan float64)
	go func() {
		peak := 0.0
		for {
			if g, ok := metric(resp.URL, "go_goroutines"); ok && g > peak {
				peak = g
			}
			select {
			case <-stop:
				sampled <- peak
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	r, err := http.Post(resp.URL+"/alertmanager", "application/json", strings.NewReader(string(body)))
	if err == nil {
		rep.status = r.StatusCode
		var ans struct {
			Accepted int `json:"accepted"`
		}
		_ = json.NewDecoder(r.Body).Decode(&ans)
		r.Body.Close()
		rep.accepted = ans.Accepted
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		n, _ := metric(resp.URL, "vllm_responder_time_to_diagnosis_seconds_count")
		if n >= 1 && len(slack.Calls("chat.postMessage")) >= 1 {
			rep.drained = true
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	rep.took = time.Since(start)
	close(stop)
	rep.peakG = <-sampled
	rep.queries, _ = proxy.counts()
	for _, p := range slack.Calls("chat.postMessage") {
		if p.Form.Get("thread_ts") == "" {
			rep.parents++
		} else {
			rep.replies++
		}
	}
	rep.peakRSS, _ = resp.peakRSS()
	resp.stop()
	return rep
}
