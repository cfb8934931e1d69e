package dispatch

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/alertmanager/template"
	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/evidence"
	"github.com/vllm-responder/vllm-responder/facts/sources"
	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/metrics"
	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/store"
)

// collector records notifications.
type collector struct {
	mu sync.Mutex
	ns []*notify.Notification
}

func (c *collector) Notify(_ context.Context, n *notify.Notification) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ns = append(c.ns, n)
	return false, nil
}

func (c *collector) all() []*notify.Notification {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*notify.Notification(nil), c.ns...)
}

// engineOn returns a playbook engine on a Prometheus at url (here: nothing listening, so every
// diagnosis is degraded the way it is when Prometheus is down).
func engineOn(t *testing.T, url string) (*playbooks.Set, *evidence.Engine) {
	t.Helper()
	b, err := playbooks.Builtin(sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	set, err := playbooks.NewSet(b, nil, playbooks.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := api.NewClient(api.Config{Address: url})
	if err != nil {
		t.Fatal(err)
	}
	return set, evidence.NewEngine(evidence.PrometheusQuerier{API: v1.NewAPI(c)}, evidence.EngineOptions{QueryTimeout: 2 * time.Second})
}

func message(groupKey string, alerts ...template.Alert) *Message {
	return &Message{Data: &template.Data{Status: "firing", Alerts: alerts, CommonLabels: map[string]string{}}, Version: "4", GroupKey: groupKey}
}

func alert(fp string) template.Alert {
	return template.Alert{Status: "firing", Fingerprint: fp, StartsAt: time.Unix(1700000000, 0),
		Labels: map[string]string{"alertname": "VLLMTimeToFirstTokenP99High", "pod": "vllm-" + fp, "model_name": "m"}}
}

func TestTwoReplicasSharingRedisDiagnoseEachAlertOnce(t *testing.T) {
	addr := testenv.RedisAddr(t)
	prefix := fmt.Sprintf("test-%d:", time.Now().UnixNano())
	set, engine := engineOn(t, fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t)))
	var notes []*collector
	var ds []*Dispatcher
	for i := 0; i < 2; i++ {
		st, err := store.NewRedis("redis://"+addr+"/0", "", prefix)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		c := &collector{}
		d := New(set, engine, c, st, Options{Workers: 2, QueueSize: 16, DedupWindow: time.Hour, Logger: zerolog.Nop()})
		d.Start()
		notes, ds = append(notes, c), append(ds, d)
	}
	msg := message("g1", alert("a"), alert("b"))
	// Alertmanager may deliver the same group to both replicas, and re-send it.
	for round := 0; round < 3; round++ {
		for _, d := range ds {
			if _, err := d.Accept(context.Background(), msg, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, d := range ds {
		if err := d.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	diagnosed := map[string]int{}
	for _, c := range notes {
		for _, n := range c.all() {
			for _, it := range n.Items {
				diagnosed[it.Alert.Fingerprint]++
				// Prometheus is down: the diagnosis is still posted, degraded, saying so.
				if it.Diagnosis == nil || !strings.Contains(it.Diagnosis.Error, "Prometheus could not be reached") {
					t.Fatalf("want a degraded diagnosis naming Prometheus, got %+v", it.Diagnosis)
				}
			}
		}
	}
	if diagnosed["a"] != 1 || diagnosed["b"] != 1 {
		t.Fatalf("each alert must be diagnosed exactly once across replicas, got %v", diagnosed)
	}
}

func TestAFullQueueRefusesAndDropsItsClaimsSoTheRetryIsAccepted(t *testing.T) {
	set, engine := engineOn(t, fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t)))
	st := store.NewMemory()
	c := &collector{}
	d := New(set, engine, c, st, Options{Workers: 1, QueueSize: 1, DedupWindow: time.Hour, Logger: zerolog.Nop()})
	// Workers not started: the queue fills.
	if _, err := d.Accept(context.Background(), message("g1", alert("a")), time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Accept(context.Background(), message("g2", alert("b")), time.Now()); err != ErrQueueFull {
		t.Fatalf("want ErrQueueFull, got %v", err)
	}
	d.Start()
	testenv.WaitFor(t, 10*time.Second, "the queue to drain", func() bool { return len(c.all()) == 1 })
	acc, err := d.Accept(context.Background(), message("g2", alert("b")), time.Now())
	if err != nil || acc.New != 1 {
		t.Fatalf("Alertmanager's retry must be accepted: %+v %v", acc, err)
	}
	if err := d.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Accept(context.Background(), message("g3", alert("c")), time.Now()); err != ErrShuttingDown {
		t.Fatalf("after shutdown want ErrShuttingDown, got %v", err)
	}
	if len(c.all()) != 2 {
		t.Fatalf("accepted work lost: %d notifications", len(c.all()))
	}
}

func TestRedisDownStillDiagnoses(t *testing.T) {
	r := testenv.StartRedis(t)
	st, err := store.NewRedis("redis://"+r.Addr+"/0", "", "x:")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r.Stop()
	set, engine := engineOn(t, fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t)))
	c := &collector{}
	d := New(set, engine, c, st, Options{Workers: 1, QueueSize: 4, DedupWindow: time.Hour, Logger: zerolog.Nop()})
	d.Start()
	acc, err := d.Accept(context.Background(), message("g1", alert("a")), time.Now())
	if err != nil || acc.New != 1 {
		t.Fatalf("with Redis down an alert must still be accepted: %+v %v", acc, err)
	}
	if err := d.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(c.all()) != 1 {
		t.Fatal("the alert was not diagnosed")
	}
}

func TestResolvedAlertsArePassedOnWithoutAPlaybookRun(t *testing.T) {
	set, engine := engineOn(t, "http://127.0.0.1:1")
	c := &collector{}
	d := New(set, engine, c, store.NewMemory(), Options{Workers: 1, QueueSize: 4, DedupWindow: time.Hour, Logger: zerolog.Nop()})
	d.Start()
	a := alert("a")
	a.Status = "resolved"
	msg := message("g1", a)
	msg.Status = "resolved"
	if _, err := d.Accept(context.Background(), msg, time.Now()); err != nil {
		t.Fatal(err)
	}
	d.Shutdown(context.Background())
	ns := c.all()
	if len(ns) != 1 || !ns[0].Resolved() || ns[0].Items[0].Diagnosis != nil {
		t.Fatalf("want one resolution without a diagnosis, got %+v", ns)
	}
}

func TestUnknownAlertsAreNotPosted(t *testing.T) {
	set, engine := engineOn(t, "http://127.0.0.1:1")
	c := &collector{}
	d := New(set, engine, c, store.NewMemory(), Options{Workers: 1, QueueSize: 4, DedupWindow: time.Hour, Logger: zerolog.Nop()})
	d.Start()
	a := alert("a")
	a.Labels["alertname"] = "SomethingElse"
	if _, err := d.Accept(context.Background(), message("g1", a), time.Now()); err != nil {
		t.Fatal(err)
	}
	d.Shutdown(context.Background())
	if len(c.all()) != 0 {
		t.Fatal("an alert no playbook knows must be logged and counted, not posted")
	}
}

// A resolution of an alert no playbook knows follows its firing: nothing was posted when it
// fired, so nothing is posted when it resolves (Teams and the webhook would post a resolution card
// naming a diagnosis that never existed).
func TestResolutionsOfUnknownAlertsAreNotPosted(t *testing.T) {
	set, engine := engineOn(t, "http://127.0.0.1:1")
	c := &collector{}
	d := New(set, engine, c, store.NewMemory(), Options{Workers: 1, QueueSize: 4, DedupWindow: time.Hour, Logger: zerolog.Nop()})
	d.Start()
	a := alert("a")
	a.Labels["alertname"] = "SomethingElse"
	a.Status = "resolved"
	msg := message("g1", a)
	msg.Status = "resolved"
	if _, err := d.Accept(context.Background(), msg, time.Now()); err != nil {
		t.Fatal(err)
	}
	d.Shutdown(context.Background())
	if len(c.all()) != 0 {
		t.Fatal("the resolution of an alert no playbook knows must not be posted")
	}
}

// failing fails every notification.
type failing struct{ calls atomic.Int32 }

func (f *failing) Notify(context.Context, *notify.Notification) (bool, error) {
	f.calls.Add(1)
	return false, fmt.Errorf("slack is down")
}

func TestAFailedNotificationIsNotSwallowedByDedup(t *testing.T) {
	set, engine := engineOn(t, "http://127.0.0.1:1")
	f := &failing{}
	st := store.NewMemory()
	d := New(set, engine, f, st, Options{Workers: 1, QueueSize: 4, DedupWindow: time.Hour, Logger: zerolog.Nop()})
	d.Start()
	if _, err := d.Accept(context.Background(), message("g1", alert("a")), time.Now()); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "the failed attempt to drop its claim", func() bool {
		claims, _ := st.List(context.Background(), "dedup:")
		return f.calls.Load() == 1 && len(claims) == 0
	})
	// Alertmanager's re-send of the same alert must be handled again, not dropped as a duplicate.
	acc, err := d.Accept(context.Background(), message("g1", alert("a")), time.Now())
	if err != nil || acc.New != 1 {
		t.Fatalf("re-send after a failed notification: %+v %v", acc, err)
	}
	d.Shutdown(context.Background())
	if n := f.calls.Load(); n != 2 {
		t.Fatalf("notifier called %d times, want 2", n)
	}
}

// A claim is a short lease while its alert is in flight, and lasts the dedup window only once the
// notification went out: if the replica dies mid-diagnosis, a re-send is handled again soon.
func TestClaimsAreLeasesUntilTheNotificationIsSent(t *testing.T) {
	addr := testenv.RedisAddr(t)
	prefix := fmt.Sprintf("lease-%d:", time.Now().UnixNano())
	st, err := store.NewRedis("redis://"+addr+"/0", "", prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	set, engine := engineOn(t, "http://127.0.0.1:1")
	c := &collector{}
	d := New(set, engine, c, st, Options{Workers: 1, QueueSize: 4, DedupWindow: 4 * time.Hour,
		RunTimeout: 10 * time.Second, NotifyTimeout: 20 * time.Second, Logger: zerolog.Nop()})
	ctx := context.Background()
	if _, err := d.Accept(ctx, message("g1", alert("a")), time.Now()); err != nil {
		t.Fatal(err)
	}
	ttls := func() []time.Duration {
		keys, err := st.Client().Keys(ctx, prefix+"dedup:*").Result()
		if err != nil || len(keys) != 2 {
			t.Fatalf("want two claims (the group's state, the alert), got %v %v", keys, err)
		}
		return []time.Duration{st.Client().TTL(ctx, keys[0]).Val(), st.Client().TTL(ctx, keys[1]).Val()}
	}
	for _, got := range ttls() {
		if got <= 0 || got > 90*time.Second {
			t.Fatalf("in-flight claim TTL %s, want a lease of about 90s", got)
		}
	}
	d.Start()
	d.Shutdown(ctx)
	if len(c.all()) != 1 {
		t.Fatal("not notified")
	}
	for _, got := range ttls() {
		if got < 3*time.Hour {
			t.Fatalf("notified claim TTL %s, want the 4h dedup window", got)
		}
	}
}

// gated blocks its first notification until release is closed, and records every notification.
type gated struct {
	collector
	first   sync.Once
	called  chan struct{}
	release chan struct{}
}

func (g *gated) Notify(ctx context.Context, n *notify.Notification) (bool, error) {
	g.first.Do(func() {
		close(g.called)
		<-g.release
	})
	return g.collector.Notify(ctx, n)
}

// Notifications of a group that arrive while an earlier one of it is still queued are merged into
// it: one diagnosis and one post with the group's newest state, every claim confirmed, and no
// queue slot taken (a storm of one group cannot fill the queue for the others).
func TestNotificationsOfAQueuedGroupAreCoalesced(t *testing.T) {
	set, engine := engineOn(t, "http://127.0.0.1:1")
	g := &gated{called: make(chan struct{}), release: make(chan struct{})}
	st := store.NewMemory()
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	d := New(set, engine, g, st, Options{Workers: 1, QueueSize: 1, DedupWindow: time.Hour, Logger: zerolog.Nop(), Metrics: m})
	d.Start()
	ctx := context.Background()
	accept := func(msg *Message) error {
		_, err := d.Accept(ctx, msg, time.Now())
		return err
	}
	if err := accept(message("g1", alert("a"))); err != nil {
		t.Fatal(err)
	}
	<-g.called // the worker is busy with the first notification of g1: it is no longer queued

	if err := accept(message("g1", alert("a"), alert("b"))); err != nil { // a is a duplicate
		t.Fatal(err)
	}
	resolvedB := alert("b")
	resolvedB.Status = "resolved"
	if err := accept(message("g1", resolvedB, alert("c"))); err != nil {
		t.Fatalf("a newer notification of the queued group must be merged, not refused: %v", err)
	}
	if err := accept(message("g2", alert("d"))); err != ErrQueueFull {
		t.Fatalf("another group needs a queue slot: want ErrQueueFull, got %v", err)
	}
	close(g.release)
	if err := d.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	ns := g.all()
	if len(ns) != 2 {
		t.Fatalf("want 2 notifications (the first, then the merged one), got %d", len(ns))
	}
	merged := ns[1]
	var got []string
	for _, it := range merged.Items {
		got = append(got, it.Alert.Labels["pod"]+"="+it.Alert.Status)
		if it.Alert.Status == "firing" && it.Diagnosis == nil {
			t.Errorf("firing alert %s has no diagnosis", it.Alert.Labels["pod"])
		}
		if it.Alert.Status == "resolved" && it.Diagnosis != nil {
			t.Errorf("resolved alert %s was diagnosed", it.Alert.Labels["pod"])
		}
	}
	if strings.Join(got, " ") != "vllm-b=resolved vllm-c=firing" || merged.Status != "firing" {
		t.Fatalf("merged notification: status %s, items %v; want firing with vllm-b=resolved vllm-c=firing", merged.Status, got)
	}
	var c dto.Metric
	if err := m.Coalesced.Write(&c); err != nil {
		t.Fatal(err)
	}
	if v := c.GetCounter().GetValue(); v != 1 {
		t.Fatalf("coalesced counter %v, want 1", v)
	}
	var sup dto.Metric
	if err := m.AlertsReceived.WithLabelValues("superseded").Write(&sup); err != nil {
		t.Fatal(err)
	}
	if v := sup.GetCounter().GetValue(); v != 1 {
		t.Fatalf("alerts superseded %v, want 1 (b firing, by b resolved)", v)
	}
	// Every claim is confirmed, the superseded firing state of b included: a re-send of any of
	// them is a duplicate.
	for _, msg := range []*Message{message("g1", alert("a"), alert("b"), alert("c")), message("g1", resolvedB)} {
		d2 := New(set, engine, g, st, Options{Workers: 1, QueueSize: 1, DedupWindow: time.Hour, Logger: zerolog.Nop()})
		acc, err := d2.Accept(ctx, msg, time.Now())
		if err != nil || acc.New != 0 {
			t.Fatalf("re-send after the merged post: %+v %v; want all duplicates", acc, err)
		}
	}
}

// Once a worker has taken a group's notification, a newer one is queued on its own: what is
// being diagnosed is posted as it is, and the newer state gets its own post.
func TestANotificationInProgressIsNotMergedInto(t *testing.T) {
	set, engine := engineOn(t, "http://127.0.0.1:1")
	g := &gated{called: make(chan struct{}), release: make(chan struct{})}
	d := New(set, engine, g, store.NewMemory(), Options{Workers: 1, QueueSize: 4, DedupWindow: time.Hour, Logger: zerolog.Nop()})
	d.Start()
	ctx := context.Background()
	if _, err := d.Accept(ctx, message("g1", alert("a")), time.Now()); err != nil {
		t.Fatal(err)
	}
	<-g.called
	if _, err := d.Accept(ctx, message("g1", alert("b")), time.Now()); err != nil {
		t.Fatal(err)
	}
	close(g.release)
	if err := d.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	ns := g.all()
	if len(ns) != 2 || len(ns[0].Items) != 1 || len(ns[1].Items) != 1 || ns[1].Items[0].Alert.Labels["pod"] != "vllm-b" {
		t.Fatalf("want {a} then {b}, got %d notifications", len(ns))
	}
}

// stamped records when each notification was sent.
type stamped struct {
	collector
	at []time.Time
}

func (s *stamped) Notify(ctx context.Context, n *notify.Notification) (bool, error) {
	s.mu.Lock()
	s.at = append(s.at, time.Now())
	s.mu.Unlock()
	return s.collector.Notify(ctx, n)
}

func (s *stamped) times() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.at...)
}

// A group's follow-ups within the cooldown of its last diagnosis wait until it has passed, merged
// into one diagnosis and one post.
func TestAGroupsFollowUpsWaitForItsCooldownMerged(t *testing.T) {
	// Long enough that no stall of a loaded machine between the first diagnosis and the
	// follow-ups lets the cooldown pass first.
	const cooldown = 2 * time.Second
	set, engine := engineOn(t, "http://127.0.0.1:1")
	s := &stamped{}
	d := New(set, engine, s, store.NewMemory(), Options{Workers: 2, QueueSize: 4, DedupWindow: time.Hour, GroupCooldown: cooldown, Logger: zerolog.Nop()})
	d.Start()
	ctx := context.Background()
	t0 := time.Now() // before the first job is taken
	if _, err := d.Accept(ctx, message("g1", alert("a")), time.Now()); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "the first notification", func() bool { return len(s.all()) == 1 })
	bAt := time.Now()
	if _, err := d.Accept(ctx, message("g1", alert("b")), bAt); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Accept(ctx, message("g1", alert("c")), bAt.Add(time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "the follow-up", func() bool { return len(s.all()) == 2 })
	if err := d.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	ns, at := s.all(), s.times()
	if len(ns) != 2 || len(ns[1].Items) != 2 {
		t.Fatalf("want the first post and one merged follow-up of b and c, got %d posts", len(ns))
	}
	if waited := at[1].Sub(t0); waited < cooldown {
		t.Fatalf("follow-up posted %s after the first was taken; want at least the %s cooldown", waited, cooldown)
	}
	if !ns[1].ReceivedAt.Equal(bAt) {
		t.Fatalf("the merged follow-up must keep when its first part was received (%s), got %s", bAt, ns[1].ReceivedAt)
	}
}

// Held follow-ups are accepted work: they count against the queue's capacity, they never delay
// another group's first notification, and shutdown queues them at once rather than waiting out
// the cooldown.
func TestHeldFollowUpsCountAgainstTheQueueAndDrainOnShutdown(t *testing.T) {
	set, engine := engineOn(t, "http://127.0.0.1:1")
	c := &collector{}
	d := New(set, engine, c, store.NewMemory(), Options{Workers: 1, QueueSize: 2, DedupWindow: time.Hour, GroupCooldown: time.Hour, Logger: zerolog.Nop()})
	d.Start()
	ctx := context.Background()
	if _, err := d.Accept(ctx, message("g1", alert("a")), time.Now()); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "g1's first notification", func() bool { return len(c.all()) == 1 })
	if _, err := d.Accept(ctx, message("g1", alert("b")), time.Now()); err != nil { // held for an hour
		t.Fatal(err)
	}
	if _, err := d.Accept(ctx, message("g2", alert("c")), time.Now()); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "g2's first notification, not held behind g1", func() bool { return len(c.all()) == 2 })
	// g2 is now in its cooldown too; its follow-up is held: with g1's, the queue (2) is full.
	if _, err := d.Accept(ctx, message("g2", alert("d")), time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Accept(ctx, message("g3", alert("e")), time.Now()); err != ErrQueueFull {
		t.Fatalf("held follow-ups fill the queue: want ErrQueueFull, got %v", err)
	}
	if _, err := d.Accept(ctx, message("g1", alert("f")), time.Now()); err != nil {
		t.Fatalf("a follow-up of a held group merges without a slot: %v", err)
	}
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := d.Shutdown(sctx); err != nil {
		t.Fatalf("shutdown must queue held follow-ups, not wait an hour: %v", err)
	}
	got := map[string]int{}
	for _, n := range c.all() {
		for _, it := range n.Items {
			got[it.Alert.Fingerprint]++
		}
	}
	if len(c.all()) != 4 || got["b"] != 1 || got["d"] != 1 || got["f"] != 1 || got["e"] != 0 {
		t.Fatalf("want 4 posts with b, d and f once and e refused; got %d posts, %v", len(c.all()), got)
	}
}

// The group table is swept of idle groups as it grows; a group with a notification waiting is
// never swept, so its follow-ups still merge.
func TestSweepingIdleGroupsKeepsTheWaitingOnes(t *testing.T) {
	set, engine := engineOn(t, "http://127.0.0.1:1")
	reg := prometheus.NewRegistry()
	m := metrics.New(reg)
	d := New(set, engine, &collector{}, store.NewMemory(), Options{Workers: 1, QueueSize: 4096, DedupWindow: time.Hour,
		GroupCooldown: time.Second, Logger: zerolog.Nop(), Metrics: m})
	ctx := context.Background()
	const groups = 3 * minSweep // workers not started: every group's notification waits
	for i := range groups {
		if _, err := d.Accept(ctx, message(fmt.Sprintf("g%d", i), alert(fmt.Sprintf("a%d", i))), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	for i := range groups {
		if _, err := d.Accept(ctx, message(fmt.Sprintf("g%d", i), alert(fmt.Sprintf("b%d", i))), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	var c dto.Metric
	if err := m.Coalesced.Write(&c); err != nil {
		t.Fatal(err)
	}
	if got := c.GetCounter().GetValue(); got != groups {
		t.Fatalf("%v of %d follow-ups merged into their group's waiting notification", got, groups)
	}
}

// A group's notifications are handled one at a time: a resolution that arrives while the
// group's firing notification is still being posted (a slow Slack) waits for that post, even
// with idle workers and no cooldown, so it never overtakes the message it resolves.
func TestAGroupsResolutionWaitsForItsFiringPostInProgress(t *testing.T) {
	set, engine := engineOn(t, "http://127.0.0.1:1")
	called, release := make(chan struct{}), make(chan struct{})
	g := &collector{}
	n := notify.NotifierFunc(func(ctx context.Context, nt *notify.Notification) (bool, error) {
		if nt.GroupKey == "g1" && nt.Status == "firing" {
			close(called)
			<-release
		}
		return g.Notify(ctx, nt)
	})
	d := New(set, engine, n, store.NewMemory(), Options{Workers: 4, QueueSize: 4, DedupWindow: time.Hour, Logger: zerolog.Nop()})
	d.Start()
	ctx := context.Background()
	if _, err := d.Accept(ctx, message("g1", alert("a")), time.Now()); err != nil {
		t.Fatal(err)
	}
	<-called // the firing post is in flight
	res := message("g1", alert("a"))
	res.Status, res.Alerts[0].Status = "resolved", "resolved"
	if _, err := d.Accept(ctx, res, time.Now()); err != nil {
		t.Fatal(err)
	}
	// Idle workers would take the resolution now; it must wait. The first post completes only
	// after a second notification had every chance to start.
	if _, err := d.Accept(ctx, message("g2", alert("b")), time.Now()); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "another group's notification", func() bool {
		for _, x := range g.all() {
			if x.GroupKey == "g2" {
				return true
			}
		}
		return false
	})
	close(release)
	if err := d.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	ns := g.all()
	var order []string
	for _, x := range ns {
		if x.GroupKey == "g1" {
			order = append(order, x.Status)
		}
	}
	if strings.Join(order, " ") != "firing resolved" {
		t.Fatalf("g1's notifications in order %v; want firing then resolved", order)
	}
}

// countingQuerier answers every query with one sample, counting them; while hold is open it
// blocks each query until hold is closed, recording the peak of queries in flight.
type countingQuerier struct {
	calls, inFlight, peak atomic.Int64
	hold                  chan struct{}
}

func (q *countingQuerier) Query(ctx context.Context, _ string, _ time.Time) (model.Value, error) {
	q.calls.Add(1)
	n := q.inFlight.Add(1)
	defer q.inFlight.Add(-1)
	for p := q.peak.Load(); n > p && !q.peak.CompareAndSwap(p, n); p = q.peak.Load() {
	}
	if q.hold != nil {
		select {
		case <-q.hold:
		case <-ctx.Done():
		}
	}
	return model.Vector{&model.Sample{Value: 1}}, nil
}

// queriesPerRun is how many requests one run of pb sends at most: its queries a few to a
// request, the one request that carries its fleet queries, and its baselines' fallbacks where
// their first variants have no value (this file's queriers answer no query by its name).
func queriesPerRun(pb *playbooks.Playbook) int64 {
	return int64(len(evidence.Requests(pb, nil, 0)) + len(evidence.FallbackRequests(pb, nil, 0)))
}

func stormMessage(group string, n int) *Message {
	var alerts []template.Alert
	for i := range n {
		alerts = append(alerts, alert(fmt.Sprintf("p%04d", i)))
	}
	return message(group, alerts...)
}

// A group larger than the storm threshold is summarised by one diagnosis from group-wide queries
// (the labels its alerts share), not diagnosed alert by alert: its queries do not grow with it.
func TestAStormIsSummarisedFromGroupWideQueriesNotAlertByAlert(t *testing.T) {
	set, _ := engineOn(t, "http://127.0.0.1:1")
	q := &countingQuerier{}
	engine := evidence.NewEngine(q, evidence.EngineOptions{CacheTTL: -1})
	c := &collector{}
	d := New(set, engine, c, store.NewMemory(), Options{Workers: 1, QueueSize: 4, DedupWindow: time.Hour, StormThreshold: 5, Logger: zerolog.Nop()})
	d.Start()
	if _, err := d.Accept(context.Background(), stormMessage("g1", 500), time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := d.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	pb, _ := set.Match(alert("x").Labels)
	if got, run := q.calls.Load(), queriesPerRun(pb); got > run {
		t.Errorf("a storm of 500 alerts sent %d queries; want at most one run's %d", got, run)
	}
	ns := c.all()
	if len(ns) != 1 || len(ns[0].Items) != 500 {
		t.Fatalf("want one notification of 500 alerts, got %d", len(ns))
	}
	shared := ns[0].Items[0].Diagnosis
	for _, it := range ns[0].Items {
		if it.Diagnosis == nil || it.Diagnosis != shared {
			t.Fatal("every alert of the storm must point at the one group diagnosis")
		}
	}
	if _, ok := shared.Scope["pod"]; ok || shared.Scope["model_name"] != "m" {
		t.Errorf("the group diagnosis' scope %v must be what the alerts share (model_name), not one pod", shared.Scope)
	}
}

// Below the storm threshold every alert is diagnosed, but at most RunConcurrency at a time: the
// queries in flight do not grow with the alerts of a notification.
func TestTheDiagnosesOfOneNotificationRunAtBoundedConcurrency(t *testing.T) {
	set, _ := engineOn(t, "http://127.0.0.1:1")
	q := &countingQuerier{hold: make(chan struct{})}
	engine := evidence.NewEngine(q, evidence.EngineOptions{CacheTTL: -1, MaxConcurrent: 100000})
	c := &collector{}
	d := New(set, engine, c, store.NewMemory(), Options{Workers: 1, QueueSize: 4, DedupWindow: time.Hour, RunConcurrency: 2, Logger: zerolog.Nop()})
	d.Start()
	pb, _ := set.Match(alert("x").Labels)
	bound := 2 * queriesPerRun(pb)
	if _, err := d.Accept(context.Background(), stormMessage("g1", 300), time.Now()); err != nil {
		t.Fatal(err)
	}
	// Both diagnoses' own requests of their first round in flight (their fleet request is the
	// model's, shared in flight; the baselines' fallbacks wait for the first round's answers).
	own := int64(len(evidence.Requests(pb, nil, 0)))
	if pb.Fleet != nil {
		own--
	}
	testenv.WaitFor(t, 20*time.Second, "two diagnoses' requests in flight", func() bool { return q.inFlight.Load() >= 2*own })
	close(q.hold)
	if err := d.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p := q.peak.Load(); p > bound {
		t.Errorf("%d queries were in flight at once for one notification; want at most %d (2 diagnoses)", p, bound)
	}
	if n := c.all(); len(n) != 1 || n[0].Items[299].Diagnosis == nil {
		t.Fatal("every alert must still be diagnosed")
	}
}

type replicaID struct{}

// scripted is a store whose claims are taken in a scripted order of callers (the replica id in
// the context): the interleaving that split a notification between two replicas. A caller
// that is done no longer holds up the script.
type scripted struct {
	store.Store
	mu     sync.Mutex
	cond   *sync.Cond
	script []int
	done   map[int]bool
}

func (s *scripted) Claim(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	id := ctx.Value(replicaID{}).(int)
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.script) > 0 && s.script[0] != id && !s.done[s.script[0]] {
		s.cond.Wait()
	}
	if len(s.script) > 0 && s.script[0] == id {
		s.script = s.script[1:]
	}
	defer s.cond.Broadcast()
	return s.Store.Claim(ctx, key, ttl)
}

func (s *scripted) finish(id int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done[id] = true
	s.cond.Broadcast()
}

// Two replicas handed the same two-alert notification at once: exactly one handles all of it,
// even when the other overtakes it between two claims (A claims, B claims twice, A again).
func TestTwoReplicasNeverSplitOneNotification(t *testing.T) {
	set, engine := engineOn(t, "http://127.0.0.1:1")
	st := &scripted{Store: store.NewMemory(), script: []int{0, 1, 1, 0, 0, 1}, done: map[int]bool{}}
	st.cond = sync.NewCond(&st.mu)
	msg := message("g1", alert("a"), alert("b"))
	got := make([]Accepted, 2)
	var wg sync.WaitGroup
	for id := range 2 {
		d := New(set, engine, &collector{}, st, Options{Workers: 1, QueueSize: 4, DedupWindow: time.Hour, Logger: zerolog.Nop()})
		wg.Go(func() {
			defer st.finish(id)
			acc, err := d.Accept(context.WithValue(context.Background(), replicaID{}, id), msg, time.Now())
			if err != nil {
				t.Error(err)
			}
			got[id] = acc
		})
	}
	wg.Wait()
	if !(got[0].New == 2 && got[1].New == 0) && !(got[1].New == 2 && got[0].New == 0) {
		t.Fatalf("the notification was split between the replicas: %+v and %+v", got[0], got[1])
	}
}
