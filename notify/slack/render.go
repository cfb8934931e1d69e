package slack

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	texttemplate "text/template"
	"time"
	"unicode/utf8"

	"github.com/prometheus/alertmanager/template"
	slackgo "github.com/slack-go/slack"

	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

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

// buttonValue is what a diagnosis button carries back to the interaction handler: the alert's
// labels (or the triage scope), so the click needs no state on the server, and an HMAC that
// binds them to the button's action under a server key: a click with a value the message did
// not offer (crafted labels, another button's value) is refused.
type buttonValue struct {
	Labels map[string]string `json:"l"`
	Sig    string            `json:"s,omitempty"`
}

// errButtonSignature is a button value whose signature does not match.
var errButtonSignature = errors.New("button value: signature does not match (not a value this responder offered)")

// buttonKey is the server key that signs button values: derived from the signing secret (the
// app token with Socket Mode), which every replica shares.
func (c *Config) buttonKey() []byte {
	m := hmac.New(sha256.New, []byte(cmp.Or(c.SigningSecret.Reveal(), c.AppToken.Reveal(), c.BotToken.Reveal())))
	m.Write([]byte("vllm-responder button value v1"))
	return m.Sum(nil)
}

func buttonSig(key []byte, action string, labels map[string]string) string {
	b, _ := json.Marshal(labels) // map keys sorted: canonical
	m := hmac.New(sha256.New, key)
	m.Write([]byte(action))
	m.Write([]byte{0})
	m.Write(b)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// encodeButtonValue returns the signed value of the button for action, and false when it does
// not fit Slack's limit.
func encodeButtonValue(key []byte, action string, v buttonValue) (string, bool) {
	v.Sig = buttonSig(key, action, v.Labels)
	b, err := json.Marshal(v)
	if err != nil || len(b) > maxButtonValue {
		return "", false
	}
	return string(b), true
}

// decodeButtonValue parses the value of a click on action and checks its signature.
func decodeButtonValue(key []byte, action, s string) (buttonValue, error) {
	var v buttonValue
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return v, fmt.Errorf("button value: %w", err)
	}
	if !hmac.Equal([]byte(v.Sig), []byte(buttonSig(key, action, v.Labels))) {
		return buttonValue{}, errButtonSignature
	}
	return v, nil
}

// Rendering is pure: every message is a function of the notification (or the diagnosis) and of
// renderOptions, fixed at start from the configuration. Nothing here calls Slack, the store or
// the clock; the notifier (notifier.go) and the app deliver what these functions return.

// renderOptions is what a message shows besides its diagnoses: which buttons, the links and the
// storm threshold.
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
	// Grafana and Traces are the links' URL templates (nil: no such link); WindowBefore opens the
	// links' window this long before the alert started.
	Grafana, Traces *texttemplate.Template
	WindowBefore    time.Duration
	// StormThreshold: a message about more alerts than this is one storm summary.
	StormThreshold int
}

// newRenderOptions are the options of cfg (after SetDefaults and Validate): silence and capture
// say whether an Alertmanager and a capturer are configured.
func newRenderOptions(cfg *Config, silence, capture bool) renderOptions {
	return renderOptions{
		Buttons: cfg.interactive(), Capture: capture, Silence: silence,
		SilenceLabel: "Silence " + humanDuration(cfg.SilenceDuration), ButtonKey: cfg.buttonKey(),
		Grafana: cfg.grafanaTmpl, Traces: cfg.tracesTmpl, WindowBefore: cfg.TracesWindowBefore,
		StormThreshold: cfg.StormThreshold,
	}
}

var verdictEmoji = map[string]string{
	playbooks.VerdictCapacityPastKnee: ":chart_with_upwards_trend:",
	playbooks.VerdictKVPreemption:     ":recycle:",
	playbooks.VerdictKVPressure:       ":warning:",
	playbooks.VerdictPrefillBound:     ":inbox_tray:",
	playbooks.VerdictDecodeBound:      ":outbox_tray:",
	playbooks.VerdictClientAborts:     ":no_entry_sign:",
	playbooks.VerdictInconclusive:     ":grey_question:",
	playbooks.VerdictHealthy:          ":white_check_mark:",
	playbooks.VerdictNoData:           ":ghost:",
	playbooks.VerdictEngineStalled:    ":octagonal_sign:",
	playbooks.VerdictLoadImbalance:    ":scales:",
	playbooks.VerdictPrefixCollapse:   ":jigsaw:",
}

// escape makes text safe for mrkdwn: Slack reads &, < and > as control characters.
var mrkdwnEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func escape(s string) string { return mrkdwnEscaper.Replace(s) }

// escapeCode is escape for text inside `code`, where a backtick would end the span.
func escapeCode(s string) string { return escape(strings.ReplaceAll(s, "`", "'")) }

// truncate cuts s to at most n runes, marking the cut with an ellipsis.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

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
	icon, word := ":red_circle:", "FIRING"
	if status == notify.StatusResolved {
		icon, word = ":large_green_circle:", "RESOLVED"
	}
	name := cmp.Or(alertname, "alert")
	if count > 1 {
		return fmt.Sprintf("%s %s: %s (%d alerts)", icon, word, name, count)
	}
	return fmt.Sprintf("%s %s: %s", icon, word, name)
}

func evidenceLine(e playbooks.Evidence) string {
	name := cmp.Or(e.Title, e.Name)
	var b strings.Builder
	b.WriteString("• ")
	b.WriteString(escape(name))
	b.WriteString(": ")
	switch {
	case !e.HasValue():
		b.WriteString("_no data_")
		if e.Problem != "" {
			b.WriteString(" (" + escape(e.Problem) + ")")
		}
	default:
		b.WriteString("*" + escape(cmp.Or(e.Text, playbooks.FormatValue(e.Value, e.Unit))) + "*")
		if e.Problem != "" {
			b.WriteString(" :warning: " + escape(e.Problem))
		}
	}
	switch {
	case e.Baseline != nil:
		b.WriteString(" (baseline " + escape(cmp.Or(e.BaselineText, playbooks.FormatValue(e.Baseline, e.Unit))) + ")")
	case e.BaselineText != "":
		b.WriteString(" (" + escape(e.BaselineText) + ")")
	}
	return truncate(b.String(), maxEvidenceLine)
}

// evidenceBlocks packs the evidence lines into at most maxEvidenceSections sections and says how
// many lines did not fit.
func evidenceBlocks(ev []playbooks.Evidence) []slackgo.Block {
	if len(ev) == 0 {
		return nil
	}
	var blocks []slackgo.Block
	cur := "*Evidence*"
	shown := 0
	const note = 120 // room kept for the trimming note
	for i, e := range ev {
		line := evidenceLine(e)
		if len(cur)+1+len(line) > maxSectionChars-note {
			if len(blocks)+1 == maxEvidenceSections {
				cur += fmt.Sprintf("\n_…%d more evidence lines not shown; `responder triage --output json` lists them all._", len(ev)-i)
				break
			}
			blocks = append(blocks, section(cur))
			cur = ""
		}
		if cur != "" {
			cur += "\n"
		}
		cur += line
		shown++
	}
	_ = shown
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

var scopeOrder = []string{"model_name", "pod", "namespace"}

func scopeText(scope map[string]string) string {
	var parts []string
	names := map[string]string{"model_name": "model", "pod": "pod", "namespace": "namespace"}
	for _, k := range scopeOrder {
		if v := scope[k]; v != "" {
			parts = append(parts, names[k]+" `"+escapeCode(v)+"`")
		}
	}
	var rest []string
	for k := range scope {
		if names[k] == "" && scope[k] != "" {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range rest {
		parts = append(parts, escape(k)+" `"+escapeCode(scope[k])+"`")
	}
	if len(parts) == 0 {
		return "scope: all vLLM series"
	}
	return strings.Join(parts, " · ")
}

// diagnosisBlocks renders one diagnosis: verdict, summary, evidence, actions, scope and problems.
// It is used for alert messages (with links and buttons added by the caller) and for
// on-demand triage answers.
func diagnosisBlocks(d *playbooks.Diagnosis) []slackgo.Block {
	var blocks []slackgo.Block
	title := cmp.Or(d.Title, d.Verdict)
	head := fmt.Sprintf("%s *%s*  `%s`", cmp.Or(verdictEmoji[d.Verdict], ":mag:"), escape(title), escapeCode(d.Verdict))
	if d.Summary != "" {
		head += "\n" + escape(d.Summary)
	}
	if l := slowestLine(d.SlowestRequests); l != "" && !d.SummaryCitesTraces() {
		head += "\n" + l
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
	if !d.EvaluatedAt.IsZero() {
		meta += " · evaluated " + d.EvaluatedAt.UTC().Format("15:04:05 UTC")
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
	blocks := append([]slackgo.Block{contextBlock(intro)}, diagnosisBlocks(d)...)
	if buttons != nil {
		blocks = append(blocks, buttons)
	}
	return blocks
}

// alertWindow is the time range the links look at for one alert: from before bounds how long
// before its start.
func alertWindow(a template.Alert, now time.Time, before time.Duration) (time.Time, time.Time) {
	from := a.StartsAt.Add(-before)
	to := now
	if !a.EndsAt.IsZero() && a.EndsAt.Before(now) && a.Status == notify.StatusResolved {
		to = a.EndsAt
	}
	if a.StartsAt.IsZero() {
		from = now.Add(-time.Hour)
	}
	return from, to
}

// linksText is the row of links for one alert: where it fired, Grafana, runbook, traces.
func linksText(a template.Alert, labels map[string]string, now time.Time, o renderOptions) string {
	from, to := alertWindow(a, now, o.WindowBefore)
	data := newLinkData(labels, from, to)
	var links []string
	add := func(u, name string) {
		if u != "" {
			links = append(links, "<"+escape(u)+"|"+name+">")
		}
	}
	add(a.GeneratorURL, "Alert query")
	if u, err := renderURL(o.Grafana, data); err == nil {
		add(u, "Grafana")
	}
	add(a.Annotations["runbook_url"], "Runbook")
	if u, err := renderURL(o.Traces, data); err == nil {
		add(u, "Traces of slow requests")
	}
	return strings.Join(links, " · ")
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

// alertButtons is the row of buttons under one alert's diagnosis, or nil.
func alertButtons(item notify.Item, now time.Time, opts renderOptions) slackgo.Block {
	if !opts.Buttons {
		return nil
	}
	labels := item.Alert.Labels
	if len(labels) == 0 && item.Diagnosis != nil {
		labels = item.Diagnosis.Scope
	}
	key := opts.ButtonKey
	if _, ok := encodeButtonValue(key, actionRerun, buttonValue{Labels: labels}); !ok {
		return nil // labels too long for a button: no buttons at all
	}
	return buttonBlock(key, buttonScope{d: item.Diagnosis, labels: labels, now: now, alert: true,
		silence: opts.Silence && item.Alert.Fingerprint != "", silenceConfigured: opts.Silence,
		silenceLabel: opts.SilenceLabel, capture: opts.Capture})
}

// itemBlocks renders one alert with its diagnosis, links and buttons.
func itemBlocks(item notify.Item, now time.Time, opts renderOptions, withName bool) []slackgo.Block {
	var blocks []slackgo.Block
	a := item.Alert
	if withName {
		blocks = append(blocks, section(fmt.Sprintf("*%s* %s", escape(a.Labels["alertname"]), scopeText(pick(a.Labels, scopeOrder...)))))
	}
	switch {
	case item.Diagnosis != nil:
		blocks = append(blocks, diagnosisBlocks(item.Diagnosis)...)
	case a.Status == notify.StatusResolved:
		blocks = append(blocks, section(fmt.Sprintf(":large_green_circle: Resolved after %s", humanDuration(a.EndsAt.Sub(a.StartsAt)))))
	default:
		text := ":grey_question: *No playbook matches this alert*"
		if s := cmp.Or(a.Annotations["summary"], a.Annotations["description"]); s != "" {
			text += "\n" + escape(s)
		}
		blocks = append(blocks, section(text), contextBlock(labelsText(a.Labels)))
	}
	if l := linksText(a, a.Labels, now, opts); l != "" {
		blocks = append(blocks, contextBlock(l))
	}
	if a.Status != notify.StatusResolved {
		if b := alertButtons(item, now, opts); b != nil {
			blocks = append(blocks, b)
		}
	}
	return blocks
}

func pick(m map[string]string, keys ...string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

func labelsText(labels map[string]string) string {
	keys := slices.Sorted(maps.Keys(labels))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, escape(k)+"=`"+escapeCode(labels[k])+"`")
	}
	return strings.Join(parts, " ")
}

// humanDuration prints a duration the way an engineer says it: 42s, 23m, 1h 5m, 2d 3h.
func humanDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 24*time.Hour:
		h := int(d.Hours())
		if m := int(d.Minutes()) - 60*h; m > 0 {
			return fmt.Sprintf("%dh %dm", h, m)
		}
		return fmt.Sprintf("%dh", h)
	default:
		days := int(d.Hours()) / 24
		return fmt.Sprintf("%dd %dh", days, int(d.Hours())-24*days)
	}
}

func groupAlertname(nt *notify.Notification) string {
	if v := nt.GroupLabels["alertname"]; v != "" {
		return v
	}
	if v := nt.CommonLabels["alertname"]; v != "" {
		return v
	}
	for _, it := range nt.Items {
		if v := it.Alert.Labels["alertname"]; v != "" {
			return v
		}
	}
	return ""
}

// capBlocks keeps a message within Slack's 50 blocks, ending with a note when it had to cut.
func capBlocks(blocks []slackgo.Block) []slackgo.Block {
	if len(blocks) <= maxBlocks {
		return blocks
	}
	cut := len(blocks) - (maxBlocks - 1)
	out := slices.Clone(blocks[:maxBlocks-1])
	return append(out, contextBlock(fmt.Sprintf("_…%d more blocks not shown (Slack allows %d per message)._", cut, maxBlocks)))
}

// parentBlocks renders the group's first message: one diagnosis per alert, or a storm summary.
func parentBlocks(nt *notify.Notification, opts renderOptions) ([]slackgo.Block, string) {
	now := nt.ReceivedAt
	name := groupAlertname(nt)
	if len(nt.Items) > opts.StormThreshold {
		return stormBlocks(nt, name, "", opts)
	}
	blocks := []slackgo.Block{slackgo.NewHeaderBlock(plain(statusHeader(nt.Status, name, len(nt.Items)), maxHeaderChars))}
	for i, it := range nt.Items {
		if i > 0 {
			blocks = append(blocks, slackgo.NewDividerBlock())
		}
		blocks = append(blocks, itemBlocks(it, now, opts, len(nt.Items) > 1)...)
	}
	if nt.TruncatedAlerts > 0 {
		blocks = append(blocks, contextBlock(fmt.Sprintf(":information_source: Alertmanager left %d alerts of this group out of the payload.", nt.TruncatedAlerts)))
	}
	return capBlocks(blocks), fallbackText(nt, name)
}

// fallbackText is the message's text: notifications, screen readers and clients without blocks.
// Slack reads it as mrkdwn, so what comes from labels and templates is escaped: a label value
// `<!channel>` must not ping a channel.
func fallbackText(nt *notify.Notification, name string) string {
	s := strings.ToUpper(cmp.Or(nt.Status, notify.StatusFiring)) + " " + cmp.Or(name, "alert")
	if len(nt.Items) == 1 && nt.Items[0].Diagnosis != nil {
		d := nt.Items[0].Diagnosis
		s += ": " + cmp.Or(d.Title, d.Verdict)
		if d.Summary != "" {
			s += ". " + d.Summary
		}
	} else if len(nt.Items) > 1 {
		s += fmt.Sprintf(": %d alerts", len(nt.Items))
	}
	return escape(truncate(s, maxFallbackChars))
}

// stormBlocks summarises a group with many alerts in one message: a count per verdict and a
// compact table, trimmed to fit.
func stormBlocks(nt *notify.Notification, name, intro string, opts renderOptions) ([]slackgo.Block, string) {
	counts := map[string]int{}
	for _, it := range nt.Items {
		counts[itemVerdict(it)]++
	}
	verdicts := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		return cmp.Or(counts[b]-counts[a], strings.Compare(a, b))
	})
	var sum []string
	for _, v := range verdicts {
		sum = append(sum, fmt.Sprintf("%d × `%s`", counts[v], escapeCode(v)))
	}
	blocks := []slackgo.Block{slackgo.NewHeaderBlock(plain(statusHeader(nt.Status, name, len(nt.Items)), maxHeaderChars))}
	head := fmt.Sprintf(":rotating_light: *Alert storm: %d alerts in this group.* Summarised in one message instead of one per alert.\n%s", len(nt.Items), strings.Join(sum, " · "))
	if intro != "" {
		head = intro + "\n" + head
	}
	blocks = append(blocks, section(head))
	// A storm summarised by the dispatcher: its alerts share a group-wide diagnosis per playbook.
	seen := map[*playbooks.Diagnosis]bool{}
	for _, it := range nt.Items {
		d := it.Diagnosis
		if d == nil || seen[d] || len(seen) >= 3 {
			continue
		}
		seen[d] = true
		if shared := countShared(nt.Items, d); shared > 1 {
			blocks = append(blocks, section(truncate(fmt.Sprintf("*Group diagnosis* (%d alerts, group-wide queries over %s): `%s` %s\n%s",
				shared, scopeText(d.Scope), escapeCode(d.Verdict), escape(d.Title), escape(d.Summary)), maxSectionChars)))
		}
	}

	rows := make([]notify.Item, len(nt.Items))
	copy(rows, nt.Items)
	slices.SortStableFunc(rows, func(a, b notify.Item) int {
		return cmp.Or(strings.Compare(itemVerdict(a), itemVerdict(b)),
			strings.Compare(a.Alert.Labels["model_name"], b.Alert.Labels["model_name"]),
			strings.Compare(a.Alert.Labels["pod"], b.Alert.Labels["pod"]))
	})
	const w1, w2, w3 = 24, 28, 18
	line := func(verdict, model, pod string) string {
		return fmt.Sprintf("%-*s %-*s %s", w3, truncate(verdict, w3), w1, truncate(model, w1), truncate(pod, w2))
	}
	table := []string{line("verdict", "model", "pod")}
	size := len(table[0])
	shown := 0
	for _, it := range rows {
		l := line(itemVerdict(it), cmp.Or(it.Alert.Labels["model_name"], "-"), cmp.Or(it.Alert.Labels["pod"], it.Alert.Labels["instance"], "-"))
		if size+len(l)+200 > maxSectionChars {
			break
		}
		table = append(table, l)
		size += len(l) + 1
		shown++
	}
	text := "```\n" + escape(strings.Join(table, "\n")) + "\n```"
	if shown < len(rows) {
		text += fmt.Sprintf("\n_…and %d more alerts not listed._", len(rows)-shown)
	}
	blocks = append(blocks, section(text))
	var links []string
	if nt.ExternalURL != "" {
		links = append(links, "<"+escape(nt.ExternalURL)+"|Alertmanager>")
	}
	if len(nt.Items) > 0 {
		if l := linksText(nt.Items[0].Alert, nt.CommonLabels, nt.ReceivedAt, opts); l != "" {
			links = append(links, l)
		}
	}
	links = append(links, "Per-alert detail: `/vllm triage <model> <pod>`")
	blocks = append(blocks, contextBlock(links...))
	return capBlocks(blocks), fallbackText(nt, name)
}

func countShared(items []notify.Item, d *playbooks.Diagnosis) int {
	n := 0
	for _, it := range items {
		if it.Diagnosis == d {
			n++
		}
	}
	return n
}

func itemVerdict(it notify.Item) string {
	switch {
	case it.Diagnosis != nil:
		return it.Diagnosis.Verdict
	case it.Alert.Status == notify.StatusResolved:
		return "resolved"
	default:
		return "unmatched"
	}
}

// changeKind says why an alert is news in a thread reply.
type changeKind int

const (
	changeNew        changeKind = iota // new in the group
	changeFiredAgain                   // resolved and fired again (a new startsAt)
	changeVerdict                      // its verdict changed
)

// change is an alert a thread reply is about, and why; was is the verdict before a change.
type change struct {
	item notify.Item
	kind changeKind
	was  string
}

func (c change) intro() string {
	switch c.kind {
	case changeFiredAgain:
		return fmt.Sprintf(":repeat: *Fired again*: `%s`", escapeCode(itemVerdict(c.item)))
	case changeVerdict:
		return fmt.Sprintf(":arrows_counterclockwise: *Verdict changed*: `%s` → `%s`", escapeCode(c.was), escapeCode(itemVerdict(c.item)))
	default:
		return ":new: *New alert in this group*"
	}
}

// replyBlocks renders a reply in a group's thread: the new or changed alerts, each under what
// changed (a storm summary without its header when there are many), then the alerts resolved
// since; and its fallback text.
func replyBlocks(nt *notify.Notification, news []change, resolved []notify.Item, alertname string, opts renderOptions) ([]slackgo.Block, string) {
	var blocks []slackgo.Block
	var text string
	switch {
	case len(news) > opts.StormThreshold:
		view := *nt
		view.Items = nil
		for _, c := range news {
			view.Items = append(view.Items, c.item)
		}
		blocks, text = stormBlocks(&view, alertname, fmt.Sprintf(":new: *%d new or changed alerts in this group*", len(news)), opts)
		blocks = blocks[1:] // no header in a reply
	case len(news) > 0:
		for i, c := range news {
			if i > 0 {
				blocks = append(blocks, slackgo.NewDividerBlock())
			}
			blocks = append(blocks, section(c.intro()))
			blocks = append(blocks, itemBlocks(c.item, nt.ReceivedAt, opts, true)...)
		}
		text = fmt.Sprintf("%d new or changed alerts in %s", len(news), escape(cmp.Or(alertname, "this group")))
	}
	if len(resolved) > 0 {
		lines := make([]string, len(resolved))
		for i, it := range resolved {
			lines[i] = fmt.Sprintf("• *%s* %s after %s", escape(it.Alert.Labels["alertname"]),
				scopeText(pick(it.Alert.Labels, scopeOrder...)), humanDuration(it.Alert.EndsAt.Sub(it.Alert.StartsAt)))
		}
		blocks = append(blocks, section(":large_green_circle: *Resolved*\n"+strings.Join(lines, "\n")))
		if text == "" {
			text = fmt.Sprintf("%d alerts resolved", len(resolved))
		}
	}
	return capBlocks(blocks), truncate(text, maxFallbackChars)
}

// resolvedMessage is what a group's resolution posts: the parent edited (resolvedParent), its
// fallback text, and the reply in its thread, saying that it resolved at end and after how long.
func resolvedMessage(th *thread, end time.Time) (blocks []slackgo.Block, text, reply string) {
	took := humanDuration(end.Sub(th.StartedAt))
	note := fmt.Sprintf(":large_green_circle: *Resolved* at %s after %s", end.UTC().Format("15:04 UTC"), took)
	return resolvedParent(th, note), "RESOLVED " + escape(cmp.Or(th.Alertname, "alert")) + " after " + took,
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
	blocks := []slackgo.Block{slackgo.NewHeaderBlock(plain(statusHeader(notify.StatusResolved, th.Alertname, 0), maxHeaderChars)), section(note)}
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
