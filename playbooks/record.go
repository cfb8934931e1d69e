package playbooks

import (
	"maps"
	"slices"
	"time"

	"github.com/vllm-responder/vllm-responder/facts"
)

// Record is what a diagnosis was decided from: every query's value (hidden ones too), the fleet's
// values pod by pod and the alert's labels. Deciding the playbook again over it gives the same
// verdict, which is what makes a fixture of it (package fixture, FromRecord) a regression test. It
// is kept in the store with the diagnosis it belongs to, so that a later "Wrong verdict?" click
// needs nothing re-queried (Prometheus moved on since).
type Record struct {
	Playbook string              `json:"playbook"`
	Verdict  string              `json:"verdict"`
	Title    string              `json:"title,omitempty"`
	Labels   map[string]string   `json:"labels"`
	Values   map[string]*float64 `json:"values"`
	// Failed are the queries whose request failed (Observation.Failed), in name order.
	Failed []string    `json:"failed,omitempty"`
	Fleet  FleetValues `json:"fleet,omitempty"`
	// Facts are the facts looked up (nil: none). The JSON key is "kube", as it was when
	// kube-state-metrics was their only source, so that records kept before read back.
	Facts       *facts.Facts `json:"kube,omitempty"`
	EvaluatedAt time.Time    `json:"evaluated_at,omitzero"`
}

// record fills d.Record from what the verdicts were decided over.
func (d *Diagnosis) record(values map[string]*float64, failed map[string]bool, fleet FleetValues, labels map[string]string, kf *facts.Facts) {
	d.Record = &Record{
		Playbook: d.Playbook, Verdict: d.Verdict, Title: d.Title,
		Labels: maps.Clone(labels), Values: maps.Clone(values), EvaluatedAt: d.EvaluatedAt, Facts: kf,
	}
	for name, ok := range failed {
		if ok {
			d.Record.Failed = append(d.Record.Failed, name)
		}
	}
	slices.Sort(d.Record.Failed)
	if d.Record.Labels == nil {
		d.Record.Labels = map[string]string{}
	}
	if len(fleet) > 0 {
		d.Record.Fleet = make(FleetValues, len(fleet))
		for q, pods := range fleet {
			d.Record.Fleet[q] = maps.Clone(pods)
		}
	}
}
