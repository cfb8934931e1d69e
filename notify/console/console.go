// Package console prints diagnoses to a terminal or a log: the notifier used when no Slack token
// is configured, and the text output of `responder triage`.
package console

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/traces"
)

// Notifier writes each notification as a readable block of text.
type Notifier struct {
	mu sync.Mutex
	w  io.Writer
}

// New returns a console notifier writing to w.
func New(w io.Writer) *Notifier { return &Notifier{w: w} }

// Notify implements notify.Notifier. Writes are serialised so blocks never interleave.
func (c *Notifier) Notify(_ context.Context, n *notify.Notification) (bool, error) {
	var b strings.Builder
	WriteNotification(&b, n)
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := io.WriteString(c.w, b.String())
	return false, err
}

// WriteNotification renders a notification as plain text.
func WriteNotification(b *strings.Builder, n *notify.Notification) {
	rule := strings.Repeat("=", 78)
	fmt.Fprintf(b, "%s\n", rule)
	status := strings.ToUpper(n.Status)
	fmt.Fprintf(b, "[%s] %s  (%d alert(s), group %s)\n", status, groupTitle(n), len(n.Items), shortKey(n.GroupKey))
	if n.TruncatedAlerts > 0 {
		fmt.Fprintf(b, "  %d more alert(s) were left out by Alertmanager (max_alerts)\n", n.TruncatedAlerts)
	}
	shown := map[*playbooks.Diagnosis]bool{} // a storm's alerts share one diagnosis: print it once
	for _, it := range n.Items {
		if it.Diagnosis != nil && shown[it.Diagnosis] {
			fmt.Fprintf(b, "%s %s  (the group diagnosis above)\n", it.Alert.Labels["alertname"], labelLine(it.Alert.Labels))
			continue
		}
		fmt.Fprintf(b, "%s\n", strings.Repeat("-", 78))
		fmt.Fprintf(b, "%s %s\n", it.Alert.Labels["alertname"], labelLine(it.Alert.Labels))
		switch {
		case n.Resolved() || it.Alert.Status == notify.StatusResolved:
			dur := ""
			if !it.Alert.EndsAt.IsZero() && !it.Alert.StartsAt.IsZero() {
				dur = " after " + it.Alert.EndsAt.Sub(it.Alert.StartsAt).Round(time.Second).String()
			}
			fmt.Fprintf(b, "  resolved%s\n", dur)
		case it.Unmatched:
			fmt.Fprintf(b, "  no playbook matches this alert\n")
		case it.Diagnosis != nil:
			shown[it.Diagnosis] = true
			WriteDiagnosis(b, it.Diagnosis, "  ")
		}
	}
	fmt.Fprintf(b, "%s\n", rule)
}

// WriteDiagnosis renders one diagnosis as aligned plain text, each line prefixed by indent.
func WriteDiagnosis(b *strings.Builder, d *playbooks.Diagnosis, indent string) {
	fmt.Fprintf(b, "%sverdict:  %s\n", indent, d.Verdict)
	fmt.Fprintf(b, "%s%s\n", indent, d.Title)
	if d.Summary != "" {
		fmt.Fprintf(b, "%s%s\n", indent, d.Summary)
	}
	if d.Error != "" {
		fmt.Fprintf(b, "%sERROR: %s\n", indent, d.Error)
	}
	if len(d.Scope) > 0 {
		fmt.Fprintf(b, "%sscope:    %s\n", indent, labelLine(d.Scope))
	}
	if len(d.Evidence) > 0 {
		fmt.Fprintf(b, "%sevidence:\n", indent)
		width := 0
		for _, e := range d.Evidence {
			width = max(width, len(title(e)))
		}
		for _, e := range d.Evidence {
			line := fmt.Sprintf("%s  %-*s  %s", indent, width, title(e), e.Text)
			switch {
			case e.Baseline != nil:
				line += "  (baseline " + e.BaselineText + ")"
			case e.BaselineText != "":
				line += "  (" + e.BaselineText + ")"
			}
			if e.Problem != "" {
				line += "  [" + e.Problem + "]"
			}
			b.WriteString(line + "\n")
		}
	}
	if d.Fleet != nil {
		fmt.Fprintf(b, "%sfleet:    %s\n", indent, d.Fleet.Headline())
		for _, l := range d.Fleet.Table(12) {
			fmt.Fprintf(b, "%s  %s\n", indent, l)
		}
	}
	writeSlowest(b, d.SlowestRequests, indent)
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
	fmt.Fprintf(b, "%sslowest requests (%s):\n", indent, r.Heading())
	switch {
	case r.Error != "":
		fmt.Fprintf(b, "%s  not available: %s\n", indent, r.Error)
		return
	case len(r.Requests) == 0:
		fmt.Fprintf(b, "%s  %s\n", indent, r.Summary)
	default:
		fmt.Fprintf(b, "%s  %s\n", indent, r.Summary)
		for _, q := range r.Requests {
			id := q.RequestID
			if id == "" {
				id = "-"
			}
			fmt.Fprintf(b, "%s  %s  %s  %s\n", indent, q.Line(), id, q.Link)
		}
	}
	fmt.Fprintf(b, "%s  %s\n", indent, traces.AbortedNote)
}

func title(e playbooks.Evidence) string {
	if e.Title != "" {
		return e.Title
	}
	return e.Name
}

func groupTitle(n *notify.Notification) string {
	if a := n.CommonLabels["alertname"]; a != "" {
		return a
	}
	if a := n.GroupLabels["alertname"]; a != "" {
		return a
	}
	return "alerts"
}

func shortKey(k string) string {
	if len(k) > 40 {
		return k[:37] + "..."
	}
	return k
}

func labelLine(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		if k == "alertname" {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%q", k, m[k]))
	}
	return strings.Join(parts, " ")
}
