package slack

import (
	"strings"

	slackgo "github.com/slack-go/slack"

	"github.com/vllm-responder/vllm-responder/notify"
)

// fleetRows is how many pods the sibling table shows; the rest are counted in its last line.
const fleetRows = 8

// fleetBlocks renders the pod against its siblings: the headline ("this pod alone (1 of 3
// pods)") and the view's fixed-width table in a code block.
func fleetBlocks(f *notify.Fleet) []slackgo.Block {
	if f == nil {
		return nil
	}
	head := "*Siblings*: " + escape(f.Headline)
	table := strings.ReplaceAll(strings.Join(f.Table(fleetRows), "\n"), "```", "'''")
	return []slackgo.Block{section(truncate(head+"\n```\n"+escape(table)+"\n```", maxSectionChars))}
}
