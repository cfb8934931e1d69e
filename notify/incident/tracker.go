// Package incident joins the alerts of one key (incidents.key: by default one model in one
// namespace) into one incident across alert names, pods and Alertmanager groups. The Tracker
// wraps the notifiers: for each notification it opens or joins the incident of its alerts in
// the store (one per key, whatever the replica, under a lock of the store) and hands the
// notifiers the incident as it stands (notify.Incident), which they show as one thread.
package incident

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/store"
)

// Store keys.
const (
	// recordKeyPrefix + keyHash: the incident of a key (the open one, or the last).
	recordKeyPrefix = "incident:"
	// lockKeyPrefix + keyHash: held while a notification changes the key's incident.
	lockKeyPrefix = "incident-lock:"
	// indexKey is the recent list of the keys that had an incident (store.Recents), for
	// finding the incident of a scope that names only part of its key.
	indexKey = "incidents:keys"
)

// maxIndexed bounds the index: the keys (models) whose incidents a partial scope can find.
const maxIndexed = 1000

// indexEntry is a key's entry in the index.
type indexEntry struct {
	Key map[string]string `json:"key"`
}

// keepFor is how long the store keeps an incident after its last change.
const keepFor = 7 * 24 * time.Hour

// lockTTL bounds how long a tracker that died holds a key's lock; a change takes two store
// calls.
const lockTTL = 10 * time.Second

// lockWait is how the tracker waits its turn when another notification (on this replica or
// another) changes the same incident: short backoffs, within the notification's deadline.
var lockWait = notify.Policy{Backoff: 20 * time.Millisecond, MaxBackoff: 500 * time.Millisecond, Attempts: 60}

// Events of incidents, the label values of the events metric.
const (
	EventOpened   = "opened"   // a notification opened an incident
	EventJoined   = "joined"   // an alert joined an open incident
	EventReopened = "reopened" // an alert fired again within the quiet time of a resolved one
	EventResolved = "resolved" // the last firing member of an incident resolved
	// EventKeyless: an alert lacked a key label and went to its group's own thread.
	EventKeyless = "keyless"
	// EventUnavailable: the store could not be reached and the alerts went to their groups'
	// own threads.
	EventUnavailable = "unavailable"
)

var events = []string{EventOpened, EventJoined, EventReopened, EventResolved, EventKeyless, EventUnavailable}

// Metrics are the tracker's own series, created up front at zero.
type Metrics struct {
	Events *prometheus.CounterVec
}

// NewMetrics creates the series and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{Events: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vllm_responder_incident_events_total",
		Help: "Incidents opened, reopened and resolved, alerts joined to an open one, and alerts kept in their group's own thread (keyless: a key label missing; unavailable: the store down).",
	}, []string{"event"})}
	for _, e := range events {
		m.Events.WithLabelValues(e)
	}
	if reg != nil {
		reg.MustRegister(m.Events)
	}
	return m
}

// Options are what a Tracker needs. Config (validated) and Store are required.
type Options struct {
	Config  *Config
	Store   store.Store
	Logger  zerolog.Logger
	Metrics *Metrics
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// Tracker is a notifier that joins each notification's alerts to their incident and passes it
// on to next with its Incident set. A notification whose alerts are of several keys is passed
// on as one notification per key (each with its incident); alerts that lack a key label, and
// all of them while the store cannot be reached, are passed on as they came, without an
// incident: their group's own thread, as with incidents off.
type Tracker struct {
	next notify.Notifier
	cfg  *Config
	st   store.Store
	log  zerolog.Logger
	m    *Metrics
	now  func() time.Time
}

// New returns a tracker in front of next.
func New(next notify.Notifier, o Options) (*Tracker, error) {
	if o.Config == nil || o.Store == nil || next == nil {
		return nil, errors.New("incident tracker: config, store and notifier are required")
	}
	t := &Tracker{next: next, cfg: o.Config, st: o.Store, log: o.Logger, m: o.Metrics, now: o.Now}
	if t.now == nil {
		t.now = time.Now
	}
	if t.m == nil {
		t.m = NewMetrics(nil)
	}
	return t, nil
}

// part is the alerts of one notification that belong to one key (key nil: those without one).
type part struct {
	key   map[string]string
	items []notify.Item
}

// Notify implements notify.Notifier. It passes every part on, even after one failed, and
// returns their errors joined; retry is false (each notifier retries in its own loop).
func (t *Tracker) Notify(ctx context.Context, n *notify.Notification) (bool, error) {
	if n.GroupKey == "" {
		// An on-demand diagnosis, not an alert group: nothing to join.
		return t.next.Notify(ctx, n)
	}
	parts := t.split(n)
	var errs []error
	for _, p := range parts {
		sub := n
		if len(parts) > 1 {
			sub = subNotification(n, p.items)
		}
		if p.key != nil {
			inc, err := t.join(ctx, p.key, sub)
			if err != nil {
				t.m.Events.WithLabelValues(EventUnavailable).Add(float64(len(p.items)))
				t.log.Warn().Err(err).Str("group_key", n.GroupKey).Str("incident_key", keyText(p.key)).
					Msg("incident state unavailable; delivering these alerts to their group's own thread")
			} else if inc != nil {
				if sub == n {
					c := *n
					sub = &c
				}
				sub.Incident = inc
			}
		}
		if _, err := t.next.Notify(ctx, sub); err != nil {
			errs = append(errs, err)
		}
	}
	return false, errors.Join(errs...)
}

// split sorts the items of n by key, in the order each key first appears; the items that lack a
// key label come last, with a nil key. A key's map is made once, for its first item, and each
// part's items are allocated once at their count; the items of a notification of one key (the
// usual case) are n's own, not a copy.
func (t *Tracker) split(n *notify.Notification) []part {
	var parts []part
	var counts []int
	keyless := -1
	var missing []string
	of := make([]int, len(n.Items)) // the part of each item
	for j, it := range n.Items {
		l := it.Alert.Labels
		i := slices.IndexFunc(parts, func(p part) bool { return p.key != nil && p.holds(l, t.cfg.Key) })
		if i < 0 {
			key, miss := t.keyOf(l)
			if key == nil && keyless >= 0 {
				i = keyless
			} else {
				parts, counts = append(parts, part{key: key}), append(counts, 0)
				i = len(parts) - 1
				if key == nil {
					keyless = i
				}
			}
			for _, m := range miss {
				if !slices.Contains(missing, m) {
					missing = append(missing, m)
				}
			}
		}
		of[j] = i
		counts[i]++
	}
	if len(parts) == 1 {
		parts[0].items = n.Items
	} else {
		for i := range parts {
			parts[i].items = make([]notify.Item, 0, counts[i])
		}
		for j, it := range n.Items {
			parts[of[j]].items = append(parts[of[j]].items, it)
		}
	}
	if keyless >= 0 {
		kl := parts[keyless]
		t.m.Events.WithLabelValues(EventKeyless).Add(float64(len(kl.items)))
		t.log.Info().Str("group_key", n.GroupKey).Int("alerts", len(kl.items)).Strs("missing_labels", missing).
			Str("alertname", kl.items[0].Alert.Labels["alertname"]).
			Msg("alerts without an incident key label stay in their group's own thread")
		parts = append(slices.Delete(parts, keyless, keyless+1), kl)
	}
	return parts
}

// holds reports whether labels l carry p's key (the key labels keys, each with p's value).
func (p part) holds(l map[string]string, keys []string) bool {
	for _, k := range keys {
		if v := l[k]; v == "" || v != p.key[k] {
			return false
		}
	}
	return true
}

// keyOf is the incident key of an alert's labels, or nil and the key labels it lacks.
func (t *Tracker) keyOf(l map[string]string) (map[string]string, []string) {
	key := make(map[string]string, len(t.cfg.Key))
	var missing []string
	for _, k := range t.cfg.Key {
		v := l[k]
		if v == "" {
			missing = append(missing, k)
			continue
		}
		key[k] = v
	}
	if len(missing) > 0 {
		return nil, missing
	}
	return key, nil
}

// subNotification is n with only items, and the labels they share as its common labels.
func subNotification(n *notify.Notification, items []notify.Item) *notify.Notification {
	sub := *n
	sub.Items = items
	common := maps.Clone(items[0].Alert.Labels)
	for _, it := range items[1:] {
		maps.DeleteFunc(common, func(k, v string) bool { return it.Alert.Labels[k] != v })
	}
	sub.CommonLabels = common
	return &sub
}

// join records the items of sub, all of key, in key's incident (opening one when none is
// open) and returns the incident as it stands after them; nil when there is no incident to
// join and nothing fires.
func (t *Tracker) join(ctx context.Context, key map[string]string, sub *notify.Notification) (*notify.Incident, error) {
	kh := keyHash(key)
	var inc *notify.Incident
	err := notify.Retry(ctx, lockWait, func(ctx context.Context) (bool, error) {
		lock, err := t.st.Lock(ctx, lockKeyPrefix+kh, lockTTL, store.LockHolder{Name: "incident tracker"})
		switch {
		case errors.Is(err, store.ErrLocked):
			return true, err
		case err != nil:
			return false, err
		}
		defer func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			if err := lock.Release(rctx); err != nil && !errors.Is(err, store.ErrNotHeld) {
				t.log.Warn().Err(err).Str("incident_key", keyText(key)).Msg("releasing the incident lock")
			}
		}()
		inc, err = t.change(ctx, kh, key, sub)
		return false, err
	}, nil)
	return inc, err
}

// change is join's work, under the key's lock.
func (t *Tracker) change(ctx context.Context, kh string, key map[string]string, sub *notify.Notification) (*notify.Incident, error) {
	now := t.now()
	r, err := t.load(ctx, kh)
	if err != nil {
		return nil, err
	}
	if r != nil {
		// A member that lost its resolution may have ended the incident long ago.
		r.expireStale(now)
		r.settle(now)
	}
	if r == nil || !r.joinable(now, t.cfg.QuietTime) {
		if !anyFiring(sub) {
			return nil, nil // nothing open to resolve, nothing new firing
		}
		r = &record{ID: newID(key, now), Key: key, Opened: now}
	}
	ch := r.apply(sub.Items, sub.Status, now, t.cfg)
	ch.Opened = r.Seq == 1
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	if err := t.st.Set(ctx, recordKeyPrefix+kh, b, keepFor); err != nil {
		return nil, err
	}
	if ib, err := json.Marshal(indexEntry{Key: r.Key}); err == nil {
		if err := t.st.PutRecent(ctx, indexKey, []store.RecentEntry{{ID: kh, At: r.Updated, Val: ib}}, maxIndexed, keepFor); err != nil {
			t.log.Warn().Err(err).Str("incident", r.ID).Msg("indexing the incident (a triage naming only its model may not find it)")
		}
	}
	t.count(r, ch)
	return r.snapshot(ch), nil
}

// count counts what a change did and logs it.
func (t *Tracker) count(r *record, ch notify.IncidentChange) {
	log := t.log.With().Str("incident", r.ID).Str("incident_key", keyText(r.Key)).Str("verdict", r.Verdict).Logger()
	switch {
	case ch.Opened:
		t.m.Events.WithLabelValues(EventOpened).Inc()
		log.Info().Int("alerts", len(ch.Joined)).Msg("incident opened")
	case ch.Reopened:
		t.m.Events.WithLabelValues(EventReopened).Inc()
		log.Info().Int("alerts", len(ch.Joined)).Msg("incident reopened: an alert fired again within the quiet time")
	}
	if !ch.Opened && len(ch.Joined) > 0 {
		t.m.Events.WithLabelValues(EventJoined).Add(float64(len(ch.Joined)))
		log.Info().Int("alerts", len(ch.Joined)).Msg("alerts joined the incident")
	}
	if ch.VerdictWas != "" {
		log.Info().Str("verdict_was", ch.VerdictWas).Msg("the incident's verdict changed: a member's ranks above it")
	}
	if ch.Resolved {
		t.m.Events.WithLabelValues(EventResolved).Inc()
		log.Info().Msg("incident resolved: every member resolved")
	}
}

// load reads the record of a key's incident; nil when there is none (or it is unreadable, and
// is then replaced).
func (t *Tracker) load(ctx context.Context, kh string) (*record, error) {
	r, err := loadRecord(ctx, t.st, kh)
	var bad *unreadableError
	if errors.As(err, &bad) {
		t.log.Warn().Err(err).Msg("opening a new incident in place of an unreadable record")
		return nil, nil
	}
	return r, err
}

// anyFiring reports whether any item of n fires.
func anyFiring(n *notify.Notification) bool {
	return slices.ContainsFunc(n.Items, func(it notify.Item) bool { return !resolvedItem(it, n.Status) })
}
