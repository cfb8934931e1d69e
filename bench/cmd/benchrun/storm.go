package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/vllm-responder/vllm-responder/evidence"
	"github.com/vllm-responder/vllm-responder/facts/sources"
	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
	"github.com/vllm-responder/vllm-responder/notify/slack/fakeslack"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

var stormAlertnames = []string{"VLLMTimeToFirstTokenP99High", "VLLMInterTokenLatencyP99High", "VLLMKVCacheNearFull",
	"VLLMRequestAbortRateHigh", "VLLMQueueDepthHigh"}

const (
	stormModels        = 10 // 5 alertnames x 10 models = 50 groups
	stormPodsPerGroup  = 20 // 50 x 20 = 1,000 alerts
	stormWindow        = 10 * time.Second
	stormPostsPerGroup = 2 // Alertmanager sends a group as it grows: first 10 alerts, then all 20
)

type stormAlert struct {
	group  int
	labels map[string]string
}

type stormReport struct {
	alerts, groups, posts  int
	accepted, refused      int
	sendSpan               time.Duration
	drained                bool
	drainTime              time.Duration
	queries, queriesMetric int
	distinctSent           int
	distinctPairs          int
	unshared               int // queries the alerts' playbooks hold in all, without any sharing
	parents, replies       int
	edits                  int
	lost                   int
	lostExample            string
	peakRSS                int64
	idleG, afterG, beforeG float64
	goroutinesBack         bool
	cacheTTL               string
}

func stormGroupKey(alertname, model string) string {
	return fmt.Sprintf(`{}:{alertname=%q, model_name=%q}`, alertname, model)
}

func stormPayload(alertname, model string, alerts []stormAlert, startsAt string) []byte {
	type amAlert struct {
		Status       string            `json:"status"`
		Labels       map[string]string `json:"labels"`
		Annotations  map[string]string `json:"annotations"`
		StartsAt     string            `json:"startsAt"`
		EndsAt       string            `json:"endsAt"`
		GeneratorURL string            `json:"generatorURL"`
		Fingerprint  string            `json:"fingerprint"`
	}
	msg := map[string]any{
		"version": "4", "groupKey": stormGroupKey(alertname, model), "truncatedAlerts": 0, "status": "firing",
		"receiver": "vllm-responder", "externalURL": "http://alertmanager.example:9093",
		"groupLabels":       map[string]string{"alertname": alertname, "model_name": model},
		"commonLabels":      map[string]string{"alertname": alertname, "model_name": model, "namespace": "llm"},
		"commonAnnotations": map[string]string{},
	}
	var list []amAlert
	for _, a := range alerts {
		list = append(list, amAlert{Status: "firing", Labels: a.labels, Annotations: map[string]string{"summary": alertname + " on " + a.labels["pod"]},
			StartsAt: startsAt, EndsAt: "0001-01-01T00:00:00Z", GeneratorURL: "http://prometheus.example:9090/graph",
			Fingerprint: fmt.Sprintf("%x", playbooksHash(a.labels))})
	}
	msg["alerts"] = list
	b, _ := json.Marshal(msg)
	return b
}

func playbooksHash(m map[string]string) uint64 {
	var h uint64 = 14695981039346656037
	for _, k := range []string{"alertname", "model_name", "pod"} {
		for _, c := range []byte(k + "=" + m[k] + ";") {
			h ^= uint64(c)
			h *= 1099511628211
		}
	}
	return h
}

// benchStorm sends 1,000 firing alerts in 50 groups within 10 s to the responder (a subprocess)
// with Slack pointed at the recording fake, and Prometheus behind the counting proxy.
func benchStorm(t *benchTB, responderBin string, proxy *countingProxy) stormReport {
	rep := stormReport{groups: len(stormAlertnames) * stormModels, cacheTTL: "10s (default)"}
	slack := fakeslack.New(t, "chat.postMessage", "chat.update")
	resp := startResponder(t, responderBin, fmt.Sprintf(`prometheus: {url: %q}
log: {level: warn, format: json}
slack: {bot_token: xoxb-bench, channel: C0INCIDENT, api_url: %q, charts: false, post_interval: 10ms}
`, proxy.URL, slack.APIURL()), io.Discard)
	time.Sleep(time.Second)
	rep.idleG, _ = metric(resp.URL, "go_goroutines")

	// The alerts, and the distinct requests their playbooks need.
	builtin, err := playbooks.Builtin(sources.Catalog())
	if err != nil {
		t.Fatalf("%v", err)
	}
	set, err := playbooks.NewSet(builtin, nil, playbooks.SetOptions{})
	if err != nil {
		t.Fatalf("%v", err)
	}
	pairs := map[string]bool{}
	var groups [][]stormAlert
	for gi, an := range stormAlertnames {
		for mi := range stormModels {
			model := fmt.Sprintf("mdl-%d", mi)
			var g []stormAlert
			for pi := range stormPodsPerGroup {
				l := map[string]string{"alertname": an, "model_name": model, "namespace": "llm",
					"pod": fmt.Sprintf("%s-pod-%02d", model, pi), "severity": "critical"}
				g = append(g, stormAlert{group: gi*stormModels + mi, labels: l})
				pb, ok := set.Match(l)
				if !ok {
					t.Fatalf("no playbook for %s", an)
				}
				// The check for the recorded stall history, its queries a few to a request, and
				// the fleet's requests (shared by the pods of a model; the stall history, recorded
				// in the bench's Prometheus, by every playbook of the model).
				reqs := evidence.RequestsWith(pb, l, 0, vllmnames.Default(), true)
				for _, r := range reqs {
					pairs[r] = true
				}
				rep.unshared += len(reqs)
			}
			groups = append(groups, g)
		}
	}
	rep.distinctPairs = len(pairs)
	rep.alerts = len(groups) * stormPodsPerGroup

	proxy.reset()
	startsAt := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	c := newLoadClient(64)
	var wg sync.WaitGroup
	var mu sync.Mutex
	jobs := 0
	nPosts := len(groups) * stormPostsPerGroup
	step := stormWindow / time.Duration(nPosts)
	start := time.Now()
	for i := range nPosts {
		g := groups[i%len(groups)]
		alerts := g[:stormPodsPerGroup/2]
		if i >= len(groups) {
			alerts = g
		}
		an, model := g[0].labels["alertname"], g[0].labels["model_name"]
		body := stormPayload(an, model, alerts, startsAt)
		if w := time.Until(start.Add(time.Duration(i) * step)); w > 0 {
			time.Sleep(w)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.Post(resp.URL+"/alertmanager", "application/json", strings.NewReader(string(body)))
			mu.Lock()
			defer mu.Unlock()
			rep.posts++
			if err != nil {
				rep.refused += len(alerts)
				return
			}
			defer r.Body.Close()
			var ans struct {
				Accepted   int `json:"accepted"`
				Duplicates int `json:"duplicates"`
			}
			_ = json.NewDecoder(r.Body).Decode(&ans)
			if r.StatusCode != 200 {
				rep.refused += len(alerts)
				return
			}
			rep.accepted += ans.Accepted
			if ans.Accepted > 0 {
				jobs++
			}
		}()
	}
	wg.Wait()
	rep.sendSpan = time.Since(start)
	c.CloseIdleConnections()

	// Drain: every accepted notification diagnosed, and every accepted alert shown in its
	// incident's thread (the parent as last edited, or a reply); bounded.
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		n, _ := metric(resp.URL, "vllm_responder_time_to_diagnosis_seconds_count")
		q, _ := metric(resp.URL, "vllm_responder_queue_depth")
		if int(n) >= jobs && q == 0 {
			if rep.readSlack(slack, groups); rep.lost == 0 {
				rep.drained = true
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	rep.drainTime = time.Since(start)
	time.Sleep(500 * time.Millisecond) // a late post or edit (a second parent) still counts
	rep.queries, rep.distinctSent = proxy.counts()
	qm, _ := metric(resp.URL, "vllm_responder_prometheus_query_duration_seconds_count{")
	rep.queriesMetric = int(qm)
	rep.readSlack(slack, groups)

	rep.peakRSS, _ = resp.peakRSS()
	rep.beforeG, _ = metric(resp.URL, "go_goroutines")
	// Idle keep-alive connections to the peers hold two goroutines each in the responder until the
	// client's idle timeout (90 s); close them on the peers' side as an idle timeout would.
	slack.CloseClientConnections()
	proxy.srv.SetKeepAlivesEnabled(false)
	deadline = time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		rep.afterG, _ = metric(resp.URL, "go_goroutines")
		if rep.afterG <= rep.idleG {
			rep.goroutinesBack = true
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	proxy.srv.SetKeepAlivesEnabled(true)
	if !rep.drained {
		if b, err := os.ReadFile(resp.Stderr); err == nil {
			fmt.Fprintf(os.Stderr, "storm: responder log tail:\n%s\n", tailString(string(b), 3000))
		}
	}
	resp.stop()
	return rep
}

// readSlack reads what Slack shows after the storm: each incident's thread (issue 34: one per
// model), its parent as its last chat.update left it (or as posted) with its replies, and counts
// the accepted alerts not shown in their incident's thread: no line there names the alert and
// its pod.
func (rep *stormReport) readSlack(slack *fakeslack.Server, groups [][]stormAlert) {
	rep.parents, rep.replies, rep.lost, rep.lostExample = 0, 0, 0, ""
	parent, replies := map[string]string{}, map[string]string{} // by the parent's ts
	var roots []string
	for _, c := range slack.Calls("") {
		switch c.Method {
		case "chat.postMessage":
			if root := c.Form.Get("thread_ts"); root != "" {
				rep.replies++
				replies[root] += slackText(c)
				continue
			}
			rep.parents++
			// The n-th post got ts 1700000000.<n> from the fake; only posts take a ts.
			root := fmt.Sprintf("1700000000.%06d", rep.parents+rep.replies)
			roots = append(roots, root)
			parent[root] = slackText(c)
		case "chat.update":
			parent[c.Form.Get("ts")] = slackText(c) // the last edit is what the parent shows
		}
	}
	rep.edits = len(slack.Calls("chat.update"))
	shown := map[string]string{}
	for _, r := range roots {
		shown[r] = parent[r] + replies[r]
	}
	for _, g := range groups {
		for _, a := range g {
			if !stormShown(shown, roots, a.labels) {
				rep.lost++
				if rep.lostExample == "" {
					rep.lostExample = a.labels["alertname"] + "/" + a.labels["pod"]
				}
			}
		}
	}
	if rep.accepted < rep.alerts {
		// Refused alerts (503) are not "accepted"; they are reported apart.
		rep.lost -= min(rep.lost, rep.alerts-rep.accepted)
	}
}

// slackText is the text of a call's blocks (and its fallback text), line by line.
func slackText(c fakeslack.Call) string {
	var b strings.Builder
	b.WriteString(c.Form.Get("text") + "\n")
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if t, ok := e.(string); ok && k == "text" {
					b.WriteString(t + "\n")
				} else {
					walk(e)
				}
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	for _, bl := range c.Blocks() {
		walk(bl)
	}
	return b.String()
}

// stormShown reports whether an alert is shown in its incident's thread (the thread whose
// parent names the incident of its model): a line names its alert and its pod.
func stormShown(shown map[string]string, roots []string, l map[string]string) bool {
	pod := regexp.MustCompile(regexp.QuoteMeta(l["pod"]) + `\b`)
	for _, r := range roots {
		text := shown[r]
		if !strings.Contains(text, "incident "+l["model_name"]+" ·") {
			continue
		}
		for _, line := range strings.Split(text, "\n") {
			if strings.Contains(line, l["alertname"]) && pod.MatchString(line) {
				return true
			}
		}
	}
	return false
}

func tailString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
