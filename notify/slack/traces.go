package slack

import (
	"context"
	"fmt"
	"strings"

	"github.com/rs/zerolog"
	slackgo "github.com/slack-go/slack"

	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/traces"
)

// maxSlowestShown bounds the requests listed in one thread reply.
const maxSlowestShown = 10

// slowestBlocks renders the slowest traced requests compactly, one line each with its trace
// link; nil when the diagnosis has no trace report.
func slowestBlocks(r *traces.Report) []slackgo.Block {
	if r == nil {
		return nil
	}
	head := fmt.Sprintf(":mag_right: *Slowest requests* · service `%s` · `%s`", escapeCode(r.Service), escapeCode(r.Operation))
	if r.MinDuration > 0 {
		head += " ≥ " + traces.FormatDuration(r.MinDuration)
	}
	if r.SearchLink != "" {
		head += " · <" + escape(r.SearchLink) + "|search in Jaeger>"
	}
	var b strings.Builder
	b.WriteString(head)
	switch {
	case r.Error != "":
		b.WriteString("\n:warning: Not available: " + escape(r.Error))
		return []slackgo.Block{section(truncate(b.String(), maxSectionChars))}
	case len(r.Requests) == 0:
		b.WriteString("\n" + escape(r.Summary))
	default:
		b.WriteString("\n" + escape(r.Summary))
		for i, q := range r.Requests {
			if i == maxSlowestShown {
				fmt.Fprintf(&b, "\n_…%d more_", len(r.Requests)-i)
				break
			}
			line := fmt.Sprintf("\n• <%s|%s> queue %s · prefill %s · decode %s · prompt %s · out %s",
				escape(q.Link), traces.FormatDuration(q.Duration), traces.FormatDuration(q.Queue),
				traces.FormatDuration(q.Prefill), traces.FormatDuration(q.Decode),
				traces.FormatTokens(q.PromptTokens), traces.FormatTokens(q.CompletionTokens))
			if q.RequestID != "" {
				line += " `" + escapeCode(q.RequestID) + "`"
			}
			b.WriteString(line)
		}
	}
	more := ""
	if r.Capped {
		more = fmt.Sprintf(" (the %d most recent)", r.Searched)
	} else {
		more = fmt.Sprintf(" (%d traced in the window)", r.Searched)
	}
	return []slackgo.Block{
		section(truncate(b.String(), maxSectionChars)),
		contextBlock(escape(traces.AbortedNote) + more),
	}
}

// slowestReply is the thread reply that lists the slowest requests of each diagnosis that has a
// trace report; nil when none has, or for a storm.
func slowestReply(items []notify.Item, opts renderOptions) []slackgo.Block {
	if len(items) > opts.StormThreshold {
		return nil
	}
	var blocks []slackgo.Block
	for _, it := range items {
		if it.Diagnosis == nil || it.Diagnosis.SlowestRequests == nil {
			continue
		}
		if len(blocks) > 0 {
			blocks = append(blocks, slackgo.NewDividerBlock())
		}
		if len(items) > 1 {
			blocks = append(blocks, section(fmt.Sprintf("*%s* %s", escape(it.Alert.Labels["alertname"]), scopeText(pick(it.Alert.Labels, scopeOrder...)))))
		}
		blocks = append(blocks, slowestBlocks(it.Diagnosis.SlowestRequests)...)
	}
	if len(blocks) == 0 {
		return nil
	}
	return capBlocks(blocks)
}

// postSlowest replies in the thread with the slowest requests (slowestReply). A failure is
// logged; it never fails the notification (the diagnosis is out).
func (n *notifier) postSlowest(ctx context.Context, log zerolog.Logger, th *thread, items []notify.Item) {
	blocks := slowestReply(items, n.render)
	if blocks == nil {
		return
	}
	if err := rateLimitRetried(ctx, n.cfg, func(ctx context.Context) error {
		_, _, err := n.api.Post(ctx, th.Channel, slackgo.MsgOptionTS(th.TS), slackgo.MsgOptionBlocks(blocks...),
			slackgo.MsgOptionText("Slowest requests from traces", false), slackgo.MsgOptionDisableLinkUnfurl())
		return err
	}); err != nil {
		log.Warn().Err(err).Msg("slowest requests not posted in the thread")
		return
	}
	n.api.metrics.Messages.WithLabelValues("reply").Inc()
}

// slowestLine is the one line a diagnosis message carries about its traces (the details go in
// the thread).
func slowestLine(r *traces.Report) string {
	if r == nil || len(r.Requests) == 0 {
		return ""
	}
	return ":mag_right: *Traces:* " + escape(r.Summary)
}
