package main

import (
	"testing"

	"github.com/vllm-responder/vllm-responder/handlers"
)

// Every mode's payload is a webhook the responder accepts, and differs between requests exactly
// as the mode says.
func TestIngestPayloads(t *testing.T) {
	for _, mode := range []struct {
		name                        string
		resend, distinct            bool
		sameGroup, samePods, sameFP bool
	}{
		{"new states", false, false, true, true, false},
		{"re-sends", true, false, true, true, true},
		{"distinct", false, true, false, false, false},
	} {
		p := newIngestPayload()
		p.resend, p.distinct = mode.resend, mode.distinct
		a, err := handlers.DecodeMessage(p.next())
		if err != nil {
			t.Fatalf("%s: %v", mode.name, err)
		}
		b, err := handlers.DecodeMessage(p.next())
		if err != nil {
			t.Fatalf("%s: %v", mode.name, err)
		}
		if len(a.Alerts) != 5 || len(b.Alerts) != 5 {
			t.Fatalf("%s: want 5 alerts", mode.name)
		}
		if got := a.GroupKey == b.GroupKey; got != mode.sameGroup {
			t.Errorf("%s: same group key = %v", mode.name, got)
		}
		if got := a.Alerts[0].Labels["pod"] == b.Alerts[0].Labels["pod"]; got != mode.samePods {
			t.Errorf("%s: same pods = %v (%s, %s)", mode.name, got, a.Alerts[0].Labels["pod"], b.Alerts[0].Labels["pod"])
		}
		if got := a.Alerts[0].Fingerprint == b.Alerts[0].Fingerprint; got != mode.sameFP {
			t.Errorf("%s: same fingerprints = %v", mode.name, got)
		}
		if !mode.distinct && a.Alerts[0].Labels["pod"] != "vllm-capacity" {
			t.Errorf("%s: pod %q, want the recorded pod vllm-capacity", mode.name, a.Alerts[0].Labels["pod"])
		}
	}
}
