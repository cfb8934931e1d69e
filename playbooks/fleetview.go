package playbooks

import (
	"fmt"
	"slices"
	"strings"
)

// FleetView is the sibling comparison of a diagnosis: one row per pod of the model.
type FleetView struct {
	By string `json:"by"`
	// Siblings are the labels the compared pods share (model_name, namespace).
	Siblings map[string]string `json:"siblings,omitempty"`
	// Focus is the alerting pod, or the worst pod when the alert named none (FocusChosen).
	Focus       string `json:"focus"`
	FocusChosen bool   `json:"focus_chosen,omitempty"`
	// Pool is the focus pod's role where pods have roles (disaggregated prefill/decode serving):
	// Pods, Affected and the stats count that pool only; the rows list every pod with its role.
	Pool         string        `json:"pool,omitempty"`
	Pods         int           `json:"pods"`
	Affected     int           `json:"affected"`
	AffectedPods []string      `json:"affected_pods,omitempty"`
	Scope        string        `json:"scope"`
	Columns      []FleetColumn `json:"columns"`
	Rows         []FleetRow    `json:"rows"`
	// Ranks are the focus pod's data-parallel ranks (Pod holds the rank), when it has more than
	// one; Rank is the one the focus ranking puts first. (JSON keeps vLLM's word, engine.)
	Rank  DPRank     `json:"engine,omitempty"`
	Ranks []FleetRow `json:"engines,omitempty"`
}

// FleetColumn is one fleet query as shown.
type FleetColumn struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	Unit  string `json:"unit,omitempty"`
	Query string `json:"query"`
}

// FleetRow is one pod: a value per column (nil when the pod has no series for it).
type FleetRow struct {
	Pod       string     `json:"pod"`
	Namespace string     `json:"namespace,omitempty"`
	Role      string     `json:"role,omitempty"`
	Values    []*float64 `json:"values"`
	Texts     []string   `json:"texts"`
	Focus     bool       `json:"focus,omitempty"`
	Affected  bool       `json:"affected,omitempty"`
}

// NoLabel is how a series without the fleet's label is named (vLLM adds no pod label; the
// scrape config does).
const NoLabel = "(no label)"

// NoRole names the pool of pods without a role beside pods with one.
const NoRole = "unlabelled"

// fleetScope says whether the problem is this pod alone or the whole model (or, where pods have
// roles, the whole pool of its role: "the whole decode pool (3 of 3 decode pods)").
func fleetScope(v *FleetView, focusAffected bool) string {
	pods, whole, only := "pods", "the whole model", "the model's only pod"
	if v.Pool != "" {
		pods, whole, only = v.Pool+" pods", "the whole "+v.Pool+" pool", "the model's only "+v.Pool+" pod"
	}
	of := fmt.Sprintf("%d of %d %s", v.Affected, v.Pods, pods)
	switch {
	case v.Pods == 1 && v.Affected == 1:
		return only + " (1 of 1 " + pods + ")"
	case v.Pods == 1:
		return only + ", not affected (0 of 1 " + pods + ")"
	case v.Affected == 0:
		return "no " + strings.TrimSuffix(pods, "s") + " of the model stands out (0 of " + fmt.Sprint(v.Pods) + " " + pods + ")"
	case v.Affected == v.Pods:
		return whole + " (" + of + ")"
	case v.Affected == 1 && focusAffected:
		return "this pod alone (" + of + ")"
	case focusAffected:
		return "this pod and " + fmt.Sprint(v.Affected-1) + " more (" + of + ": " + strings.Join(firstN(v.AffectedPods, 5), ", ") + ")"
	default:
		return "not this pod: " + of + " (" + strings.Join(firstN(v.AffectedPods, 5), ", ") + ")"
	}
}

func firstN(xs []string, n int) []string {
	if len(xs) <= n {
		return xs
	}
	return append(slices.Clone(xs[:n]), fmt.Sprintf("%d more", len(xs)-n))
}

// fleetTemplateData is `.fleet` in templates.
func fleetTemplateData(v *FleetView) map[string]any {
	if v == nil {
		return map[string]any{"pod": "", "pods": 0, "affected": 0, "scope": "no sibling data", "affected_pods": "", "chosen": false,
			"engine": "", "engines": 0, "pool": ""}
	}
	return map[string]any{"pod": v.Focus, "pods": v.Pods, "affected": v.Affected, "scope": v.Scope,
		"affected_pods": strings.Join(firstN(v.AffectedPods, 5), ", "), "chosen": v.FocusChosen,
		"engine": string(v.Rank), "engines": len(v.Ranks), "pool": v.Pool}
}
