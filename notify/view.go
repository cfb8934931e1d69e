package notify

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/alertmanager/template"

	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/traces"
)

// The view of a notification: what it says, built once here and format-neutral (plain text,
// http(s) links only, label text made visible by Printable), golden-tested in view_test.go.
// Each integration only maps it to its markup, escaping and limits (Slack's Block Kit, Teams'
// Adaptive Card, the console's text), as Alertmanager's integrations share its default
// templates. A new integration is a mapping of View, nothing more.

// ViewOptions are what a view shows besides the notification: fixed at start from the
// configuration.
type ViewOptions struct {
	// StormThreshold: more firing alerts than this are one storm summary instead of each alert
	// in full (dispatch.storm_threshold, which also makes the dispatcher diagnose them once per
	// playbook); 0 never summarises.
	StormThreshold int
	// Links are the links every alert gets from the configuration (Slack's Grafana and traces
	// URL templates), after its alert query; WindowBefore opens their window this long before
	// the alert started.
	Links        []LinkTemplate
	WindowBefore time.Duration
}

// View is what one notification says.
type View struct {
	// Status is StatusFiring when any alert of it fires, else StatusResolved.
	Status string
	// Alertname is the group's alert name ("" when no alert names one).
	Alertname string
	// Firing are the firing alerts, each with its diagnosis, in the notification's order.
	Firing []AlertView
	// Summarised: more alerts fire than the storm threshold, so Storm stands for them and an
	// integration shows it instead of each alert in full.
	Summarised bool
	// Storm summarises the firing alerts (always set when some fire: an integration whose
	// message would be too large falls back to it).
	Storm *Storm
	// Resolved are the alerts that resolved, in the notification's order.
	Resolved []Line
	// Truncated is how many alerts Alertmanager left out of the payload (max_alerts).
	Truncated uint64
	// Alertmanager links to the Alertmanager that sent the group (nil: none, or not http(s)).
	Alertmanager *Link
	// GroupLinks are the links of the group as a whole: the first firing alert's, with the
	// configured templates filled from the labels every alert shares (a storm's links).
	GroupLinks []Link
	// At is when the notification arrived.
	At time.Time
	// Incident is the incident the alerts belong to (incidentview.go); nil with incidents off,
	// for alerts without its key labels and for on-demand diagnoses.
	Incident *IncidentView `json:",omitempty"`
}

// Count is how many alerts the headline counts: the firing ones, or those that resolved.
func (v *View) Count() int {
	if len(v.Firing) > 0 {
		return len(v.Firing)
	}
	return len(v.Resolved)
}

// Headline is the view's first line: "FIRING: VLLMTimeToFirstTokenP99High (3 alerts)".
func (v *View) Headline() string { return Headline(v.Status, v.Alertname, v.Count()) }

// Headline says a status, an alert name and how many alerts (counted only above one).
func Headline(status, alertname string, count int) string {
	s := strings.ToUpper(cmp.Or(status, StatusFiring)) + ": " + cmp.Or(alertname, "alert")
	if count > 1 {
		s += fmt.Sprintf(" (%d alerts)", count)
	}
	return s
}

// AlertView is one firing alert with its diagnosis.
type AlertView struct {
	// Alertname and Scope (model, pod, namespace: the labels that name where it fires) name
	// the alert; StartsAt is when it started.
	Alertname string
	Scope     []Label
	StartsAt  time.Time `json:",omitzero"`
	// Labels are every label of the alert, by name.
	Labels []Label
	// Diagnosis is nil for an alert no playbook matched: Summary (its summary or description
	// annotation) and Labels say what it is.
	Diagnosis *DiagnosisView
	Summary   string
	// Shared: Diagnosis is the group-wide one that an alert above already shows (alerts of a
	// storm share one).
	Shared bool
	// Links are the alert's links: its query in Prometheus, the configured templates, its
	// runbook, the search of its slowest requests.
	Links []Link
	// Alert is the alert as received, for what acts on it rather than shows it (Slack's
	// buttons carry its labels): never shown as is.
	Alert template.Alert `json:"-"`
}

// Line is one alert in a list: a storm's rows and the resolved alerts (an incident's members
// are the next).
type Line struct {
	Alertname string
	Scope     []Label
	// Labels are every label of the alert, by name.
	Labels []Label
	// Verdict is its diagnosis' verdict, or "resolved", or "unmatched" (no playbook matched);
	// Class is the verdict's ("" for the last two).
	Verdict string
	Class   playbooks.Class
	// Model and Pod are its model_name and pod (or instance) labels, "" when it has none.
	Model, Pod       string
	StartsAt, EndsAt time.Time `json:",omitzero"`
}

// Lasted is how long the alert fired, when its start and end are known.
func (l Line) Lasted() (time.Duration, bool) {
	if l.StartsAt.IsZero() || l.EndsAt.IsZero() || !l.EndsAt.After(l.StartsAt) {
		return 0, false
	}
	return l.EndsAt.Sub(l.StartsAt), true
}

// Label is one label as shown.
type Label struct{ Name, Value string }

// scopeWords are what a scope calls its labels, in the order it names them.
var scopeWords = []scopeWord{{"model_name", "model"}, {"pod", "pod"}, {"namespace", "namespace"}}

type scopeWord struct{ name, word string }

// Word is what a scope calls the label: model for model_name, else its name.
func (l Label) Word() string {
	for _, w := range scopeWords {
		if w.name == l.Name {
			return w.word
		}
	}
	return l.Name
}

// Storm summarises many alerts.
type Storm struct {
	// Counts are the alerts per verdict, most first.
	Counts []VerdictCount
	// Shared are the group-wide diagnoses the alerts share (at most three, each of more than
	// one alert), in the order their first alerts come.
	Shared []SharedDiagnosis
	// Rows are every alert, by verdict, model and pod: an integration shows what fits and says
	// how many it left out.
	Rows []Line
}

// VerdictCount is how many alerts of a storm have one verdict.
type VerdictCount struct {
	Verdict string
	Class   playbooks.Class
	Alerts  int
}

// SharedDiagnosis is a group-wide diagnosis and how many alerts share it.
type SharedDiagnosis struct {
	Alerts    int
	Diagnosis *DiagnosisView
}

// maxShared bounds the group-wide diagnoses a storm summary shows.
const maxShared = 3

// DiagnosisView is one diagnosis as shown.
type DiagnosisView struct {
	Verdict string
	Class   playbooks.Class
	// Title is the diagnosis' title, or its verdict when it has none.
	Title   string
	Summary string
	// Traces is the one-line summary of the slowest traced requests, when there are some and
	// the summary does not already say it.
	Traces   string
	Evidence []EvidenceRow
	Fleet    *Fleet
	// Slowest are the slowest traced requests (nil: traces are off), their links http(s) only.
	Slowest *traces.Report
	Actions []string
	// Error says why the evidence could not be gathered (the diagnosis is degraded).
	Error   string
	Missing []string
	Notes   []string
	// OfferProfile: metrics do not explain it, a bounded profile capture can.
	OfferProfile bool
	Scope        []Label
	Playbook     string
	EvaluatedAt  time.Time `json:",omitzero"`
	// Diagnosis is the diagnosis itself, for what acts on it (Slack's buttons, its record):
	// never shown as is.
	Diagnosis *playbooks.Diagnosis `json:"-"`
}

// Evaluated says when the diagnosis was made: "evaluated 12:00:00 UTC" ("" when unknown).
func (d *DiagnosisView) Evaluated() string {
	if d.EvaluatedAt.IsZero() {
		return ""
	}
	return "evaluated " + d.EvaluatedAt.UTC().Format("15:04:05 UTC")
}

// EvidenceRow is one number behind a diagnosis.
type EvidenceRow struct {
	Title string
	// Value is the formatted value; NoData says the query returned nothing usable (Value is
	// then the placeholder the playbook gave).
	Value  string
	NoData bool
	// Baseline is what the value compares with: "baseline 0.9 s a day ago", or why there is
	// none ("" when the evidence has no baseline).
	Baseline string
	// Problem says why the value is missing or untrustworthy.
	Problem string
}

// NewView builds the view of n.
func NewView(n *Notification, o ViewOptions) *View {
	v := &View{Status: StatusResolved, Alertname: Printable(groupAlertname(n)), Truncated: n.TruncatedAlerts, At: n.ReceivedAt,
		Incident: newIncidentView(n.Incident)}
	if u := HTTPURL(n.ExternalURL); u != "" {
		v.Alertmanager = &Link{Title: "Alertmanager", URL: u}
	}
	shown := map[*playbooks.Diagnosis]*DiagnosisView{}
	var firing []Item
	for _, it := range n.Items {
		if it.Alert.Status == StatusResolved || (it.Alert.Status == "" && n.Resolved()) {
			v.Resolved = append(v.Resolved, newLine(it))
			continue
		}
		firing = append(firing, it)
		av := AlertView{Alertname: Printable(it.Alert.Labels["alertname"]), Scope: scopeLabels(it.Alert.Labels, true),
			Labels: sortedLabels(it.Alert.Labels), StartsAt: it.Alert.StartsAt, Alert: it.Alert, Links: alertLinks(it, it.Alert.Labels, n.ReceivedAt, o)}
		switch d := it.Diagnosis; {
		case d == nil:
			av.Summary = printableText(cmp.Or(it.Alert.Annotations["summary"], it.Alert.Annotations["description"]))
		case shown[d] != nil:
			av.Diagnosis, av.Shared = shown[d], true
		default:
			av.Diagnosis = NewDiagnosisView(d)
			shown[d] = av.Diagnosis
		}
		v.Firing = append(v.Firing, av)
	}
	if len(firing) == 0 {
		return v
	}
	v.Status = StatusFiring
	v.Summarised = o.StormThreshold > 0 && len(firing) > o.StormThreshold
	v.Storm = newStorm(firing, v.Firing)
	v.GroupLinks = alertLinks(firing[0], n.CommonLabels, n.ReceivedAt, o)
	return v
}

func newLine(it Item) Line {
	l := it.Alert.Labels
	return Line{Alertname: Printable(l["alertname"]), Scope: scopeLabels(l, true), Labels: sortedLabels(l), Verdict: it.Verdict(), Class: playbooks.ClassOf(it.Verdict()),
		Model: Printable(l["model_name"]), Pod: Printable(cmp.Or(l["pod"], l["instance"])), StartsAt: it.Alert.StartsAt, EndsAt: it.Alert.EndsAt}
}

// newStorm summarises the firing items (views are their alert views, index by index).
func newStorm(items []Item, views []AlertView) *Storm {
	s := &Storm{}
	counts := map[string]int{}
	for _, it := range items {
		counts[it.Verdict()]++
	}
	for _, verdict := range slices.SortedFunc(maps.Keys(counts), func(a, b string) int { return cmp.Or(counts[b]-counts[a], strings.Compare(a, b)) }) {
		s.Counts = append(s.Counts, VerdictCount{Verdict: verdict, Class: playbooks.ClassOf(verdict), Alerts: counts[verdict]})
	}
	seen := map[*playbooks.Diagnosis]bool{}
	for i, it := range items {
		d := it.Diagnosis
		if d == nil || seen[d] || len(seen) >= maxShared {
			continue
		}
		seen[d] = true
		shared := 0
		for _, other := range items {
			if other.Diagnosis == d {
				shared++
			}
		}
		if shared > 1 {
			s.Shared = append(s.Shared, SharedDiagnosis{Alerts: shared, Diagnosis: views[i].Diagnosis})
		}
	}
	sorted := slices.Clone(items)
	slices.SortStableFunc(sorted, func(a, b Item) int {
		return cmp.Or(strings.Compare(a.Verdict(), b.Verdict()),
			strings.Compare(a.Alert.Labels["model_name"], b.Alert.Labels["model_name"]),
			strings.Compare(a.Alert.Labels["pod"], b.Alert.Labels["pod"]))
	})
	for _, it := range sorted {
		s.Rows = append(s.Rows, newLine(it))
	}
	return s
}

// NewDiagnosisView is the view of one diagnosis (an alert's, or an on-demand triage's).
func NewDiagnosisView(d *playbooks.Diagnosis) *DiagnosisView {
	dv := &DiagnosisView{Verdict: d.Verdict, Class: playbooks.ClassOf(d.Verdict), Title: printableText(cmp.Or(d.Title, d.Verdict)),
		Summary: printableText(d.Summary), Actions: printableAll(d.Actions), Error: printableText(d.Error), Missing: printableAll(d.Missing),
		Notes: printableAll(d.Notes), OfferProfile: d.OfferProfile, Scope: scopeLabels(d.Scope, false), Playbook: Printable(d.Playbook),
		EvaluatedAt: d.EvaluatedAt, Diagnosis: d, Fleet: newFleet(d.Fleet), Slowest: slowest(d.SlowestRequests)}
	if r := dv.Slowest; r != nil && len(r.Requests) > 0 && !d.SummaryCitesTraces() {
		dv.Traces = r.SummaryLine()
	}
	for _, e := range d.Evidence {
		row := EvidenceRow{Title: printableText(cmp.Or(e.Title, e.Name)), Value: printableText(cmp.Or(e.Text, playbooks.FormatValue(e.Value, e.Unit))),
			NoData: !e.HasValue(), Problem: printableText(e.Problem)}
		switch {
		case e.Baseline != nil:
			row.Baseline = "baseline " + printableText(cmp.Or(e.BaselineText, playbooks.FormatValue(e.Baseline, e.Unit)))
		case e.BaselineText != "":
			row.Baseline = printableText(e.BaselineText)
		}
		dv.Evidence = append(dv.Evidence, row)
	}
	return dv
}

// slowest is a copy of the traces report as shown: its text printable, its links http(s) only.
func slowest(r *traces.Report) *traces.Report {
	if r == nil {
		return nil
	}
	c := *r
	c.Service, c.Operation, c.Summary, c.Error = Printable(r.Service), Printable(r.Operation), printableText(r.Summary), printableText(r.Error)
	c.SearchLink = HTTPURL(r.SearchLink)
	if len(r.Tags) > 0 {
		c.Tags = make(map[string]string, len(r.Tags))
		for k, v := range r.Tags {
			c.Tags[Printable(k)] = Printable(v)
		}
	}
	c.Requests = make([]traces.Request, len(r.Requests))
	for i, q := range r.Requests {
		q.RequestID, q.Link = Printable(q.RequestID), HTTPURL(q.Link)
		c.Requests[i] = q
	}
	return &c
}

func printableAll(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = printableText(s)
	}
	return out
}

// scopeLabels are the labels that name a scope: model, pod and namespace first, then (unless
// only those) every other label by name; empty values are left out.
func scopeLabels(m map[string]string, onlyNamed bool) []Label {
	var out []Label
	for _, w := range scopeWords {
		if v := m[w.name]; v != "" {
			out = append(out, Label{Name: w.name, Value: Printable(v)})
		}
	}
	if onlyNamed {
		return out
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.ContainsFunc(scopeWords, func(w scopeWord) bool { return w.name == k }) && m[k] != "" {
			out = append(out, Label{Name: Printable(k), Value: Printable(m[k])})
		}
	}
	return out
}

// sortedLabels are every label, by name.
func sortedLabels(m map[string]string) []Label {
	out := make([]Label, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, Label{Name: Printable(k), Value: Printable(m[k])})
	}
	return out
}

// groupAlertname is the group's alert name: the group's or common label, else the first alert's.
func groupAlertname(n *Notification) string {
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

// Verdict is the item's verdict: its diagnosis', or "resolved", or "unmatched" (no playbook
// matched it).
func (it Item) Verdict() string {
	switch {
	case it.Diagnosis != nil:
		return it.Diagnosis.Verdict
	case it.Alert.Status == StatusResolved:
		return "resolved"
	default:
		return "unmatched"
	}
}
