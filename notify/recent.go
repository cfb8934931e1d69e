package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/store"
)

// RecentKey is the store's recent list of the recent diagnoses (RecordRecent, RecentDiagnoses).
const RecentKey = "diagnoses:recent"

// MaxRecent bounds the recent-diagnoses index: one list of at most this many entries, newest
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
// index of recent diagnoses first (store.Recents: one atomic put, so replicas sharing a Redis
// lose none of each other's). A store that fails only loses the index entry: the notification
// goes on.
func RecordRecent(next Notifier, st store.Store, log zerolog.Logger) Notifier {
	return NotifierFunc(func(ctx context.Context, n *Notification) (bool, error) {
		recordRecent(ctx, st, n, log)
		return next.Notify(ctx, n)
	})
}

// recordRecent puts n's firing diagnoses into the index, recorded now: of one notification's,
// the last item is the newest (the entries' IDs order them). Only the newest MaxRecent can stay
// in the index, so only those are encoded and sent (a notification of 10,000 alerts encoded
// every one, some 20 MB, to keep 100).
func recordRecent(ctx context.Context, st store.Store, n *Notification, log zerolog.Logger) {
	now := time.Now()
	var add []store.RecentEntry
	for i := len(n.Items) - 1; i >= 0 && len(add) < MaxRecent; i-- {
		it := n.Items[i]
		d := it.Diagnosis
		if d == nil || it.Alert.Status == StatusResolved {
			continue
		}
		b, err := json.Marshal(RecentDiagnosis{Playbook: d.Playbook, Verdict: d.Verdict, Title: d.Title, Summary: d.Summary,
			Alertname: it.Alert.Labels["alertname"], Scope: d.Scope, Source: n.Source, EvaluatedAt: d.EvaluatedAt})
		if err != nil {
			continue
		}
		id := fmt.Sprintf("%019d-%06d-%08x", now.UnixNano(), i, rand.Uint32())
		add = append(add, store.RecentEntry{ID: id, At: now, Val: b})
	}
	if len(add) == 0 {
		return
	}
	slices.Reverse(add)
	if err := st.PutRecent(ctx, RecentKey, add, MaxRecent, recentTTL); err != nil {
		log.Warn().Err(err).Msg("recent diagnoses index not updated")
	}
}

// RecentDiagnoses returns up to limit entries of the index, newest first.
func RecentDiagnoses(ctx context.Context, st store.Store, limit int) ([]RecentDiagnosis, error) {
	es, err := st.Recent(ctx, RecentKey, limit)
	if err != nil {
		return []RecentDiagnosis{}, err
	}
	out := make([]RecentDiagnosis, 0, len(es))
	for _, e := range es {
		var d RecentDiagnosis
		if json.Unmarshal(e.Val, &d) == nil { // an unreadable entry is left out
			out = append(out, d)
		}
	}
	return out, nil
}
