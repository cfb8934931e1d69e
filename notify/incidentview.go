package notify

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vllm-responder/vllm-responder/playbooks"
)

// maxMemberLines bounds the lines an incident's view lists, causes first; the alerts left out
// are counted (IncidentView.More). Alerts alike (the same alert name, labels, verdict, role and
// state) on different pods share a line, up to maxLinePods pods a line, so that a model-wide
// storm (five alert names on twenty pods: 100 alerts, notify.MaxMembers) names every alert in
// five lines.
const (
	maxMemberLines = 12
	maxLinePods    = 25
)

// IncidentView is what a notification says of its incident (View.Incident): one verdict for the
// whole incident, from its cause, and each member as cause or symptom with its own verdict.
type IncidentView struct {
	ID string
	// Key are the labels that name it, model first.
	Key []Label
	// Status is StatusFiring while any member fires, else StatusResolved.
	Status string
	// Verdict is the incident's, with its class; Title, Summary and Actions are what the
	// member that brought it says.
	Verdict string
	Class   playbooks.Class
	Title   string
	Summary string
	Actions []string
	// Pods are the pods of a cause that is not on every pod of the incident.
	Pods []string
	// Started is when its first alert started; Resolved when its last resolved (zero while
	// open).
	Started  time.Time `json:",omitzero"`
	Resolved time.Time `json:",omitzero"`
	// Alerts and Firing count its alerts, listed or not.
	Alerts, Firing int
	// Members are its alerts in at most maxMemberLines lines: firing first, causes before
	// symptoms.
	Members []MemberLine
	// More counts the alerts not in Members; MoreFiring those of them that fire.
	More, MoreFiring int
	// What the notification did to it: opened it, reopened it (an alert fired again within
	// the quiet time), resolved it; VerdictWas is the verdict it replaced (a member whose
	// verdict ranks above); Joined counts the alerts that joined with it.
	Opened, Reopened, ResolvedNow bool
	VerdictWas                    string
	Joined                        int
	// listed are the fingerprints of the alerts on its lines.
	listed map[string]bool
}

// Lists reports whether one of the view's lines shows the alert of fingerprint fp.
func (iv *IncidentView) Lists(fp string) bool { return iv.listed[fp] }

// MemberLine is one alert of an incident as its list shows it, or several alike on other pods.
type MemberLine struct {
	Alertname string
	// Pod is its pod (or instance); Labels its other labels that tell it apart (engine, ...).
	// Pods, on a line of several alerts, are the pods of all of them, Pod first.
	Pod    string
	Pods   []string `json:",omitempty"`
	Labels []Label
	// Verdict and Class are its last diagnosis', Summary what that diagnosis says (of one
	// alert only: the diagnoses of a line's pods each say their own).
	Verdict string
	Class   playbooks.Class
	Summary string
	// Role is RoleCause, RoleSymptom or RoleUnexplained.
	Role string
	// Resolved: it no longer fires. StartsAt is the line's earliest start, EndsAt its latest
	// end.
	Resolved         bool
	StartsAt, EndsAt time.Time `json:",omitzero"`
	// New: it (or one alert of the line) joined the incident with this notification.
	New bool
}

// Alerts is how many alerts the line stands for.
func (l MemberLine) Alerts() int { return max(len(l.Pods), 1) }

// joins reports whether m is alike the line's alerts and there is room on it for its pod.
func (l MemberLine) joins(m MemberLine) bool {
	return l.Pod != "" && m.Pod != "" && len(l.Pods) < maxLinePods && l.Alertname == m.Alertname && l.Verdict == m.Verdict &&
		l.Role == m.Role && l.Resolved == m.Resolved && slices.Equal(l.Labels, m.Labels)
}

// add puts m's pod on the line.
func (l *MemberLine) add(m MemberLine) {
	if len(l.Pods) == 0 {
		l.Pods = []string{l.Pod}
	}
	l.Pods = append(l.Pods, m.Pod)
	l.Summary = ""
	if !m.StartsAt.IsZero() && (l.StartsAt.IsZero() || m.StartsAt.Before(l.StartsAt)) {
		l.StartsAt = m.StartsAt
	}
	if m.EndsAt.After(l.EndsAt) {
		l.EndsAt = m.EndsAt
	}
	l.New = l.New || m.New
}

// newIncidentView is the view of inc (nil: none).
func newIncidentView(inc *Incident) *IncidentView {
	if inc == nil {
		return nil
	}
	iv := &IncidentView{ID: Printable(inc.ID), Key: scopeLabels(inc.Key, false), Status: StatusFiring, Verdict: inc.Verdict,
		Class: playbooks.ClassOf(inc.Verdict), Title: printableText(inc.Cause.Title), Summary: printableText(inc.Cause.Summary),
		Actions: printableAll(inc.Cause.Actions), Pods: printableAll(inc.Cause.Pods), Started: inc.Started, Resolved: inc.Resolved,
		Alerts: inc.Alerts(), Firing: inc.Firing(), Opened: inc.Change.Opened, Reopened: inc.Change.Reopened,
		ResolvedNow: inc.Change.Resolved, VerdictWas: inc.Change.VerdictWas, Joined: len(inc.Change.Joined)}
	if !inc.Open() {
		iv.Status = StatusResolved
	}
	listed := 0
	iv.listed = map[string]bool{}
	for _, m := range inc.CauseFirst() {
		line := MemberLine{Alertname: Printable(m.Alertname), Pod: Printable(m.Pod), Labels: scopeLabels(m.Labels, false),
			Verdict: m.Verdict, Class: playbooks.ClassOf(m.Verdict), Summary: printableText(m.Summary), Role: m.Role,
			Resolved: m.Status == StatusResolved, StartsAt: m.StartsAt, EndsAt: m.EndsAt, New: slices.Contains(inc.Change.Joined, m.Fingerprint)}
		if i := slices.IndexFunc(iv.Members, func(l MemberLine) bool { return l.joins(line) }); i >= 0 {
			iv.Members[i].add(line)
		} else if len(iv.Members) < maxMemberLines {
			iv.Members = append(iv.Members, line)
		} else {
			continue
		}
		listed++
		iv.listed[m.Fingerprint] = true
		if !line.Resolved {
			iv.MoreFiring--
		}
	}
	iv.More = inc.Alerts() - listed
	iv.MoreFiring += inc.Firing()
	return iv
}

// Name names the incident by its key: "meta-llama/Llama-3.1-8B-Instruct · llm".
func (iv *IncidentView) Name() string {
	parts := make([]string, len(iv.Key))
	for i, l := range iv.Key {
		parts[i] = l.Value
	}
	return strings.Join(parts, " · ")
}

// Headline is the incident's first line: "FIRING: incident meta-llama/Llama-3.1-8B-Instruct ·
// llm (3 alerts)".
func (iv *IncidentView) Headline() string {
	return Headline(iv.Status, "incident "+iv.Name(), iv.Alerts)
}

// Where says where a per-pod cause is: "on pod vllm-2", "on pods vllm-1, vllm-2" ("" when the
// cause is the whole model's).
func (iv *IncidentView) Where() string {
	switch len(iv.Pods) {
	case 0:
		return ""
	case 1:
		return "on pod " + iv.Pods[0]
	case 2, 3:
		return "on pods " + strings.Join(iv.Pods, ", ")
	}
	return fmt.Sprintf("on pods %s and %d more", strings.Join(iv.Pods[:3], ", "), len(iv.Pods)-3)
}

// Lasted is how long the incident lasted, once resolved.
func (iv *IncidentView) Lasted() (time.Duration, bool) {
	if iv.Resolved.IsZero() || iv.Started.IsZero() || !iv.Resolved.After(iv.Started) {
		return 0, false
	}
	return iv.Resolved.Sub(iv.Started), true
}

// Counts says how many alerts it has and how many fire: "6 alerts, 4 firing".
func (iv *IncidentView) Counts() string {
	switch {
	case iv.Alerts == 1 && iv.Firing == 1:
		return "1 alert, firing"
	case iv.Firing == iv.Alerts:
		return fmt.Sprintf("%d alerts, all firing", iv.Alerts)
	case iv.Firing == 0:
		return alerts(iv.Alerts) + ", none firing"
	}
	return fmt.Sprintf("%s, %d firing", alerts(iv.Alerts), iv.Firing)
}

// alerts is "1 alert" or "n alerts".
func alerts(n int) string {
	if n == 1 {
		return "1 alert"
	}
	return fmt.Sprintf("%d alerts", n)
}

// MoreText says what the member list leaves out: "…and 240 more alerts (200 firing), not
// listed" ("" when nothing).
func (iv *IncidentView) MoreText() string {
	if iv.More <= 0 {
		return ""
	}
	word := "alerts"
	if iv.More == 1 {
		word = "alert"
	}
	return fmt.Sprintf("…and %d more %s (%d firing), not listed", iv.More, word, iv.MoreFiring)
}

// Change says what the notification did to the incident, in a few words ("" for nothing but
// news of its members).
func (iv *IncidentView) Change() string {
	var parts []string
	switch {
	case iv.Opened:
		parts = append(parts, "opened")
	case iv.Reopened:
		parts = append(parts, "reopened: an alert fired again within the quiet time")
	case iv.ResolvedNow:
		if d, ok := iv.Lasted(); ok {
			parts = append(parts, "resolved after "+HumanDuration(d))
		} else {
			parts = append(parts, "resolved")
		}
	}
	if !iv.Opened && iv.Joined > 0 {
		parts = append(parts, alerts(iv.Joined)+" joined")
	}
	if iv.VerdictWas != "" {
		parts = append(parts, fmt.Sprintf("%s ranks above %s: it is the incident's verdict now", iv.Verdict, iv.VerdictWas))
	}
	return strings.Join(parts, "; ")
}

// Says is what the line says of the member after its name: "capacity-past-knee, cause", then
// "resolved after 5m" once resolved.
func (l MemberLine) Says() string {
	s := l.Verdict
	if l.Role != "" && l.Role != RoleUnexplained {
		s += ", " + l.Role
	}
	if l.Resolved {
		s += ", resolved"
		if !l.StartsAt.IsZero() && l.EndsAt.After(l.StartsAt) {
			s += " after " + HumanDuration(l.EndsAt.Sub(l.StartsAt))
		}
	}
	return s
}

// Where names the member's pod and other labels: "pod vllm-0 · engine 1", "pods vllm-0, vllm-1"
// ("" when none).
func (l MemberLine) Where() string {
	var parts []string
	switch {
	case len(l.Pods) > 1:
		parts = append(parts, "pods "+strings.Join(l.Pods, ", "))
	case l.Pod != "":
		parts = append(parts, "pod "+l.Pod)
	}
	for _, lb := range l.Labels {
		parts = append(parts, lb.Word()+" "+lb.Value)
	}
	return strings.Join(parts, " · ")
}
