// Package console prints diagnoses to a terminal or a log: the notifier used when no other is
// configured, and the text output of `responder triage`. It maps notify's view of a
// notification to plain text.
package console

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/traces"
)

// Notifier writes each notification as a readable block of text.
type Notifier struct {
	mu   sync.Mutex
	w    io.Writer
	view notify.ViewOptions
}

// New returns a console notifier writing to w; o is what its views are built with (the storm
// threshold).
func New(w io.Writer, o notify.ViewOptions) *Notifier { return &Notifier{w: w, view: o} }

// Notify implements notify.Notifier. Writes are serialised so blocks never interleave.
func (c *Notifier) Notify(_ context.Context, n *notify.Notification) (bool, error) {
	var b strings.Builder
	WriteNotification(&b, n, c.view)
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := io.WriteString(c.w, b.String())
	return false, err
}

// WriteNotification renders a notification as plain text: every alert, firing ones first, each
// with its diagnosis (a diagnosis several alerts share is printed once).
func WriteNotification(b *strings.Builder, n *notify.Notification, o notify.ViewOptions) {
	v := notify.NewView(n, o)
	rule := strings.Repeat("=", 78)
	fmt.Fprintf(b, "%s\n", rule)
	fmt.Fprintf(b, "[%s] %s  (%d alert(s), group %s)\n", strings.ToUpper(n.Status), cmp.Or(v.Alertname, "alerts"), len(n.Items), shortKey(n.GroupKey))
	if v.Truncated > 0 {
		fmt.Fprintf(b, "  %d more alert(s) were left out by Alertmanager (max_alerts)\n", v.Truncated)
	}
	writeIncident(b, v.Incident)
	if v.Summarised {
		counts := make([]string, len(v.Storm.Counts))
		for i, c := range v.Storm.Counts {
			counts[i] = fmt.Sprintf("%d × %s", c.Alerts, c.Verdict)
		}
		fmt.Fprintf(b, "  alert storm: %s\n", strings.Join(counts, " · "))
	}
	for _, av := range v.Firing {
		if av.Shared {
			fmt.Fprintf(b, "%s %s  (the group diagnosis above)\n", av.Alertname, labelLine(av.Labels))
			continue
		}
		fmt.Fprintf(b, "%s\n", strings.Repeat("-", 78))
		fmt.Fprintf(b, "%s %s\n", av.Alertname, labelLine(av.Labels))
		if av.Diagnosis == nil {
			fmt.Fprintf(b, "  no playbook matches this alert\n")
			continue
		}
		writeDiagnosis(b, av.Diagnosis, "  ")
	}
	for _, l := range v.Resolved {
		fmt.Fprintf(b, "%s\n", strings.Repeat("-", 78))
		fmt.Fprintf(b, "%s %s\n", l.Alertname, labelLine(l.Labels))
		after := ""
		if d, ok := l.Lasted(); ok {
			after = " after " + d.Round(1e9).String()
		}
		fmt.Fprintf(b, "  resolved%s\n", after)
	}
	fmt.Fprintf(b, "%s\n", rule)
}

// writeIncident renders the incident of a notification (nothing without one): its id and key,
// what the notification did, its verdict from its cause, and its members, causes first. Member
// lines start with "- ", never with an alert name (which starts an alert's own block).
func writeIncident(b *strings.Builder, iv *notify.IncidentView) {
	if iv == nil {
		return
	}
	state := iv.Counts()
	if c := iv.Change(); c != "" {
		state += "; " + c
	} else if d, ok := iv.Lasted(); ok {
		state += "; resolved after " + notify.HumanDuration(d)
	}
	fmt.Fprintf(b, "incident %s  %s  (%s)\n", iv.ID, labelLine(iv.Key), state)
	cause := iv.Verdict
	if w := iv.Where(); w != "" {
		cause += " " + w
	}
	if !playbooks.NamesCause(iv.Verdict) {
		cause = "none named (" + cause + ")"
	}
	fmt.Fprintf(b, "  cause:    %s: %s\n", cause, iv.Title)
	if iv.Summary != "" {
		fmt.Fprintf(b, "            %s\n", iv.Summary)
	}
	fmt.Fprintf(b, "  members:\n")
	for _, m := range iv.Members {
		where := ""
		if w := m.Where(); w != "" {
			where = " " + w
		}
		line := fmt.Sprintf("  - %s%s: %s", m.Alertname, where, m.Says())
		if m.New {
			line += "  (new)"
		}
		b.WriteString(line + "\n")
	}
	if t := iv.MoreText(); t != "" {
		fmt.Fprintf(b, "  %s\n", t)
	}
}

// WriteDiagnosis renders one diagnosis as aligned plain text, each line prefixed by indent.
func WriteDiagnosis(b *strings.Builder, d *playbooks.Diagnosis, indent string) {
	writeDiagnosis(b, notify.NewDiagnosisView(d), indent)
}

func writeDiagnosis(b *strings.Builder, d *notify.DiagnosisView, indent string) {
	fmt.Fprintf(b, "%sverdict:  %s\n", indent, d.Verdict)
	fmt.Fprintf(b, "%s%s\n", indent, d.Title)
	if d.Summary != "" {
		fmt.Fprintf(b, "%s%s\n", indent, d.Summary)
	}
	if d.Error != "" {
		fmt.Fprintf(b, "%sERROR: %s\n", indent, d.Error)
	}
	if len(d.Scope) > 0 {
		byName := slices.SortedFunc(slices.Values(d.Scope), func(a, b notify.Label) int { return strings.Compare(a.Name, b.Name) })
		fmt.Fprintf(b, "%sscope:    %s\n", indent, labelLine(byName))
	}
	if len(d.Evidence) > 0 {
		fmt.Fprintf(b, "%sevidence:\n", indent)
		width := 0
		for _, e := range d.Evidence {
			width = max(width, len(e.Title))
		}
		for _, e := range d.Evidence {
			line := fmt.Sprintf("%s  %-*s  %s", indent, width, e.Title, e.Value)
			if e.Baseline != "" {
				line += "  (" + e.Baseline + ")"
			}
			if e.Problem != "" {
				line += "  [" + e.Problem + "]"
			}
			b.WriteString(line + "\n")
		}
	}
	if d.Fleet != nil {
		fmt.Fprintf(b, "%sfleet:    %s\n", indent, d.Fleet.Headline)
		for _, l := range d.Fleet.Table(12) {
			fmt.Fprintf(b, "%s  %s\n", indent, l)
		}
	}
	writeSlowest(b, d.Slowest, indent)
	if len(d.Actions) > 0 {
		fmt.Fprintf(b, "%sactions:\n", indent)
		for _, a := range d.Actions {
			fmt.Fprintf(b, "%s  - %s\n", indent, a)
		}
	}
	if len(d.Missing) > 0 {
		fmt.Fprintf(b, "%smissing:  %s\n", indent, strings.Join(d.Missing, ", "))
	}
	for _, note := range d.Notes {
		fmt.Fprintf(b, "%snote:     %s\n", indent, note)
	}
	if d.OfferProfile {
		fmt.Fprintf(b, "%snext:     metrics do not explain this; a bounded profile capture can (responder profile --pod ...)\n", indent)
	}
}

// writeSlowest renders the slowest traced requests (nothing when traces are off).
func writeSlowest(b *strings.Builder, r *traces.Report, indent string) {
	if r == nil {
		return
	}
	fmt.Fprintf(b, "%s%s (%s):\n", indent, strings.ToLower(r.Title()), r.Heading())
	switch {
	case r.Error != "":
		fmt.Fprintf(b, "%s  not available: %s\n", indent, r.Error)
		return
	case len(r.Requests) == 0:
		fmt.Fprintf(b, "%s  %s\n", indent, r.Summary)
	default:
		fmt.Fprintf(b, "%s  %s\n", indent, r.Summary)
		for _, q := range r.Requests {
			fmt.Fprintf(b, "%s  %s  %s  %s\n", indent, q.Line(), cmp.Or(q.RequestID, "-"), q.Link)
		}
	}
	fmt.Fprintf(b, "%s  %s\n", indent, r.MissingNote())
}

func shortKey(k string) string {
	if len(k) > 40 {
		return k[:37] + "..."
	}
	return k
}

// labelLine is labels as name="value" pairs, by name, without the alert name.
func labelLine(labels []notify.Label) string {
	parts := make([]string, 0, len(labels))
	for _, l := range labels {
		if l.Name != "alertname" {
			parts = append(parts, fmt.Sprintf("%s=%q", l.Name, l.Value))
		}
	}
	return strings.Join(parts, " ")
}
