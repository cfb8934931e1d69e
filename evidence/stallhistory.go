package evidence

import (
	"strings"

	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

// The stall history's recorded forms, until the playbook language carries them (a `recorded:`
// key beside the gate fragment's stalled_for and stalled_recent, expanded as their expr is):
// copies of the two fleet queries every built-in playbook shares, over the recording rules
// deploy/prometheus ships (group vllm-responder-stall-history). They say what the raw forms
// say, to the rules' interval instead of 5 s steps: stalled_for, seconds since the engine's
// token counters last moved (an hour at most); stalled_recent, the seconds of the last 15
// minutes in which it held requests without progress, each stall's first minute added back.

// Recorded forms of the fleet queries, with the fleet's placeholders ($siblings: the model's
// pods; $by: what the fleet groups by).
const (
	// The last move of the hour, or the oldest sample when there was none (the record's sign
	// says which): no subquery over the hour.
	recordedStalledFor = `min by ($by) (time() - abs(max_over_time(engine:vllm_tokens_moved:timestamp{$siblings}[1h])))`

	recordedStalledRecent = `max by ($by) (count_over_time((engine:vllm_stall_held:1m{$siblings} > 0)[15m:5s]) * 5` +
		` + 60 * clamp_min(count_over_time((engine:vllm_stall_held:1m{$siblings} > 0 unless engine:vllm_stall_held:1m{$siblings} offset 5s > 0)[15m:5s])` +
		` or 0 * count_over_time((engine:vllm_stall_held:1m{$siblings} > 0)[15m:5s]), 1))`

	// The rules recorded this model an hour ago (stalled_for looks back an hour), or the model
	// is younger than the hour and they recorded it 15 minutes ago (stalled_recent looks back
	// 15 minutes): a recorded form would then say what the raw form says.
	recordedPresent = `group(engine:vllm_stall_held:1m{$siblings} offset 1h)` +
		` or (group(engine:vllm_stall_held:1m{$siblings} offset 15m) unless on () group(vllm:num_requests_running{$siblings} offset 1h))`
)

// StallHistory is the AlternativesFunc of the stall history: recorded forms for the fleet
// queries named stalled_for and stalled_recent of the built-in playbooks (a user's playbook may
// mean something else by those names), with vLLM's series named as n says (the check reads one
// of vLLM's own).
func StallHistory(n vllmnames.Naming) AlternativesFunc {
	// $siblings stands in for matchers of its length while the parser reads the template.
	present, err := n.RewriteTemplate(recordedPresent, strings.ReplaceAll(recordedPresent, "$siblings", `_s="1234"`))
	if err != nil {
		panic("evidence: the stall history's check does not parse: " + err.Error())
	}
	return func(p *playbooks.Playbook, labels map[string]string, ps playbooks.PodScope) Alternatives {
		if p.Fleet == nil || !p.Builtin {
			return Alternatives{}
		}
		var scope []string
		for _, s := range p.Scope {
			if s != p.Fleet.By {
				scope = append(scope, s)
			}
		}
		siblings, _, _ := playbooks.ScopeMatchers(scope, labels)
		expand := func(tmpl string) string {
			return strings.NewReplacer("$siblings", siblings, "$by", fleetBy(ps)).Replace(tmpl)
		}
		alts := Alternatives{Fleet: make([]Alternative, len(p.Fleet.Queries))}
		for i, q := range p.Fleet.Queries {
			switch q.Name {
			case "stalled_for":
				alts.Fleet[i] = Alternative{Expr: expand(recordedStalledFor), Present: expand(present)}
			case "stalled_recent":
				alts.Fleet[i] = Alternative{Expr: expand(recordedStalledRecent), Present: expand(present)}
			}
		}
		return alts
	}
}

// fleetBy is what the fleet's queries group by ($by), as the playbooks write it.
func fleetBy(ps playbooks.PodScope) string {
	by := "namespace, " + ps.Name() + ", instance, engine"
	if ps.Name() == vllmnames.FallbackPodLabel {
		by = "namespace, instance, engine"
	}
	if ps.Role != "" {
		by += ", " + ps.Role
	}
	return by
}
