package teams

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/alertmanager/template"

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
// maxCardBytes, dropping detail (then rows) until it fits.
const (
	maxCardBytes   = 24 << 10
	maxDetailed    = 3  // alerts shown with their whole diagnosis; more make a storm summary
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
// Submit).
type Action struct {
	Type  string `json:"type"`
	Title string `json:"title,omitempty"`
	URL   string `json:"url"`
}

// Render is the Teams message of a notification: a firing card (each new alert with its
// diagnosis, or a storm summary, and any alerts that resolved meanwhile), or, when every alert
// of it resolved, a short resolution card that names the firing card it closes (Teams cannot
// edit or thread a webhook's message). It is a pure function of the notification.
func Render(n *notify.Notification) Message {
	var card Card
	for _, layout := range []layout{{detailed: maxDetailed, rows: maxStormRows}, {rows: maxStormRows}, {rows: 10}, {rows: 3}} {
		card = render(n, layout)
		if b, err := json.Marshal(card); err == nil && len(b) <= maxCardBytes {
			break
		}
	}
	return Message{Type: "message", Attachments: []Attachment{{ContentType: ContentType, Content: card}}}
}

// layout is how much a card shows: alerts in full (up to detailed, else the storm summary) and
// rows of the lists.
type layout struct {
	detailed int
	rows     int
}

func render(n *notify.Notification, l layout) Card {
	var firing, resolved []notify.Item
	for _, it := range n.Items {
		if isResolved(n, it) {
			resolved = append(resolved, it)
		} else {
			firing = append(firing, it)
		}
	}
	name := groupAlertname(n)
	card := Card{Schema: "http://adaptivecards.io/schemas/adaptive-card.json", Type: "AdaptiveCard", Version: CardVersion,
		MSTeams: MSTeams{Width: "Full"}}
	if len(firing) == 0 {
		card.Body = resolutionBody(name, resolved, l.rows)
		card.FallbackText = truncate(fmt.Sprintf("RESOLVED %s: %d alert(s)", cmp.Or(name, "alert"), len(resolved)), maxFallbackLen)
	} else {
		card.Body = firingBody(n, name, firing, l)
		if len(resolved) > 0 {
			card.Body = append(card.Body, resolvedContainer(resolved, l.rows))
		}
		card.FallbackText = fallbackText(name, firing)
	}
	if n.ExternalURL != "" {
		card.Actions = append(card.Actions, openURL("Alertmanager", n.ExternalURL))
	}
	return card
}

func isResolved(n *notify.Notification, it notify.Item) bool {
	return it.Alert.Status == notify.StatusResolved || (it.Alert.Status == "" && n.Resolved())
}

// firingBody is the header and the alerts: each in full, or one storm summary.
func firingBody(n *notify.Notification, name string, firing []notify.Item, l layout) []Element {
	head := "FIRING: " + cmp.Or(name, "alert")
	if len(firing) > 1 {
		head += fmt.Sprintf(" (%d alerts)", len(firing))
	}
	header := []Element{{Type: "TextBlock", Text: md(head), Size: "Large", Weight: "Bolder", Color: "Attention", Wrap: true}}
	if len(firing) == 1 {
		header = append(header, subtle(alertLine(firing[0].Alert, false)))
	}
	body := []Element{{Type: "Container", Style: "attention", Bleed: true, Items: header}}
	if n.TruncatedAlerts > 0 {
		body = append(body, subtle(fmt.Sprintf("Alertmanager left %d alerts of this group out of the payload (max_alerts).", n.TruncatedAlerts)))
	}
	if len(firing) > l.detailed {
		return append(body, stormElements(firing, l.rows)...)
	}
	shown := map[*playbooks.Diagnosis]bool{}
	for _, it := range firing {
		var items []Element
		if len(firing) > 1 {
			items = append(items, Element{Type: "TextBlock", Text: md(alertLine(it.Alert, true)), Weight: "Bolder", Wrap: true})
		}
		switch {
		case it.Diagnosis != nil && shown[it.Diagnosis]:
			items = append(items, subtle("The same group-wide diagnosis as above."))
		case it.Diagnosis != nil:
			shown[it.Diagnosis] = true
			items = append(items, diagnosisElements(it.Diagnosis)...)
		default:
			items = append(items, unmatchedElements(it.Alert)...)
		}
		if links := alertLinks(it); len(links) > 0 {
			items = append(items, Element{Type: "ActionSet", Actions: links})
		}
		body = append(body, Element{Type: "Container", Separator: true, Spacing: "Medium", Items: items})
	}
	return body
}

// diagnosisElements renders one diagnosis: verdict, title, summary, evidence, fleet, slowest
// requests, actions, problems and where it came from.
func diagnosisElements(d *playbooks.Diagnosis) []Element {
	out := []Element{
		{Type: "TextBlock", Text: md(cmp.Or(d.Title, d.Verdict)), Size: "Medium", Weight: "Bolder", Wrap: true},
		{Type: "TextBlock", Text: "Verdict: " + md(d.Verdict), Color: verdictColor(d.Verdict), Weight: "Bolder", Spacing: "None", Wrap: true},
	}
	if d.Summary != "" {
		out = append(out, text(d.Summary))
	}
	if r := d.SlowestRequests; r != nil && len(r.Requests) > 0 && !d.SummaryCitesTraces() {
		out = append(out, text("Traces: "+r.Summary))
	}
	if len(d.Evidence) > 0 {
		out = append(out, heading("Evidence"), evidenceFacts(d.Evidence))
		if n := len(d.Evidence) - maxEvidence; n > 0 {
			out = append(out, subtle(fmt.Sprintf("…%d more evidence lines; responder triage --output json lists them all.", n)))
		}
	}
	out = append(out, fleetElements(d.Fleet)...)
	out = append(out, slowestElements(d.SlowestRequests)...)
	if len(d.Actions) > 0 {
		lines := make([]string, len(d.Actions))
		for i, a := range d.Actions {
			lines[i] = fmt.Sprintf("%d. %s", i+1, md(a))
		}
		out = append(out, heading("Recommended actions"), Element{Type: "TextBlock", Text: truncate(strings.Join(lines, "\r"), maxTextChars), Wrap: true, Spacing: "Small"})
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
	meta := scopeText(d.Scope)
	if d.Playbook != "" {
		meta += " · playbook " + d.Playbook
	}
	if !d.EvaluatedAt.IsZero() {
		meta += " · evaluated " + d.EvaluatedAt.UTC().Format("15:04:05 UTC")
	}
	return append(out, subtle(meta))
}

func evidenceFacts(ev []playbooks.Evidence) Element {
	set := Element{Type: "FactSet"}
	for i, e := range ev {
		if i == maxEvidence {
			break
		}
		v := cmp.Or(e.Text, playbooks.FormatValue(e.Value, e.Unit))
		if !e.HasValue() {
			v = "no data"
		}
		switch {
		case e.Baseline != nil:
			v += " (baseline " + cmp.Or(e.BaselineText, playbooks.FormatValue(e.Baseline, e.Unit)) + ")"
		case e.BaselineText != "":
			v += " (" + e.BaselineText + ")"
		}
		if e.Problem != "" {
			v += " ⚠ " + e.Problem
		}
		set.Facts = append(set.Facts, Fact{Title: md(cmp.Or(e.Title, e.Name)), Value: md(truncate(v, 300))})
	}
	return set
}

// fleetElements compares the pod with its siblings: the headline, then one fact per pod with
// its column values (the focus pod marked ▶, affected pods !).
func fleetElements(v *playbooks.FleetView) []Element {
	if v == nil || len(v.Rows) == 0 {
		return nil
	}
	titles := make([]string, len(v.Columns))
	for i, c := range v.Columns {
		titles[i] = c.Title
	}
	set := Element{Type: "FactSet"}
	for i, r := range v.Rows {
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
		set.Facts = append(set.Facts, Fact{Title: md(mark + r.Pod), Value: md(strings.Join(r.Texts, " · "))})
	}
	out := []Element{heading("Fleet"), text(v.Headline()), subtle(v.By + ": " + strings.Join(titles, " · ")), set}
	if n := len(v.Rows) - maxFleetRows; n > 0 {
		out = append(out, subtle(fmt.Sprintf("…%d more %ss", n, v.By)))
	}
	return out
}

// slowestElements lists the slowest traced requests, each row opening its trace.
func slowestElements(r *traces.Report) []Element {
	if r == nil {
		return nil
	}
	out := []Element{heading("Slowest requests"), subtle(r.Heading())}
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
				a := openURL("Open trace", q.Link)
				row.SelectAction = &a
			}
			out = append(out, row)
		}
	}
	return append(out, subtle(traces.AbortedNote))
}

func requestID(id string) string {
	if id == "" {
		return ""
	}
	return " · " + id
}

func unmatchedElements(a template.Alert) []Element {
	out := []Element{{Type: "TextBlock", Text: "No playbook matches this alert", Weight: "Bolder", Wrap: true}}
	if s := cmp.Or(a.Annotations["summary"], a.Annotations["description"]); s != "" {
		out = append(out, text(s))
	}
	return append(out, subtle(labelsText(a.Labels)))
}

// stormElements summarises many alerts: a count per verdict, the group-wide diagnoses they
// share, and one row per alert.
func stormElements(items []notify.Item, rows int) []Element {
	counts := map[string]int{}
	for _, it := range items {
		counts[itemVerdict(it)]++
	}
	verdicts := slices.SortedFunc(maps.Keys(counts), func(a, b string) int { return cmp.Or(counts[b]-counts[a], strings.Compare(a, b)) })
	sum := make([]string, len(verdicts))
	for i, v := range verdicts {
		sum[i] = fmt.Sprintf("%d × %s", counts[v], v)
	}
	out := []Element{
		{Type: "TextBlock", Text: md(fmt.Sprintf("Alert storm: %d alerts, summarised in one card.", len(items))), Weight: "Bolder", Wrap: true},
		text(strings.Join(sum, " · ")),
	}
	seen := map[*playbooks.Diagnosis]bool{}
	for _, it := range items {
		d := it.Diagnosis
		if d == nil || seen[d] || len(seen) == 3 {
			continue
		}
		seen[d] = true
		if shared := countShared(items, d); shared > 1 {
			out = append(out, text(fmt.Sprintf("Group diagnosis (%d alerts, group-wide queries over %s): %s: %s. %s", shared, scopeText(d.Scope), d.Verdict, d.Title, d.Summary)))
		}
	}
	sorted := slices.Clone(items)
	slices.SortStableFunc(sorted, func(a, b notify.Item) int {
		return cmp.Or(strings.Compare(itemVerdict(a), itemVerdict(b)),
			strings.Compare(a.Alert.Labels["model_name"], b.Alert.Labels["model_name"]),
			strings.Compare(a.Alert.Labels["pod"], b.Alert.Labels["pod"]))
	})
	set := Element{Type: "FactSet"}
	for i, it := range sorted {
		if i == rows {
			break
		}
		a := it.Alert
		set.Facts = append(set.Facts, Fact{Title: md(itemVerdict(it)), Value: md(cmp.Or(a.Labels["model_name"], "-") + " · " + cmp.Or(a.Labels["pod"], a.Labels["instance"], "-"))})
	}
	out = append(out, set)
	if n := len(sorted) - rows; n > 0 {
		out = append(out, subtle(fmt.Sprintf("…and %d more alerts not listed.", n)))
	}
	return append(out, subtle("Per-alert detail: responder triage --label model_name=... --label pod=..., or /vllm triage in Slack."))
}

// resolutionBody is the card of a resolved group: what resolved, and which firing card it
// closes (the firing card's header and each alert's start, as that card shows them).
func resolutionBody(name string, resolved []notify.Item, rows int) []Element {
	head := "RESOLVED: " + cmp.Or(name, "alert")
	if len(resolved) > 1 {
		head += fmt.Sprintf(" (%d alerts)", len(resolved))
	}
	closes := fmt.Sprintf("Closes the card “FIRING: %s” (Teams cannot edit it).", cmp.Or(name, "alert"))
	return []Element{
		{Type: "Container", Style: "good", Bleed: true, Items: []Element{
			{Type: "TextBlock", Text: md(head), Size: "Large", Weight: "Bolder", Color: "Good", Wrap: true},
			subtle(closes),
		}},
		resolvedList(resolved, rows),
	}
}

// resolvedContainer lists the alerts that resolved beside new firing ones.
func resolvedContainer(resolved []notify.Item, rows int) Element {
	return Element{Type: "Container", Style: "good", Separator: true, Items: []Element{
		{Type: "TextBlock", Text: fmt.Sprintf("Resolved meanwhile (%d)", len(resolved)), Weight: "Bolder", Color: "Good", Wrap: true},
		resolvedList(resolved, rows),
	}}
}

func resolvedList(resolved []notify.Item, rows int) Element {
	rows = min(rows, maxResolved)
	var lines []string
	for i, it := range resolved {
		if i == rows {
			lines = append(lines, fmt.Sprintf("…and %d more.", len(resolved)-i))
			break
		}
		a := it.Alert
		line := "- " + md(alertLine(a, true))
		if !a.EndsAt.IsZero() && !a.StartsAt.IsZero() && a.EndsAt.After(a.StartsAt) {
			line += md(fmt.Sprintf(", resolved %s after %s", a.EndsAt.UTC().Format("15:04 UTC"), humanDuration(a.EndsAt.Sub(a.StartsAt))))
		}
		lines = append(lines, line)
	}
	return Element{Type: "TextBlock", Text: strings.Join(lines, "\r"), Wrap: true}
}

// alertLine names one alert as the firing card does: its scope and when it fired ("model m ·
// pod p · fired Jan 2 15:04 UTC"), with its name first when withName.
func alertLine(a template.Alert, withName bool) string {
	parts := []string{}
	if withName && a.Labels["alertname"] != "" {
		parts = append(parts, a.Labels["alertname"])
	}
	if s := scopeText(pick(a.Labels, "model_name", "pod", "namespace")); s != "" {
		parts = append(parts, s)
	}
	if !a.StartsAt.IsZero() {
		parts = append(parts, "fired "+a.StartsAt.UTC().Format("Jan 2 15:04 UTC"))
	}
	return strings.Join(parts, " · ")
}

// alertLinks are the alert's links: where it fired (Prometheus), its runbook, and the Jaeger
// search of its slowest requests.
func alertLinks(it notify.Item) []Action {
	var out []Action
	if u := it.Alert.GeneratorURL; isHTTP(u) {
		out = append(out, openURL("Alert query in Prometheus", u))
	}
	if u := it.Alert.Annotations["runbook_url"]; isHTTP(u) {
		out = append(out, openURL("Runbook", u))
	}
	if d := it.Diagnosis; d != nil && d.SlowestRequests != nil && isHTTP(d.SlowestRequests.SearchLink) {
		out = append(out, openURL("Slow requests in Jaeger", d.SlowestRequests.SearchLink))
	}
	return out
}

func isHTTP(u string) bool {
	return strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")
}

func openURL(title, u string) Action { return Action{Type: "Action.OpenUrl", Title: title, URL: u} }

func fallbackText(name string, firing []notify.Item) string {
	s := "FIRING " + cmp.Or(name, "alert")
	if len(firing) == 1 && firing[0].Diagnosis != nil {
		d := firing[0].Diagnosis
		s += ": " + cmp.Or(d.Title, d.Verdict)
	} else if len(firing) > 1 {
		s += fmt.Sprintf(": %d alerts", len(firing))
	}
	return truncate(s, maxFallbackLen)
}

// verdictColor colours the verdict line: red for what needs action now, amber for pressure and
// for what could not be decided, green for healthy.
func verdictColor(v string) string {
	switch v {
	case playbooks.VerdictHealthy:
		return "Good"
	case playbooks.VerdictKVPressure, playbooks.VerdictInconclusive, playbooks.VerdictNoData, "engine-paused":
		return "Warning"
	default:
		return "Attention"
	}
}

func heading(s string) Element {
	return Element{Type: "TextBlock", Text: s, Weight: "Bolder", Spacing: "Medium", Wrap: true}
}

func text(s string) Element {
	return Element{Type: "TextBlock", Text: md(truncate(s, maxTextChars)), Wrap: true}
}

func subtle(s string) Element {
	return Element{Type: "TextBlock", Text: md(truncate(s, maxTextChars)), IsSubtle: true, Size: "Small", Wrap: true, Spacing: "Small"}
}

func warning(s string) Element {
	return Element{Type: "TextBlock", Text: md(truncate(s, maxTextChars)), Color: "Warning", Wrap: true}
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

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

var scopeNames = map[string]string{"model_name": "model", "pod": "pod", "namespace": "namespace"}

// scopeText names a scope: "model m · pod p · namespace ns", then any other label.
func scopeText(scope map[string]string) string {
	var parts []string
	for _, k := range []string{"model_name", "pod", "namespace"} {
		if v := scope[k]; v != "" {
			parts = append(parts, scopeNames[k]+" "+v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(scope)) {
		if scopeNames[k] == "" && scope[k] != "" {
			parts = append(parts, k+" "+scope[k])
		}
	}
	return strings.Join(parts, " · ")
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
	parts := make([]string, 0, len(labels))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		parts = append(parts, k+"="+labels[k])
	}
	return strings.Join(parts, " ")
}

func groupAlertname(n *notify.Notification) string {
	if v := cmp.Or(n.GroupLabels["alertname"], n.CommonLabels["alertname"]); v != "" {
		return v
	}
	for _, it := range n.Items {
		if v := it.Alert.Labels["alertname"]; v != "" {
			return v
		}
	}
	return ""
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

func countShared(items []notify.Item, d *playbooks.Diagnosis) int {
	n := 0
	for _, it := range items {
		if it.Diagnosis == d {
			n++
		}
	}
	return n
}

// humanDuration prints a duration as an engineer says it: 42s, 23m, 1h 5m, 2d 3h.
func humanDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(max(d, 0).Seconds()))
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
