package notify

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/alertmanager/template"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/store"
)

// The index keeps the newest MaxRecent firing diagnoses, newest first, whatever the number of
// alerts, and skips resolutions; the notification is passed on either way.
func TestRecentDiagnosesAreBoundedNewestFirst(t *testing.T) {
	st := store.NewMemory()
	passed := 0
	n := RecordRecent(NotifierFunc(func(context.Context, *Notification) (bool, error) { passed++; return false, nil }), st, zerolog.Nop())
	ctx := context.Background()
	for i := range 3 {
		items := []Item{{Alert: template.Alert{Status: StatusResolved, Labels: template.KV{"alertname": "A"}}, Diagnosis: &playbooks.Diagnosis{Verdict: "resolved"}}}
		for j := range 50 {
			items = append(items, Item{Alert: template.Alert{Status: StatusFiring, Labels: template.KV{"alertname": "A"}},
				Diagnosis: &playbooks.Diagnosis{Playbook: "p", Verdict: playbooks.VerdictHealthy, Title: fmt.Sprintf("%d-%d", i, j)}})
		}
		if _, err := n.Notify(ctx, &Notification{Items: items}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := RecentDiagnoses(ctx, st, 0)
	if err != nil {
		t.Fatal(err)
	}
	if passed != 3 || len(got) != MaxRecent || got[0].Title != "2-49" || got[MaxRecent-1].Title != "1-0" {
		t.Fatalf("passed %d, %d entries, first %q last %q; want 3, %d, 2-49, 1-0", passed, len(got), got[0].Title, got[len(got)-1].Title, MaxRecent)
	}
	for _, d := range got {
		if d.Verdict == "resolved" {
			t.Fatal("a resolution was indexed")
		}
	}
	if few, _ := RecentDiagnoses(ctx, st, 5); len(few) != 5 {
		t.Fatalf("limit 5 gave %d", len(few))
	}
}
