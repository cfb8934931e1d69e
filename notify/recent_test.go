package notify

import (
	"context"
	"fmt"
	"testing"
	"time"

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

// countingRecents counts the entries handed to PutRecent.
type countingRecents struct {
	store.Store
	sent int
}

func (c *countingRecents) PutRecent(ctx context.Context, key string, es []store.RecentEntry, bound int, ttl time.Duration) error {
	c.sent += len(es)
	return c.Store.PutRecent(ctx, key, es, bound, ttl)
}

// One notification of 10,000 firing alerts (the bench's big notification) encodes and sends
// only the MaxRecent newest: the index keeps those, and encoding the rest only made garbage.
func TestABigNotificationSendsOnlyTheRecentItCanKeep(t *testing.T) {
	st := &countingRecents{Store: store.NewMemory()}
	var items []Item
	for i := range 10_000 {
		items = append(items, Item{Alert: template.Alert{Status: StatusFiring, Labels: template.KV{"alertname": "A"}},
			Diagnosis: &playbooks.Diagnosis{Playbook: "p", Verdict: playbooks.VerdictHealthy, Title: fmt.Sprint(i)}})
	}
	items = append(items, Item{Alert: template.Alert{Status: StatusResolved, Labels: template.KV{"alertname": "A"}}, Diagnosis: &playbooks.Diagnosis{Verdict: "resolved"}})
	recordRecent(context.Background(), st, &Notification{Items: items}, zerolog.Nop())
	got, err := RecentDiagnoses(context.Background(), st, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.sent != MaxRecent || len(got) != MaxRecent || got[0].Title != "9999" || got[MaxRecent-1].Title != "9900" {
		t.Fatalf("%d entries sent, %d kept, first %q last %q; want %d, 9999 to 9900", st.sent, len(got), got[0].Title, got[len(got)-1].Title, MaxRecent)
	}
}
