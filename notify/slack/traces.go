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

// slowestBlocks renders the slowest traced requests (the view's report: its links http(s) only)
// compactly, one line each with its trace link; nil when the diagnosis has no trace report.
func slowestBlocks(r *traces.Report) []slackgo.Block {
	if r == nil {
		return nil
	}
	head := fmt.Sprintf(":mag_right: *%s* · service `%s` · `%s`", r.Title(), escapeCode(r.Service), escapeCode(r.Operation))
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
			took := traces.FormatDuration(q.Duration)
			if q.Link != "" {
				took = "<" + escape(q.Link) + "|" + took + ">"
			}
			line := fmt.Sprintf("\n• %s queue %s · prefill %s · decode %s · prompt %s · out %s",
				took, traces.FormatDuration(q.Queue),
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
		contextBlock(escape(r.MissingNote()) + more),
	}
}

// slowestReply is the thread reply that lists the slowest requests of each diagnosis that has a
// trace report; nil when none has, or for a storm.
func slowestReply(v *notify.View) []slackgo.Block {
	if v.Summarised {
		return nil
	}
	var blocks []slackgo.Block
	for _, av := range v.Firing {
		if av.Diagnosis == nil || av.Shared || av.Diagnosis.Slowest == nil {
			continue
		}
		if len(blocks) > 0 {
			blocks = append(blocks, slackgo.NewDividerBlock())
		}
		if len(v.Firing) > 1 {
			blocks = append(blocks, alertHeading(av.Alertname, av.Scope))
		}
		blocks = append(blocks, slowestBlocks(av.Diagnosis.Slowest)...)
	}
	if len(blocks) == 0 {
		return nil
	}
	return capBlocks(blocks)
}

// postSlowest replies in the thread with the slowest requests (slowestReply). A failure is
// logged; it never fails the notification (the diagnosis is out).
func (n *notifier) postSlowest(ctx context.Context, log zerolog.Logger, th *thread, v *notify.View) {
	blocks := slowestReply(v)
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
