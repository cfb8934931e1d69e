package notify

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/store"
)

// RecentKey is the store record of the recent diagnoses (RecordRecent, RecentDiagnoses).
const RecentKey = "diagnoses:recent"

// MaxRecent bounds the recent-diagnoses index: one record of at most this many entries, newest
// first, whatever the number of alerts.
const MaxRecent = 100

// recentTTL keeps the index a week after the last diagnosis.
const recentTTL = 7 * 24 * time.Hour

// RecentDiagnosis is one entry of the index: what was diagnosed, when and with what verdict.
type RecentDiagnosis struct {
	Playbook    string            `json:"playbook"`
	Verdict     string            `json:"verdict"`
	Title       string            `json:"title"`
	Summary     string            `json:"summary,omitempty"`
	Alertname   string            `json:"alertname,omitempty"`
	Scope       map[string]string `json:"scope,omitempty"`
	Source      Source            `json:"source,omitempty"`
	EvaluatedAt time.Time         `json:"evaluated_at"`
}

// RecordRecent wraps next: every firing diagnosis it is given is added to the store's bounded
// index of recent diagnoses first. A store that fails only loses the index entry: the
// notification goes on. Replicas sharing a Redis may each overwrite an entry the other added at
// the same instant (read, append, write); the index is a convenience, not an audit log.
func RecordRecent(next Notifier, st store.Store, log zerolog.Logger) Notifier {
	r := &recorder{st: st, log: log}
	return NotifierFunc(func(ctx context.Context, n *Notification) (bool, error) {
		r.add(ctx, n)
		return next.Notify(ctx, n)
	})
}

type recorder struct {
	mu  sync.Mutex
	st  store.Store
	log zerolog.Logger
}

func (r *recorder) add(ctx context.Context, n *Notification) {
	var add []RecentDiagnosis
	for _, it := range n.Items {
		d := it.Diagnosis
		if d == nil || it.Alert.Status == StatusResolved {
			continue
		}
		add = append(add, RecentDiagnosis{Playbook: d.Playbook, Verdict: d.Verdict, Title: d.Title, Summary: d.Summary,
			Alertname: it.Alert.Labels["alertname"], Scope: d.Scope, Source: n.Source, EvaluatedAt: d.EvaluatedAt})
	}
	if len(add) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old, err := RecentDiagnoses(ctx, r.st, MaxRecent)
	if err != nil {
		r.log.Warn().Err(err).Msg("recent diagnoses index not updated")
		return
	}
	for i, j := 0, len(add)-1; i < j; i, j = i+1, j-1 {
		add[i], add[j] = add[j], add[i] // newest first
	}
	all := append(add, old...)
	if len(all) > MaxRecent {
		all = all[:MaxRecent]
	}
	b, err := json.Marshal(all)
	if err == nil {
		err = r.st.Set(ctx, RecentKey, b, recentTTL)
	}
	if err != nil {
		r.log.Warn().Err(err).Msg("recent diagnoses index not updated")
	}
}

// RecentDiagnoses returns up to limit entries of the index, newest first.
func RecentDiagnoses(ctx context.Context, st store.Store, limit int) ([]RecentDiagnosis, error) {
	b, ok, err := st.Get(ctx, RecentKey)
	if err != nil || !ok {
		return []RecentDiagnosis{}, err
	}
	var out []RecentDiagnosis
	if err := json.Unmarshal(b, &out); err != nil {
		return []RecentDiagnosis{}, nil // an unreadable index is rewritten by the next diagnosis
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
