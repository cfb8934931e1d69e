package notify

import (
	"cmp"
	"slices"
	"time"

	"github.com/vllm-responder/vllm-responder/playbooks"
)

// An incident joins the alerts of one key (incidents.key: by default one model in one
// namespace) across alert names, pods and Alertmanager groups, so that one cause is one thread
// instead of one per group. The tracker (notify/incident) keeps it in the store and hands every
// notifier the incident its notification belongs to, as it stands after that notification: the
// notifiers only show it (Slack's parent and thread, Teams' card, the webhook's JSON, the
// console's block).

// Roles of a member in its incident (cause before symptom).
const (
	// RoleCause: the member's verdict is the incident's, and its alert measures a mechanism
	// (a queue, the KV cache, an engine's progress, a GPU) rather than what users feel.
	RoleCause = "cause"
	// RoleSymptom: the member's alert measures what users feel (incidents.symptom_matchers:
	// latency, errors, aborts), or its verdict ranks below the incident's in the causal order
	// (playbooks.CausalRank): it follows from the cause.
	RoleSymptom = "symptom"
	// RoleUnexplained: no rule explains the member (inconclusive, no data, no playbook) and its
	// alert is no symptom: the incident does not claim to know why it fires.
	RoleUnexplained = "unexplained"
)

// MaxMembers bounds the alerts an incident lists; the alerts that join past it are delivered
// in the incident's thread as any other, counted (Incident.Unlisted) but not listed. The
// tracker follows 10,000 of them to their resolution; past that an alert is only counted and
// does not keep the incident open.
const MaxMembers = 100

// Incident is the incident a notification belongs to, as the store holds it after that
// notification. Its JSON is the `incident` of the signed webhook's payload.
type Incident struct {
	// ID names the incident: the same for every notification it joins, on every replica.
	ID string `json:"id"`
	// Key is the labels that name it (incidents.key), with their values.
	Key map[string]string `json:"key"`
	// Opened is when the responder opened it; Started is when its earliest alert started.
	Opened  time.Time `json:"opened"`
	Started time.Time `json:"started"`
	// Resolved is when its last firing member resolved; zero while any member fires. An alert
	// of its key that fires within incidents.quiet_time after it reopens it.
	Resolved time.Time `json:"resolved,omitzero"`
	// Verdict is the incident's verdict: its members' most causal so far (playbooks.CausalRank).
	// It changes only to a verdict that ranks above it, never back.
	Verdict string `json:"verdict"`
	// Cause is what the incident's verdict says, from the member that brought it.
	Cause Cause `json:"cause"`
	// Members are its alerts, in the order they joined (at most MaxMembers).
	Members []Member `json:"members"`
	// Unlisted counts the alerts that joined past MaxMembers; UnlistedFiring those of them that
	// fire.
	Unlisted       int `json:"unlisted,omitempty"`
	UnlistedFiring int `json:"unlisted_firing,omitempty"`
	// Seq counts its changes: of two snapshots of one incident, the one with the greater Seq is
	// the newer.
	Seq int64 `json:"seq"`
	// Change is what the notification that carries this snapshot did to the incident (omitted
	// when nothing: a triage's look-up).
	Change IncidentChange `json:"change,omitzero"`
}

// Cause is what an incident's verdict says: the diagnosis of the member that brought it.
type Cause struct {
	Alertname string   `json:"alertname"`
	Title     string   `json:"title"`
	Summary   string   `json:"summary,omitempty"`
	Actions   []string `json:"actions,omitempty"`
	// Pods are the pods (or instances) of the members whose verdict is the incident's, when the
	// key does not name the pod: a per-pod cause inside a model-wide incident names its pod.
	Pods []string `json:"pods,omitempty"`
}

// Member is one alert of an incident.
type Member struct {
	Fingerprint string `json:"fingerprint"`
	Alertname   string `json:"alertname"`
	// Pod is its pod (or instance) label; Labels are its labels besides the key's, alertname
	// and severity (pod, engine, ...).
	Pod    string            `json:"pod,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	// Verdict is its last diagnosis' ("unmatched": no playbook matched it), with that
	// diagnosis' title and summary.
	Verdict string `json:"verdict"`
	Title   string `json:"title,omitempty"`
	Summary string `json:"summary,omitempty"`
	// Role is RoleCause, RoleSymptom or RoleUnexplained, against the incident's verdict.
	Role string `json:"role"`
	// Status is StatusFiring or StatusResolved.
	Status   string    `json:"status"`
	StartsAt time.Time `json:"starts_at,omitzero"`
	EndsAt   time.Time `json:"ends_at,omitzero"`
	// Joined is when it joined the incident.
	Joined time.Time `json:"joined"`
}

// IncidentChange is what one notification did to its incident.
type IncidentChange struct {
	// Opened: the notification opened the incident; Reopened: it was resolved, within the quiet
	// time, and an alert fired again; Resolved: its last firing member resolved.
	Opened   bool `json:"opened,omitempty"`
	Reopened bool `json:"reopened,omitempty"`
	Resolved bool `json:"resolved,omitempty"`
	// VerdictWas is the incident's verdict before, when the notification changed it (a member
	// whose verdict ranks above it).
	VerdictWas string `json:"verdict_was,omitempty"`
	// Joined are the fingerprints of the alerts that joined the incident with it.
	Joined []string `json:"joined,omitempty"`
}

// Open reports whether any member fires.
func (inc *Incident) Open() bool { return inc.Resolved.IsZero() }

// Firing is how many of its alerts fire, listed or not.
func (inc *Incident) Firing() int {
	n := inc.UnlistedFiring
	for _, m := range inc.Members {
		if m.Status != StatusResolved {
			n++
		}
	}
	return n
}

// Alerts is how many alerts joined it, listed or not.
func (inc *Incident) Alerts() int { return len(inc.Members) + inc.Unlisted }

// Lasted is how long the incident lasted, from its first alert's start to its last
// resolution (false while open).
func (inc *Incident) Lasted() (time.Duration, bool) {
	if inc.Open() || !inc.Resolved.After(inc.Started) {
		return 0, false
	}
	return inc.Resolved.Sub(inc.Started), true
}

// Member returns the member of fingerprint fp.
func (inc *Incident) Member(fp string) (Member, bool) {
	i := slices.IndexFunc(inc.Members, func(m Member) bool { return m.Fingerprint == fp })
	if i < 0 {
		return Member{}, false
	}
	return inc.Members[i], true
}

// CauseFirst are the members in the order an incident lists them: firing before resolved,
// then causes, symptoms and the unexplained, each by its verdict's causal rank, then in the
// order they joined.
func (inc *Incident) CauseFirst() []Member {
	out := slices.Clone(inc.Members)
	roleOrder := map[string]int{RoleCause: 0, RoleSymptom: 1, RoleUnexplained: 2}
	slices.SortStableFunc(out, func(a, b Member) int {
		return cmp.Or(cmp.Compare(boolInt(a.Status == StatusResolved), boolInt(b.Status == StatusResolved)),
			cmp.Compare(roleOrder[a.Role], roleOrder[b.Role]),
			cmp.Compare(playbooks.CausalRank(a.Verdict), playbooks.CausalRank(b.Verdict)))
	})
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// RoleOf is the role of a member with verdict v in an incident whose verdict is incident;
// symptom says its alert measures what users feel (incidents.symptom_matchers).
func RoleOf(v, incident string, symptom bool) string {
	switch {
	case symptom:
		return RoleSymptom
	case !playbooks.NamesCause(v):
		return RoleUnexplained
	case v == incident:
		return RoleCause
	}
	return RoleSymptom
}
