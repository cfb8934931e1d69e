package playbooks

import "slices"

// causalOrder is the causal order of the verdicts, cause before symptom: of the verdicts of one
// incident's alerts, the first in this list is the incident's. (It moves into the table of
// verdicts, beside each one's meaning, once that table carries the classes.)
var causalOrder = []string{
	"gpu-fault", VerdictEngineRestarting, VerdictEngineStalled, VerdictEnginePaused, VerdictKVTransfer,
	"gpu-throttled", VerdictFrontendBound, "held-upstream", VerdictLoadImbalance, VerdictPrefixCollapse,
	VerdictSpecDecode, VerdictLoRACapacity, VerdictKVPreemption, VerdictCapacityPastKnee,
	"prefill-interference", VerdictPrefillBound, VerdictDecodeBound, VerdictClientAborts, VerdictKVPressure,
	VerdictInconclusive, VerdictNoData, VerdictHealthy,
}

// CausalRank is verdict id's place in the causal order: 1 for the most causal; an unknown id
// (an alert no playbook matched) ranks after every verdict.
func CausalRank(id string) int {
	if i := slices.Index(causalOrder, id); i >= 0 {
		return i + 1
	}
	return len(causalOrder) + 1
}

// NamesCause reports whether verdict id names why an alert fires (a problem, a pressure, a
// pause): not inconclusive, healthy, no data or unknown.
func NamesCause(id string) bool {
	switch id {
	case VerdictInconclusive, VerdictHealthy, VerdictNoData:
		return false
	}
	return slices.Contains(causalOrder, id)
}
