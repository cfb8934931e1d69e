package slack

import (
	"strings"

	slackgo "github.com/slack-go/slack"

	"github.com/vllm-responder/vllm-responder/playbooks"
)

// fleetRows is how many pods the sibling table shows; the rest are counted in its last line.
const fleetRows = 8

// fleetBlocks renders the pod against its siblings: the headline ("this pod alone (1 of 3
// pods)") and a small fixed-width table, the focus pod first (">"), affected pods marked "!".
func fleetBlocks(v *playbooks.FleetView) []slackgo.Block {
	if v == nil || len(v.Rows) == 0 {
		return nil
	}
	head := "*Siblings*: " + escape(v.Headline())
	table := strings.ReplaceAll(strings.Join(v.Table(fleetRows), "\n"), "```", "'''")
	return []slackgo.Block{section(truncate(head+"\n```\n"+escape(table)+"\n```", maxSectionChars))}
}
