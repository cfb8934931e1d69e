package slack

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/rs/zerolog"
	slackgo "github.com/slack-go/slack"

	"github.com/vllm-responder/vllm-responder/notify"
)

// An incident (notify.Incident: the alerts of one model joined across alert names, pods and
// groups) is one thread. Its parent is claimed, posted, found again after a timeout and followed
// up as a group's is, under the incident's key instead of the group's (Notify), so the
// guarantees of one parent per group hold for one parent per incident, across replicas. What
// differs is what the thread says (followIncident):
//
//   - the parent leads with the incident: its verdict from its cause (the pod of a per-pod
//     cause), and its members as cause or symptom; below, the diagnosis it was posted with;
//   - a member whose verdict is the incident's adds a line to the parent (an edit, paced as
//     every call to the channel is), nothing else, unless the parent's list has no room for it
//     (notify.MaxMembers, the view's lines): then it is a reply, as evidence is;
//   - a member with another verdict is new evidence: a reply that says so, and the parent's
//     headline changes only when that verdict ranks above the incident's;
//   - a member's resolution updates its line; the incident's resolution edits the parent to
//     resolved, with how long the incident lasted, and says so in the thread;
//   - an alert that fires again within incidents.quiet_time reopens the same thread.

// incidentThreadKey is the key an incident's thread is kept under, where a group's is kept under
// its group key.
func incidentThreadKey(id string) string { return "incident:" + id }

// incidentBlocks are what an incident's parent shows above its diagnosis: its headline, its
// verdict from its cause, and its members, causes first.
func incidentBlocks(iv *notify.IncidentView) []slackgo.Block {
	blocks := []slackgo.Block{slackgo.NewHeaderBlock(plain(statusHeader(iv.Status, "incident "+iv.Name(), iv.Alerts), maxHeaderChars))}
	if d, ok := iv.Lasted(); ok {
		blocks = append(blocks, section(fmt.Sprintf(":large_green_circle: *Resolved* at %s after %s: every alert of the incident resolved.",
			iv.Resolved.UTC().Format("15:04 UTC"), notify.HumanDuration(d))))
	}
	head := fmt.Sprintf("%s *Incident verdict:* `%s`", cmp.Or(classEmoji[iv.Class], ":mag:"), escapeCode(iv.Verdict))
	if w := iv.Where(); w != "" {
		head += " " + escape(w)
	}
	if iv.Title != "" {
		head += ": *" + escape(iv.Title) + "*"
	}
	if iv.Summary != "" {
		head += "\n" + escape(iv.Summary)
	}
	if len(iv.Actions) > 0 && iv.Status != notify.StatusResolved {
		head += "\n*Act on the cause:* " + escape(strings.Join(iv.Actions, " · "))
	}
	blocks = append(blocks, section(truncate(head, maxSectionChars)))
	blocks = append(blocks, memberSections(iv)...)
	meta := fmt.Sprintf("Incident `%s` · %s · since %s", escapeCode(iv.ID), iv.Counts(), iv.Started.UTC().Format("Jan 2 15:04 UTC"))
	return append(blocks, contextBlock(meta, "The alerts of one model, joined: the verdict is the most causal of theirs."), slackgo.NewDividerBlock())
}

// maxMemberSections bounds the sections an incident's member lines take in its parent.
const maxMemberSections = 6

// memberSections list the incident's members, one line each, in as many sections as Slack's
// 3,000 characters a section need (at most maxMemberSections), and what the list leaves out.
func memberSections(iv *notify.IncidentView) []slackgo.Block {
	const room = 200 // kept for the last line
	lines := make([]string, len(iv.Members))
	for i, m := range iv.Members {
		line := "• "
		if m.Resolved {
			line += ":large_green_circle: "
		}
		line += "*" + escape(m.Alertname) + "*"
		if w := m.Where(); w != "" {
			line += " " + escape(w)
		}
		line += ": `" + escapeCode(m.Verdict) + "`" + escape(strings.TrimPrefix(m.Says(), m.Verdict))
		if m.Role != notify.RoleCause && m.Summary != "" {
			line += " — " + escape(truncate(m.Summary, 140))
		}
		if m.New {
			line += " :new:"
		}
		lines[i] = truncate(line, maxSectionChars-room)
	}
	blocks, cur := packSections("*Alerts* (cause first)", lines, room, maxMemberSections, func(left int) string {
		return fmt.Sprintf("_…%d more lines not shown._", left)
	})
	if t := iv.MoreText(); t != "" {
		cur += "\n_" + escape(t) + "._"
	}
	return append(blocks, section(cur))
}

// incidentParent is an incident's parent message: the incident, then body (the diagnosis it
// was first posted with, without its header, the buttons kept unless it resolved).
func incidentParent(iv *notify.IncidentView, body []slackgo.Block) []slackgo.Block {
	blocks := incidentBlocks(iv)
	for _, b := range body {
		if iv.Status == notify.StatusResolved && b.BlockType() == slackgo.MBTAction {
			continue
		}
		blocks = append(blocks, b)
	}
	return capBlocks(blocks)
}

// incidentText is an incident parent's fallback text.
func incidentText(iv *notify.IncidentView) string {
	s := iv.Headline() + ": " + iv.Verdict
	if w := iv.Where(); w != "" {
		s += " " + w
	}
	if iv.Title != "" {
		s += ". " + iv.Title
	}
	return escape(truncate(s, maxFallbackChars))
}

// bodyBlocks is a parent message without its header: what an incident's parent shows below the
// incident.
func bodyBlocks(v *notify.View, opts renderOptions) []slackgo.Block {
	sub := *v
	sub.Incident = nil
	blocks, _ := parentBlocks(&sub, opts)
	if len(blocks) > 0 && blocks[0].BlockType() == slackgo.MBTHeader {
		blocks = blocks[1:]
	}
	return blocks
}

// evidenceNote says why a reply in an incident's thread is news: the verdicts of its alerts
// differ from the incident's, and whether one now ranks above it.
func evidenceNote(iv *notify.IncidentView) string {
	if iv.VerdictWas != "" {
		return fmt.Sprintf(":arrow_up: *New evidence*: `%s` %s ranks above `%s`: it is the incident's verdict now.",
			escapeCode(iv.Verdict), escape(iv.Where()), escapeCode(iv.VerdictWas))
	}
	return fmt.Sprintf(":mag: *New evidence*: a verdict other than the incident's; the incident's verdict stays `%s`, which ranks above it.",
		escapeCode(iv.Verdict))
}

// followIncident follows up an incident's open thread: lines in the parent for the members that
// agree and for resolutions, a reply for new evidence, and the resolved parent once the incident
// resolved.
func (n *notifier) followIncident(ctx context.Context, log zerolog.Logger, nt *notify.Notification, th *thread) error {
	inc := nt.Incident
	iv := notify.NewView(nt, n.render.View).Incident
	news, resolved := th.news(nt)
	var evidence []change
	differs := false
	for _, c := range news {
		agrees := c.kind == changeNew && c.item.Verdict() == inc.Verdict && inc.Change.VerdictWas == ""
		if agrees && iv.Lists(fingerprint(c.item.Alert)) {
			continue // it agrees: a line in the parent
		}
		// New evidence, or an alert that agrees past what the parent lists: a reply.
		c.incident = true
		evidence = append(evidence, c)
		differs = differs || !agrees
	}
	if !inc.Open() {
		return n.resolveIncident(ctx, log, iv, th, inc.Seq)
	}
	if len(news) == 0 && len(resolved) == 0 && inc.Seq <= th.IncidentSeq {
		log.Debug().Msg("nothing changed in the incident; no edit, no reply")
		n.api.metrics.Messages.WithLabelValues("skipped").Inc()
		return nil
	}
	if inc.Seq > th.IncidentSeq {
		// Edits are paced as every call to the channel; a snapshot older than the one the
		// parent shows (another replica's, delivered later) is not shown.
		blocks := incidentParent(iv, th.body())
		if err := n.api.Update(ctx, th.Channel, th.TS, slackgo.MsgOptionBlocks(blocks...), slackgo.MsgOptionText(incidentText(iv), false)); err != nil {
			return err
		}
		n.api.metrics.Messages.WithLabelValues("edit").Inc()
		th.IncidentSeq = inc.Seq
	}
	if len(evidence) > 0 {
		blocks, text := replyBlocks(nt, evidence, nil, th.Alertname, n.render)
		note := evidenceNote(iv)
		if !differs {
			note = fmt.Sprintf(":heavy_plus_sign: *More alerts of the incident* than its parent lists, with its verdict `%s`.", escapeCode(iv.Verdict))
		}
		return n.reply(ctx, log, th, capBlocks(append([]slackgo.Block{section(note)}, blocks...)), text)
	}
	if err := n.saveThread(ctx, th); err != nil {
		log.Error().Err(err).Msg("saving slack thread state")
	}
	return nil
}

// resolveIncident edits the incident's parent to resolved, with how long it lasted, and says so
// in its thread; a new incident of the model, after the quiet time, has a parent of its own.
func (n *notifier) resolveIncident(ctx context.Context, log zerolog.Logger, iv *notify.IncidentView, th *thread, seq int64) error {
	reply := ":large_green_circle: Every alert of the incident resolved"
	if d, ok := iv.Lasted(); ok {
		reply += " after " + notify.HumanDuration(d)
	}
	reply += ". An alert of it that fires again soon rejoins this thread."
	th.IncidentSeq = seq
	return n.closeThread(ctx, log, th, incidentParent(iv, th.body()), incidentText(iv), reply, iv.Resolved)
}

// body is the parent's diagnosis below the incident, as it was posted.
func (t *thread) body() []slackgo.Block {
	var b slackgo.Blocks
	if len(t.Body) == 0 || json.Unmarshal(t.Body, &b) != nil {
		return nil
	}
	return b.BlockSet
}
