package playbooks

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/vllm-responder/vllm-responder/facts"
)

// Record is what a diagnosis was decided from: every query's value (hidden ones too), the fleet's
// values pod by pod and the alert's labels. Deciding the playbook again over it gives the same
// verdict, which is what makes a fixture of it (FixtureFromRecord) a regression test. It is kept in
// the store with the diagnosis it belongs to, so that a later "Wrong verdict?" click needs nothing
// re-queried (Prometheus moved on since).
type Record struct {
	Playbook string              `json:"playbook"`
	Verdict  string              `json:"verdict"`
	Title    string              `json:"title,omitempty"`
	Labels   map[string]string   `json:"labels"`
	Values   map[string]*float64 `json:"values"`
	Fleet    FleetValues         `json:"fleet,omitempty"`
	// Facts are the facts looked up (nil: none). The JSON key is "kube", as it was when
	// kube-state-metrics was their only source, so that records kept before read back.
	Facts       *facts.Facts `json:"kube,omitempty"`
	EvaluatedAt time.Time    `json:"evaluated_at,omitzero"`
}

// errNoRecord is returned for a diagnosis made without evidence (Prometheus unreachable): its
// verdict came from no rule, so no fixture reproduces it.
var errNoRecord = errors.New("this diagnosis has no recorded evidence (Prometheus could not be reached), so no fixture can reproduce it")

// record fills d.Record from what the verdicts were decided over.
func (d *Diagnosis) record(values map[string]*float64, fleet FleetValues, labels map[string]string, kf *facts.Facts) {
	d.Record = &Record{
		Playbook: d.Playbook, Verdict: d.Verdict, Title: d.Title,
		Labels: maps.Clone(labels), Values: maps.Clone(values), EvaluatedAt: d.EvaluatedAt, Facts: kf,
	}
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

// FixtureFromDiagnosis is FixtureFromRecord for a diagnosis just made.
func FixtureFromDiagnosis(d *Diagnosis, expect string) ([]byte, error) {
	if d == nil || d.Record == nil {
		return nil, errNoRecord
	}
	return FixtureFromRecord(d.Record, expect)
}

// FixtureFromRecord writes a fixture file for `responder playbooks test`: the recorded values, the
// alert's labels and the verdict expected. With expect different from the recorded verdict the
// fixture fails until the playbook is fixed: the regression test of a wrong verdict.
func FixtureFromRecord(r *Record, expect string) ([]byte, error) {
	if r == nil {
		return nil, errNoRecord
	}
	if !slices.Contains(KnownVerdicts, expect) {
		return nil, fmt.Errorf("unknown verdict %q (one of %s)", expect, strings.Join(KnownVerdicts, ", "))
	}
	name := fmt.Sprintf("%s should be %s, not %s", r.Playbook, expect, r.Verdict)
	if expect == r.Verdict {
		name = fmt.Sprintf("%s gives %s", r.Playbook, expect)
	}
	if scope := scopeWords(r.Labels); scope != "" {
		name += " (" + scope + ")"
	}
	values := r.Values
	if values == nil {
		values = map[string]*float64{}
	}
	fx := fixtureOut{
		Name: name, Playbook: r.Playbook, Alert: r.Labels, Values: values,
		Fleet: r.Fleet, Expect: expectOut{Verdict: expect},
	}
	// kube-state-metrics' facts under kube:, the others under facts:.
	for name, v := range r.Facts.Map() {
		m := &fx.Facts
		if strings.HasPrefix(name, "kube_") {
			m = &fx.Kube
		}
		if *m == nil {
			*m = map[string]any{}
		}
		(*m)[name] = v
	}
	var body bytes.Buffer
	enc := yaml.NewEncoder(&body)
	enc.SetIndent(2)
	if err := enc.Encode(struct {
		Tests []fixtureOut `yaml:"tests"`
	}{[]fixtureOut{fx}}); err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Recorded by vllm-responder from the diagnosis of %s", r.Playbook)
	if !r.EvaluatedAt.IsZero() {
		fmt.Fprintf(&b, " at %s", r.EvaluatedAt.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(&b, ": the verdict was %s", r.Verdict)
	if expect != r.Verdict {
		fmt.Fprintf(&b, ", %s was expected.\n# It fails until the playbook gives %s", expect, expect)
	}
	b.WriteString(".\n# Run: responder playbooks test [--config FILE] DIR (the config's params apply).\n")
	b.Write(body.Bytes())
	return []byte(b.String()), nil
}

// fixtureOut is Fixture as written: only the fields a recorded fixture sets.
type fixtureOut struct {
	Name     string                        `yaml:"name"`
	Playbook string                        `yaml:"playbook"`
	Alert    map[string]string             `yaml:"alert,omitempty"`
	Values   map[string]*float64           `yaml:"values"`
	Fleet    map[string]map[string]float64 `yaml:"fleet,omitempty"`
	Kube     map[string]any                `yaml:"kube,omitempty"`
	Facts    map[string]any                `yaml:"facts,omitempty"`
	Expect   expectOut                     `yaml:"expect"`
}

type expectOut struct {
	Verdict string `yaml:"verdict"`
}

// scopeWords names the scope of a fixture: model, namespace and pod labels in a fixed order.
func scopeWords(l map[string]string) string {
	var parts []string
	for _, k := range []string{"namespace", "model_name", "pod", "instance"} {
		if v := l[k]; v != "" {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, " ")
}
