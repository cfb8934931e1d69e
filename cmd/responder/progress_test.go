package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

// progressLoads are the pods of one model whose engines hang, sleep, restart or recover
// (testenv.ProgressLoads).
func progressLoads() []testenv.VLLMLoad { return testenv.ProgressLoads("p", "llama-p") }

// Against a real Prometheus: progress, not gauges. A hung engine with frozen gauges and an empty
// queue is engine-stalled (never healthy), with the frozen gauges and since when named; asleep on
// purpose is engine-paused; a restart is engine-restarting; a backlog after a hang is the
// stall's aftermath, not capacity; an idle, a slow and a quiet pod are not stalled.
func TestProgressNotGaugesOnARealPrometheus(t *testing.T) {
	t.Parallel()
	prom := testenv.RecordedPrometheus(t, progressLoads())
	cfg := writeConfig(t, prom.URL, "")
	// Every triage is evaluated when the recording was made for (as if run at once), not when the
	// test gets to it: on a busy machine the backfill alone takes minutes, and a stall's length, a
	// window's content and a new pod's age would move with them.
	at := "--at=" + strconv.FormatInt(prom.RecordedAt.Unix(), 10)
	cases := []struct {
		name, alert, pod, want string
		contains               []string
	}{
		{"a hung engine with an empty frozen queue is engine-stalled on demand", "", "hung", "engine-stalled",
			[]string{"Its gauges are frozen", "2 running, 0 waiting", "for about 8m"}}, // hung 8 minutes before the recording's end
		{"and on its alert", "VLLMEngineStalled", "hung", "engine-stalled", []string{"Its gauges are frozen"}},
		{"an engine asleep on purpose is engine-paused", "", "asleep", "engine-paused", []string{"still asleep now"}},
		{"and on the stall alert", "VLLMEngineStalled", "asleep", "engine-paused", nil},
		{"a server restarted in the window is engine-restarting, with kube-state-metrics' reason", "", "restarted", "engine-restarting",
			[]string{"1 process restart(s)", "container vllm last terminated: OOMKilled (exit code 137)"}},
		{"and on the abort alert, its lost requests are not client aborts", "VLLMRequestAbortRateHigh", "restarted", "engine-restarting", nil},
		{"the backlog after a hang is the stall's aftermath on the queue alert", "VLLMQueueDepthHigh", "recovered", "engine-stalled",
			[]string{"until recently"}},
		{"and on the TTFT alert", "VLLMTimeToFirstTokenP99High", "recovered", "engine-stalled", []string{"until recently"}},
		{"a 75 s stop's backlog is its aftermath (scraped every 15 s)", "VLLMQueueDepthHigh", "stopped-75s", "engine-stalled",
			[]string{"until recently"}},
		{"and on demand", "", "stopped-75s", "engine-stalled", []string{"until recently"}},
		{"and scraped every second", "", "stopped-75s-1s", "engine-stalled", []string{"until recently"}},
		{"two 75 s stops in the last 15 minutes", "", "stopped-twice", "engine-stalled", []string{"until recently"}},
		{"past capacity with scrapes failing for 45 s is capacity, not a stall's aftermath", "VLLMQueueDepthHigh", "busy-gap", "capacity-past-knee", nil},
		{"nor a restart", "", "busy-gap", "capacity-past-knee", nil},
		{"a restart whose scrape gap began before the window is engine-restarting", "", "restarted-late", "engine-restarting",
			[]string{"1 process restart(s)", "2 counter reset(s)", "last terminated: Completed (exit code 0), which is no clean finish"}},
		{"and on the abort alert", "VLLMRequestAbortRateHigh", "restarted-late", "engine-restarting", nil},
		{"a new pod that Prometheus scraped as down while it started is no restart", "", "new", "inconclusive",
			[]string{"its server is new"}},
		{"nor on its TTFT alert", "VLLMTimeToFirstTokenP99High", "new", "inconclusive", nil},
		{"an idle engine is healthy", "", "idle", "healthy", nil},
		// Issue 37: an idle engine stopped for 70 s while one request a second arrived.
		{"the TTFT alert after an idle engine's hang with requests trickling in is the stall's aftermath", "VLLMTimeToFirstTokenP99High", "idle-hang-trickle", "engine-stalled",
			[]string{"until recently"}},
		{"and on demand", "", "idle-hang-trickle", "engine-stalled", []string{"until recently"}},
		{"two such hangs in the last 15 minutes", "", "idle-hang-twice", "engine-stalled", []string{"until recently"}},
		{"the same hang with nothing arriving is healthy", "", "idle-hang-quiet", "healthy", nil},
		{"a slow engine that moves is healthy", "", "slow", "healthy", nil},
		{"a quiet pod is healthy", "", "ok", "healthy", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := triageAt(t, cfg, at, tc.alert, "pod="+tc.pod, "namespace=p", "model_name=llama-p")
			if res.Verdict != tc.want {
				t.Fatalf("verdict %s (%s: %s; notes %q), want %s", res.Verdict, res.Title, res.Summary, res.Notes, tc.want)
			}
			for _, s := range tc.contains {
				if !strings.Contains(res.Title+" "+res.Summary, s) {
					t.Errorf("%q not in %s: %s", s, res.Title, res.Summary)
				}
			}
			// The stop's length, counted from its counters: 75 s, to the subquery's 5 s steps
			// and a scrape interval.
			// Each stop's first minute counted: two stops of 75 s are 150 s, each to a 5 s step
			// and a scrape interval on both sides (15 s). An idle engine's hangs too (requests
			// arriving before them: their tokens stop with the hang), each a stall's start.
			stops := map[string]struct{ n, secs float64 }{"stopped-75s": {1, 75}, "stopped-75s-1s": {1, 75}, "stopped-twice": {2, 150},
				"idle-hang-trickle": {1, 70}, "idle-hang-twice": {2, 140}}
			if s, ok := stops[tc.pod]; ok {
				if d, ok := aboutSeconds(res.Summary, "made no progress for up to about "); !ok || d < s.secs || d > s.secs+s.n*35 {
					t.Errorf("%v stop(s) of %v s in all read as %v s (%s)", s.n, s.secs, d, res.Summary)
				} else {
					t.Logf("%v stop(s) of %v s in all read as %v s", s.n, s.secs, d)
				}
			}
		})
	}
	// Since when, to the subquery's 5 s step: the counters stopped 370 s before the recording's
	// last sample, both on the step grid.
	t.Run("since when a stopped engine made no progress, to 5 s", func(t *testing.T) {
		last, err := strconv.ParseFloat(promScalar(prom.URL, `timestamp(up{pod="stopped-370s-1s"})`), 64)
		if err != nil {
			t.Fatalf("the recording's last sample: %v", err)
		}
		res := triageAt(t, cfg, at, "", "pod=stopped-370s-1s", "namespace=p", "model_name=llama-p")
		want := float64(res.EvaluatedAt.Unix()) - (last - 370)
		if d, ok := aboutSeconds(res.Summary, "no finished request) for about "); res.Verdict != "engine-stalled" || !ok || d < want-2 || d > want+2 {
			t.Errorf("%s: %s; want no progress for about %.0f s", res.Verdict, res.Summary, want)
		}
	})
	// Triage of the model without a pod names the hung pod first.
	res, stderr, code := triageCLI(t, "--config", cfg, at, "--label", "namespace=p", "--label", "model_name=llama-p")
	if code != 0 || res.Verdict != "engine-restarting" {
		// a pod of the model restarted in the window: that is decided first, for the model too
		t.Fatalf("triage of the model: exit %d (%s), verdict %s (%s)", code, stderr, res.Verdict, res.Title)
	}
	// ... about a pod that restarted, named with its own kube-state-metrics (issue 37: it named a
	// sibling that had not), not the hung pod the stall ranking would put first.
	named := false
	for _, pod := range []string{"restarted", "restarted-late"} {
		if strings.Contains(res.Title, "pod "+pod+" of llama-p") && strings.Contains(res.Summary, "kube-state-metrics: pod "+pod+" restarted") {
			named = true
		}
	}
	if !named {
		t.Errorf("triage of the model does not name a restarted pod with its restarts: %s: %s", res.Title, res.Summary)
	}
}

// aboutSeconds reads the duration a summary gives after the words before ("for about "), as
// the secs template writes it ("75 s", "8m0s").
func aboutSeconds(summary, before string) (float64, bool) {
	m := regexp.MustCompile(regexp.QuoteMeta(before) + `([0-9.]+ s|[0-9hms.]+)\b`).FindStringSubmatch(summary)
	if m == nil {
		return 0, false
	}
	if n, ok := strings.CutSuffix(m[1], " s"); ok {
		d, err := strconv.ParseFloat(n, 64)
		return d, err == nil
	}
	d, err := time.ParseDuration(m[1])
	return d.Seconds(), err == nil
}
