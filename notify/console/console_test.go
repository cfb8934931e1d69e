package console

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/alertmanager/template"

	"github.com/vllm-responder/vllm-responder/facts/sources"
	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/traces"
)

func f(v float64) *float64 { return &v }

func TestConsoleShowsTheDiagnosisWithItsNumbers(t *testing.T) {
	var out bytes.Buffer
	d := &playbooks.Diagnosis{Playbook: "ttft-p99-high", Verdict: "capacity-past-knee", Title: "Capacity, past the knee: add replicas",
		Summary: "140 requests waiting", Actions: []string{"Add replicas"}, Scope: map[string]string{"pod": "vllm-0"},
		Evidence: []playbooks.Evidence{
			{Name: "waiting", Title: "Requests waiting", Value: f(140), Text: "140", Baseline: f(60), BaselineText: "60"},
			{Name: "prefill_mean", Title: "Prefill time mean", Value: f(0.1), Text: "100 ms", BaselineText: "no history for a baseline"},
			{Name: "kv", Title: "KV", Text: "n/a", Problem: "no series"},
		},
		Missing: []string{"kv"}, OfferProfile: true}
	n := &notify.Notification{GroupKey: "g", Status: "firing", CommonLabels: map[string]string{"alertname": "VLLMTimeToFirstTokenP99High"},
		TruncatedAlerts: 3, Items: []notify.Item{
			{Alert: template.Alert{Labels: map[string]string{"alertname": "VLLMTimeToFirstTokenP99High", "pod": "vllm-0"}}, Diagnosis: d},
			{Alert: template.Alert{Labels: map[string]string{"alertname": "Other"}}, Unmatched: true},
		}}
	if _, err := New(&out, notify.ViewOptions{}).Notify(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"[FIRING] VLLMTimeToFirstTokenP99High", "3 more alert(s) were left out", "verdict:  capacity-past-knee",
		"Requests waiting   140  (baseline 60)", "100 ms  (no history for a baseline)", "[no series]",
		"  - Add replicas", "missing:  kv", "no playbook matches this alert", "bounded profile capture",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestConsoleShowsAResolutionAndItsDuration(t *testing.T) {
	var out bytes.Buffer
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	n := &notify.Notification{Status: "resolved", Items: []notify.Item{{Alert: template.Alert{Status: "resolved",
		Labels: map[string]string{"alertname": "VLLMKVCacheNearFull"}, StartsAt: start, EndsAt: start.Add(90 * time.Second)}}}}
	New(&out, notify.ViewOptions{}).Notify(context.Background(), n)
	if !strings.Contains(out.String(), "[RESOLVED]") || !strings.Contains(out.String(), "resolved after 1m30s") {
		t.Fatalf("got:\n%s", out.String())
	}
}

func TestConsoleShowsThePodAgainstItsSiblings(t *testing.T) {
	pbs, err := playbooks.Builtin(sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	set, err := playbooks.NewSet(pbs, nil, playbooks.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := set.Get("queue-depth-high")
	d := p.Judge(playbooks.Observation{
		Values: map[string]*float64{"waiting": f(300), "running": f(256), "queue_share": f(0.9)},
		Fleet: playbooks.FleetValues{
			"waiting":  {"vllm-0": 300, "vllm-1": 0, "vllm-2": 1},
			"running":  {"vllm-0": 256, "vllm-1": 12},
			"arrivals": {"vllm-0": 50, "vllm-1": 4, "vllm-2": 5},
		},
		Labels: map[string]string{"namespace": "prod", "model_name": "llama", "pod": "vllm-0"},
	})
	var b strings.Builder
	WriteDiagnosis(&b, d, "  ")
	out := b.String()
	for _, want := range []string{
		"verdict:  load-imbalance",
		"fleet:    this pod alone (1 of 3 pods) · model_name=llama namespace=prod",
		"Waiting (capacity)  Running",
		">! vllm-0                 300      256",
		"   vllm-2                   1      n/a",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// Format and control characters from labels and from what a diagnosis says (issue 33.9; on a
// terminal an escape sequence in a label could also rewrite the lines above) are shown, never
// written raw.
func TestHiddenCharactersAreShownNotWritten(t *testing.T) {
	var out bytes.Buffer
	d := &playbooks.Diagnosis{Verdict: "kv-pressure", Title: "KV pressure on vllm\u202egnp.exe", Summary: "adapter sql\u2066-lora\x1b[2A waits",
		Scope: map[string]string{"pod": "vllm\u202egnp.exe"}}
	n := &notify.Notification{Status: "firing", GroupLabels: map[string]string{"alertname": "VLLMKV\u200bCache"}, Items: []notify.Item{
		{Alert: template.Alert{Labels: map[string]string{"alertname": "VLLMKV\u200bCache", "pod": "vllm\u202egnp.exe"}}, Diagnosis: d},
		{Alert: template.Alert{Status: "resolved", Labels: map[string]string{"alertname": "Old\u202eAlert"}}},
	}}
	if _, err := New(&out, notify.ViewOptions{}).Notify(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	for _, r := range "\u202e\u200b\u2066\x1b" {
		if strings.ContainsRune(out.String(), r) {
			t.Errorf("the output holds %U raw:\n%s", r, out.String())
		}
	}
	for _, want := range []string{"[FIRING] VLLMKV<U+200B>Cache", "KV pressure on vllm<U+202E>gnp.exe", "sql<U+2066>-lora<U+001B>[2A waits", "Old<U+202E>Alert"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output does not show %q:\n%s", want, out.String())
		}
	}
}

// A notification of an incident is one block: its header, then the incident (its verdict from
// its cause, the pod of a per-pod cause, each member as cause or symptom), then the alert's own
// diagnosis. No member line starts with an alert name, which starts an alert's block (the
// demo's and the e2e tests' readers of this output rely on it).
func TestAnIncidentIsOneBlockNamingItsCauseAndMembers(t *testing.T) {
	var out bytes.Buffer
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	a := template.Alert{Status: "firing", Fingerprint: "ttft-1", StartsAt: start,
		Labels: map[string]string{"alertname": "VLLMTimeToFirstTokenP99High", "pod": "vllm-1", "model_name": "llama", "namespace": "llm"}}
	n := &notify.Notification{GroupKey: "g", Status: "firing", Items: []notify.Item{{Alert: a,
		Diagnosis: &playbooks.Diagnosis{Verdict: playbooks.VerdictCapacityPastKnee, Title: "Capacity, past the knee"}}},
		Incident: &notify.Incident{ID: "3fa9c1d2e0a1", Key: map[string]string{"model_name": "llama", "namespace": "llm"}, Started: start,
			Verdict: playbooks.VerdictEngineStalled, Cause: notify.Cause{Title: "Engine stalled on vllm-2", Summary: "no progress for 7m", Pods: []string{"vllm-2"}},
			Members: []notify.Member{
				{Fingerprint: "ttft-1", Alertname: "VLLMTimeToFirstTokenP99High", Pod: "vllm-1", Verdict: playbooks.VerdictCapacityPastKnee, Role: notify.RoleSymptom, Status: "firing"},
				{Fingerprint: "stall-2", Alertname: "VLLMEngineStalled", Pod: "vllm-2", Verdict: playbooks.VerdictEngineStalled, Role: notify.RoleCause, Status: "firing"},
			},
			Change: notify.IncidentChange{Joined: []string{"ttft-1"}}}}
	if _, err := New(&out, notify.ViewOptions{}).Notify(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	want := `incident 3fa9c1d2e0a1  model_name="llama" namespace="llm"  (2 alerts, all firing; 1 alert joined)
  cause:    engine-stalled on pod vllm-2: Engine stalled on vllm-2
            no progress for 7m
  members:
  - VLLMEngineStalled pod vllm-2: engine-stalled, cause
  - VLLMTimeToFirstTokenP99High pod vllm-1: capacity-past-knee, symptom  (new)
`
	if !strings.Contains(out.String(), want) {
		t.Errorf("output lacks the incident:\n%s\nwant\n%s", out.String(), want)
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "VLLM") && !strings.HasPrefix(line, "VLLMTimeToFirstTokenP99High ") {
			t.Errorf("a line other than the alert's own starts with an alert name: %q", line)
		}
	}
	if !strings.Contains(out.String(), "VLLMTimeToFirstTokenP99High model_name=\"llama\"") || !strings.Contains(out.String(), "verdict:  capacity-past-knee") {
		t.Errorf("the alert's own block is missing:\n%s", out.String())
	}
}

// The abort-rate diagnosis whose window has requests that ended untraced (vllm#32162) lists the
// slowest traced requests as such, and says how many are not there and why.
func TestTheAbortRateDiagnosisSaysTheTracedRequestsAreNotTheSlowest(t *testing.T) {
	var out bytes.Buffer
	r := &traces.Report{Service: "vllm-llama", Operation: traces.Operation, Searched: 12,
		Summary:  "The slowest request (5s) spent 90% of its time decoding (queue 6%, prefill 4%).",
		Requests: []traces.Request{{TraceID: "a1", RequestID: "cmpl-1", Duration: 5 * time.Second, Decode: 4500 * time.Millisecond}}}
	r.MarkUntraced(37)
	d := &playbooks.Diagnosis{Playbook: "request-abort-rate-high", Verdict: "client-aborts", Title: "Client aborts", SlowestRequests: r}
	n := &notify.Notification{GroupKey: "g", Status: "firing", Items: []notify.Item{
		{Alert: template.Alert{Labels: map[string]string{"alertname": "VLLMRequestAbortRateHigh", "pod": "vllm-0"}}, Diagnosis: d}}}
	if _, err := New(&out, notify.ViewOptions{}).Notify(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"slowest traced requests (Jaeger service", "The slowest traced request (5s)",
		"37 requests of the window got a first token and never finished", "vllm-project/vllm#32162"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "slowest requests (") {
		t.Errorf("the traced requests are presented as the slowest:\n%s", out.String())
	}
}
