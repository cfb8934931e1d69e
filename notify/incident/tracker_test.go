package incident

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/alertmanager/template"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/store"
)

var t0 = time.Date(2026, 5, 27, 3, 0, 0, 0, time.UTC)

// recorder is the notifier behind the tracker: it keeps what it was handed.
type recorder struct {
	mu   sync.Mutex
	got  []*notify.Notification
	fail error
}

func (r *recorder) Notify(_ context.Context, n *notify.Notification) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, n)
	return false, r.fail
}

func (r *recorder) last(t *testing.T) *notify.Notification {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.got) == 0 {
		t.Fatal("nothing was passed on")
	}
	return r.got[len(r.got)-1]
}

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type env struct {
	t      *testing.T
	tr     *Tracker
	finder *Finder
	rec    *recorder
	clock  *clock
	m      *Metrics
}

func testCfg(t *testing.T, edit func(*Config)) *Config {
	t.Helper()
	c := &Config{}
	c.SetDefaults()
	if edit != nil {
		edit(c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

func newEnv(t *testing.T, st store.Store, cfg *Config) *env {
	t.Helper()
	if st == nil {
		st = store.NewMemory()
	}
	if cfg == nil {
		cfg = testCfg(t, nil)
	}
	e := &env{t: t, rec: &recorder{}, clock: &clock{now: t0}, m: NewMetrics(nil)}
	tr, err := New(e.rec, Options{Config: cfg, Store: st, Logger: zerolog.New(zerolog.NewTestWriter(t)), Metrics: e.m, Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	e.tr = tr
	e.finder = NewFinder(cfg, st)
	e.finder.now = e.clock.Now
	return e
}

// alert is a firing alert of model m on pod.
func alert(name, model, pod string) template.Alert {
	return template.Alert{Status: notify.StatusFiring, Fingerprint: name + "/" + model + "/" + pod, StartsAt: t0.Add(-5 * time.Minute),
		Labels: template.KV{"alertname": name, "namespace": "prod", "model_name": model, "pod": pod, "severity": "warning"}}
}

func diag(verdict string) *playbooks.Diagnosis {
	return &playbooks.Diagnosis{Verdict: verdict, Title: "title of " + verdict, Summary: "summary of " + verdict,
		Actions: []string{"act 1", "act 2", "act 3", "act 4"}}
}

func firing(a template.Alert, verdict string) notify.Item {
	return notify.Item{Alert: a, Diagnosis: diag(verdict)}
}

func resolved(a template.Alert, endsAt time.Time) notify.Item {
	a.Status, a.EndsAt = notify.StatusResolved, endsAt
	return notify.Item{Alert: a}
}

func group(key string, items ...notify.Item) *notify.Notification {
	st := notify.StatusFiring
	if len(items) > 0 && items[0].Alert.Status == notify.StatusResolved {
		st = notify.StatusResolved
	}
	return &notify.Notification{GroupKey: key, Status: st, Items: items, Source: notify.SourceAlertmanager, ReceivedAt: t0}
}

// send passes n through the tracker and returns the incident handed on with it.
func (e *env) send(n *notify.Notification) *notify.Incident {
	e.t.Helper()
	if _, err := e.tr.Notify(context.Background(), n); err != nil {
		e.t.Fatal(err)
	}
	return e.rec.last(e.t).Incident
}

func roles(inc *notify.Incident) map[string]string {
	out := map[string]string{}
	for _, m := range inc.Members {
		out[m.Alertname+"@"+m.Pod] = m.Verdict + "," + m.Role
	}
	return out
}

func TestTheAlertsOfOneModelJoinOneIncidentAcrossNamesPodsAndGroups(t *testing.T) {
	e := newEnv(t, nil, nil)
	ttft := e.send(group("ttft", firing(alert("VLLMTimeToFirstTokenP99High", "llama", "p0"), playbooks.VerdictCapacityPastKnee)))
	if ttft == nil || !ttft.Change.Opened || ttft.Verdict != playbooks.VerdictCapacityPastKnee {
		t.Fatalf("the first diagnosis did not open an incident: %+v", ttft)
	}
	queue := e.send(group("queue", firing(alert("VLLMQueueDepthHigh", "llama", "p1"), playbooks.VerdictCapacityPastKnee)))
	if queue.ID != ttft.ID || queue.Change.Opened || len(queue.Change.Joined) != 1 {
		t.Fatalf("a second group of the same model did not join the incident: %+v", queue)
	}
	want := map[string]string{
		"VLLMTimeToFirstTokenP99High@p0": "capacity-past-knee,symptom",
		"VLLMQueueDepthHigh@p1":          "capacity-past-knee,cause",
	}
	if got := roles(queue); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("roles = %v, want %v", got, want)
	}
	if got := queue.CauseFirst()[0].Alertname; got != "VLLMQueueDepthHigh" {
		t.Errorf("the cause is not listed first: %s", got)
	}
	if queue.Key["model_name"] != "llama" || queue.Key["namespace"] != "prod" || len(queue.Key) != 2 {
		t.Errorf("key = %v", queue.Key)
	}
	if queue.Cause.Pods != nil {
		t.Errorf("a cause on every pod of the incident named pods: %v", queue.Cause.Pods)
	}
	if len(queue.Cause.Actions) != maxActions {
		t.Errorf("the cause keeps %d actions, want %d", len(queue.Cause.Actions), maxActions)
	}

	// Another model is another incident.
	other := e.send(group("ttft-other", firing(alert("VLLMTimeToFirstTokenP99High", "mistral", "q0"), playbooks.VerdictPrefillBound)))
	if other.ID == ttft.ID || !other.Change.Opened {
		t.Errorf("another model joined llama's incident: %+v", other)
	}
	if got := testutil.ToFloat64(e.m.Events.WithLabelValues(EventOpened)); got != 2 {
		t.Errorf("opened = %v, want 2", got)
	}
	if got := testutil.ToFloat64(e.m.Events.WithLabelValues(EventJoined)); got != 1 {
		t.Errorf("joined = %v, want 1", got)
	}
}

func TestTheIncidentsVerdictChangesOnlyToAMoreCausalOne(t *testing.T) {
	e := newEnv(t, nil, nil)
	e.send(group("queue", firing(alert("VLLMQueueDepthHigh", "llama", "p0"), playbooks.VerdictCapacityPastKnee),
		firing(alert("VLLMQueueDepthHigh", "llama", "p1"), playbooks.VerdictCapacityPastKnee)))

	// A lower verdict is new evidence, not a new headline.
	kv := e.send(group("kv", firing(alert("VLLMKVCacheNearFull", "llama", "p0"), playbooks.VerdictKVPressure)))
	if kv.Verdict != playbooks.VerdictCapacityPastKnee || kv.Change.VerdictWas != "" {
		t.Fatalf("kv-pressure (ranked below) changed the verdict: %q (was %q)", kv.Verdict, kv.Change.VerdictWas)
	}
	if got := roles(kv)["VLLMKVCacheNearFull@p0"]; got != "kv-pressure,symptom" {
		t.Errorf("the lower verdict's member: %s", got)
	}

	// A stalled engine on one pod ranks above: the headline changes, and names the pod.
	st := e.send(group("stall", firing(alert("VLLMEngineStalled", "llama", "p2"), playbooks.VerdictEngineStalled)))
	if st.Verdict != playbooks.VerdictEngineStalled || st.Change.VerdictWas != playbooks.VerdictCapacityPastKnee {
		t.Fatalf("engine-stalled did not become the verdict: %q (was %q)", st.Verdict, st.Change.VerdictWas)
	}
	if st.Cause.Alertname != "VLLMEngineStalled" || st.Cause.Title != "title of engine-stalled" {
		t.Errorf("cause = %+v", st.Cause)
	}
	if fmt.Sprint(st.Cause.Pods) != "[p2]" {
		t.Errorf("a per-pod cause in a model-wide incident does not name its pod: %v", st.Cause.Pods)
	}
	if got := roles(st)["VLLMQueueDepthHigh@p0"]; got != "capacity-past-knee,symptom" {
		t.Errorf("the former cause is not a symptom now: %s", got)
	}

	// It stays when the stalled pod resolves first: the cause of the incident does not change
	// because it cleared before its symptoms.
	res := e.send(group("stall", resolved(alert("VLLMEngineStalled", "llama", "p2"), t0)))
	if res.Verdict != playbooks.VerdictEngineStalled || !res.Open() {
		t.Errorf("after the cause resolved: verdict %q, open %v", res.Verdict, res.Open())
	}
}

func TestAMemberWhoseDiagnosisExplainsNothingIsNeitherCauseNorSymptom(t *testing.T) {
	e := newEnv(t, nil, nil)
	e.send(group("queue", firing(alert("VLLMQueueDepthHigh", "llama", "p0"), playbooks.VerdictInconclusive)))
	inc := e.send(group("ttft", firing(alert("VLLMTimeToFirstTokenP99High", "llama", "p0"), playbooks.VerdictInconclusive)))
	want := map[string]string{
		"VLLMQueueDepthHigh@p0":          "inconclusive,unexplained",
		"VLLMTimeToFirstTokenP99High@p0": "inconclusive,symptom",
	}
	if got := roles(inc); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("roles = %v, want %v", got, want)
	}
}

func TestWithoutSymptomMatchersALatencyAlertWithTheVerdictIsACause(t *testing.T) {
	e := newEnv(t, nil, testCfg(t, func(c *Config) { c.SymptomMatchers = nil }))
	inc := e.send(group("ttft", firing(alert("VLLMTimeToFirstTokenP99High", "llama", "p0"), playbooks.VerdictCapacityPastKnee)))
	if got := inc.Members[0].Role; got != notify.RoleCause {
		t.Errorf("role = %s, want cause", got)
	}
}

func TestAnIncidentResolvesWithItsLastMemberAndAGroupFiringAgainWithinTheQuietTimeRejoinsIt(t *testing.T) {
	e := newEnv(t, nil, nil)
	a, b := alert("VLLMQueueDepthHigh", "llama", "p0"), alert("VLLMTimeToFirstTokenP99High", "llama", "p0")
	first := e.send(group("queue", firing(a, playbooks.VerdictCapacityPastKnee)))
	e.send(group("ttft", firing(b, playbooks.VerdictCapacityPastKnee)))

	e.clock.add(10 * time.Minute)
	one := e.send(group("queue", resolved(a, e.clock.Now())))
	if !one.Open() || one.Change.Resolved {
		t.Fatalf("resolved with a member still firing: %+v", one)
	}
	if m, _ := one.Member(a.Fingerprint); m.Status != notify.StatusResolved || !m.EndsAt.Equal(e.clock.Now()) {
		t.Errorf("the resolved member: %+v", m)
	}
	e.clock.add(time.Minute)
	all := e.send(group("ttft", resolved(b, e.clock.Now())))
	if all.Open() || !all.Change.Resolved {
		t.Fatalf("not resolved with every member resolved: %+v", all)
	}
	if d, ok := all.Lasted(); !ok || d != 16*time.Minute {
		t.Errorf("lasted %v (%v), want 16m from the first alert's start", d, ok)
	}
	if got := testutil.ToFloat64(e.m.Events.WithLabelValues(EventResolved)); got != 1 {
		t.Errorf("resolved = %v", got)
	}

	// Within the quiet time, a group that fires again rejoins.
	e.clock.add(14 * time.Minute)
	b.StartsAt = e.clock.Now()
	again := e.send(group("ttft", firing(b, playbooks.VerdictCapacityPastKnee)))
	if again.ID != first.ID || !again.Change.Reopened || !again.Open() {
		t.Fatalf("firing again within the quiet time opened another incident: %+v", again)
	}
	e.clock.add(time.Minute)
	e.send(group("ttft", resolved(b, e.clock.Now())))

	// Past it, the next diagnosis opens a new one (the hard negative).
	e.clock.add(15 * time.Minute)
	late := e.send(group("queue", firing(a, playbooks.VerdictKVPreemption)))
	if late.ID == first.ID || !late.Change.Opened || late.Verdict != playbooks.VerdictKVPreemption {
		t.Errorf("a diagnosis after the quiet time joined the old incident: %+v", late)
	}
}

func TestAResolutionWithNoIncidentToResolveIsPassedOnWithoutOne(t *testing.T) {
	e := newEnv(t, nil, nil)
	if inc := e.send(group("queue", resolved(alert("VLLMQueueDepthHigh", "llama", "p0"), t0))); inc != nil {
		t.Errorf("a resolution opened an incident: %+v", inc)
	}
}

func TestAnAlertWithoutAKeyLabelStaysInItsGroupAndOneOfAnotherKeyIsPassedOnApart(t *testing.T) {
	e := newEnv(t, nil, nil)
	keyless := alert("VLLMQueueDepthHigh", "llama", "p0")
	delete(keyless.Labels, "namespace")
	n := group("by-alertname", firing(alert("VLLMQueueDepthHigh", "llama", "p1"), playbooks.VerdictCapacityPastKnee),
		firing(keyless, playbooks.VerdictCapacityPastKnee),
		firing(alert("VLLMQueueDepthHigh", "mistral", "q0"), playbooks.VerdictKVPreemption))
	if _, err := e.tr.Notify(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	if len(e.rec.got) != 3 {
		t.Fatalf("want 3 notifications (llama, mistral, the keyless alert), got %d", len(e.rec.got))
	}
	llama, mistral, rest := e.rec.got[0], e.rec.got[1], e.rec.got[2]
	if llama.Incident == nil || llama.Incident.Key["model_name"] != "llama" || len(llama.Items) != 1 || llama.CommonLabels["model_name"] != "llama" {
		t.Errorf("llama's part: %+v", llama)
	}
	if mistral.Incident == nil || mistral.Incident.ID == llama.Incident.ID || mistral.Incident.Verdict != playbooks.VerdictKVPreemption {
		t.Errorf("mistral's part: %+v", mistral.Incident)
	}
	if rest.Incident != nil || len(rest.Items) != 1 || rest.GroupKey != n.GroupKey {
		t.Errorf("the keyless alert's part: %+v", rest)
	}
	if got := testutil.ToFloat64(e.m.Events.WithLabelValues(EventKeyless)); got != 1 {
		t.Errorf("keyless = %v", got)
	}
	if n.Incident != nil || len(n.Items) != 3 {
		t.Error("the dispatcher's notification was changed")
	}
}

func TestOnDemandDiagnosesPassThrough(t *testing.T) {
	e := newEnv(t, nil, nil)
	n := group("", firing(alert("VLLMQueueDepthHigh", "llama", "p0"), playbooks.VerdictHealthy))
	if inc := e.send(n); inc != nil || e.rec.last(t) != n {
		t.Errorf("an on-demand diagnosis was joined to an incident: %+v", inc)
	}
}

func TestAnIncidentListsAtMostMaxMembersAndFollowsTheRestToTheirResolution(t *testing.T) {
	e := newEnv(t, nil, nil)
	var items, done []notify.Item
	for i := range notify.MaxMembers + 20 {
		a := alert("VLLMQueueDepthHigh", "llama", fmt.Sprintf("p%03d", i))
		items = append(items, firing(a, playbooks.VerdictCapacityPastKnee))
		done = append(done, resolved(a, t0))
	}
	inc := e.send(group("queue", items...))
	if len(inc.Members) != notify.MaxMembers || inc.Unlisted != 20 || inc.UnlistedFiring != 20 || inc.Alerts() != notify.MaxMembers+20 || inc.Firing() != notify.MaxMembers+20 {
		t.Fatalf("members %d, unlisted %d (%d firing)", len(inc.Members), inc.Unlisted, inc.UnlistedFiring)
	}
	// A re-send of the same alerts adds nobody.
	if again := e.send(group("queue", items...)); again.Alerts() != notify.MaxMembers+20 || len(again.Change.Joined) != 0 {
		t.Errorf("a re-send counted its alerts again: %d alerts, %d joined", again.Alerts(), len(again.Change.Joined))
	}
	// Every listed member resolved, the unlisted still fire: open.
	if part := e.send(group("queue", done[:notify.MaxMembers]...)); !part.Open() || part.Firing() != 20 {
		t.Fatalf("open %v with %d firing", part.Open(), part.Firing())
	}
	if last := e.send(group("queue", done[notify.MaxMembers:]...)); last.Open() {
		t.Error("still open with every alert resolved")
	}
}

func TestAFiringMemberNotSeenForADayNoLongerHoldsTheIncidentOpen(t *testing.T) {
	e := newEnv(t, nil, nil)
	lost := alert("VLLMQueueDepthHigh", "llama", "p0")
	first := e.send(group("queue", firing(lost, playbooks.VerdictCapacityPastKnee)))
	e.clock.add(staleAfter)
	// It counts as resolved when last seen, a day ago: the incident resolved then, its quiet
	// time has long passed, and the next alert of the model opens a new incident.
	next := e.send(group("ttft", firing(alert("VLLMTimeToFirstTokenP99High", "llama", "p0"), playbooks.VerdictCapacityPastKnee)))
	if next.ID == first.ID || !next.Change.Opened || len(next.Members) != 1 {
		t.Errorf("joined an incident whose only member was last heard of a day ago: %+v", next)
	}

	// The hard negative: a member seen within the day holds the incident open.
	e.clock.add(staleAfter - time.Minute)
	e.send(group("ttft", firing(alert("VLLMTimeToFirstTokenP99High", "llama", "p0"), playbooks.VerdictCapacityPastKnee)))
	joined := e.send(group("queue", firing(lost, playbooks.VerdictCapacityPastKnee)))
	if joined.ID != next.ID || joined.Firing() != 2 {
		t.Errorf("a member seen %s ago did not hold the incident open: %+v", staleAfter-time.Minute, joined)
	}
}

// downStore is a store whose every call fails as an unreachable Redis does.
type downStore struct{ store.Store }

func (downStore) Lock(context.Context, string, time.Duration, store.LockHolder) (store.Lock, error) {
	return nil, fmt.Errorf("%w: connection refused", store.ErrUnavailable)
}

func TestWithTheStoreDownTheAlertsGoToTheirGroupsOwnThread(t *testing.T) {
	e := newEnv(t, downStore{store.NewMemory()}, nil)
	if inc := e.send(group("queue", firing(alert("VLLMQueueDepthHigh", "llama", "p0"), playbooks.VerdictCapacityPastKnee))); inc != nil {
		t.Errorf("an incident without a store: %+v", inc)
	}
	if got := testutil.ToFloat64(e.m.Events.WithLabelValues(EventUnavailable)); got != 1 {
		t.Errorf("unavailable = %v", got)
	}
}

func TestANotifierFailureIsReturnedAndEveryPartIsStillPassedOn(t *testing.T) {
	e := newEnv(t, nil, nil)
	e.rec.fail = errors.New("slack down")
	n := group("g", firing(alert("VLLMQueueDepthHigh", "llama", "p0"), playbooks.VerdictCapacityPastKnee),
		firing(alert("VLLMQueueDepthHigh", "mistral", "q0"), playbooks.VerdictCapacityPastKnee))
	if _, err := e.tr.Notify(context.Background(), n); err == nil || len(e.rec.got) != 2 {
		t.Errorf("err %v after %d notifications", err, len(e.rec.got))
	}
}

// redisStore is a client of the Redis at addr, its keys under prefix.
func redisStore(t *testing.T, addr, prefix string) store.Store {
	t.Helper()
	s, err := store.NewRedis("redis://"+addr+"/0", "", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Two responders sharing a real Redis, each handed another group of the same model at the
// same moment (as one parent per group, notify/slack's TestTwoRespondersSharingRedisPostOneParentPerGroup):
// one incident, never two, and both groups its members.
func TestTwoRespondersSharingRedisOpenOneIncident(t *testing.T) {
	addr, prefix := testenv.RedisAddr(t), fmt.Sprintf("test-%s-%d:", t.Name(), time.Now().UnixNano())
	a, b := newEnv(t, redisStore(t, addr, prefix), nil), newEnv(t, redisStore(t, addr, prefix), nil)
	for round := range 10 {
		model := fmt.Sprintf("model-%d", round)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, e := range []*env{a, b} {
			wg.Go(func() {
				name := []string{"VLLMQueueDepthHigh", "VLLMTimeToFirstTokenP99High"}[i]
				_, errs[i] = e.tr.Notify(context.Background(), group(name+model, firing(alert(name, model, "p0"), playbooks.VerdictCapacityPastKnee)))
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		ia, ib := a.rec.last(t).Incident, b.rec.last(t).Incident
		if ia == nil || ib == nil || ia.ID != ib.ID {
			t.Fatalf("round %d: two incidents for one model: %+v and %+v", round, ia, ib)
		}
		if ia.Change.Opened == ib.Change.Opened {
			t.Errorf("round %d: opened by both or by neither", round)
		}
		if later := max(ia.Seq, ib.Seq); later != 2 {
			t.Errorf("round %d: the later snapshot is change %d, want 2", round, later)
		}
	}
	opened := testutil.ToFloat64(a.m.Events.WithLabelValues(EventOpened)) + testutil.ToFloat64(b.m.Events.WithLabelValues(EventOpened))
	if opened != 10 {
		t.Errorf("%v incidents opened for 10 models", opened)
	}
}

// A responder that restarts while an incident is open keeps joining it: the incident is in
// the store, not in the process.
func TestARestartedResponderKeepsJoiningTheOpenIncident(t *testing.T) {
	addr, prefix := testenv.RedisAddr(t), fmt.Sprintf("test-%s-%d:", t.Name(), time.Now().UnixNano())
	before := newEnv(t, redisStore(t, addr, prefix), nil)
	opened := before.send(group("queue", firing(alert("VLLMQueueDepthHigh", "llama", "p0"), playbooks.VerdictCapacityPastKnee)))

	after := newEnv(t, redisStore(t, addr, prefix), nil)
	after.clock.add(3 * time.Minute)
	joined := after.send(group("ttft", firing(alert("VLLMTimeToFirstTokenP99High", "llama", "p0"), playbooks.VerdictCapacityPastKnee)))
	if joined.ID != opened.ID || joined.Change.Opened || len(joined.Members) != 2 {
		t.Fatalf("after a restart: %+v, want to join %s", joined, opened.ID)
	}
	for _, scope := range []map[string]string{{"namespace": "prod", "model_name": "llama", "pod": "p9"}, {"model_name": "llama"}} {
		open, err := after.finder.Open(context.Background(), scope)
		if err != nil || open == nil || open.ID != opened.ID {
			t.Errorf("Open(%v) = %+v, %v", scope, open, err)
		}
	}
}

func TestTheOpenIncidentOfAScopeIsFoundByItsKeyOrByTheKeyLabelsTheScopeHas(t *testing.T) {
	e := newEnv(t, nil, nil)
	a := alert("VLLMQueueDepthHigh", "llama", "p0")
	opened := e.send(group("queue", firing(a, playbooks.VerdictCapacityPastKnee)))
	e.send(group("queue-mistral", firing(alert("VLLMQueueDepthHigh", "mistral", "q0"), playbooks.VerdictCapacityPastKnee)))
	other := alert("VLLMQueueDepthHigh", "mistral", "q0")
	other.Labels["namespace"] = "staging"
	e.send(group("queue-mistral-staging", firing(other, playbooks.VerdictCapacityPastKnee)))

	for _, tc := range []struct {
		name  string
		scope map[string]string
		want  string
	}{
		{"the whole key", map[string]string{"model_name": "llama", "namespace": "prod", "pod": "p7"}, opened.ID},
		{"the model alone, in one namespace", map[string]string{"model_name": "llama"}, opened.ID},
		{"the model alone, in two namespaces: not one incident", map[string]string{"model_name": "mistral"}, ""},
		{"another model", map[string]string{"model_name": "qwen"}, ""},
		{"no key label: every model", map[string]string{"pod": "p0"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inc, err := e.finder.Open(context.Background(), tc.scope)
			if err != nil {
				t.Fatal(err)
			}
			if got := ""; inc != nil {
				got = inc.ID
				if got != tc.want {
					t.Errorf("found %s, want %q", got, tc.want)
				}
			} else if tc.want != "" {
				t.Errorf("found none, want %s", tc.want)
			}
		})
	}

	scope := map[string]string{"model_name": "llama", "namespace": "prod"}
	e.send(group("queue", resolved(a, t0)))
	if inc, err := e.finder.Open(context.Background(), scope); err != nil || inc == nil {
		t.Errorf("within the quiet time: %+v, %v", inc, err)
	}
	e.clock.add(16 * time.Minute)
	if inc, err := e.finder.Open(context.Background(), scope); err != nil || inc != nil {
		t.Errorf("past the quiet time: %+v, %v", inc, err)
	}
}

func TestAnUnreadableRecordIsReplacedByANewIncident(t *testing.T) {
	st := store.NewMemory()
	e := newEnv(t, st, nil)
	key := map[string]string{"namespace": "prod", "model_name": "llama"}
	if err := st.Set(context.Background(), recordKeyPrefix+keyHash(key), []byte("{not json"), 0); err != nil {
		t.Fatal(err)
	}
	if inc, err := e.finder.Open(context.Background(), key); err != nil || inc != nil {
		t.Errorf("Open = %+v, %v", inc, err)
	}
	inc := e.send(group("queue", firing(alert("VLLMQueueDepthHigh", "llama", "p0"), playbooks.VerdictCapacityPastKnee)))
	if inc == nil || !inc.Change.Opened {
		t.Errorf("no new incident in place of the unreadable one: %+v", inc)
	}
}

// An alert of the model that no playbook matches joins the incident as an unexplained member;
// opening one, it says so rather than naming a verdict.
func TestAnAlertNoPlaybookMatchesJoinsAsUnexplained(t *testing.T) {
	e := newEnv(t, nil, nil)
	custom := alert("MyTeamsOwnAlert", "llama", "p0")
	inc := e.send(group("custom", notify.Item{Alert: custom, Unmatched: true}))
	if inc.Verdict != "unmatched" || inc.Cause.Title != "no playbook matches MyTeamsOwnAlert" || inc.Members[0].Role != notify.RoleUnexplained {
		t.Errorf("incident %+v", inc)
	}
	inc = e.send(group("queue", firing(alert("VLLMQueueDepthHigh", "llama", "p0"), playbooks.VerdictCapacityPastKnee)))
	if inc.Verdict != playbooks.VerdictCapacityPastKnee || inc.Change.VerdictWas != "unmatched" || roles(inc)["MyTeamsOwnAlert@p0"] != "unmatched,unexplained" {
		t.Errorf("a diagnosed member did not take the verdict over: %+v", inc)
	}
}

// A notification of 10,000 alerts of one model (the bench's big notification) is one part that
// holds the notification's own items: no key map per alert, no copy of the items. The parts of
// several keys are allocated once each.
func TestSplittingABigNotificationCopiesNothingPerAlert(t *testing.T) {
	e := newEnv(t, nil, nil)
	var items []notify.Item
	for i := range 10_000 {
		items = append(items, firing(alert("VLLMQueueDepthHigh", "llama", fmt.Sprintf("p%05d", i)), playbooks.VerdictCapacityPastKnee))
	}
	n := group("big", items...)
	var parts []part
	if allocs := testing.AllocsPerRun(3, func() { parts = e.tr.split(n) }); allocs > 10 {
		t.Errorf("splitting 10,000 alerts of one key: %.0f allocations", allocs)
	}
	if len(parts) != 1 || len(parts[0].items) != len(items) || &parts[0].items[0] != &items[0] {
		t.Fatalf("%d parts; want one holding the notification's items", len(parts))
	}
	items[1] = firing(alert("VLLMQueueDepthHigh", "mistral", "q0"), playbooks.VerdictCapacityPastKnee)
	if allocs := testing.AllocsPerRun(3, func() { parts = e.tr.split(n) }); allocs > 20 {
		t.Errorf("splitting 10,000 alerts of two keys: %.0f allocations", allocs)
	}
	if len(parts) != 2 || len(parts[0].items) != len(items)-1 || len(parts[1].items) != 1 || parts[1].key["model_name"] != "mistral" {
		t.Fatalf("two keys: %d parts", len(parts))
	}
}
