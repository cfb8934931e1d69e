package playbooks

import (
	"strings"

	"github.com/vllm-responder/vllm-responder/facts"
)

// The facts are the values a playbook reads that its own queries do not give (package facts),
// those of every source in the catalog the playbook was compiled against (facts.Catalog; the
// sources are one list, package facts/sources): what kube-state-metrics says about the pod (its
// workload, the HPA that scales it, pods pending or unschedulable, node, restart reasons), what
// vLLM's label-valued LoRA series says (--max-loras, the adapters running). The evidence engine
// looks a source up beside the queries when a rule on the way to the verdict reads one of its
// facts (Diagnosis.FactSources); a fixture records them under `facts:` (or `kube:`,
// kube-state-metrics' only). Each fact is read by one name in conditions and templates alike,
// and is either a number (nil when unknown, as a missing query value is) or a label value, a
// name such as the workload or the restart reason ("" when unknown, so that `{{ with
// .kube_workload }}` and `kube_workload != ""` test for it). A missing fact is not missing
// evidence: it is never listed in Diagnosis.Missing (a workload without an HPA has no HPA
// numbers), so rules test kube_found, kube_hpa_found and the like before they compare numbers.

// kubeSource is the source whose facts a fixture's older `kube:` key holds.
const kubeSource = "kube-state-metrics"

// factEnv puts every fact of cat into m: for a condition (template false) a number is a float64
// or nil, for a template a *float64; a label value is a string. f nil: every fact unknown.
func factEnv(m map[string]any, cat *facts.Catalog, f *facts.Facts, template bool) {
	for fc := range cat.All() {
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

// recordedFacts reads a fixture's facts against cat: `facts:` any fact, `kube:`
// kube-state-metrics' (the older key). Either present: every source counts as looked up (a
// fixture's facts are all there is). Neither: nil, none looked up.
func recordedFacts(cat *facts.Catalog, kubeSection, factsSection map[string]any) (*facts.Facts, string) {
	if kubeSection == nil && factsSection == nil {
		return nil, ""
	}
	f := facts.New(cat.Sources()...)
	if err := f.From(cat.Of(kubeSource), kubeSection); err != nil {
		return nil, "kube: " + err.Error()
	}
	for name := range factsSection {
		if _, dup := kubeSection[name]; dup {
			return nil, "facts." + name + ": also under kube:"
		}
	}
	if err := f.From(cat.Facts(), factsSection); err != nil {
		return nil, "facts: " + err.Error()
	}
	return f, ""
}

// reserveFacts claims the names of cat's facts, so that a query or param of the same name is an
// error.
func reserveFacts(cat *facts.Catalog, names map[string]string) {
	for fc := range cat.All() {
		names[fc.Name] = fc.Source + " fact"
	}
}

// readsFacts lists the sources whose facts a rule's condition or templates read.
func readsFacts(cat *facts.Catalog, v VerdictFile) []string {
	return cat.SourcesRead(strings.Join(append([]string{v.When, v.Title, v.Summary}, v.Actions...), "\n"))
}

// Catalog is the facts p was compiled against: the names its rules may read beyond its queries
// (nil: none).
func (p *Playbook) Catalog() *facts.Catalog { return p.catalog }
