package evidence

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/facts/sources"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/probe"
)

// stubProber answers every probe with res and records what it was asked. (The probe itself is
// tested against vllm-sim and the real vLLM in package probe; here only where it is called.)
type stubProber struct {
	res   probe.Result
	calls []string
}

func (s *stubProber) Timeout() time.Duration { return time.Second }

func (s *stubProber) Probe(_ context.Context, pod, namespace string) probe.Result {
	s.calls = append(s.calls, namespace+"/"+pod)
	return s.res
}

const stallPlaybook = `
name: stalled
match: {alertname: X}
scope: [namespace, pod]
window: 5m
queries:
  waiting: sum(vllm:num_requests_waiting{$scope})
verdicts:
  - id: engine-stalled
    when: waiting > 10
    title: Stalled
    summary: "{{ count .waiting }} waiting."
    actions: [Restart]
  - id: inconclusive
    when: "true"
    title: Inconclusive
    summary: "{{ count .waiting }} waiting."
    actions: [Look]
`

func TestAStalledDiagnosisShowsWhatTheProbeFound(t *testing.T) {
	t.Parallel()
	p, err := playbooks.Parse("stalled.yaml", []byte(stallPlaybook), sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"alertname": "X", "pod": "vllm-0", "namespace": "llm"}
	timedOut := probe.Result{Pod: "llm/vllm-0", Outcome: probe.OutcomeTimedOut, Timeout: 5 * time.Second, Endpoint: "10.0.0.5:8000"}
	answered := probe.Result{Pod: "llm/vllm-0", Outcome: probe.OutcomeAnswered, Took: 40 * time.Millisecond, Endpoint: "10.0.0.5:8000"}
	for _, tc := range []struct {
		name     string
		waiting  float64
		at       time.Time
		res      probe.Result
		probed   bool
		evidence string
		note     bool
	}{
		{"a stall is probed and the timeout shown", 50, time.Time{}, timedOut, true, "a 1-token request timed out after 5 s", false},
		{"a probe that answered is shown and noted", 50, time.Time{}, answered, true, "a 1-token request answered in 40 ms: not a stall", true},
		{"another verdict is not probed", 1, time.Time{}, timedOut, false, "", false},
		{"a diagnosis of a past time is not probed now", 50, time.Now().Add(-time.Hour), timedOut, false, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr := &stubProber{res: tc.res}
			e := NewEngine(valueQuerier{v: tc.waiting}, EngineOptions{Probe: pr})
			d, err := e.RunAt(context.Background(), p, labels, tc.at)
			if err != nil {
				t.Fatal(err)
			}
			if probed := len(pr.calls) > 0; probed != tc.probed {
				t.Fatalf("verdict %s: probed %v (%v), want %v", d.Verdict, probed, pr.calls, tc.probed)
			}
			var got *playbooks.Evidence
			for i := range d.Evidence {
				if d.Evidence[i].Name == "probe" {
					got = &d.Evidence[i]
				}
			}
			if !tc.probed {
				if got != nil {
					t.Errorf("probe evidence without a probe: %+v", got)
				}
				return
			}
			if pr.calls[0] != "llm/vllm-0" {
				t.Errorf("probed %v, want the alert's pod", pr.calls)
			}
			if got == nil || got.Text != tc.evidence || got.Label != tc.evidence || got.Query != "POST http://10.0.0.5:8000/v1/completions {max_tokens: 1}" {
				t.Fatalf("probe evidence %+v, want %q", got, tc.evidence)
			}
			noted := strings.Contains(strings.Join(d.Notes, "\n"), "probe: the pod answered")
			if noted != tc.note {
				t.Errorf("note about the answer: %v, want %v (%v)", noted, tc.note, d.Notes)
			}
		})
	}
}
