package playbooks

import (
	"regexp"
	"strings"

	"github.com/vllm-responder/vllm-responder/kube"
)

// Facts are values a playbook reads that its own queries do not give: what kube-state-metrics
// says about the pod (kube.Names: its workload, the HPA that scales it, pods pending or
// unschedulable, node, restart reasons). The evidence engine gathers them beside the queries
// (kube.Config.Lookup); a fixture records them under `kube:`. Each fact is read by one name in
// conditions and templates alike, and is either a number (nil when unknown, as a missing query
// value is) or a label value, a name such as the workload or the restart reason ("" when
// unknown, so that `{{ with .kube_workload }}` and `kube_workload != ""` test for it). A
// missing fact is not missing evidence: it is never listed in Diagnosis.Missing (a workload
// without an HPA has no HPA numbers), so rules test kube_found, kube_hpa_found and the like
// before they compare numbers.
var facts = kube.Names()

// factEnv puts every fact into m: for a condition (template false) a number is a float64 or
// nil, for a template a *float64; a label value is a string. f nil: every fact unknown.
func factEnv(m map[string]any, f *kube.Facts, template bool) {
	for _, fc := range facts {
		switch {
		case fc.Label:
			m[fc.Name] = f.Label(fc.Name)
		case template:
			m[fc.Name] = f.Number(fc.Name)
		default:
			setEnv(m, fc.Name, f.Number(fc.Name))
		}
	}
}

// sampleFacts are the facts conditions compile against and templates are tried with at load
// time: every fact known.
var sampleFacts = func() *kube.Facts {
	f := &kube.Facts{Numbers: map[string]*float64{}, Labels: map[string]string{}}
	for _, fc := range facts {
		if fc.Label {
			f.Labels[fc.Name] = "x"
		} else {
			one := 1.0
			f.Numbers[fc.Name] = &one
		}
	}
	return f
}()

// reserveFacts claims the facts' names, so that a query or param of the same name is an error.
func reserveFacts(names map[string]string) {
	for _, fc := range facts {
		names[fc.Name] = "kube-state-metrics fact"
	}
}

// factRE finds a fact's name as a word of a condition or a template (`kube_hpa_max >= 3`,
// `{{ .kube_hpa }}`, `$.kube_node`).
var factRE = func() *regexp.Regexp {
	names := make([]string, len(facts))
	for i, f := range facts {
		names[i] = regexp.QuoteMeta(f.Name)
	}
	return regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)\b`)
}()

// readsFacts reports whether a rule's condition or templates read a fact.
func readsFacts(v VerdictFile) bool {
	return factRE.MatchString(v.When) || factRE.MatchString(v.Title) || factRE.MatchString(v.Summary) ||
		factRE.MatchString(strings.Join(v.Actions, "\n"))
}
