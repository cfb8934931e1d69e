package slack

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

// Rendering maps notify's view of a notification (what it says, built once for every
// integration) to Block Kit: Slack's markup, escaping and limits, the buttons and the thread.
// It is pure: every message is a function of the view (or the diagnosis) and of renderOptions,
// fixed at start from the configuration. Nothing here calls Slack, the store or the clock; the
// notifier (notifier.go) and the app deliver what these functions return.

// Slack's limits (https://api.slack.com/reference/block-kit/blocks).
const (
	maxBlocks        = 50
	maxHeaderChars   = 150
	maxSectionChars  = 3000
	maxContextItems  = 10
	maxButtonValue   = 2000
	maxFallbackChars = 3000
	maxEvidenceLine  = 600
	// maxEvidenceSections bounds how many sections the evidence of one diagnosis may fill.
	maxEvidenceSections = 2
)

// renderOptions is what a message shows besides its view: which buttons, and the view's own
// options (the links' templates, the storm threshold).
type renderOptions struct {
	// Buttons shows Re-run triage and Silence (the app receives interactions).
	Buttons bool
	// Capture shows Capture profile when the diagnosis offers it (a capturer is configured).
	Capture bool
	// Silence shows the Silence button (an Alertmanager is configured).
	Silence bool
	// SilenceLabel is the silence button's text, "Silence 1h".
	SilenceLabel string
	// ButtonKey signs the buttons' values (Config.buttonKey).
	ButtonKey []byte
	// View is what the views of notifications are built with.
	View notify.ViewOptions
}

// newRenderOptions are the options of cfg (after SetDefaults and Validate): silence and capture
// say whether an Alertmanager and a capturer are configured; storm is the storm threshold
// (dispatch.storm_threshold).
func newRenderOptions(cfg *Config, silence, capture bool, storm int) renderOptions {
	return renderOptions{
		Buttons: cfg.interactive(), Capture: capture, Silence: silence,
		SilenceLabel: "Silence " + notify.HumanDuration(cfg.SilenceDuration), ButtonKey: cfg.buttonKey(),
		View: notify.ViewOptions{StormThreshold: storm, Links: cfg.linkTemplates(), WindowBefore: cfg.TracesWindowBefore},
	}
}

// classEmoji marks a verdict by its class (playbooks.Class).
var classEmoji = map[playbooks.Class]string{
	playbooks.ClassProblem:     ":rotating_light:",
	playbooks.ClassPressure:    ":warning:",
	playbooks.ClassPaused:      ":double_vertical_bar:",
	playbooks.ClassUnexplained: ":grey_question:",
	playbooks.ClassHealthy:     ":white_check_mark:",
	playbooks.ClassNoData:      ":ghost:",
}

// escape makes text safe for mrkdwn: Slack reads &, < and > as control characters.
var mrkdwnEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func escape(s string) string { return mrkdwnEscaper.Replace(s) }

// escapeCode is escape for text inside `code`, where a backtick would end the span.
func escapeCode(s string) string { return escape(strings.ReplaceAll(s, "`", "'")) }

func truncate(s string, n int) string { return notify.Truncate(s, n) }

func mrkdwn(s string) *slackgo.TextBlockObject {
	return slackgo.NewTextBlockObject(slackgo.MarkdownType, truncate(s, maxSectionChars), false, false)
}

func plain(s string, n int) *slackgo.TextBlockObject {
	return slackgo.NewTextBlockObject(slackgo.PlainTextType, truncate(s, n), true, false)
}

func section(s string) slackgo.Block { return slackgo.NewSectionBlock(mrkdwn(s), nil, nil) }

func contextBlock(parts ...string) slackgo.Block {
	var els []slackgo.MixedElement
	for _, p := range parts {
		if p == "" || len(els) == maxContextItems {
			continue
		}
		els = append(els, mrkdwn(p))
	}
	return slackgo.NewContextBlock("", els...)
}

func statusHeader(status, alertname string, count int) string {
	icon := ":red_circle:"
	if status == notify.StatusResolved {
		icon = ":large_green_circle:"
	}
	return icon + " " + notify.Headline(status, alertname, count)
}

func evidenceLine(e notify.EvidenceRow) string {
	var b strings.Builder
	b.WriteString("• " + escape(e.Title) + ": ")
	switch {
	case e.NoData:
		b.WriteString("_no data_")
		if e.Problem != "" {
			b.WriteString(" (" + escape(e.Problem) + ")")
		}
	default:
		b.WriteString("*" + escape(e.Value) + "*")
		if e.Problem != "" {
			b.WriteString(" :warning: " + escape(e.Problem))
		}
	}
	if e.Baseline != "" {
		b.WriteString(" (" + escape(e.Baseline) + ")")
	}
	return truncate(b.String(), maxEvidenceLine)
}

// packSections packs lines, under head, into sections of at most maxSectionChars less reserve
// (room kept for a note after the last line), at most maxSections of them: the full sections, and
// the text of the last, which more(lines left out) ends where the lines did not all fit.
func packSections(head string, lines []string, reserve, maxSections int, more func(left int) string) ([]slackgo.Block, string) {
	var blocks []slackgo.Block
	cur := head
	for i, line := range lines {
		if len(cur)+1+len(line) > maxSectionChars-reserve {
			if len(blocks)+1 == maxSections {
				cur += "\n" + more(len(lines)-i)
				break
			}
			blocks = append(blocks, section(cur))
			cur = ""
		}
		if cur != "" {
			cur += "\n"
		}
		cur += line
	}
	return blocks, cur
}

// evidenceBlocks packs the evidence lines into at most maxEvidenceSections sections and says how
// many lines did not fit.
func evidenceBlocks(ev []notify.EvidenceRow) []slackgo.Block {
	if len(ev) == 0 {
		return nil
	}
	lines := make([]string, len(ev))
	for i, e := range ev {
		lines[i] = evidenceLine(e)
	}
	blocks, cur := packSections("*Evidence*", lines, 120, maxEvidenceSections, func(left int) string {
		return fmt.Sprintf("_…%d more evidence lines not shown; `responder triage --output json` lists them all._", left)
	})
	return append(blocks, section(cur))
}

func actionsText(actions []string) string {
	if len(actions) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("*Recommended actions*")
	for i, a := range actions {
		fmt.Fprintf(&b, "\n%d. %s", i+1, escape(a))
	}
	return b.String()
}

// scopeText names a scope: model `m` · pod `p` · namespace `ns`, then any other label.
func scopeText(scope []notify.Label) string {
	if len(scope) == 0 {
		return "scope: all vLLM series"
	}
	parts := make([]string, len(scope))
	for i, l := range scope {
		parts[i] = escape(l.Word()) + " `" + escapeCode(l.Value) + "`"
	}
	return strings.Join(parts, " · ")
}

// labelsText lists labels: name=`value` ...
func labelsText(labels []notify.Label) string {
	parts := make([]string, len(labels))
	for i, l := range labels {
		parts[i] = escape(l.Name) + "=`" + escapeCode(l.Value) + "`"
	}
	return strings.Join(parts, " ")
}

// linksText is a row of links: "<url|Alert query> · <url|Runbook> ...".
func linksText(links []notify.Link) string {
	parts := make([]string, len(links))
	for i, l := range links {
		parts[i] = "<" + escape(l.URL) + "|" + escape(l.Title) + ">"
	}
	return strings.Join(parts, " · ")
}

// diagnosisBlocks renders one diagnosis: verdict, summary, evidence, sibling table, actions,
// scope and problems. It is used for alert messages (with links and buttons added by the
// caller) and for on-demand triage answers. The slowest requests go in the thread
// (slowestReply); the message carries their one-line summary.
func diagnosisBlocks(d *notify.DiagnosisView) []slackgo.Block {
	var blocks []slackgo.Block
	head := fmt.Sprintf("%s *%s*  `%s`", cmp.Or(classEmoji[d.Class], ":mag:"), escape(d.Title), escapeCode(d.Verdict))
	if d.Summary != "" {
		head += "\n" + escape(d.Summary)
	}
	if d.Traces != "" {
		head += "\n:mag_right: *Traces:* " + escape(d.Traces)
	}
	blocks = append(blocks, section(truncate(head, maxSectionChars)))
	blocks = append(blocks, evidenceBlocks(d.Evidence)...)
	blocks = append(blocks, fleetBlocks(d.Fleet)...)
	if t := actionsText(d.Actions); t != "" {
		blocks = append(blocks, section(t))
	}
	var problems []string
	if d.Error != "" {
		problems = append(problems, ":warning: Degraded: "+escape(d.Error))
	}
	if len(d.Missing) > 0 {
		problems = append(problems, ":warning: Missing: "+escape(strings.Join(d.Missing, ", ")))
	}
	for _, n := range d.Notes {
		problems = append(problems, ":information_source: "+escape(n))
	}
	meta := scopeText(d.Scope)
	if d.Playbook != "" {
		meta += " · playbook `" + escapeCode(d.Playbook) + "`"
	}
	if e := d.Evaluated(); e != "" {
		meta += " · " + e
	}
	blocks = append(blocks, contextBlock(meta))
	if len(problems) > 0 {
		blocks = append(blocks, contextBlock(problems...))
	}
	return blocks
}

// answerBlocks renders an on-demand diagnosis (/vllm triage, Re-run triage): a line saying who
// asked for it, the diagnosis, and its row of buttons (nil: none).
func answerBlocks(intro string, d *playbooks.Diagnosis, buttons slackgo.Block) []slackgo.Block {
	blocks := append([]slackgo.Block{contextBlock(intro)}, diagnosisBlocks(notify.NewDiagnosisView(d))...)
	if buttons != nil {
		blocks = append(blocks, buttons)
	}
	return blocks
}

// staleDiagnosis is the age past which the re-run button says it runs now, not at the time of
// the diagnosis it sits under (a message edited on resolve keeps its firing-time diagnosis).
const staleDiagnosis = 2 * time.Minute

// rerunLabel is the re-run button's text: it always evaluates at the time of the click, which an
// older diagnosis' button says.
func rerunLabel(d *playbooks.Diagnosis, now time.Time) string {
	if d.EvaluatedAt.IsZero() || now.Sub(d.EvaluatedAt) <= staleDiagnosis {
		return "Re-run triage"
	}
	return "Re-run triage now (this was " + d.EvaluatedAt.UTC().Format("15:04") + " UTC)"
}

// alertButtons is the row of buttons under one alert's diagnosis, or nil. The buttons carry the
// alert's labels as received (signed), not as shown.
func alertButtons(av notify.AlertView, now time.Time, opts renderOptions) slackgo.Block {
	if !opts.Buttons {
		return nil
	}
	var d *playbooks.Diagnosis
	if av.Diagnosis != nil {
		d = av.Diagnosis.Diagnosis
	}
	labels := av.Alert.Labels
	if len(labels) == 0 && d != nil {
		labels = d.Scope
	}
	key := opts.ButtonKey
	if _, ok := encodeButtonValue(key, actionRerun, buttonValue{Labels: labels}); !ok {
		return nil // labels too long for a button: no buttons at all
	}
	return buttonBlock(key, buttonScope{d: d, labels: labels, now: now, alert: true,
		silence: opts.Silence && av.Alert.Fingerprint != "", silenceConfigured: opts.Silence,
		silenceLabel: opts.SilenceLabel, capture: opts.Capture})
}

// alertHeading names one alert of several: *VLLMTimeToFirstTokenP99High* model `m` · pod `p`.
func alertHeading(name string, scope []notify.Label) slackgo.Block {
	return section(fmt.Sprintf("*%s* %s", escape(name), scopeText(scope)))
}

// itemBlocks renders one firing alert with its diagnosis, links and buttons.
func itemBlocks(av notify.AlertView, now time.Time, opts renderOptions, withName bool) []slackgo.Block {
	var blocks []slackgo.Block
	if withName {
		blocks = append(blocks, alertHeading(av.Alertname, av.Scope))
	}
	switch {
	case av.Shared:
		blocks = append(blocks, contextBlock(fmt.Sprintf("The same group-wide diagnosis as above: `%s`", escapeCode(av.Diagnosis.Verdict))))
	case av.Diagnosis != nil:
		blocks = append(blocks, diagnosisBlocks(av.Diagnosis)...)
	default:
		text := ":grey_question: *No playbook matches this alert*"
		if av.Summary != "" {
			text += "\n" + escape(av.Summary)
		}
		blocks = append(blocks, section(text), contextBlock(labelsText(av.Labels)))
	}
	if l := linksText(av.Links); l != "" {
		blocks = append(blocks, contextBlock(l))
	}
	if b := alertButtons(av, now, opts); b != nil {
		blocks = append(blocks, b)
	}
	return blocks
}

// capBlocks keeps a message within Slack's 50 blocks, ending with a note when it had to cut.
func capBlocks(blocks []slackgo.Block) []slackgo.Block {
	if len(blocks) <= maxBlocks {
		return blocks
	}
	cut := len(blocks) - (maxBlocks - 1)
	out := append([]slackgo.Block(nil), blocks[:maxBlocks-1]...)
	return append(out, contextBlock(fmt.Sprintf("_…%d more blocks not shown (Slack allows %d per message)._", cut, maxBlocks)))
}

// parentBlocks renders the group's first message: one diagnosis per alert, or a storm summary.
func parentBlocks(v *notify.View, opts renderOptions) ([]slackgo.Block, string) {
	if v.Incident != nil {
		// An incident's parent: the incident, then this diagnosis (incident.go).
		return incidentParent(v.Incident, bodyBlocks(v, opts)), incidentText(v.Incident)
	}
	if v.Summarised {
		return stormBlocks(v, "", opts)
	}
	blocks := []slackgo.Block{slackgo.NewHeaderBlock(plain(statusHeader(v.Status, v.Alertname, v.Count()), maxHeaderChars))}
	for i, av := range v.Firing {
		if i > 0 {
			blocks = append(blocks, slackgo.NewDividerBlock())
		}
		blocks = append(blocks, itemBlocks(av, v.At, opts, len(v.Firing) > 1)...)
	}
	if v.Truncated > 0 {
		blocks = append(blocks, contextBlock(fmt.Sprintf(":information_source: Alertmanager left %d alerts of this group out of the payload.", v.Truncated)))
	}
	return capBlocks(blocks), fallbackText(v)
}

// fallbackText is the message's text: notifications, screen readers and clients without blocks.
// Slack reads it as mrkdwn, so what comes from labels and templates is escaped: a label value
// `<!channel>` must not ping a channel.
func fallbackText(v *notify.View) string {
	s := strings.ToUpper(v.Status) + " " + cmp.Or(v.Alertname, "alert")
	if len(v.Firing) == 1 && v.Firing[0].Diagnosis != nil {
		d := v.Firing[0].Diagnosis
		s += ": " + d.Title
		if d.Summary != "" {
			s += ". " + d.Summary
		}
	} else if len(v.Firing) > 1 {
		s += fmt.Sprintf(": %d alerts", len(v.Firing))
	}
	return escape(truncate(s, maxFallbackChars))
}

// stormBlocks renders the view's storm summary in one message: a count per verdict, the
// group-wide diagnoses and a compact table, trimmed to fit.
func stormBlocks(v *notify.View, intro string, opts renderOptions) ([]slackgo.Block, string) {
	var sum []string
	for _, c := range v.Storm.Counts {
		sum = append(sum, fmt.Sprintf("%d × `%s`", c.Alerts, escapeCode(c.Verdict)))
	}
	blocks := []slackgo.Block{slackgo.NewHeaderBlock(plain(statusHeader(v.Status, v.Alertname, len(v.Firing)), maxHeaderChars))}
	head := fmt.Sprintf(":rotating_light: *Alert storm: %d alerts in this group.* Summarised in one message instead of one per alert.\n%s", len(v.Firing), strings.Join(sum, " · "))
	if intro != "" {
		head = intro + "\n" + head
	}
	blocks = append(blocks, section(head))
	for _, s := range v.Storm.Shared {
		d := s.Diagnosis
		blocks = append(blocks, section(truncate(fmt.Sprintf("*Group diagnosis* (%d alerts, group-wide queries over %s): `%s` %s\n%s",
			s.Alerts, scopeText(d.Scope), escapeCode(d.Verdict), escape(d.Title), escape(d.Summary)), maxSectionChars)))
	}
	const w1, w2, w3 = 24, 28, 18
	line := func(verdict, model, pod string) string {
		return fmt.Sprintf("%-*s %-*s %s", w3, truncate(verdict, w3), w1, truncate(model, w1), truncate(pod, w2))
	}
	table := []string{line("verdict", "model", "pod")}
	size := len(table[0])
	shown := 0
	for _, r := range v.Storm.Rows {
		l := line(r.Verdict, cmp.Or(r.Model, "-"), cmp.Or(r.Pod, "-"))
		if size+len(l)+200 > maxSectionChars {
			break
		}
		table = append(table, l)
		size += len(l) + 1
		shown++
	}
	text := "```\n" + escape(strings.Join(table, "\n")) + "\n```"
	if shown < len(v.Storm.Rows) {
		text += fmt.Sprintf("\n_…and %d more alerts not listed._", len(v.Storm.Rows)-shown)
	}
	blocks = append(blocks, section(text))
	var am string
	if v.Alertmanager != nil {
		am = linksText([]notify.Link{*v.Alertmanager})
	}
	blocks = append(blocks, contextBlock(am, linksText(v.GroupLinks), "Per-alert detail: `/vllm triage <model> <pod>`"))
	return capBlocks(blocks), fallbackText(v)
}

// changeKind says why an alert is news in a thread reply.
type changeKind int

const (
	changeNew        changeKind = iota // new in the group
	changeFiredAgain                   // resolved and fired again (a new startsAt)
	changeVerdict                      // its verdict changed
)

// change is an alert a thread reply is about, and why; was is the verdict before a change;
// incident says the thread is an incident's, not a group's.
type change struct {
	item     notify.Item
	kind     changeKind
	was      string
	incident bool
}

func (c change) intro() string {
	switch c.kind {
	case changeFiredAgain:
		return fmt.Sprintf(":repeat: *Fired again*: `%s`", escapeCode(c.item.Verdict()))
	case changeVerdict:
		return fmt.Sprintf(":arrows_counterclockwise: *Verdict changed*: `%s` → `%s`", escapeCode(c.was), escapeCode(c.item.Verdict()))
	case changeNew:
		if c.incident {
			return fmt.Sprintf(":new: *New alert in this incident*: `%s`", escapeCode(c.item.Verdict()))
		}
	}
	return ":new: *New alert in this group*"
}

// replyBlocks renders a reply in a group's thread: the new or changed alerts, each under what
// changed (a storm summary without its header when there are many), then the alerts resolved
// since; and its fallback text.
func replyBlocks(nt *notify.Notification, news []change, resolved []notify.Item, alertname string, opts renderOptions) ([]slackgo.Block, string) {
	sub := *nt
	sub.Items = nil
	for _, c := range news {
		sub.Items = append(sub.Items, c.item)
	}
	sub.Items = append(sub.Items, resolved...)
	v := notify.NewView(&sub, opts.View)
	v.Alertname = cmp.Or(notify.Printable(alertname), v.Alertname) // a thread's record may predate Printable
	var blocks []slackgo.Block
	var text string
	switch {
	case v.Summarised:
		blocks, text = stormBlocks(v, fmt.Sprintf(":new: *%d new or changed alerts in this group*", len(news)), opts)
		blocks = blocks[1:] // no header in a reply
	case len(news) > 0:
		for i, c := range news {
			if i > 0 {
				blocks = append(blocks, slackgo.NewDividerBlock())
			}
			blocks = append(blocks, section(c.intro()))
			blocks = append(blocks, itemBlocks(v.Firing[i], v.At, opts, true)...)
		}
		text = fmt.Sprintf("%d new or changed alerts in %s", len(news), escape(cmp.Or(alertname, "this group")))
	}
	if len(v.Resolved) > 0 {
		lines := make([]string, len(v.Resolved))
		for i, l := range v.Resolved {
			lines[i] = fmt.Sprintf("• *%s* %s", escape(l.Alertname), scopeText(l.Scope))
			if d, ok := l.Lasted(); ok {
				lines[i] += " after " + notify.HumanDuration(d)
			}
		}
		blocks = append(blocks, section(":large_green_circle: *Resolved*\n"+strings.Join(lines, "\n")))
		if text == "" {
			text = fmt.Sprintf("%d alerts resolved", len(v.Resolved))
		}
	}
	return capBlocks(blocks), truncate(text, maxFallbackChars)
}

// resolvedMessage is what a group's resolution posts: the parent edited (resolvedParent), its
// fallback text, and the reply in its thread, saying that it resolved at end and after how long.
func resolvedMessage(th *thread, end time.Time) (blocks []slackgo.Block, text, reply string) {
	took := notify.HumanDuration(end.Sub(th.StartedAt))
	note := fmt.Sprintf(":large_green_circle: *Resolved* at %s after %s", end.UTC().Format("15:04 UTC"), took)
	return resolvedParent(th, note), "RESOLVED " + escape(cmp.Or(notify.Printable(th.Alertname), "alert")) + " after " + took,
		fmt.Sprintf(":large_green_circle: All alerts in this group resolved after %s.", took)
}

// resolvedParent is the parent message as it reads once resolved: a resolved header, no buttons,
// and a line that says when and after how long.
func resolvedParent(th *thread, note string) []slackgo.Block {
	var old slackgo.Blocks
	if len(th.Blocks) > 0 {
		if err := json.Unmarshal(th.Blocks, &old); err != nil {
			old = slackgo.Blocks{}
		}
	}
	blocks := []slackgo.Block{slackgo.NewHeaderBlock(plain(statusHeader(notify.StatusResolved, notify.Printable(th.Alertname), 0), maxHeaderChars)), section(note)}
	for i, b := range old.BlockSet {
		if i == 0 && b.BlockType() == slackgo.MBTHeader {
			continue
		}
		if b.BlockType() == slackgo.MBTAction {
			continue
		}
		blocks = append(blocks, b)
	}
	return capBlocks(blocks)
}
