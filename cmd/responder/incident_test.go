package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/notify/slack/fakeslack"
)

// Two models past their knee at once, each alert of each pod its own Alertmanager group (the
// demo's per-pod grouping): the real Alertmanager delivers eight groups to `responder serve`,
// which opens two incidents, one per model, and posts two parents to Slack (a local recording
// server that fails on any other call), each listing its model's four alerts, cause first.
func TestTwoModelsFiringAtOnceAreTwoIncidentsOneParentEach(t *testing.T) {
	t.Parallel()
	var loads []testenv.VLLMLoad
	for _, model := range []string{"alpha", "beta"} {
		for i := range 2 {
			l := testenv.HealthyLoad
			l.Pod, l.Model = fmt.Sprintf("%s-%d", model, i), model
			l.TTFT, l.Queue, l.Waiting, l.Running, l.KV = 35, 34, 140, 64, 0.6
			loads = append(loads, l)
		}
	}
	prom := testenv.RecordedPrometheus(t, loads)
	fs := fakeslack.New(t, "chat.postMessage", "chat.update")
	url, _ := startResponder(t, prom.URL, fmt.Sprintf("slack: {bot_token: xoxb-test, channel: %s, api_url: %q, charts: false, post_interval: 10ms}\n",
		fakeslack.ChannelID, fs.APIURL()))
	am := testenv.Alertmanager(t, fmt.Sprintf(`
route:
  receiver: responder
  group_by: [alertname, namespace, model_name, pod]
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: responder
    webhook_configs:
      - url: %s/alertmanager
`, url))

	start := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	ends := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	var alerts []string
	for _, l := range loads {
		for _, name := range []string{"VLLMQueueDepthHigh", "VLLMTimeToFirstTokenP99High"} {
			alerts = append(alerts, fmt.Sprintf(`{"labels":{"alertname":%q,"namespace":"llm","pod":%q,"model_name":%q},"startsAt":%q,"endsAt":%q}`,
				name, l.Pod, l.Model, start, ends))
		}
	}
	postAlerts(t, am.URL, "["+strings.Join(alerts, ",")+"]")

	delivered := func() int {
		n := 0
		for _, r := range []string{"ok", "retried"} {
			v, _ := strconv.Atoi(metricValue(t, url, `vllm_responder_notifications_total{result="`+r+`"}`))
			n += v
		}
		return n
	}
	testenv.WaitFor(t, 90*time.Second, "the eight groups delivered to Slack", func() bool { return delivered() >= len(alerts) })
	if got := metricValue(t, url, `vllm_responder_incident_events_total{event="opened"}`); got != "2" {
		t.Errorf("incidents opened = %s, want 2 (one per model)", got)
	}
	if got := metricValue(t, url, `vllm_responder_incident_events_total{event="joined"}`); got != "6" {
		t.Errorf("alerts joined = %s, want 6 (three more per model)", got)
	}

	parents := map[string]int{} // model -> its parents
	posts := 0
	for _, c := range fs.Calls("chat.postMessage") {
		if c.Form.Get("thread_ts") != "" {
			continue
		}
		posts++
		for _, model := range []string{"alpha", "beta"} {
			if strings.Contains(c.Form.Get("blocks"), "incident "+model+" · llm") {
				parents[model]++
			}
		}
	}
	if posts != 2 || parents["alpha"] != 1 || parents["beta"] != 1 {
		t.Fatalf("%d parents (%v by model), want two: one per model", posts, parents)
	}
	// Each parent ends up listing its model's four alerts (alike alerts on its two pods share a
	// line: "• *VLLMQueueDepthHigh* pods alpha-0, alpha-1: ...").
	lists := func(b, name, pod string) bool {
		for _, line := range strings.Split(b, `\n`) {
			if strings.HasPrefix(line, "• *"+name+"* pod") && (strings.Contains(line, " "+pod+",") || strings.Contains(line, " "+pod+":")) {
				return true
			}
		}
		return false
	}
	for _, model := range []string{"alpha", "beta"} {
		testenv.WaitFor(t, 30*time.Second, "the parent of "+model+" listing its four alerts", func() bool {
			for _, c := range fs.Calls("chat.update") {
				b := c.Form.Get("blocks")
				if !strings.Contains(b, "incident "+model+" · llm (4 alerts)") || strings.Contains(b, otherModel(model)+"-") {
					continue
				}
				all := true
				for _, name := range []string{"VLLMQueueDepthHigh", "VLLMTimeToFirstTokenP99High"} {
					for i := range 2 {
						all = all && lists(b, name, fmt.Sprintf("%s-%d", model, i))
					}
				}
				if all {
					return true
				}
			}
			return false
		})
	}
}

func otherModel(m string) string {
	if m == "alpha" {
		return "beta"
	}
	return "alpha"
}
