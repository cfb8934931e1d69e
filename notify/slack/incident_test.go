package slack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/alertmanager/template"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/notify"
	incidents "github.com/vllm-responder/vllm-responder/notify/incident"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

// incidentClock is the incidents' clock, set by the tests.
type incidentClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *incidentClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *incidentClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// withIncidents puts the incident tracker in front of h's notifier (in its retry loop), as
// serve does, on h's store.
func withIncidents(t *testing.T, h *harness, clock *incidentClock) notify.Notifier {
	t.Helper()
	cfg := &incidents.Config{}
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	tr, err := incidents.New(retrying(h.n), incidents.Options{Config: cfg, Store: h.store, Logger: zerolog.New(zerolog.NewTestWriter(t)), Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// modelAlert is a firing alert of model on pod.
func modelAlert(name, model, pod string) template.Alert {
	a := alert(pod, notify.StatusFiring)
	a.Labels["alertname"], a.Labels["model_name"] = name, model
	a.Fingerprint = name + "/" + model + "/" + pod
	return a
}

// groupOf is a notification of one alert (its group: the alert name and pod) diagnosed verdict.
func groupOf(name, model, pod, verdict string) *notify.Notification {
	n := firingNotification(name+"/"+model+"/"+pod, notify.Item{Alert: modelAlert(name, model, pod), Diagnosis: diagnosisFor(verdict, pod)})
	n.GroupLabels = map[string]string{"alertname": name}
	n.CommonLabels = map[string]string{"alertname": name, "model_name": model}
	return n
}

// resolutionOf is the resolution of groupOf's alert.
func resolutionOf(name, model, pod string) *notify.Notification {
	a := modelAlert(name, model, pod)
	a.Status, a.EndsAt = notify.StatusResolved, t0.Add(25*time.Minute)
	n := firingNotification(name+"/"+model+"/"+pod, notify.Item{Alert: a})
	n.Status = notify.StatusResolved
	return n
}

func parentsAndReplies(h *harness) (parents, replies int) {
	for _, c := range h.slack.Calls("chat.postMessage") {
		if c.Form.Get("thread_ts") == "" {
			parents++
		} else {
			replies++
		}
	}
	return parents, replies
}

// The life of an incident on Slack: one parent for the model, whatever the alert name and pod;
// a member that agrees is a line in the parent, one with another verdict a reply, and the
// headline changes only for a verdict that ranks above; resolutions update the lines, the last
// one resolves the parent with how long the incident lasted; an alert firing again within the
// quiet time reopens the same thread.
func TestAnIncidentIsOneThreadCauseBeforeSymptom(t *testing.T) {
	h := newHarness(t, nil, nil, "chat.postMessage", "chat.update")
	clock := &incidentClock{now: t0}
	tr := withIncidents(t, h, clock)
	const model = "meta-llama/Llama-3.1-8B-Instruct"
	send := func(n *notify.Notification) {
		t.Helper()
		if _, err := tr.Notify(context.Background(), n); err != nil {
			t.Fatal(err)
		}
	}
	lastUpdate := func() string {
		t.Helper()
		up := h.slack.Calls("chat.update")
		if len(up) == 0 {
			t.Fatal("the parent was never edited")
		}
		if up[len(up)-1].Form.Get("ts") != "1700000000.000001" {
			t.Fatalf("an edit of another message than the parent: %v", up[len(up)-1].Form)
		}
		return up[len(up)-1].Form.Get("blocks")
	}

	// The queue alert of vllm-0 opens the incident: the parent.
	send(groupOf("VLLMQueueDepthHigh", model, "vllm-0", playbooks.VerdictCapacityPastKnee))
	posts := h.slack.Calls("chat.postMessage")
	if len(posts) != 1 || posts[0].Form.Get("thread_ts") != "" {
		t.Fatalf("want one parent, got %d posts", len(posts))
	}
	parent := posts[0].Form.Get("blocks")
	for _, want := range []string{"FIRING: incident meta-llama/Llama-3.1-8B-Instruct · inference", "*Incident verdict:* `capacity-past-knee`",
		"*VLLMQueueDepthHigh* pod vllm-0: `capacity-past-knee`, cause", "Capacity, past the knee", "Recommended actions"} {
		if !strings.Contains(parent, want) {
			t.Errorf("the parent lacks %q:\n%s", want, parent)
		}
	}

	// The TTFT alert of the same pod agrees: a line in the parent (an edit), no message.
	send(groupOf("VLLMTimeToFirstTokenP99High", model, "vllm-0", playbooks.VerdictCapacityPastKnee))
	if p, r := parentsAndReplies(h); p != 1 || r != 0 {
		t.Fatalf("an agreeing member posted: %d parents, %d replies", p, r)
	}
	if b := lastUpdate(); !strings.Contains(b, "*VLLMTimeToFirstTokenP99High* pod vllm-0: `capacity-past-knee`, symptom — Queue 84 deep") {
		t.Errorf("the parent has no line for the agreeing member:\n%s", b)
	}

	// The KV alert of vllm-1 says kv-pressure: new evidence, a reply; the headline stays.
	send(groupOf("VLLMKVCacheNearFull", model, "vllm-1", playbooks.VerdictKVPressure))
	posts = h.slack.Calls("chat.postMessage")
	if p, r := parentsAndReplies(h); p != 1 || r != 1 {
		t.Fatalf("%d parents, %d replies; want the evidence as one reply", p, r)
	}
	if b := posts[len(posts)-1].Form.Get("blocks"); !strings.Contains(b, "*New evidence*: a verdict other than the incident's; the incident's verdict stays `capacity-past-knee`") ||
		!strings.Contains(b, "New alert in this incident*: `kv-pressure`") {
		t.Errorf("the reply does not say it is new evidence:\n%s", b)
	}
	if b := lastUpdate(); !strings.Contains(b, "*Incident verdict:* `capacity-past-knee`") || !strings.Contains(b, "`kv-pressure`, symptom") {
		t.Errorf("the headline changed for a lower verdict, or the line is missing:\n%s", b)
	}

	// vllm-2's engine stalls: it ranks above; the reply says so and the headline names the pod.
	send(groupOf("VLLMEngineStalled", model, "vllm-2", playbooks.VerdictEngineStalled))
	posts = h.slack.Calls("chat.postMessage")
	if b := posts[len(posts)-1].Form.Get("blocks"); !strings.Contains(b, "`engine-stalled` on pod vllm-2 ranks above `capacity-past-knee`: it is the incident's verdict now") {
		t.Errorf("the reply does not say the verdict changed:\n%s", b)
	}
	b := lastUpdate()
	for _, want := range []string{"*Incident verdict:* `engine-stalled` on pod vllm-2: *Engine stalled on vllm-2: restart it*", "Restart pod vllm-2",
		"*VLLMEngineStalled* pod vllm-2: `engine-stalled`, cause", "*VLLMQueueDepthHigh* pod vllm-0: `capacity-past-knee`, symptom"} {
		if !strings.Contains(b, want) {
			t.Errorf("the parent lacks %q:\n%s", want, b)
		}
	}
	if i, j := strings.Index(b, "*VLLMEngineStalled*"), strings.Index(b, "*VLLMQueueDepthHigh*"); i < 0 || j < i {
		t.Error("the cause is not listed first")
	}

	// Every member resolves: lines, then the resolved parent and one reply.
	updates := len(h.slack.Calls("chat.update"))
	clock.add(25 * time.Minute)
	for _, g := range [][2]string{{"VLLMQueueDepthHigh", "vllm-0"}, {"VLLMTimeToFirstTokenP99High", "vllm-0"}, {"VLLMKVCacheNearFull", "vllm-1"}} {
		send(resolutionOf(g[0], model, g[1]))
	}
	if got := len(h.slack.Calls("chat.update")) - updates; got != 3 {
		t.Errorf("%d edits for three resolved members, want 3", got)
	}
	if p, r := parentsAndReplies(h); p != 1 || r != 2 {
		t.Errorf("member resolutions posted: %d parents, %d replies", p, r)
	}
	send(resolutionOf("VLLMEngineStalled", model, "vllm-2"))
	b = lastUpdate()
	for _, want := range []string{"RESOLVED: incident meta-llama/Llama-3.1-8B-Instruct · inference", "*Resolved* at 12:25 UTC after 35m"} {
		if !strings.Contains(b, want) {
			t.Errorf("the resolved parent lacks %q:\n%s", want, b)
		}
	}
	if strings.Contains(b, actionSilence) {
		t.Error("the resolved parent still has buttons")
	}
	posts = h.slack.Calls("chat.postMessage")
	if last := posts[len(posts)-1]; !strings.Contains(last.Form.Get("text"), "Every alert of the incident resolved after 35m") {
		t.Errorf("no resolution reply: %v", last.Form)
	}

	// Within the quiet time, the KV alert fires again: the same thread reopens.
	clock.add(5 * time.Minute)
	again := groupOf("VLLMKVCacheNearFull", model, "vllm-1", playbooks.VerdictKVPressure)
	again.Items[0].Alert.StartsAt = t0.Add(30 * time.Minute)
	send(again)
	if p, _ := parentsAndReplies(h); p != 1 {
		t.Fatalf("a member firing again within the quiet time opened a new parent (%d)", p)
	}
	posts = h.slack.Calls("chat.postMessage")
	if b := posts[len(posts)-1].Form.Get("blocks"); posts[len(posts)-1].Form.Get("thread_ts") == "" || !strings.Contains(b, "Fired again") {
		t.Errorf("the reopening is not a reply saying it fired again:\n%s", b)
	}
	if b := lastUpdate(); !strings.Contains(b, "FIRING: incident") {
		t.Errorf("the parent does not fire again:\n%s", b)
	}

	// Another model is another incident: a parent of its own (the hard negative).
	send(groupOf("VLLMQueueDepthHigh", "mistral", "mistral-0", playbooks.VerdictCapacityPastKnee))
	if p, _ := parentsAndReplies(h); p != 2 {
		t.Errorf("another model's alert joined the incident: %d parents", p)
	}
}

// With incidents off (no tracker), every group is a thread of its own: today's behaviour, the
// hard negative of one parent per model.
func TestWithoutIncidentsEveryGroupIsAThread(t *testing.T) {
	h := newHarness(t, nil, nil, "chat.postMessage")
	for _, g := range []*notify.Notification{
		groupOf("VLLMQueueDepthHigh", "llama", "vllm-0", playbooks.VerdictCapacityPastKnee),
		groupOf("VLLMTimeToFirstTokenP99High", "llama", "vllm-0", playbooks.VerdictCapacityPastKnee),
	} {
		notifyOK(t, retrying(h.n), g)
	}
	if p, _ := parentsAndReplies(h); p != 2 {
		t.Errorf("%d parents for two groups without incidents, want 2", p)
	}
}

// Two responders sharing a real Redis, each handed another group of one model at the same
// moment (the incident tracker and the Slack notifier of each, as serve wires them): one parent
// per model, never two, and the other group lands in it. As
// TestTwoRespondersSharingRedisPostOneParentPerGroup for groups.
func TestTwoRespondersSharingRedisPostOneParentPerIncident(t *testing.T) {
	newStore := sharedRedis(t)
	a := newHarness(t, newStore(), nil, "chat.postMessage", "chat.update")
	b := sameSlack(t, a, newStore())
	clock := &incidentClock{now: t0}
	trackers := []notify.Notifier{withIncidents(t, a, clock), withIncidents(t, b, clock)}

	const rounds = 5
	for round := range rounds {
		model := fmt.Sprintf("model-%d", round)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, tr := range trackers {
			wg.Go(func() {
				name := []string{"VLLMQueueDepthHigh", "VLLMTimeToFirstTokenP99High"}[i]
				_, errs[i] = tr.Notify(context.Background(), groupOf(name, model, "vllm-0", playbooks.VerdictCapacityPastKnee))
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	}
	if p, r := parentsAndReplies(a); p != rounds || r != 0 {
		t.Errorf("%d models, two agreeing groups each: %d parents and %d replies, want %d and 0", rounds, p, r, rounds)
	}
	// Each parent was edited to list the second group (its line), whichever replica posted it.
	edited := map[string]bool{}
	for _, c := range a.slack.Calls("chat.update") {
		if strings.Contains(c.Form.Get("blocks"), "*VLLMQueueDepthHigh*") && strings.Contains(c.Form.Get("blocks"), "*VLLMTimeToFirstTokenP99High*") {
			edited[c.Form.Get("ts")] = true
		}
	}
	if len(edited) != rounds {
		t.Errorf("%d of %d parents list both groups", len(edited), rounds)
	}

	// A responder that starts while the incident is open (a restart) keeps joining its thread.
	c := sameSlack(t, a, newStore())
	if _, err := withIncidents(t, c, clock).Notify(context.Background(), groupOf("VLLMKVCacheNearFull", "model-0", "vllm-1", playbooks.VerdictKVPressure)); err != nil {
		t.Fatal(err)
	}
	if p, r := parentsAndReplies(a); p != rounds || r != 1 {
		t.Errorf("after a restart: %d parents and %d replies, want %d and the evidence as 1 reply", p, r, rounds)
	}
}

// Every member of an incident, up to notify.MaxMembers, is in a line of its parent: a storm of
// five alert names on twenty pods of one model (100 members that agree, so no replies) names
// each alert with its pod in the parent's last edit (it listed twelve and counted 88). One that
// agrees past what the parent lists is a reply (it was only counted).
func TestAnIncidentsParentListsEveryMember(t *testing.T) {
	h := newHarness(t, nil, nil, "chat.postMessage", "chat.update")
	tr := withIncidents(t, h, &incidentClock{now: t0})
	const model = "meta-llama/Llama-3.1-8B-Instruct"
	names := []string{"VLLMQueueDepthHigh", "VLLMTimeToFirstTokenP99High", "VLLMInterTokenLatencyP99High", "VLLMKVCacheNearFull", "VLLMRequestAbortRateHigh"}
	var want [][2]string
	for pi := range notify.MaxMembers / len(names) {
		for _, name := range names {
			pod := fmt.Sprintf("vllm-%02d", pi)
			if _, err := tr.Notify(context.Background(), groupOf(name, model, pod, playbooks.VerdictCapacityPastKnee)); err != nil {
				t.Fatal(err)
			}
			want = append(want, [2]string{name, pod})
		}
	}
	if p, r := parentsAndReplies(h); p != 1 || r != 0 {
		t.Fatalf("%d parents, %d replies; want one parent and its lines", p, r)
	}
	up := h.slack.Calls("chat.update")
	last := up[len(up)-1]
	var shown strings.Builder
	for _, b := range last.Blocks() {
		if txt, ok := b["text"].(map[string]any); ok {
			shown.WriteString(fmt.Sprint(txt["text"]) + "\n")
		}
	}
	missing := 0
	for _, w := range want {
		if !slices.ContainsFunc(strings.Split(shown.String(), "\n"), func(l string) bool {
			return strings.HasPrefix(l, "• *"+w[0]+"* pod") && (strings.Contains(l, " "+w[1]+",") || strings.Contains(l, " "+w[1]+":"))
		}) {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d members are not in the parent's last edit:\n%s", missing, len(want), shown.String())
	}
	if strings.Contains(shown.String(), "not shown") {
		t.Errorf("the parent leaves members out:\n%s", shown.String())
	}

	// One more that agrees is past notify.MaxMembers: the parent counts it, and it is a reply
	// (as the rest are listed, they had none).
	if _, err := tr.Notify(context.Background(), groupOf(names[0], model, "vllm-99", playbooks.VerdictCapacityPastKnee)); err != nil {
		t.Fatal(err)
	}
	posts := h.slack.Calls("chat.postMessage")
	if p, r := parentsAndReplies(h); p != 1 || r != 1 {
		t.Fatalf("%d parents, %d replies; want the unlisted alert as one reply", p, r)
	}
	if b := posts[len(posts)-1].Form.Get("blocks"); !strings.Contains(b, "*More alerts of the incident* than its parent lists") || !strings.Contains(b, "vllm-99") ||
		strings.Contains(b, "New evidence") {
		t.Errorf("the reply does not show the unlisted alert as one that agrees:\n%s", b)
	}
}
