package playbooks

import (
	"regexp"
	"slices"
	"strings"

	"github.com/vllm-responder/vllm-responder/facts"
	"github.com/vllm-responder/vllm-responder/kube"
	"github.com/vllm-responder/vllm-responder/lora"
)

// allFacts are the values a playbook reads that its own queries do not give (package facts),
// one list of every source's: what kube-state-metrics says about the pod (kube.Names: its
// workload, the HPA that scales it, pods pending or unschedulable, node, restart reasons) and
// what vLLM's label-valued LoRA series says (lora.Names: --max-loras, the adapters running). The
// evidence engine looks a source up beside the queries when a rule on the way to the verdict
// reads one of its facts (Diagnosis.FactSources); a fixture records them under `facts:` (or
// `kube:`, kube-state-metrics' only; package fixture). Each fact is read by one name in conditions and templates
// alike, and is either a number (nil when unknown, as a missing query value is) or a label
// value, a name such as the workload or the restart reason ("" when unknown, so that `{{ with
// .kube_workload }}` and `kube_workload != ""` test for it). A missing fact is not missing
// evidence: it is never listed in Diagnosis.Missing (a workload without an HPA has no HPA
// numbers), so rules test kube_found, kube_hpa_found and the like before they compare numbers.
var allFacts = slices.Concat(kube.Names(), lora.Names())

// Facts lists every fact of every source, in order (docs/playbooks/README.md's table).
func Facts() []facts.Fact { return slices.Clone(allFacts) }

// factSources are the sources, in allFacts' order.
var factSources = func() []string {
	var out []string
	for _, f := range allFacts {
		if !slices.Contains(out, f.Source) {
			out = append(out, f.Source)
		}
	}
	return out
}()

// factEnv puts every fact into m: for a condition (template false) a number is a float64 or
// nil, for a template a *float64; a label value is a string. f nil: every fact unknown.
func factEnv(m map[string]any, f *facts.Facts, template bool) {
	for _, fc := range allFacts {
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
var sampleFacts = func() *facts.Facts {
	f := facts.New(factSources...)
	for _, fc := range allFacts {
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
	for _, fc := range allFacts {
		names[fc.Name] = fc.Source + " fact"
	}
}

// factRE finds a fact's name as a word of a condition or a template (`kube_hpa_max >= 3`,
// `{{ .kube_hpa }}`, `$.kube_node`).
var factRE = func() *regexp.Regexp {
	names := make([]string, len(allFacts))
	for i, f := range allFacts {
		names[i] = regexp.QuoteMeta(f.Name)
	}
	return regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)\b`)
}()

// readsFacts lists the sources whose facts a rule's condition or templates read.
func readsFacts(v VerdictFile) []string {
	text := strings.Join(append([]string{v.When, v.Title, v.Summary}, v.Actions...), "\n")
	var out []string
	for _, name := range factRE.FindAllString(text, -1) {
		i := slices.IndexFunc(allFacts, func(f facts.Fact) bool { return f.Name == name })
		if src := allFacts[i].Source; !slices.Contains(out, src) {
			out = append(out, src)
		}
	}
	return out
}
