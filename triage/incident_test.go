package triage

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/alertmanager/template"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/notify/incident"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/store"
)

// A triage of a scope with an open incident names it (responder triage --output json, the MCP
// tool, /vllm triage); one of another model does not.
func TestATriageOfAScopeWithAnOpenIncidentNamesIt(t *testing.T) {
	t.Parallel()
	prom := testenv.RecordedPrometheus(t, []testenv.VLLMLoad{
		load("alpha-0", "alpha", nil), load("beta-0", "beta", kvPreemption), load("beta-1", "beta", nil),
	})
	s := newService(t, prom.URL)
	cfg := &incident.Config{}
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	st := store.NewMemory()
	s.o.Incidents = incident.NewFinder(cfg, st)

	// Alertmanager's group of beta's KV alert opens beta's incident.
	var opened *notify.Incident
	next := notify.NotifierFunc(func(_ context.Context, n *notify.Notification) (bool, error) { opened = n.Incident; return false, nil })
	tr, err := incident.New(next, incident.Options{Config: cfg, Store: st, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	a := template.Alert{Status: notify.StatusFiring, Fingerprint: "kv-beta-0", StartsAt: time.Now().Add(-5 * time.Minute),
		Labels: template.KV{"alertname": "VLLMKVCacheNearFull", "namespace": "llm", "model_name": "beta", "pod": "beta-0"}}
	if _, err := tr.Notify(context.Background(), &notify.Notification{GroupKey: "kv", Status: notify.StatusFiring,
		Items: []notify.Item{{Alert: a, Diagnosis: &playbooks.Diagnosis{Verdict: playbooks.VerdictKVPreemption}}}}); err != nil || opened == nil {
		t.Fatalf("no incident opened: %v", err)
	}

	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{"the model named", map[string]string{"model_name": "beta"}, opened.ID},
		{"no model named: the one with the problem, whose incident is open", nil, opened.ID},
		{"the model and a pod of it", map[string]string{"model_name": "beta", "pod": "beta-1"}, opened.ID},
		{"another model", map[string]string{"model_name": "alpha"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := s.Run(context.Background(), Request{Labels: tc.labels})
			if err != nil {
				t.Fatal(err)
			}
			b, err := res.JSON()
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == "" && res.Incident != nil:
				t.Errorf("names incident %s", res.Incident.ID)
			case tc.want == "" && strings.Contains(string(b), `"incident"`):
				t.Errorf("the JSON names an incident:\n%s", b)
			case tc.want != "" && (res.Incident == nil || res.Incident.ID != tc.want):
				t.Errorf("incident %+v, want %s", res.Incident, tc.want)
			case tc.want != "" && !strings.Contains(string(b), `"id": "`+tc.want+`"`):
				t.Errorf("the JSON does not name the incident:\n%s", b)
			}
		})
	}
}
