package teams

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/traces"
)

// CardVersion is the Adaptive Card schema version of every card. 1.2 is the lowest that has
// everything the cards use (ActionSet, Container styles, fontType), so every Teams client
// renders them (desktop, web and mobile support up to 1.5; older Outlook and mobile clients
// fall back to fallbackText for a version they lack), as Alertmanager's own msteamsv2 does. The
// card check (cardcheck/) parses every golden card at this version: a property newer than 1.2
// fails it.
const CardVersion = "1.2"

// ContentType is the attachment type of an Adaptive Card in a Teams message.
const ContentType = "application/vnd.microsoft.card.adaptive"

// Limits of a card. Teams refuses a message over about 28 KB; the card is kept under
// maxCardBytes, dropping detail, then rows, then label text until it fits, and as a last
// resort it is a short card that says what it could not show (minimalCard).
const (
	maxCardBytes   = 24 << 10
	maxEvidence    = 12 // evidence facts per diagnosis
	maxFleetRows   = 8
	maxSlowest     = 5
	maxStormRows   = 30
	maxResolved    = 20
	maxTextChars   = 2000
	maxFallbackLen = 300
)

// Message is what a Teams Workflows webhook ("Post to a channel when a webhook request is
// received") takes: a message with one Adaptive Card attachment.
type Message struct {
	Type        string       `json:"type"`
	Attachments []Attachment `json:"attachments"`
}

// Attachment carries the card.
type Attachment struct {
	ContentType string  `json:"contentType"`
	ContentURL  *string `json:"contentUrl"`
	Content     Card    `json:"content"`
}

// Card is an Adaptive Card.
type Card struct {
	Schema       string    `json:"$schema"`
	Type         string    `json:"type"`
	Version      string    `json:"version"`
	FallbackText string    `json:"fallbackText,omitempty"`
	Body         []Element `json:"body"`
	Actions      []Action  `json:"actions,omitempty"`
	MSTeams      MSTeams   `json:"msteams"`
}

// MSTeams holds Teams' own card properties: a full-width card for the tables.
type MSTeams struct {
	Width string `json:"width"`
}

// Element is one card element (TextBlock, Container, ColumnSet, Column, FactSet, ActionSet),
// with the properties the cards use.
type Element struct {
	Type         string    `json:"type"`
	Text         string    `json:"text,omitempty"`
	Wrap         bool      `json:"wrap,omitempty"`
	Size         string    `json:"size,omitempty"`
	Weight       string    `json:"weight,omitempty"`
	Color        string    `json:"color,omitempty"`
	IsSubtle     bool      `json:"isSubtle,omitempty"`
	FontType     string    `json:"fontType,omitempty"`
	Spacing      string    `json:"spacing,omitempty"`
	Separator    bool      `json:"separator,omitempty"`
	Style        string    `json:"style,omitempty"`
	Bleed        bool      `json:"bleed,omitempty"`
	Width        string    `json:"width,omitempty"`
	Items        []Element `json:"items,omitempty"`
	Columns      []Element `json:"columns,omitempty"`
	Facts        []Fact    `json:"facts,omitempty"`
	Actions      []Action  `json:"actions,omitempty"`
	SelectAction *Action   `json:"selectAction,omitempty"`
}

// Fact is one row of a FactSet.
type Fact struct {
	Title string `json:"title"`
	Value string `json:"value"`
}

// Action is an Action.OpenUrl: the only action a webhook card can carry (nothing can answer a
// Submit). Its URL is always http(s) (the view keeps no other).
type Action struct {
	Type  string `json:"type"`
	Title string `json:"title,omitempty"`
	URL   string `json:"url"`
}

// Render is the Teams message of a notification: a firing card (each new alert with its
// diagnosis, or the storm summary, and any alerts that resolved meanwhile), or, when every
// alert of it resolved, a short resolution card that names the firing card it closes (Teams
// cannot edit or thread a webhook's message). It maps notify's view of the notification to an
// Adaptive Card; it is a pure function of the notification and the options. firingUnchecked
// says that whether the firing card was posted could not be checked (the notifier's store was
// down): a resolution card then says so instead of naming the card it closes.
func Render(n *notify.Notification, o notify.ViewOptions, firingUnchecked bool) Message {
	return renderView(notify.NewView(n, o), firingUnchecked)
}

// renderView is Render of the notification's view.
func renderView(v *notify.View, firingUnchecked bool) Message {
	var card Card
	fits := false
	for _, l := range []layout{{detailed: true, rows: maxStormRows, label: 200}, {rows: maxStormRows, label: 200}, {rows: 10, label: 100}, {rows: 3, label: 60}} {
		card = render(v, l, firingUnchecked)
		if b, err := json.Marshal(card); err == nil && len(b) <= maxCardBytes {
			fits = true
			break
		}
	}
	if !fits {
		card = minimalCard(v)
	}
	return Message{Type: "message", Attachments: []Attachment{{ContentType: ContentType, Content: card}}}
}

// layout is how much a card shows: alerts in full (unless the view summarises them, or
// detailed is false: the storm summary), rows of the lists, and runes of each label value
// (names, pods, models): a label can be kilobytes long.
type layout struct {
	detailed bool
	rows     int
	label    int
}

// lbl is label text cut to the layout's length.
func (l layout) lbl(s string) string { return notify.Truncate(s, l.label) }

func newCard() Card {
	return Card{Schema: "http://adaptivecards.io/schemas/adaptive-card.json", Type: "AdaptiveCard", Version: CardVersion,
		MSTeams: MSTeams{Width: "Full"}}
}

func render(v *notify.View, l layout, firingUnchecked bool) Card {
	card := newCard()
	name := l.lbl(cmp.Or(v.Alertname, "alert"))
	if len(v.Firing) == 0 {
		card.Body = resolutionBody(v, l, firingUnchecked)
		card.FallbackText = notify.Truncate(fmt.Sprintf("RESOLVED %s: %d alert(s)", name, len(v.Resolved)), maxFallbackLen)
	} else {
		card.Body = firingBody(v, l)
		if len(v.Resolved) > 0 {
			card.Body = append(card.Body, resolvedContainer(v.Resolved, l))
		}
		card.FallbackText = fallbackText(v, name)
	}
	if v.Alertmanager != nil {
		card.Actions = append(card.Actions, openURL(*v.Alertmanager))
	}
	return card
}

// minimalCard is the card of a notification that no layout fits under the limit: its headline,
// and where the rest is. Every string in it is bounded, so it always fits.
func minimalCard(v *notify.View) Card {
	card := newCard()
	color, style := "Attention", "attention"
	if len(v.Firing) == 0 {
		color, style = "Good", "good"
	}
	head := notify.Headline(v.Status, notify.Truncate(v.Alertname, 60), v.Count())
	card.Body = []Element{{Type: "Container", Style: style, Bleed: true, Items: []Element{{Type: "TextBlock", Text: md(head), Size: "Large", Weight: "Bolder", Color: color, Wrap: true}}}}
	if v.Storm != nil {
		counts := make([]string, 0, len(v.Storm.Counts))
		for _, c := range v.Storm.Counts {
			counts = append(counts, fmt.Sprintf("%d × %s", c.Alerts, c.Verdict)) // verdict ids: short, from the playbooks
		}
		card.Body = append(card.Body, text(strings.Join(counts, " · ")))
	}
	card.Body = append(card.Body, subtle("Its labels and diagnoses are too large for a Teams card: see Alertmanager, or responder triage --label model_name=... --label pod=..."))
	card.FallbackText = notify.Truncate(head, maxFallbackLen)
	if v.Alertmanager != nil && len(v.Alertmanager.URL) < 2000 {
		card.Actions = []Action{openURL(*v.Alertmanager)}
	}
	return card
}

// alertLine names one alert as the firing card shows it: its scope and when it fired ("model m
// · pod p · fired Jan 2 15:04 UTC"), with its name first when one is given.
func alertLine(name string, scope []notify.Label, started time.Time, l layout) string {
	var parts []string
	if name != "" {
		parts = append(parts, l.lbl(name))
	}
	if s := scopeText(scope, l); s != "" {
		parts = append(parts, s)
	}
	if !started.IsZero() {
		parts = append(parts, "fired "+started.UTC().Format("Jan 2 15:04 UTC"))
	}
	return strings.Join(parts, " · ")
}

// scopeText names a scope: "model m · pod p · namespace ns", then any other label.
func scopeText(scope []notify.Label, l layout) string {
	parts := make([]string, len(scope))
	for i, s := range scope {
		parts[i] = s.Word() + " " + l.lbl(s.Value)
	}
	return strings.Join(parts, " · ")
}

// firingBody is the header and the alerts: each in full, or the storm summary.
func firingBody(v *notify.View, l layout) []Element {
	header := []Element{{Type: "TextBlock", Text: md(notify.Headline(v.Status, l.lbl(v.Alertname), v.Count())), Size: "Large", Weight: "Bolder", Color: "Attention", Wrap: true}}
	if len(v.Firing) == 1 {
		header = append(header, subtle(alertLine("", v.Firing[0].Scope, v.Firing[0].StartsAt, l)))
	}
	body := []Element{{Type: "Container", Style: "attention", Bleed: true, Items: header}}
	if v.Incident != nil {
		body = append(body, incidentContainer(v.Incident, l))
	}
	if v.Truncated > 0 {
		body = append(body, subtle(fmt.Sprintf("Alertmanager left %d alerts of this group out of the payload (max_alerts).", v.Truncated)))
	}
	if v.Summarised || !l.detailed {
		return append(body, stormElements(v, l)...)
	}
	for _, av := range v.Firing {
		var items []Element
		if len(v.Firing) > 1 {
			items = append(items, Element{Type: "TextBlock", Text: md(alertLine(av.Alertname, av.Scope, av.StartsAt, l)), Weight: "Bolder", Wrap: true})
		}
		switch {
		case av.Shared:
			items = append(items, subtle("The same group-wide diagnosis as above."))
		case av.Diagnosis != nil:
			items = append(items, diagnosisElements(av.Diagnosis, l)...)
		default:
			items = append(items, unmatchedElements(av, l)...)
		}
		if len(av.Links) > 0 {
			items = append(items, Element{Type: "ActionSet", Actions: actions(av.Links)})
		}
		body = append(body, Element{Type: "Container", Separator: true, Spacing: "Medium", Items: items})
	}
	return body
}

// diagnosisElements renders one diagnosis: verdict, title, summary, evidence, fleet, slowest
// requests, actions, problems and where it came from.
func diagnosisElements(d *notify.DiagnosisView, l layout) []Element {
	out := []Element{
		{Type: "TextBlock", Text: md(d.Title), Size: "Medium", Weight: "Bolder", Wrap: true},
		{Type: "TextBlock", Text: "Verdict: " + md(d.Verdict), Color: classColor[d.Class], Weight: "Bolder", Spacing: "None", Wrap: true},
	}
	if out[1].Color == "" {
		out[1].Color = "Attention"
	}
	if d.Summary != "" {
		out = append(out, text(d.Summary))
	}
	if d.Traces != "" {
		out = append(out, text("Traces: "+d.Traces))
	}
	if len(d.Evidence) > 0 {
		out = append(out, heading("Evidence"), evidenceFacts(d.Evidence))
		if n := len(d.Evidence) - maxEvidence; n > 0 {
			out = append(out, subtle(fmt.Sprintf("…%d more evidence lines; responder triage --output json lists them all.", n)))
		}
	}
	out = append(out, fleetElements(d.Fleet, l)...)
	out = append(out, slowestElements(d.Slowest)...)
	if len(d.Actions) > 0 {
		lines := make([]string, len(d.Actions))
		for i, a := range d.Actions {
			lines[i] = fmt.Sprintf("%d. %s", i+1, md(a))
		}
		out = append(out, heading("Recommended actions"), Element{Type: "TextBlock", Text: notify.Truncate(strings.Join(lines, "\r"), maxTextChars), Wrap: true, Spacing: "Small"})
	}
	if d.Error != "" {
		out = append(out, warning("Degraded: "+d.Error))
	}
	if len(d.Missing) > 0 {
		out = append(out, warning("Missing: "+strings.Join(d.Missing, ", ")))
	}
	for _, note := range d.Notes {
		out = append(out, subtle(note))
	}
	if d.OfferProfile {
		out = append(out, subtle("Metrics do not explain this: a bounded profile capture can (responder profile --pod ..., or the Slack button)."))
	}
	meta := []string{}
	if s := scopeText(d.Scope, l); s != "" {
		meta = append(meta, s)
	}
	if d.Playbook != "" {
		meta = append(meta, "playbook "+d.Playbook)
	}
	if e := d.Evaluated(); e != "" {
		meta = append(meta, e)
	}
	return append(out, subtle(strings.Join(meta, " · ")))
}

func evidenceFacts(ev []notify.EvidenceRow) Element {
	set := Element{Type: "FactSet"}
	for i, e := range ev {
		if i == maxEvidence {
			break
		}
		v := e.Value
		if e.NoData {
			v = "no data"
		}
		if e.Baseline != "" {
			v += " (" + e.Baseline + ")"
		}
		if e.Problem != "" {
			v += " ⚠ " + e.Problem
		}
		set.Facts = append(set.Facts, Fact{Title: md(e.Title), Value: md(notify.Truncate(v, 300))})
	}
	return set
}

// fleetElements compares the pod with its siblings: the headline, then one fact per pod with
// its column values (the focus pod marked ▶, affected pods !).
func fleetElements(f *notify.Fleet, l layout) []Element {
	if f == nil {
		return nil
	}
	set := Element{Type: "FactSet"}
	for i, r := range f.Rows {
		if i == maxFleetRows {
			break
		}
		mark := ""
		switch {
		case r.Focus && r.Affected:
			mark = "▶ ! "
		case r.Focus:
			mark = "▶ "
		case r.Affected:
			mark = "! "
		}
		set.Facts = append(set.Facts, Fact{Title: md(mark + l.lbl(r.Name)), Value: md(strings.Join(r.Texts, " · "))})
	}
	out := []Element{heading("Fleet"), text(f.Headline), subtle(f.By + ": " + strings.Join(f.Columns, " · ")), set}
	if n := len(f.Rows) - maxFleetRows; n > 0 {
		out = append(out, subtle(fmt.Sprintf("…%d more %ss", n, f.By)))
	}
	return out
}

// slowestElements lists the slowest traced requests, each row opening its trace.
func slowestElements(r *traces.Report) []Element {
	if r == nil {
		return nil
	}
	out := []Element{heading(r.Title()), subtle(r.Heading())}
	switch {
	case r.Error != "":
		return append(out, warning("Not available: "+r.Error))
	case len(r.Requests) == 0:
		out = append(out, text(r.Summary))
	default:
		out = append(out, text(r.Summary))
		for i, q := range r.Requests {
			if i == maxSlowest {
				out = append(out, subtle(fmt.Sprintf("…%d more", len(r.Requests)-i)))
				break
			}
			row := Element{Type: "ColumnSet", Spacing: "Small", Columns: []Element{
				{Type: "Column", Width: "auto", Items: []Element{{Type: "TextBlock", Text: traces.FormatDuration(q.Duration), Weight: "Bolder"}}},
				{Type: "Column", Width: "stretch", Items: []Element{{Type: "TextBlock", Wrap: true, Text: md(fmt.Sprintf("queue %s · prefill %s · decode %s · prompt %s · out %s%s",
					traces.FormatDuration(q.Queue), traces.FormatDuration(q.Prefill), traces.FormatDuration(q.Decode),
					traces.FormatTokens(q.PromptTokens), traces.FormatTokens(q.CompletionTokens), requestID(q.RequestID)))}}},
			}}
			if q.Link != "" {
				a := openURL(notify.Link{Title: "Open trace", URL: q.Link})
				row.SelectAction = &a
			}
			out = append(out, row)
		}
	}
	return append(out, subtle(r.MissingNote()))
}

func requestID(id string) string {
	if id == "" {
		return ""
	}
	return " · " + id
}

func unmatchedElements(av notify.AlertView, l layout) []Element {
	out := []Element{{Type: "TextBlock", Text: "No playbook matches this alert", Weight: "Bolder", Wrap: true}}
	if av.Summary != "" {
		out = append(out, text(av.Summary))
	}
	parts := make([]string, len(av.Labels))
	for i, lb := range av.Labels {
		parts[i] = lb.Name + "=" + l.lbl(lb.Value)
	}
	return append(out, subtle(strings.Join(parts, " ")))
}

// stormElements renders the view's storm summary: a count per verdict, the group-wide
// diagnoses the alerts share, and one row per alert.
func stormElements(v *notify.View, l layout) []Element {
	sum := make([]string, len(v.Storm.Counts))
	for i, c := range v.Storm.Counts {
		sum[i] = fmt.Sprintf("%d × %s", c.Alerts, c.Verdict)
	}
	out := []Element{
		{Type: "TextBlock", Text: md(fmt.Sprintf("Alert storm: %d alerts, summarised in one card.", len(v.Firing))), Weight: "Bolder", Wrap: true},
		text(strings.Join(sum, " · ")),
	}
	for _, s := range v.Storm.Shared {
		d := s.Diagnosis
		out = append(out, text(fmt.Sprintf("Group diagnosis (%d alerts, group-wide queries over %s): %s: %s. %s", s.Alerts, scopeText(d.Scope, l), d.Verdict, d.Title, d.Summary)))
	}
	set := Element{Type: "FactSet"}
	for i, r := range v.Storm.Rows {
		if i == l.rows {
			break
		}
		set.Facts = append(set.Facts, Fact{Title: md(r.Verdict), Value: md(l.lbl(cmp.Or(r.Model, "-")) + " · " + l.lbl(cmp.Or(r.Pod, "-")))})
	}
	out = append(out, set)
	if n := len(v.Storm.Rows) - l.rows; n > 0 {
		out = append(out, subtle(fmt.Sprintf("…and %d more alerts not listed.", n)))
	}
	return append(out, subtle("Per-alert detail: responder triage --label model_name=... --label pod=..., or /vllm triage in Slack."))
}

// resolutionBody is the card of a resolved group: what resolved, and which firing card it
// closes (the firing card's header and each alert's start, as that card shows them); or, when
// the notifier could not check that a firing card was posted, that it could not.
func resolutionBody(v *notify.View, l layout, firingUnchecked bool) []Element {
	name := l.lbl(cmp.Or(v.Alertname, "alert"))
	closes := fmt.Sprintf("Closes the card “FIRING: %s” (Teams cannot edit it).", name)
	if firingUnchecked {
		closes = fmt.Sprintf("Whether this responder posted a card “FIRING: %s” could not be checked: its store is unavailable.", name)
	}
	body := []Element{
		{Type: "Container", Style: "good", Bleed: true, Items: []Element{
			{Type: "TextBlock", Text: md(notify.Headline(notify.StatusResolved, name, len(v.Resolved))), Size: "Large", Weight: "Bolder", Color: "Good", Wrap: true},
			subtle(closes),
		}},
	}
	if v.Incident != nil {
		body = append(body, incidentContainer(v.Incident, l))
	}
	return append(body, resolvedList(v.Resolved, l))
}

// incidentContainer names the incident a card's alerts belong to (Teams cannot thread a
// webhook's cards: each card of an incident names it): its id and key, what this card's alerts
// did to it, its verdict from its cause (with the pod of a per-pod cause), and its members as
// cause or symptom, causes first.
func incidentContainer(iv *notify.IncidentView, l layout) Element {
	head := "Incident " + iv.ID + " · " + l.lbl(iv.Name())
	if c := iv.Change(); c != "" {
		head += ": " + c
	}
	verdict := "Verdict: " + iv.Verdict
	if w := iv.Where(); w != "" {
		verdict += " " + l.lbl(w)
	}
	if iv.Title != "" {
		verdict += " · " + iv.Title
	}
	color := classColor[iv.Class]
	if iv.Status == notify.StatusResolved {
		color = "Good"
	}
	state := iv.Counts() + " · since " + iv.Started.UTC().Format("Jan 2 15:04 UTC")
	if d, ok := iv.Lasted(); ok {
		state = iv.Counts() + " · resolved after " + notify.HumanDuration(d)
	}
	items := []Element{
		{Type: "TextBlock", Text: md(head), Weight: "Bolder", Wrap: true},
		{Type: "TextBlock", Text: md(verdict), Color: color, Weight: "Bolder", Spacing: "None", Wrap: true},
		subtle(state),
	}
	members := Element{Type: "FactSet"}
	for i, m := range iv.Members {
		if i == l.rows {
			break
		}
		name := l.lbl(m.Alertname)
		if w := m.Where(); w != "" {
			name += " · " + l.lbl(w)
		}
		says := m.Says()
		if m.New {
			says += " (new)"
		}
		members.Facts = append(members.Facts, Fact{Title: md(name), Value: md(says)})
	}
	items = append(items, members)
	more := iv.More
	for _, m := range iv.Members[min(l.rows, len(iv.Members)):] {
		more += m.Alerts()
	}
	if more > 0 {
		items = append(items, subtle(fmt.Sprintf("…and %d more alerts of the incident, not listed.", more)))
	}
	return Element{Type: "Container", Style: "emphasis", Separator: true, Items: items}
}

// resolvedContainer lists the alerts that resolved beside new firing ones.
func resolvedContainer(resolved []notify.Line, l layout) Element {
	return Element{Type: "Container", Style: "good", Separator: true, Items: []Element{
		{Type: "TextBlock", Text: fmt.Sprintf("Resolved meanwhile (%d)", len(resolved)), Weight: "Bolder", Color: "Good", Wrap: true},
		resolvedList(resolved, l),
	}}
}

func resolvedList(resolved []notify.Line, l layout) Element {
	rows := min(l.rows, maxResolved)
	var lines []string
	for i, r := range resolved {
		if i == rows {
			lines = append(lines, fmt.Sprintf("…and %d more.", len(resolved)-i))
			break
		}
		line := "- " + md(alertLine(r.Alertname, r.Scope, r.StartsAt, l))
		if d, ok := r.Lasted(); ok {
			line += md(fmt.Sprintf(", resolved %s after %s", r.EndsAt.UTC().Format("15:04 UTC"), notify.HumanDuration(d)))
		}
		lines = append(lines, line)
	}
	return Element{Type: "TextBlock", Text: strings.Join(lines, "\r"), Wrap: true}
}

func actions(links []notify.Link) []Action {
	out := make([]Action, len(links))
	for i, l := range links {
		out[i] = openURL(l)
	}
	return out
}

func openURL(l notify.Link) Action { return Action{Type: "Action.OpenUrl", Title: l.Title, URL: l.URL} }

func fallbackText(v *notify.View, name string) string {
	s := "FIRING " + name
	if len(v.Firing) == 1 && v.Firing[0].Diagnosis != nil {
		s += ": " + v.Firing[0].Diagnosis.Title
	} else if len(v.Firing) > 1 {
		s += fmt.Sprintf(": %d alerts", len(v.Firing))
	}
	return notify.Truncate(s, maxFallbackLen)
}

// classColor colours the verdict line by the verdict's class: red for what needs action now,
// amber for pressure, a deliberate pause and what could not be decided, green for healthy.
var classColor = map[playbooks.Class]string{
	playbooks.ClassProblem:     "Attention",
	playbooks.ClassPressure:    "Warning",
	playbooks.ClassPaused:      "Warning",
	playbooks.ClassUnexplained: "Warning",
	playbooks.ClassNoData:      "Warning",
	playbooks.ClassHealthy:     "Good",
}

func heading(s string) Element {
	return Element{Type: "TextBlock", Text: s, Weight: "Bolder", Spacing: "Medium", Wrap: true}
}

func text(s string) Element {
	return Element{Type: "TextBlock", Text: md(notify.Truncate(s, maxTextChars)), Wrap: true}
}

func subtle(s string) Element {
	return Element{Type: "TextBlock", Text: md(notify.Truncate(s, maxTextChars)), IsSubtle: true, Size: "Small", Wrap: true, Spacing: "Small"}
}

func warning(s string) Element {
	return Element{Type: "TextBlock", Text: md(notify.Truncate(s, maxTextChars)), Color: "Warning", Wrap: true}
}

// md escapes text for a TextBlock, which Teams reads as Markdown (a CommonMark subset): a label
// value or a summary must not turn into emphasis or a link. Backslash escapes are CommonMark's;
// an underscore inside a word (model_name) never starts emphasis and stays as it is.
func md(s string) string {
	var b strings.Builder
	r := []rune(s)
	for i, c := range r {
		switch c {
		case '\\', '*', '[', ']', '`', '~', '<', '>':
			b.WriteRune('\\')
		case '_':
			inWord := i > 0 && i < len(r)-1 && isWordRune(r[i-1]) && isWordRune(r[i+1])
			if !inWord {
				b.WriteRune('\\')
			}
		}
		b.WriteRune(c)
	}
	return b.String()
}

func isWordRune(c rune) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c > 127
}
