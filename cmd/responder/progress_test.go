package main

import (
	"strings"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

// progressLoads are the pods of one model whose engines hang, sleep, restart or recover, as
// recorded on a real Prometheus (the hang as measured on vLLM 0.32: every vllm: series frozen
// at its last value, /metrics still answering), beside an idle, a slow and a quiet pod.
func progressLoads() []testenv.VLLMLoad {
	pod := func(name string, f func(*testenv.VLLMLoad)) testenv.VLLMLoad {
		l := testenv.HealthyLoad
		l.Namespace, l.Pod, l.Model = "p", name, "llama-p"
		f(&l)
		return l
	}
	return []testenv.VLLMLoad{
		// SIGSTOP of EngineCore with two requests running: the queue reads 0.
		pod("hung", func(l *testenv.VLLMLoad) { l.Running, l.Waiting, l.KV, l.HangFrom = 2, 0, 0.04, 8*time.Minute }),
		pod("asleep", func(l *testenv.VLLMLoad) { l.Running, l.Waiting, l.HangFrom, l.Asleep = 2, 1, 8*time.Minute, true }),
		pod("restarted", func(l *testenv.VLLMLoad) {
			l.RestartAt, l.RestartReason, l.RestartExitCode = 2*time.Minute, "OOMKilled", 137
		}),
		// hung for 5 minutes, until 4 minutes ago; its backlog queues since
		pod("recovered", func(l *testenv.VLLMLoad) {
			l.HangFrom, l.HangFor, l.Waiting, l.Queue, l.TTFT = 9*time.Minute, 5*time.Minute, 30, 34, 35
		}),
		pod("idle", func(l *testenv.VLLMLoad) { l.ReqRate, l.Running, l.Waiting, l.KV = 0, 0, 0, 0 }),
		pod("slow", func(l *testenv.VLLMLoad) { l.ReqRate, l.Running, l.Waiting = 0.05, 4, 2 }),
		pod("ok", func(*testenv.VLLMLoad) {}),
	}
}

// Against a real Prometheus: progress, not gauges. A hung engine with frozen gauges and an empty
// queue is engine-stalled (never healthy), with the frozen gauges and since when named; asleep on
// purpose is engine-paused; a restart is engine-restarting; a backlog after a hang is the
// stall's aftermath, not capacity; an idle, a slow and a quiet pod are not stalled.
func TestProgressNotGaugesOnARealPrometheus(t *testing.T) {
	prom := testenv.RecordedPrometheus(t, progressLoads())
	cfg := writeConfig(t, prom.URL, "")
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
		{"an idle engine is healthy", "", "idle", "healthy", nil},
		{"a slow engine that moves is healthy", "", "slow", "healthy", nil},
		{"a quiet pod is healthy", "", "ok", "healthy", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := triageOf(t, cfg, tc.alert, "pod="+tc.pod, "namespace=p", "model_name=llama-p")
			if res.Verdict != tc.want {
				t.Fatalf("verdict %s (%s: %s; notes %q), want %s", res.Verdict, res.Title, res.Summary, res.Notes, tc.want)
			}
			for _, s := range tc.contains {
				if !strings.Contains(res.Title+" "+res.Summary, s) {
					t.Errorf("%q not in %s: %s", s, res.Title, res.Summary)
				}
			}
		})
	}
	// Triage of the model without a pod names the hung pod first.
	res, stderr, code := triageCLI(t, "--config", cfg, "--label", "namespace=p", "--label", "model_name=llama-p")
	if code != 0 || res.Verdict != "engine-restarting" {
		// a pod of the model restarted in the window: that is decided first, for the model too
		t.Fatalf("triage of the model: exit %d (%s), verdict %s (%s)", code, stderr, res.Verdict, res.Title)
	}
}
