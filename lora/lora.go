// Package lora reads the LoRA facts of a pod from vLLM's `vllm:lora_requests_info`, a gauge whose
// labels carry the state (max_lora, running_lora_adapters, waiting_lora_adapters) and whose value
// is the time it was last reported. vLLM 0.32 keeps one series per label set ever seen and never
// removes one, so the current state is the series with the greatest value (topk), and there is no
// series before the first request. The family has no model_name (and no engine): it is the API
// server's view, read per pod (namespace and pod). waiting_lora_adapters is not read: vLLM builds
// it from the events of requests that were scheduled, so it never names an adapter that waits
// (docs/vllm-facts.md, "LoRA").
package lora

import (
	"context"
	"strconv"
	"strings"
	"unicode"

	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/facts"
)

// Metric is the family, as vLLM names it (the evidence engine renames it: vllm.metric_prefix).
const Metric = "vllm:lora_requests_info"

// QueryName names the lookup's one query (Fact.Query of every LoRA fact).
const QueryName = "lora_requests_info"

// SourceName names the LoRA series as a fact source (facts.Source).
const SourceName = "vllm lora_requests_info"

// Source is the LoRA series as a fact source (package facts): the newest state of the
// diagnosis' pod (Lookup), its series selected as every vLLM query's are (facts.Subject.Series).
// It looks nothing up when the diagnosis has no pod.
type Source struct{}

// Name implements facts.Source.
func (Source) Name() string { return SourceName }

// Facts implements facts.Source.
func (Source) Facts() []facts.Fact { return Names() }

// Lookup implements facts.Source.
func (Source) Lookup(ctx context.Context, ask facts.Asker, s facts.Subject) *facts.Result {
	sel := s.Series(Metric)
	if sel == "" {
		return nil
	}
	r := Lookup(ctx, ask, sel)
	return &facts.Result{Facts: r.Facts(), Notes: r.Notes(), Queries: map[string]string{QueryName: r.Query}}
}

// Report is what the newest series of the pod says.
type Report struct {
	// Query is the PromQL sent.
	Query string
	// Found is true when the pod has a series (it served a request since it started).
	Found bool
	// Max is max_lora (nil when absent or not a count).
	Max *float64
	// Running are the names in running_lora_adapters.
	Running []string
	// Problem says why the query has no answer (it failed).
	Problem string
}

// Query is the PromQL of the pod's newest state: selector selects the pod's series of Metric,
// as written by the caller (renamed, router series excluded, the pod quoted into it).
func Query(selector string) string { return "topk(1, " + selector + ")" }

// Lookup reads the newest series of selector (see Query) as of the asker's time.
func Lookup(ctx context.Context, ask facts.Asker, selector string) *Report {
	r := &Report{Query: Query(selector)}
	a := ask(ctx, []facts.Query{{Name: QueryName, Expr: r.Query}})
	if p, ok := a.Problems[QueryName]; ok {
		r.Problem = p
		return r
	}
	r.read(a.Vectors[QueryName])
	return r
}

// read takes the state from the series with the greatest value (topk answers one, but a
// Prometheus that federates two copies of a pod may answer more).
func (r *Report) read(v model.Vector) {
	var newest *model.Sample
	for _, s := range v {
		if newest == nil || s.Value > newest.Value {
			newest = s
		}
	}
	if newest == nil {
		return
	}
	r.Found = true
	r.Max = count(string(newest.Metric["max_lora"]))
	r.Running = adapters(string(newest.Metric["running_lora_adapters"]))
}

// count reads a label as a count: a whole number from 0 up, else nil.
func count(s string) *float64 {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 32)
	if err != nil {
		return nil
	}
	x := float64(n)
	return &x
}

// adapters splits a comma-separated list of adapter names (vLLM joins them with ","), leaving out
// empty names and the control characters a name could carry into a message.
func adapters(s string) []string {
	var out []string
	for n := range strings.SplitSeq(s, ",") {
		n = strings.TrimSpace(strings.Map(func(c rune) rune {
			if unicode.IsControl(c) {
				return -1
			}
			return c
		}, n))
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

// maxNamed is how many running adapters lora_running_adapters names; the rest are counted.
const maxNamed = 16

// named is the running adapters for a message: "a, b, c", at most maxNamed of them, then "and N
// more".
func named(names []string) string {
	if len(names) <= maxNamed {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:maxNamed], ", ") + " and " + strconv.Itoa(len(names)-maxNamed) + " more"
}

var table = []facts.Fact{
	{Name: "lora_max", Doc: "the pod's `--max-loras`: adapters in one engine step (`max_lora` of the newest `vllm:lora_requests_info` series, the one with the greatest value; no series before the pod's first request)", Title: "LoRA slots (--max-loras)", Unit: "count", Shown: true},
	{Name: "lora_running", Doc: "how many adapters that series names in `running_lora_adapters` (vLLM 0.32 names no adapter that waits for a slot: `waiting_lora_adapters` is not read)", Title: "LoRA adapters running", Unit: "count", Shown: true},
	{Name: "lora_running_adapters", Doc: "their names, comma-separated (the first 16, then how many more)", Title: "LoRA adapters running (names)", Label: true, Shown: true},
}

// Names lists the LoRA facts.
func Names() []facts.Fact {
	out := make([]facts.Fact, len(table))
	for i, f := range table {
		f.Query, f.Source = QueryName, SourceName
		out[i] = f
	}
	return out
}

// Facts are the report's facts (r nil: none, the lookup not made).
func (r *Report) Facts() *facts.Facts {
	f := facts.New(SourceName)
	if r == nil || !r.Found {
		return f
	}
	f.SetNumber("lora_max", r.Max)
	n := float64(len(r.Running))
	f.SetNumber("lora_running", &n)
	f.SetLabel("lora_running_adapters", named(r.Running))
	return f
}

// Notes say why the lookup has no answer.
func (r *Report) Notes() []string {
	if r.Problem == "" {
		return nil
	}
	return []string{"the LoRA query (" + Metric + ") failed: " + r.Problem}
}
