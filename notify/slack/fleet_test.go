package slack

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/vllm-responder/vllm-responder/playbooks"
)

// A model on 50 pods: the sibling table shows the focus pod first and at most fleetRows pods,
// counts the rest, and stays within Slack's limits.
func TestTheSiblingTableOfFiftyPodsIsShortAndCountsTheRest(t *testing.T) {
	it := item(playbooks.VerdictLoadImbalance, "vllm-7")
	rows := map[string][3]float64{}
	for i := range 50 {
		rows[fmt.Sprintf("vllm-%d", i)] = [3]float64{1, 10, 1500}
	}
	rows["vllm-7"] = [3]float64{140, 256, 12000}
	it.Diagnosis.Fleet = fleetFor("vllm-7", rows)
	it.Diagnosis.Fleet.Pods = 50
	blocks, _ := parentOf(firingNotification("g", it), testRender())
	checkLimits(t, blocks)
	raw, _ := json.Marshal(blocks)
	s := string(raw)
	if !strings.Contains(s, "*Siblings*: this pod alone") || !strings.Contains(s, "… 42 more pods (0 of them affected)") {
		t.Errorf("no sibling table with a count of the pods left out: %s", s)
	}
	if i, j := strings.Index(s, "gt;! vllm-7"), strings.Index(s, "vllm-0 "); i < 0 || j < 0 || i > j {
		t.Errorf("the focus pod vllm-7 should lead the table: %s", s)
	}
}
