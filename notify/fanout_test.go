package notify

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/alertmanager/template"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/store"
)

// poster counts its posts and fails while fail is set.
type poster struct {
	mu    sync.Mutex
	posts int
	fail  error
}

func (r *poster) Notify(context.Context, *Notification) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return false, r.fail
	}
	r.posts++
	return false, nil
}

func (r *poster) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.posts
}

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func groupState(pods ...string) *Notification {
	n := &Notification{GroupKey: "{}:{alertname=\"A\"}", Status: StatusFiring}
	for _, p := range pods {
		n.Items = append(n.Items, Item{Alert: template.Alert{Status: StatusFiring, Fingerprint: "fp-" + p, StartsAt: t0,
			Labels: map[string]string{"alertname": "A", "pod": p}}})
	}
	return n
}

func TestAFailingNotifierNeitherLosesNorRepeatsTheOthersPosts(t *testing.T) {
	slack, teams := &poster{}, &poster{fail: errors.New("teams: HTTP 502")}
	m := NewFanoutMetrics(nil, "slack", "teams")
	f := &Fanout{Targets: []Target{{"slack", slack}, {"teams", teams}}, Store: store.NewMemory(), Remember: time.Hour, Logger: zerolog.Nop(), Metrics: m}
	ctx := context.Background()

	if _, err := f.Notify(ctx, groupState("vllm-0")); err == nil {
		t.Fatal("Notify succeeded while teams failed: dispatch would keep its claims and the teams post would be lost")
	}
	if slack.count() != 1 || teams.count() != 0 {
		t.Fatalf("posts: slack %d, teams %d", slack.count(), teams.count())
	}
	// Alertmanager re-sends the group; dispatch diagnoses it again and notifies again.
	teams.mu.Lock()
	teams.fail = nil
	teams.mu.Unlock()
	if _, err := f.Notify(ctx, groupState("vllm-0")); err != nil {
		t.Fatal(err)
	}
	if slack.count() != 1 || teams.count() != 1 {
		t.Fatalf("after the re-send: slack %d (want 1: it had it), teams %d (want 1)", slack.count(), teams.count())
	}
	// A new state of the group (another pod) goes to both.
	if _, err := f.Notify(ctx, groupState("vllm-0", "vllm-1")); err != nil {
		t.Fatal(err)
	}
	if slack.count() != 2 || teams.count() != 2 {
		t.Fatalf("a new state: slack %d, teams %d, want 2 each", slack.count(), teams.count())
	}
	for _, c := range []struct {
		target, outcome string
		want            float64
	}{{"slack", DeliveryOK, 2}, {"slack", DeliveryAlreadyDelivered, 1}, {"teams", DeliveryFailed, 1}, {"teams", DeliveryOK, 2}} {
		if got := counterValue(m.Deliveries.WithLabelValues(c.target, c.outcome)); got != c.want {
			t.Errorf("deliveries{%s,%s} = %v, want %v", c.target, c.outcome, got, c.want)
		}
	}
}

// blocking does not return until release is closed (or its context ends).
type blocking struct{ release chan struct{} }

func (b blocking) Notify(ctx context.Context, _ *Notification) (bool, error) {
	select {
	case <-b.release:
		return false, nil
	case <-ctx.Done():
		return false, context.Cause(ctx)
	}
}

// signalling closes done once it has posted.
type signalling struct{ done chan struct{} }

func (s signalling) Notify(context.Context, *Notification) (bool, error) {
	close(s.done)
	return false, nil
}

func TestASlowNotifierDoesNotHoldTheOthersBack(t *testing.T) {
	release, done := make(chan struct{}), make(chan struct{})
	f := &Fanout{Targets: []Target{{"slow", blocking{release}}, {"fast", signalling{done}}}, Store: store.NewMemory(), Remember: time.Hour, Logger: zerolog.Nop()}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errc := make(chan error, 1)
	go func() { _, err := f.Notify(ctx, groupState("vllm-0")); errc <- err }()
	select {
	case <-done: // the fast one posted while the slow one was still stuck
	case <-ctx.Done():
		t.Fatal("the fast notifier never posted while the slow one was stuck")
	}
	close(release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func TestWithTheStoreDownEveryTargetIsPostedTo(t *testing.T) {
	a, b := &poster{}, &poster{}
	f := &Fanout{Targets: []Target{{"a", a}, {"b", b}}, Store: downStore{store.NewMemory()}, Remember: time.Hour, Logger: zerolog.Nop()}
	for range 2 {
		if _, err := f.Notify(context.Background(), groupState("vllm-0")); err != nil {
			t.Fatal(err)
		}
	}
	if a.count() != 2 || b.count() != 2 {
		t.Errorf("posts %d, %d: without records a duplicate post beats a lost one", a.count(), b.count())
	}
}

type downStore struct{ store.Store }

func (downStore) Get(context.Context, string) ([]byte, bool, error) {
	return nil, false, store.ErrUnavailable
}
func (downStore) Set(context.Context, string, []byte, time.Duration) error {
	return store.ErrUnavailable
}

func TestOneTargetKeepsNoRecords(t *testing.T) {
	st := store.NewMemory()
	r := &poster{}
	f := &Fanout{Targets: []Target{{"slack", r}}, Store: st, Remember: time.Hour, Logger: zerolog.Nop()}
	for range 2 {
		if _, err := f.Notify(context.Background(), groupState("vllm-0")); err != nil {
			t.Fatal(err)
		}
	}
	recs, _ := st.List(context.Background(), deliveredKeyPrefix)
	if r.count() != 2 || len(recs) != 0 {
		t.Errorf("posts %d (dispatch's claims decide alone), records %d", r.count(), len(recs))
	}
}

func TestTheStateHashIsTheAlertsStates(t *testing.T) {
	a := groupState("vllm-0", "vllm-1")
	b := groupState("vllm-1", "vllm-0")
	b.Items[0].Diagnosis = nil
	if StateHash(a) != StateHash(b) {
		t.Error("the same alerts in another order hash differently")
	}
	for name, mutate := range map[string]func(n *Notification){
		"a new startsAt":   func(n *Notification) { n.Items[0].Alert.StartsAt = t0.Add(time.Hour) },
		"resolved":         func(n *Notification) { n.Items[0].Alert.Status = StatusResolved },
		"another group":    func(n *Notification) { n.GroupKey = "other" },
		"one alert less":   func(n *Notification) { n.Items = n.Items[:1] },
		"another pod, too": func(n *Notification) { n.Items[1].Alert.Fingerprint = "fp-vllm-9" },
	} {
		c := groupState("vllm-0", "vllm-1")
		mutate(c)
		if StateHash(c) == StateHash(a) {
			t.Errorf("%s: same hash", name)
		}
	}
}
