package incident

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

// record is what the store keeps of an incident, at its key's record: the incident and, per
// member, what deciding on it needs and no notifier shows.
type record struct {
	ID       string            `json:"id"`
	Key      map[string]string `json:"key"`
	Opened   time.Time         `json:"opened"`
	Started  time.Time         `json:"started"`
	Resolved time.Time         `json:"resolved,omitzero"`
	Verdict  string            `json:"verdict"`
	Cause    notify.Cause      `json:"cause"`
	Members  []member          `json:"members"`
	// Unlisted are the alerts that joined past notify.MaxMembers, by fingerprint: true while
	// they fire (at most maxUnlisted; past it they are only counted, in Overflow).
	Unlisted map[string]bool `json:"unlisted,omitempty"`
	Overflow int             `json:"overflow,omitempty"`
	Seq      int64           `json:"seq"`
	Updated  time.Time       `json:"updated"`
}

// maxUnlisted bounds the unlisted alerts an incident follows to their resolution.
const maxUnlisted = 10_000

// member is one alert of the incident as the store keeps it.
type member struct {
	notify.Member
	// Symptom: its alert matches incidents.symptom_matchers.
	Symptom bool `json:"symptom,omitempty"`
	// Seen is the last time a notification carried it.
	Seen time.Time `json:"seen"`
}

// staleAfter: a firing member no notification carried for this long counts as resolved when
// the incident is next changed. Alertmanager re-sends a firing alert every repeat_interval (4h
// by default) and the dispatcher diagnoses it again after dispatch.dedup_window (4h), so a
// member that fires is seen at least twice in this time; one not seen lost its resolution.
const staleAfter = 24 * time.Hour

// Text bounds of what a member keeps of its diagnosis.
const (
	maxTitle   = 120
	maxSummary = 300
	maxActions = 3
)

// newID names an incident: 12 hex digits of a hash of its key and the time it opened.
func newID(key map[string]string, opened time.Time) string {
	h := sha256.New()
	h.Write([]byte(keyText(key)))
	h.Write([]byte{0})
	h.Write([]byte(strconv.FormatInt(opened.UnixNano(), 10)))
	return hex.EncodeToString(h.Sum(nil)[:6])
}

// keyText is a key as one string: name="value" pairs by name, as Alertmanager writes group
// labels.
func keyText(key map[string]string) string {
	parts := make([]string, 0, len(key))
	for _, k := range slices.Sorted(maps.Keys(key)) {
		parts = append(parts, k+"="+strconv.Quote(key[k]))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// keyHash names a key in store keys.
func keyHash(key map[string]string) string {
	h := sha256.Sum256([]byte(keyText(key)))
	return hex.EncodeToString(h[:16])
}

// joinable reports whether a notification at now joins r rather than opening a new incident:
// r is open, or resolved less than quiet ago.
func (r *record) joinable(now time.Time, quiet time.Duration) bool {
	return r.Resolved.IsZero() || now.Before(r.Resolved.Add(quiet))
}

// apply records the items of one notification (all of r's key) at now and returns what they
// changed. cfg decides which alerts are symptoms.
func (r *record) apply(items []notify.Item, status string, now time.Time, cfg *Config) notify.IncidentChange {
	var ch notify.IncidentChange
	wasResolved := !r.Resolved.IsZero()
	for _, it := range items {
		if resolvedItem(it, status) {
			r.resolve(it, now)
			continue
		}
		if r.fire(it, now, cfg) {
			ch.Joined = append(ch.Joined, fingerprint(it))
		}
		if v := it.Verdict(); r.Verdict == "" || playbooks.CausalRank(v) < playbooks.CausalRank(r.Verdict) {
			if r.Verdict != "" {
				ch.VerdictWas = r.Verdict
			}
			r.Verdict = v
			r.Cause = causeOf(it)
		}
	}
	r.expireStale(now)
	r.settle(now)
	switch resolved := !r.Resolved.IsZero(); {
	case wasResolved && !resolved:
		ch.Reopened = true
	case !wasResolved && resolved:
		ch.Resolved = true
	}
	r.Seq++
	r.Updated = now
	return ch
}

// resolvedItem reports whether an item is a resolution (an alert without a status takes the
// notification's).
func resolvedItem(it notify.Item, status string) bool {
	return it.Alert.Status == notify.StatusResolved || (it.Alert.Status == "" && status == notify.StatusResolved)
}

// fire records a firing item and reports whether it joined the incident just now.
func (r *record) fire(it notify.Item, now time.Time, cfg *Config) bool {
	fp := fingerprint(it)
	i := slices.IndexFunc(r.Members, func(m member) bool { return m.Fingerprint == fp })
	if i < 0 {
		if len(r.Members) >= notify.MaxMembers {
			return r.fireUnlisted(fp)
		}
		r.Members = append(r.Members, member{Member: notify.Member{Fingerprint: fp, Joined: now}})
		i = len(r.Members) - 1
	}
	m := &r.Members[i]
	joined := m.Status == notify.StatusResolved || m.Status == ""
	l := it.Alert.Labels
	m.Alertname = clip(l["alertname"], maxTitle)
	m.Pod = clip(cmp.Or(l["pod"], l["instance"]), maxTitle)
	m.Labels = memberLabels(l, r.Key)
	m.Verdict = it.Verdict()
	m.Title, m.Summary = "", ""
	if d := it.Diagnosis; d != nil {
		m.Title, m.Summary = clip(d.Title, maxTitle), clip(d.Summary, maxSummary)
	}
	m.Status = notify.StatusFiring
	m.StartsAt, m.EndsAt = it.Alert.StartsAt, time.Time{}
	m.Symptom = cfg.symptom(l)
	m.Seen = now
	return joined
}

// fireUnlisted records a firing alert past notify.MaxMembers and reports whether it joined
// just now.
func (r *record) fireUnlisted(fp string) bool {
	firing, known := r.Unlisted[fp]
	switch {
	case known:
		r.Unlisted[fp] = true
		return !firing
	case len(r.Unlisted) >= maxUnlisted:
		r.Overflow++
		return true
	}
	if r.Unlisted == nil {
		r.Unlisted = map[string]bool{}
	}
	r.Unlisted[fp] = true
	return true
}

// resolve records a resolution.
func (r *record) resolve(it notify.Item, now time.Time) {
	fp := fingerprint(it)
	i := slices.IndexFunc(r.Members, func(m member) bool { return m.Fingerprint == fp })
	if i < 0 {
		if _, ok := r.Unlisted[fp]; ok {
			r.Unlisted[fp] = false
		}
		return
	}
	m := &r.Members[i]
	m.Status = notify.StatusResolved
	m.EndsAt = it.Alert.EndsAt
	if m.EndsAt.IsZero() || m.EndsAt.After(now) {
		m.EndsAt = now
	}
	m.Seen = now
}

// expireStale counts the firing members not seen for staleAfter as resolved when last seen.
func (r *record) expireStale(now time.Time) {
	for i := range r.Members {
		m := &r.Members[i]
		if m.Status == notify.StatusFiring && now.Sub(m.Seen) >= staleAfter {
			m.Status, m.EndsAt = notify.StatusResolved, m.Seen
		}
	}
}

// settle recomputes what follows from the members: their roles, the pods of the cause, when
// the incident started, and whether (and when) it resolved.
func (r *record) settle(now time.Time) {
	r.Started = time.Time{}
	firing := r.unlistedFiring() > 0
	var lastEnd time.Time
	for i := range r.Members {
		m := &r.Members[i]
		m.Role = notify.RoleOf(m.Verdict, r.Verdict, m.Symptom)
		if s := m.StartsAt; !s.IsZero() && (r.Started.IsZero() || s.Before(r.Started)) {
			r.Started = s
		}
		if m.Status == notify.StatusFiring {
			firing = true
		} else if m.EndsAt.After(lastEnd) {
			lastEnd = m.EndsAt
		}
	}
	r.Started = cmp.Or(r.Started, r.Opened)
	r.Cause.Pods = r.causePods()
	switch {
	case firing:
		r.Resolved = time.Time{}
	case r.Resolved.IsZero():
		r.Resolved = cmp.Or(lastEnd, now)
	}
}

// unlistedFiring is how many of the unlisted alerts fire.
func (r *record) unlistedFiring() int {
	n := 0
	for _, f := range r.Unlisted {
		if f {
			n++
		}
	}
	return n
}

// causePods are the pods of the members whose verdict is the incident's, when the key does not
// name the pod and the cause is not on every pod of the incident (then it is the model's).
func (r *record) causePods() []string {
	if _, ok := r.Key["pod"]; ok {
		return nil
	}
	var cause, all []string
	for _, m := range r.Members {
		if m.Pod == "" {
			continue
		}
		if !slices.Contains(all, m.Pod) {
			all = append(all, m.Pod)
		}
		if m.Verdict == r.Verdict && !slices.Contains(cause, m.Pod) {
			cause = append(cause, m.Pod)
		}
	}
	if len(cause) == 0 || len(cause) == len(all) {
		return nil
	}
	slices.Sort(cause)
	return cause
}

// causeOf is what a member that brings the incident's verdict says of it.
func causeOf(it notify.Item) notify.Cause {
	c := notify.Cause{Alertname: clip(it.Alert.Labels["alertname"], maxTitle), Title: "no playbook matches " + clip(it.Alert.Labels["alertname"], maxTitle)}
	if d := it.Diagnosis; d != nil {
		c.Title, c.Summary = clip(cmp.Or(d.Title, d.Verdict), maxTitle), clip(d.Summary, maxSummary)
		for _, a := range d.Actions[:min(len(d.Actions), maxActions)] {
			c.Actions = append(c.Actions, clip(a, maxTitle))
		}
	}
	return c
}

// notMemberLabels are the labels a member does not list: its name, its severity, its pod.
var notMemberLabels = []string{"alertname", "severity", "pod", "instance"}

// maxMemberLabels bounds the labels a member lists.
const maxMemberLabels = 8

// memberLabels are an alert's labels that tell it apart within its incident: all but the key's,
// alertname, severity and the pod (kept apart).
func memberLabels(l map[string]string, key map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(l)) {
		if _, inKey := key[k]; inKey || l[k] == "" || slices.Contains(notMemberLabels, k) {
			continue
		}
		if len(out) == maxMemberLabels {
			break
		}
		out[clip(k, 64)] = clip(l[k], maxTitle)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// snapshot is the incident as notifiers see it.
func (r *record) snapshot(ch notify.IncidentChange) *notify.Incident {
	inc := &notify.Incident{ID: r.ID, Key: maps.Clone(r.Key), Opened: r.Opened, Started: r.Started, Resolved: r.Resolved,
		Verdict: r.Verdict, Cause: r.Cause, Unlisted: len(r.Unlisted) + r.Overflow, UnlistedFiring: r.unlistedFiring(), Seq: r.Seq, Change: ch}
	inc.Cause.Actions = slices.Clone(r.Cause.Actions)
	inc.Cause.Pods = slices.Clone(r.Cause.Pods)
	inc.Members = make([]notify.Member, len(r.Members))
	for i, m := range r.Members {
		inc.Members[i] = m.Member
		inc.Members[i].Labels = maps.Clone(m.Labels)
	}
	return inc
}

// fingerprint identifies an alert: Alertmanager's fingerprint, or (not from Alertmanager) its
// sorted labels.
func fingerprint(it notify.Item) string {
	if fp := it.Alert.Fingerprint; fp != "" {
		return fp
	}
	return keyText(it.Alert.Labels)
}

// clip cuts s to at most n bytes, on a rune boundary, marking the cut with "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
