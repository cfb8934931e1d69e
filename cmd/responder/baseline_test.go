package main

import (
	"strings"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

// freshLoads are two models whose prefix cache stops hitting with prompts unchanged: on
// fresh-model, a new model with no day of history at all, 4 minutes ago (the recent past is its
// only baseline); on rolled, one pod replaced by a rollout (newer than a day) beside two siblings
// that served a day ago (the model a day ago is its baseline), collapsed for the whole recording.
func freshLoads() []testenv.VLLMLoad {
	shared := testenv.HealthyLoad
	shared.Prompt, shared.HitRate, shared.Prefill, shared.TTFT = 3360, 0.87, 0.09, 0.3
	collapsed := shared
	collapsed.HitRate, collapsed.Prefill, collapsed.TTFT = 0.05, 0.6, 0.9
	pod := func(model, name string, l testenv.VLLMLoad, f func(*testenv.VLLMLoad)) testenv.VLLMLoad {
		l.Namespace, l.Pod, l.Model = "b", name, model
		f(&l)
		return l
	}
	return []testenv.VLLMLoad{
		pod("fresh-model", "new-0", collapsed, func(l *testenv.VLLMLoad) {
			l.Fresh, l.Earlier, l.ChangedFor = true, &shared, 4*time.Minute
		}),
		pod("rolled", "rolled-0", collapsed, func(l *testenv.VLLMLoad) { l.Fresh = true }),
		pod("rolled", "rolled-1", shared, func(l *testenv.VLLMLoad) { l.DayAgo = &shared }),
		pod("rolled", "rolled-2", shared, func(l *testenv.VLLMLoad) { l.DayAgo = &shared }),
	}
}

// Against a real Prometheus: a change on a fresh pod is still a change. A prefix-cache collapse
// with no day of history is found against the recent past, by the TTFT alert's playbook and by
// on-demand triage alike (one incident, one answer); on a pod newer than a day, against the
// model a day ago. Each diagnosis says which baseline it used.
func TestBaselinesOnAFreshPodOnARealPrometheus(t *testing.T) {
	t.Parallel()
	prom := testenv.RecordedPrometheus(t, freshLoads())
	cfg := writeConfig(t, prom.URL, "")
	cases := []struct {
		name, alert, model, pod, from string
	}{
		{"no day of history: the TTFT alert against the recent past", "VLLMTimeToFirstTokenP99High", "fresh-model", "new-0", "the 30m before the window"},
		{"no day of history: on-demand triage against the recent past", "", "fresh-model", "new-0", "the 30m before the window"},
		{"a pod newer than a day: the TTFT alert against the model a day ago", "VLLMTimeToFirstTokenP99High", "rolled", "rolled-0", "the model a day ago"},
		{"a pod newer than a day: on-demand triage against the model a day ago", "", "rolled", "rolled-0", "the model a day ago"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := triageOf(t, cfg, tc.alert, "pod="+tc.pod, "namespace=b", "model_name="+tc.model)
			if res.Verdict != "prefix-cache-collapse" || !strings.Contains(res.Summary, tc.from) {
				t.Fatalf("verdict %s (%s: %s; notes %q), want prefix-cache-collapse against %s", res.Verdict, res.Title, res.Summary, res.Notes, tc.from)
			}
			if _, baseline := evidenceNamed(t, res, "hit_rate"); !strings.HasSuffix(baseline, ", "+tc.from) {
				t.Errorf("the hit rate's baseline %q does not say it is %s", baseline, tc.from)
			}
		})
	}
	// Its siblings, serving as they did a day ago, have no collapse.
	res, stderr, code := triageCLI(t, "--config", cfg, "--label", "pod=rolled-1", "--label", "namespace=b", "--label", "model_name=rolled")
	if code != 0 || res.Verdict == "prefix-cache-collapse" {
		t.Fatalf("a sibling serving as a day ago: exit %d (%s), verdict %s (%s)", code, stderr, res.Verdict, res.Summary)
	}
}
