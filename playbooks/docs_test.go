package playbooks_test

import (
	"github.com/vllm-responder/vllm-responder/facts/sources"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/playbooks/fixture"
)

// The user playbook docs/playbooks/README.md shows (under 40 lines, the gate in one line) is
// loaded from playbooks.dir as written there and judged: the gate's rules decide first, its own
// rules after them, and the gate's tests, written once, pass on it. The doc cannot rot.
func TestTheDocsUserPlaybookTakesTheGateInOneLine(t *testing.T) {
	doc, err := os.ReadFile("../docs/playbooks/README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "<!-- the user playbook of playbooks/docs_test.go -->\n```yaml\n")
	if !ok {
		t.Fatal("docs/playbooks/README.md has no user playbook block")
	}
	src, _, _ := strings.Cut(after, "```")
	if n := strings.Count(src, "\n"); n >= 40 {
		t.Errorf("the user playbook is %d lines, want under 40", n)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "e2e-latency-high.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	user, err := playbooks.LoadDir(dir, sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	builtin, err := playbooks.Builtin(sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	set, err := playbooks.NewSet(builtin, user, playbooks.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, ok := set.Match(map[string]string{"alertname": "TeamE2ELatencyHigh"})
	if !ok {
		t.Fatal("the user playbook does not match its alert")
	}
	var ids []string
	for _, v := range p.Verdicts {
		ids = append(ids, v.ID)
	}
	if got, want := strings.Join(ids, " "), "engine-restarting no-data engine-paused engine-stalled engine-stalled engine-stalled inconclusive engine-stalled capacity-past-knee inconclusive"; got != want {
		t.Errorf("rules %s\nwant  %s", got, want)
	}

	f := func(x float64) *float64 { return &x }
	labels := map[string]string{"alertname": "TeamE2ELatencyHigh", "namespace": "prod", "model_name": "llama", "pod": "vllm-0"}
	for _, tc := range []struct {
		name, verdict, title string
		o                    playbooks.Observation
	}{
		{"a wedged pod is the gate's engine-stalled", playbooks.VerdictEngineStalled, "Engine stalled on vllm-0",
			playbooks.Observation{Values: map[string]*float64{"e2e_mean": f(30), "waiting": f(40), "running": f(2), "held": f(2), "progress": f(0)},
				Fleet: playbooks.FleetValues{"stall": {"vllm-0": 2}, "tokens": {"vllm-0": 0}, "waiting": {"vllm-0": 40}}}},
		{"a restart is the gate's engine-restarting", playbooks.VerdictEngineRestarting, "restarted within the last 5m",
			playbooks.Observation{Values: map[string]*float64{"e2e_mean": f(30), "waiting": f(40), "running": f(2), "start_changes": f(1)}}},
		{"a deep queue that computes is its own capacity rule", playbooks.VerdictCapacityPastKnee, "12 requests waiting",
			playbooks.Observation{Values: map[string]*float64{"e2e_mean": f(30), "waiting": f(12), "running": f(64), "held": f(70), "progress": f(9000)},
				Fleet: playbooks.FleetValues{"tokens": {"vllm-0": 2000}, "waiting": {"vllm-0": 12}}}},
		{"the gate's waiting_min is set to its own 10", playbooks.VerdictInconclusive, "no queue explains it",
			playbooks.Observation{Values: map[string]*float64{"e2e_mean": f(30), "waiting": f(8), "running": f(64), "held": f(70), "progress": f(9000)},
				Fleet: playbooks.FleetValues{"tokens": {"vllm-0": 2000}, "waiting": {"vllm-0": 8}}}},
		{"no series is its own no-data", playbooks.VerdictNoData, "no vLLM latency series for llama", playbooks.Observation{}},
	} {
		tc.o.Labels = labels
		d := p.Judge(tc.o)
		if d.Verdict != tc.verdict || !strings.Contains(d.Title, tc.title) {
			t.Errorf("%s: %s %q, want %s containing %q", tc.name, d.Verdict, d.Title, tc.verdict, tc.title)
		}
	}

	files, err := fixture.Load("tests/common")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range fixture.Run(set, files) {
		if strings.HasSuffix(r.Name, "["+p.Name+"]") {
			n++
			if r.Diff != "" {
				t.Errorf("the gate's test %s fails on the user playbook:\n%s", r.Name, r.Diff)
			}
		}
	}
	if n == 0 {
		t.Error("the gate's tests did not run on the user playbook")
	}
}
