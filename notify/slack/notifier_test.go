package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/notify/slack/fakeslack"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/store"
)

var allMessaging = []string{"chat.postMessage", "chat.update", "files.getUploadURLExternal", "upload", "files.completeUploadExternal"}

func notifyOK(t *testing.T, n notify.Notifier, nt *notify.Notification) {
	t.Helper()
	retry, err := n.Notify(context.Background(), nt)
	if err != nil || retry {
		t.Fatalf("Notify: retry=%v err=%v", retry, err)
	}
}

// retrying wraps n in the retry loop, as the service does, under Slack's retry policy (with a
// short backoff: the failures tests provoke clear at once).
func retrying(n *notifier) *notify.Retrying {
	p := n.cfg.RetryPolicy()
	p.Backoff = 20 * time.Millisecond
	return &notify.Retrying{Notifier: n, Policy: p, Logger: n.log}
}

func TestAGroupsLifeIsOneParentRepliesOnlyOnNewsAndAResolvedEdit(t *testing.T) {
	h := newHarness(t, nil, fakeProm{}, allMessaging...)
	group := `{}:{alertname="VLLMTimeToFirstTokenP99High"}`

	// First notification: the parent message, then the chart in its thread.
	notifyOK(t, h.n, firingNotification(group, item(playbooks.VerdictCapacityPastKnee, "vllm-0")))
	posts := h.slack.Calls("chat.postMessage")
	if len(posts) != 1 || posts[0].Form.Get("thread_ts") != "" || posts[0].Form.Get("channel") != "C0INCIDENT" {
		t.Fatalf("want one parent post to the channel, got %+v", posts)
	}
	parentTS := "1700000000.000001"
	done := h.slack.Calls("files.completeUploadExternal")
	if len(done) != 1 || done[0].Form.Get("thread_ts") != parentTS || done[0].Form.Get("channel_id") != "C0INCIDENT" {
		t.Fatalf("chart not uploaded into the thread: %+v", done)
	}
	if up := h.slack.Calls("upload"); len(up) != 1 || !strings.Contains(string(up[0].Body), "\x89PNG") {
		t.Fatal("the uploaded file is not a PNG")
	}
	if got := counterValue(h.m.Charts.WithLabelValues("rendered")); got != 1 {
		t.Errorf("charts rendered = %v", got)
	}

	// The same alert with the same verdict again: nothing to say.
	notifyOK(t, h.n, firingNotification(group, item(playbooks.VerdictCapacityPastKnee, "vllm-0")))
	if n := len(h.slack.Calls("chat.postMessage")); n != 1 {
		t.Fatalf("an unchanged re-notification posted (%d posts)", n)
	}

	// A new alert in the group and a changed verdict: one reply each, in the thread.
	notifyOK(t, h.n, firingNotification(group, item(playbooks.VerdictCapacityPastKnee, "vllm-1")))
	notifyOK(t, h.n, firingNotification(group, item(playbooks.VerdictKVPreemption, "vllm-0")))
	posts = h.slack.Calls("chat.postMessage")
	if len(posts) != 3 {
		t.Fatalf("want 3 posts, got %d", len(posts))
	}
	for i, want := range []string{"New alert in this group", "Verdict changed*: `capacity-past-knee` → `kv-preemption`"} {
		p := posts[i+1]
		if p.Form.Get("thread_ts") != parentTS || p.Form.Get("channel") != "C0INCIDENT" {
			t.Errorf("reply %d not in the thread: %v", i, p.Form)
		}
		if !strings.Contains(p.Form.Get("blocks"), want) {
			t.Errorf("reply %d lacks %q: %s", i, want, p.Form.Get("blocks"))
		}
	}

	// The group resolves: the parent is edited (no buttons, says for how long) and the thread hears it.
	res := firingNotification(group, notify.Item{Alert: alert("vllm-0", notify.StatusResolved)}, notify.Item{Alert: alert("vllm-1", notify.StatusResolved)})
	res.Status = notify.StatusResolved
	notifyOK(t, h.n, res)
	up := h.slack.Calls("chat.update")
	if len(up) != 1 || up[0].Form.Get("ts") != parentTS {
		t.Fatalf("want one chat.update of the parent, got %+v", up)
	}
	b := up[0].Form.Get("blocks")
	for _, want := range []string{"RESOLVED: VLLMTimeToFirstTokenP99High", "after 35m", "Capacity, past the knee"} {
		if !strings.Contains(b, want) {
			t.Errorf("resolved parent lacks %q: %s", want, b)
		}
	}
	if strings.Contains(b, actionSilence) {
		t.Error("resolved parent still has buttons")
	}
	posts = h.slack.Calls("chat.postMessage")
	if last := posts[len(posts)-1]; last.Form.Get("thread_ts") != parentTS || !strings.Contains(last.Form.Get("text"), "resolved after 35m") {
		t.Errorf("no resolution reply in the thread: %v", last.Form)
	}

	// It fires again later: a new incident, a new parent message.
	notifyOK(t, h.n, firingNotification(group, item(playbooks.VerdictKVPressure, "vllm-0")))
	posts = h.slack.Calls("chat.postMessage")
	if last := posts[len(posts)-1]; last.Form.Get("thread_ts") != "" {
		t.Errorf("a new incident replied in the old thread: %v", last.Form)
	}
	inc, err := h.n.RecentIncidents(context.Background(), 5)
	if err != nil || len(inc) != 1 || inc[0].Status != notify.StatusFiring {
		t.Errorf("RecentIncidents = %+v, %v", inc, err)
	}
}

func TestAResolutionWithoutAThreadPostsNothing(t *testing.T) {
	h := newHarness(t, nil, nil) // any Slack call fails the test
	res := firingNotification("g", notify.Item{Alert: alert("vllm-0", notify.StatusResolved)})
	res.Status = notify.StatusResolved
	notifyOK(t, h.n, res)
}

func TestAChartFailureNeverBlocksThePost(t *testing.T) {
	h := newHarness(t, nil, fakeProm{err: errors.New("prometheus down")}, "chat.postMessage")
	notifyOK(t, h.n, firingNotification("g", item(playbooks.VerdictCapacityPastKnee, "vllm-0")))
	if n := len(h.slack.Calls("chat.postMessage")); n != 1 {
		t.Fatalf("%d posts", n)
	}
	if got := counterValue(h.m.Charts.WithLabelValues("failed")); got != 1 {
		t.Errorf("charts failed = %v", got)
	}
}

func TestAnUploadFailureIsCountedAndThePostStands(t *testing.T) {
	h := newHarness(t, nil, fakeProm{}, "chat.postMessage")
	h.slack.Handle("files.getUploadURLExternal", func(fakeslack.Call) fakeslack.Response {
		return fakeslack.Response{Body: map[string]any{"ok": false, "error": "missing_scope"}}
	})
	notifyOK(t, h.n, firingNotification("g", item(playbooks.VerdictCapacityPastKnee, "vllm-0")))
	if got := counterValue(h.m.Charts.WithLabelValues("failed")); got != 1 {
		t.Errorf("charts failed = %v", got)
	}
	if got := counterValue(h.m.APICalls.WithLabelValues(methodFileUpload, resultError)); got != 1 {
		t.Errorf("files.upload errors = %v", got)
	}
}

func TestRateLimitedPostsAreRetriedAfterRetryAfter(t *testing.T) {
	h := newHarness(t, nil, nil)
	var mu sync.Mutex
	calls := 0
	h.slack.Handle("chat.postMessage", func(fakeslack.Call) fakeslack.Response {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls <= 2 {
			return fakeslack.Response{Status: 429, Header: map[string]string{"Retry-After": "0"}, Body: map[string]any{"ok": false, "error": "ratelimited"}}
		}
		return fakeslack.Response{Body: map[string]any{"ok": true, "channel": "C1", "ts": "1.2"}}
	})
	// The notifier hands the 429 back with Slack's Retry-After; the retry loop waits it.
	retry, err := h.n.Notify(context.Background(), firingNotification("g", item(playbooks.VerdictHealthy, "vllm-0")))
	if wait, ok := retryAfterOf(err); !retry || !ok || wait != 0 {
		t.Fatalf("a 429 with Retry-After: 0: retry=%v err=%v, want a retry after 0s", retry, err)
	}
	notifyOK(t, retrying(h.n), firingNotification("g", item(playbooks.VerdictHealthy, "vllm-0")))
	if got := counterValue(h.m.APICalls.WithLabelValues(methodPostMessage, resultRateLimited)); got != 2 {
		t.Errorf("rate_limited = %v", got)
	}
	if got := counterValue(h.m.APICalls.WithLabelValues(methodPostMessage, resultOK)); got != 1 {
		t.Errorf("ok = %v", got)
	}
}

func retryAfterOf(err error) (time.Duration, bool) {
	var ra notify.RetryAfterer
	if errors.As(err, &ra) {
		return ra.RetryAfter()
	}
	return 0, false
}

func TestFailuresMapToRetryOrNot(t *testing.T) {
	cases := []struct {
		name      string
		resp      fakeslack.Response
		wantRetry bool
		result    string
	}{
		{"a 429 asking for longer than max_retry_after is handed back", fakeslack.Response{Status: 429, Header: map[string]string{"Retry-After": "3600"}}, true, resultRateLimited},
		{"ok:false with an error is a permanent failure", fakeslack.Response{Body: map[string]any{"ok": false, "error": "channel_not_found"}}, false, resultError},
		{"ok:false without an error is still a failure", fakeslack.Response{Body: map[string]any{"ok": false}}, false, resultError},
		{"a 503 is worth a retry", fakeslack.Response{Status: 503, Body: "busy"}, true, resultError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, nil, nil)
			h.slack.Handle("chat.postMessage", func(fakeslack.Call) fakeslack.Response { return c.resp })
			retry, err := h.n.Notify(context.Background(), firingNotification("g", item(playbooks.VerdictHealthy, "vllm-0")))
			if err == nil || retry != c.wantRetry {
				t.Fatalf("retry=%v err=%v, want retry=%v and an error", retry, err, c.wantRetry)
			}
			if got := counterValue(h.m.APICalls.WithLabelValues(methodPostMessage, c.result)); got != 1 {
				t.Errorf("%s = %v", c.result, got)
			}
			// The claim was released, so a retry can create the parent.
			if ok, _ := h.store.Claim(context.Background(), parentKey("g"), time.Minute); !ok {
				t.Error("parent claim still held after a failed post")
			}
		})
	}
}

func TestAPIDeadlineIsATimeout(t *testing.T) {
	h := newHarness(t, nil, nil)
	h.cfg.RequestTimeout = 1e6 // 1ms
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	h.slack.Handle("chat.postMessage", func(fakeslack.Call) fakeslack.Response {
		<-release
		return fakeslack.Response{Body: map[string]any{"ok": true, "ts": "1.1"}}
	})
	_, _, err := h.api.Post(context.Background(), "#c")
	if !isRetryable(err) {
		t.Fatalf("err = %v, want a retryable timeout", err)
	}
	if got := counterValue(h.m.APICalls.WithLabelValues(methodPostMessage, resultTimeout)); got != 1 {
		t.Errorf("timeout = %v", got)
	}
}

func TestPostsToOneChannelArePaced(t *testing.T) {
	p := pacer{interval: 30 * time.Millisecond, next: map[string]time.Time{}}
	start := time.Now()
	for range 4 {
		if err := p.wait(context.Background(), "#c"); err != nil {
			t.Fatal(err)
		}
	}
	if el := time.Since(start); el < 90*time.Millisecond {
		t.Errorf("4 posts took %s, want at least 3 intervals", el)
	}
	other := time.Now()
	_ = p.wait(context.Background(), "#other")
	if time.Since(other) > 20*time.Millisecond {
		t.Error("another channel waited for the first one's pace")
	}
}

// Two responders sharing a real Redis, each handed a different alert of the same group at the
// same moment (the dispatcher's per-alert claim splits them): exactly one parent message, and
// the other alert lands in its thread.
func TestTwoRespondersSharingRedisPostOneParentPerGroup(t *testing.T) {
	newStore := sharedRedis(t)
	a := newHarness(t, newStore(), nil, "chat.postMessage")
	b := sameSlack(t, a, newStore())

	for round := range 5 {
		group := fmt.Sprintf(`{}:{alertname="A",round="%d"}`, round)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, h := range []*harness{a, b} {
			wg.Go(func() {
				_, errs[i] = retrying(h.n).Notify(context.Background(), firingNotification(group, item(playbooks.VerdictKVPressure, fmt.Sprintf("vllm-%d", i))))
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	}
	var parents, replies int
	for _, c := range a.slack.Calls("chat.postMessage") {
		if c.Form.Get("thread_ts") == "" {
			parents++
		} else {
			replies++
		}
	}
	if parents != 5 || replies != 5 {
		t.Errorf("5 groups, 2 alerts each: got %d parents and %d replies, want 5 and 5", parents, replies)
	}
}

// getHook is a store that reports each Get of a key.
type getHook struct {
	store.Store
	onGet func(key string)
}

func (s getHook) Get(ctx context.Context, key string) ([]byte, bool, error) {
	s.onGet(key)
	return s.Store.Get(ctx, key)
}

// A resolution that arrives while the group's first post is still in flight (a slow Slack) is
// not dropped: it waits for the parent message and marks it resolved.
func TestAResolutionArrivingWhileTheParentIsPostedReachesIt(t *testing.T) {
	asked := make(chan struct{})
	var once sync.Once
	st := getHook{Store: store.NewMemory(), onGet: func(key string) {
		if strings.HasPrefix(key, parentKeyPrefix) {
			once.Do(func() { close(asked) })
		}
	}}
	h := newHarness(t, st, nil, "chat.update")
	release := make(chan struct{})
	var posts atomic.Int32
	h.slack.Handle("chat.postMessage", func(c fakeslack.Call) fakeslack.Response {
		r := fakeslack.Response{Status: 200, Body: map[string]any{"ok": true, "channel": "C0INCIDENT", "ts": fmt.Sprintf("1700000000.%06d", posts.Add(1))}}
		if c.Form.Get("thread_ts") == "" {
			r.Hold = release // the parent post answers late
		}
		return r
	})
	group := `{}:{alertname="VLLMTimeToFirstTokenP99High"}`
	fired := make(chan error, 1)
	go func() {
		_, err := h.n.Notify(context.Background(), firingNotification(group, item(playbooks.VerdictCapacityPastKnee, "vllm-0")))
		fired <- err
	}()
	h.slack.WaitCalls(t, "chat.postMessage", 1, 10*time.Second)

	res := firingNotification(group, notify.Item{Alert: alert("vllm-0", notify.StatusResolved)})
	res.Status = notify.StatusResolved
	resolved := make(chan error, 1)
	go func() {
		_, err := retrying(h.n).Notify(context.Background(), res)
		resolved <- err
	}()
	select {
	case err := <-resolved:
		t.Fatalf("the resolution returned (err=%v) before the parent it resolves existed: it was dropped", err)
	case <-asked: // it looked for a parent in flight
	}
	close(release)
	if err := <-fired; err != nil {
		t.Fatal(err)
	}
	if err := <-resolved; err != nil {
		t.Fatal(err)
	}
	if up := h.slack.Calls("chat.update"); len(up) != 1 || !strings.Contains(up[0].Form.Get("text"), "RESOLVED") {
		t.Fatalf("want one edit marking the parent resolved, got %+v", up)
	}
	th, err := h.n.loadThread(context.Background(), group)
	if err != nil || th == nil || th.Status != notify.StatusResolved {
		t.Fatalf("thread = %+v, %v; want resolved", th, err)
	}
}

// An alert whose resolution never reached its thread fires again (a new startsAt) with the same
// verdict: it is a new incident and is posted, not taken for an unchanged re-send.
func TestAnAlertThatFiresAgainInAnOpenThreadIsPosted(t *testing.T) {
	h := newHarness(t, nil, nil, "chat.postMessage")
	group := `{}:{alertname="VLLMTimeToFirstTokenP99High"}`
	notifyOK(t, h.n, firingNotification(group, item(playbooks.VerdictKVPressure, "vllm-0")))
	again := item(playbooks.VerdictKVPressure, "vllm-0")
	again.Alert.StartsAt = startTS.Add(30 * time.Minute)
	notifyOK(t, h.n, firingNotification(group, again))
	posts := h.slack.Calls("chat.postMessage")
	if len(posts) != 2 {
		t.Fatalf("want the parent and a reply for the new incident, got %d posts", len(posts))
	}
	if posts[1].Form.Get("thread_ts") == "" || !strings.Contains(posts[1].Form.Get("blocks"), "Fired again") {
		t.Errorf("the new incident is not a reply saying it fired again: %v", posts[1].Form)
	}
}

// The fallback text of every message (what notifications, screen readers and block-less clients
// show, read by Slack as mrkdwn) escapes what comes from labels and templates: a label value or a
// summary carrying <!channel>, <!here>, <@U…> or link markup cannot ping anyone or hide a link.
func TestFallbackTextCannotPingOrLink(t *testing.T) {
	h := newHarness(t, nil, nil, "chat.postMessage", "chat.update")
	evil := func(pod string) notify.Item {
		it := item(playbooks.VerdictKVPressure, pod)
		it.Alert.Labels["alertname"] = "<!channel>"
		it.Diagnosis.Title = "<!here> <@U0ADMIN>"
		it.Diagnosis.Summary = "<https://evil.example|click> & <!subteam^S1>"
		return it
	}
	group := `{}:{alertname="x"}`
	nt := firingNotification(group, evil("<@U0POD>"))
	nt.GroupLabels = map[string]string{"alertname": "<!channel>"}
	notifyOK(t, h.n, nt)
	nt = firingNotification(group, evil("vllm-1"))
	nt.GroupLabels = map[string]string{"alertname": "<!channel>"}
	notifyOK(t, h.n, nt)
	res := firingNotification(group, notify.Item{Alert: alert("vllm-1", notify.StatusResolved)})
	res.Status = notify.StatusResolved
	notifyOK(t, h.n, res)

	calls := append(h.slack.Calls("chat.postMessage"), h.slack.Calls("chat.update")...)
	if len(calls) < 3 {
		t.Fatalf("want a parent, a reply and an edit, got %d calls", len(calls))
	}
	for _, c := range calls {
		text := c.Form.Get("text")
		for _, bad := range []string{"<!channel>", "<!here>", "<@U0ADMIN>", "<@U0POD>", "<https://evil.example|click>", "<!subteam^S1>"} {
			if strings.Contains(text, bad) {
				t.Errorf("%s: fallback text carries %q raw: %q", c.Method, bad, text)
			}
		}
	}
}

// Slack records a parent post but answers after request_timeout: the retry finds that post in
// the channel's history by its metadata and adopts it, instead of posting a second parent.
func TestAParentPostAnsweredTooLateIsNotPostedTwice(t *testing.T) {
	h := newHarness(t, nil, nil)
	h.cfg.RequestTimeout = 300 * time.Millisecond
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var n atomic.Int32
	var mu sync.Mutex
	var channel []map[string]any // what Slack carried out, answered or not
	h.slack.Handle("chat.postMessage", func(c fakeslack.Call) fakeslack.Response {
		ts := fmt.Sprintf("1700000000.%06d", n.Add(1))
		var md map[string]any
		_ = json.Unmarshal([]byte(c.Form.Get("metadata")), &md)
		mu.Lock()
		channel = append(channel, map[string]any{"type": "message", "ts": ts, "text": c.Form.Get("text"), "metadata": md})
		mu.Unlock()
		r := fakeslack.Response{Status: 200, Body: map[string]any{"ok": true, "channel": "C0INCIDENT", "ts": ts}}
		if strings.Contains(c.Form.Get("metadata"), hashKey("late")) {
			r.Hold = release // recorded now, answered long after the deadline
		}
		return r
	})
	h.slack.Handle("conversations.history", func(c fakeslack.Call) fakeslack.Response {
		mu.Lock()
		msgs := slices.Clone(channel)
		mu.Unlock()
		slices.Reverse(msgs) // newest first
		if c.Form.Get("channel") != "C0INCIDENT" || c.Form.Get("include_all_metadata") != "1" {
			t.Errorf("history asked for %v", c.Form)
		}
		return fakeslack.Response{Status: 200, Body: map[string]any{"ok": true, "messages": msgs}}
	})
	// An earlier group's post teaches the notifier the channel's id.
	notifyOK(t, h.n, firingNotification("early", item(playbooks.VerdictKVPressure, "vllm-9")))

	nt := firingNotification("late", item(playbooks.VerdictKVPressure, "vllm-0"))
	if retry, err := h.n.Notify(context.Background(), nt); err == nil || !retry {
		t.Fatalf("the post that timed out: retry=%v err=%v; want a retryable failure", retry, err)
	}
	notifyOK(t, h.n, nt) // the retry
	if posts := h.slack.Calls("chat.postMessage"); len(posts) != 2 {
		t.Fatalf("want 2 parent posts (one per group), got %d: the late one was posted again", len(posts))
	}
	th, err := h.n.loadThread(context.Background(), "late")
	if err != nil || th == nil || th.TS != "1700000000.000002" || th.Channel != "C0INCIDENT" {
		t.Fatalf("the retry must adopt the late post as the group's thread, got %+v %v", th, err)
	}
}

// The first parent post of all, to a channel configured by name, is recorded by Slack but
// answered after request_timeout: nothing has told the notifier the channel's id yet, so it must
// resolve the name itself (conversations.list, paged) to look the post up in the history, and
// adopt it instead of posting a second parent.
func TestAFirstParentPostAnsweredTooLateToANamedChannelIsNotPostedTwice(t *testing.T) {
	h := newHarness(t, nil, nil)
	h.cfg.Channel = "#incidents"
	h.cfg.RequestTimeout = 300 * time.Millisecond
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var mu sync.Mutex
	var channel []map[string]any // what Slack carried out, answered or not
	h.slack.Handle("conversations.list", func(c fakeslack.Call) fakeslack.Response {
		// Two pages: the channel is on the second.
		if c.Form.Get("cursor") == "" {
			return fakeslack.Response{Body: map[string]any{"ok": true, "channels": []map[string]any{{"id": "C0GENERAL", "name": "general"}},
				"response_metadata": map[string]any{"next_cursor": "page2"}}}
		}
		return fakeslack.Response{Body: map[string]any{"ok": true, "channels": []map[string]any{{"id": "C0INCIDENT", "name": "incidents"}}}}
	})
	h.slack.Handle("chat.postMessage", func(c fakeslack.Call) fakeslack.Response {
		var md map[string]any
		_ = json.Unmarshal([]byte(c.Form.Get("metadata")), &md)
		mu.Lock()
		ts := fmt.Sprintf("1700000000.%06d", len(channel)+1)
		channel = append(channel, map[string]any{"type": "message", "ts": ts, "text": c.Form.Get("text"), "metadata": md})
		mu.Unlock()
		// Recorded now, answered long after the deadline.
		return fakeslack.Response{Status: 200, Body: map[string]any{"ok": true, "channel": "C0INCIDENT", "ts": ts}, Hold: release}
	})
	h.slack.Handle("conversations.history", func(c fakeslack.Call) fakeslack.Response {
		if c.Form.Get("channel") != "C0INCIDENT" {
			t.Errorf("history asked for channel %q, want the id C0INCIDENT", c.Form.Get("channel"))
		}
		mu.Lock()
		defer mu.Unlock()
		return fakeslack.Response{Status: 200, Body: map[string]any{"ok": true, "messages": slices.Clone(channel)}}
	})
	nt := firingNotification("late", item(playbooks.VerdictKVPressure, "vllm-0"))
	if retry, err := h.n.Notify(context.Background(), nt); err == nil || !retry {
		t.Fatalf("the post that timed out: retry=%v err=%v; want a retryable failure", retry, err)
	}
	notifyOK(t, h.n, nt) // the retry
	posts := h.slack.Calls("chat.postMessage")
	if len(posts) != 1 {
		t.Fatalf("want 1 parent post, got %d: the late one was posted again", len(posts))
	}
	if got := posts[0].Form.Get("channel"); got != "C0INCIDENT" {
		t.Errorf("posted to %q, want the resolved id C0INCIDENT", got)
	}
	th, err := h.n.loadThread(context.Background(), "late")
	if err != nil || th == nil || th.TS != "1700000000.000001" || th.Channel != "C0INCIDENT" {
		t.Fatalf("the retry must adopt the late post as the group's thread, got %+v %v", th, err)
	}
	if lists := h.slack.Calls("conversations.list"); len(lists) != 2 {
		t.Errorf("want the name resolved once (2 pages), got %d conversations.list calls", len(lists))
	}
}

// lateSlack is a Slack whose first parent post is carried out only after the notifier's first
// look at the channel's history (as a post answered after request_timeout, at 12 s against 10 s,
// may land only as it is answered), and answered later still; every other post lands at once.
// With never, the first parent post never lands.
type lateSlack struct {
	mu      sync.Mutex
	channel []map[string]any // the messages in the channel, oldest first
	held    []map[string]any // the first parent post, not carried out yet
	parents int
	looks   int
	never   bool
	release chan struct{}
}

func newLateSlack(t *testing.T, h *harness, never bool) *lateSlack {
	s := &lateSlack{never: never, release: make(chan struct{})}
	t.Cleanup(func() { close(s.release) })
	h.slack.Handle("chat.postMessage", func(c fakeslack.Call) fakeslack.Response {
		s.mu.Lock()
		defer s.mu.Unlock()
		var md map[string]any
		_ = json.Unmarshal([]byte(c.Form.Get("metadata")), &md)
		ts := fmt.Sprintf("1700000000.%06d", len(s.channel)+len(s.held)+1)
		msg := map[string]any{"type": "message", "ts": ts, "text": c.Form.Get("text"), "metadata": md}
		if th := c.Form.Get("thread_ts"); th != "" {
			msg["thread_ts"] = th
		}
		r := fakeslack.Response{Status: 200, Body: map[string]any{"ok": true, "channel": "C0INCIDENT", "ts": ts}}
		if c.Form.Get("thread_ts") == "" {
			if s.parents++; s.parents == 1 {
				s.held = append(s.held, msg)
				r.Hold = s.release
				return r
			}
		}
		s.channel = append(s.channel, msg)
		return r
	})
	h.slack.Handle("conversations.history", func(c fakeslack.Call) fakeslack.Response {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.looks++
		msgs := slices.Clone(s.channel)
		slices.Reverse(msgs) // newest first
		if !s.never {
			s.channel, s.held = append(s.channel, s.held...), nil // carried out right after this look
		}
		return fakeslack.Response{Status: 200, Body: map[string]any{"ok": true, "messages": msgs}}
	})
	return s
}

// Issue 33.3: the first parent post is answered after request_timeout and lands in the channel
// only after the retry first looks for it. The retry does not post a second parent: not finding
// it, it waits (a retryable failure) while the post may still land, adopts it once it is in the
// history, and replies in its thread with what it did not show (an alert that joined the group
// meanwhile), so that the redelivery loses no diagnosis.
func TestAParentPostThatLandsAfterTheRetryLooksIsNotPostedTwice(t *testing.T) {
	h := newHarness(t, nil, nil)
	h.cfg.RequestTimeout = 300 * time.Millisecond
	s := newLateSlack(t, h, false)
	first := firingNotification("late", item(playbooks.VerdictKVPressure, "vllm-0"))
	if retry, err := h.n.Notify(context.Background(), first); err == nil || !retry {
		t.Fatalf("the post that timed out: retry=%v err=%v; want a retryable failure", retry, err)
	}
	// The redelivery carries the group's newer state: a second alert joined it.
	newer := firingNotification("late", item(playbooks.VerdictKVPressure, "vllm-0"), item(playbooks.VerdictKVPreemption, "vllm-1"))
	if retry, err := h.n.Notify(context.Background(), newer); !retry || !errors.Is(err, errUnansweredPending) {
		t.Fatalf("the retry that does not find the post yet: retry=%v err=%v; want it to wait", retry, err)
	}
	notifyOK(t, h.n, newer)
	var parents, replies int
	for _, c := range h.slack.Calls("chat.postMessage") {
		switch c.Form.Get("thread_ts") {
		case "":
			parents++
		case "1700000000.000001":
			replies++
			if !strings.Contains(c.Form.Get("text"), "vllm-1") && !strings.Contains(c.Form.Get("blocks"), "vllm-1") {
				t.Errorf("the thread reply does not show the alert that joined: %s", c.Form.Get("blocks"))
			}
		}
	}
	if parents != 1 || replies != 1 || s.looks != 2 {
		t.Fatalf("%d parent posts, %d replies in its thread after %d looks; want the one parent, adopted, and the new alert in its thread", parents, replies, s.looks)
	}
	th, err := h.n.loadThread(context.Background(), "late")
	if err != nil || th == nil || th.TS != "1700000000.000001" || len(th.Verdicts) != 2 {
		t.Fatalf("the thread must be the post that landed (ts 1700000000.000001), with both alerts: %v", err)
	}
}

// The hard negative: the post that timed out never lands. Once it could no longer land
// (unansweredWait request timeouts after it began) the parent is posted again: the diagnosis is
// not lost.
func TestAParentPostThatNeverLandsIsPostedAgainAfterTheWait(t *testing.T) {
	h := newHarness(t, nil, nil)
	h.cfg.RequestTimeout = 300 * time.Millisecond
	newLateSlack(t, h, true)
	nt := firingNotification("lost", item(playbooks.VerdictKVPressure, "vllm-0"))
	if retry, err := h.n.Notify(context.Background(), nt); err == nil || !retry {
		t.Fatalf("the post that timed out: retry=%v err=%v; want a retryable failure", retry, err)
	}
	if retry, err := h.n.Notify(context.Background(), nt); !retry || !errors.Is(err, errUnansweredPending) {
		t.Fatalf("within the wait: retry=%v err=%v; want it to wait", retry, err)
	}
	h.n.now = func() time.Time { return t0.Add(unansweredWait*h.cfg.RequestTimeout + time.Millisecond) }
	notifyOK(t, h.n, nt)
	if posts := h.slack.Calls("chat.postMessage"); len(posts) != 2 {
		t.Fatalf("%d parent posts; want the lost one and its repost", len(posts))
	}
	if th, err := h.n.loadThread(context.Background(), "lost"); err != nil || th == nil || th.TS != "1700000000.000002" {
		t.Fatalf("the thread must be the repost (ts 1700000000.000002): %v %v", th != nil && th.TS != "", err)
	}
}

// The channel's name cannot be resolved (the token lacks channels:read): the diagnosis is posted
// by name all the same, and the name is not looked up again at every post.
func TestAChannelNameThatCannotBeResolvedIsPostedToByName(t *testing.T) {
	h := newHarness(t, nil, nil, "chat.postMessage")
	h.slack.Handle("conversations.list", func(fakeslack.Call) fakeslack.Response {
		return fakeslack.Response{Body: map[string]any{"ok": false, "error": "missing_scope", "needed": "channels:read"}}
	})
	notifyOK(t, h.n, firingNotification("g1", item(playbooks.VerdictKVPressure, "vllm-0")))
	notifyOK(t, h.n, firingNotification("g2", item(playbooks.VerdictKVPressure, "vllm-1")))
	for _, p := range h.slack.Calls("chat.postMessage") {
		if got := p.Form.Get("channel"); got != "#vllm-incidents" && got != "C0INCIDENT" {
			t.Errorf("posted to %q, want the channel by name (or by the id Slack answered with)", got)
		}
	}
	if posts := h.slack.Calls("chat.postMessage"); len(posts) != 2 || posts[0].Form.Get("channel") != "#vllm-incidents" {
		t.Fatalf("want 2 posts, the first by name; got %d", len(posts))
	}
	// Asked with private channels, then the public ones only; not again for the second group.
	if lists := h.slack.Calls("conversations.list"); len(lists) != 2 {
		t.Errorf("conversations.list called %d times, want 2 (once without groups:read)", len(lists))
	}
}

// Without groups:read Slack refuses a listing that includes private channels: the name is looked
// up among the public ones.
func TestWithoutGroupsReadTheNameIsLookedUpAmongThePublicChannels(t *testing.T) {
	h := newHarness(t, nil, nil, "chat.postMessage")
	h.slack.Handle("conversations.list", func(c fakeslack.Call) fakeslack.Response {
		if strings.Contains(c.Form.Get("types"), "private_channel") {
			return fakeslack.Response{Body: map[string]any{"ok": false, "error": "missing_scope", "needed": "groups:read"}}
		}
		return fakeslack.Response{Body: map[string]any{"ok": true, "channels": []map[string]any{{"id": "C0INCIDENT", "name": "vllm-incidents"}}}}
	})
	notifyOK(t, h.n, firingNotification("g1", item(playbooks.VerdictKVPressure, "vllm-0")))
	if got := h.slack.Calls("chat.postMessage")[0].Form.Get("channel"); got != "C0INCIDENT" {
		t.Fatalf("posted to %q, want the id C0INCIDENT", got)
	}
}

// The hard negative: a channel configured by its id is never looked up.
func TestAChannelConfiguredByIDIsNotLookedUp(t *testing.T) {
	h := newHarness(t, nil, nil, "chat.postMessage")
	h.cfg.Channel = "C0INCIDENT"
	h.slack.Handle("conversations.list", func(fakeslack.Call) fakeslack.Response {
		t.Error("conversations.list called for a channel configured by id")
		return fakeslack.Response{Body: map[string]any{"ok": false, "error": "unexpected"}}
	})
	notifyOK(t, h.n, firingNotification("g1", item(playbooks.VerdictKVPressure, "vllm-0")))
	if got := h.slack.Calls("chat.postMessage")[0].Form.Get("channel"); got != "C0INCIDENT" {
		t.Fatalf("posted to %q, want C0INCIDENT", got)
	}
}

// noList is a store on which listing every record fails the test.
type noList struct {
	store.Store
	t *testing.T
}

func (s noList) List(ctx context.Context, prefix string) (map[string][]byte, error) {
	s.t.Errorf("List(%q): /vllm status must read the index of recent threads, not every record", prefix)
	return s.Store.List(ctx, prefix)
}

// `/vllm status` reads one index of the recent threads, however many thread records the store
// holds: newest first, each in its latest state, bounded.
func TestRecentIncidentsComeFromAnIndexNotFromEveryRecord(t *testing.T) {
	mem := store.NewMemory()
	for i := range 500 { // old records nobody indexed: never read
		_ = mem.Set(context.Background(), threadKey(fmt.Sprintf("old-%d", i)), []byte(`{"alertname":"Old"}`), time.Hour)
	}
	h := newHarness(t, noList{Store: mem, t: t}, nil, "chat.postMessage", "chat.update")
	for i := range maxRecent + 5 {
		it := item(playbooks.VerdictKVPressure, "vllm-0")
		it.Alert.StartsAt = startTS.Add(time.Duration(i) * time.Minute)
		notifyOK(t, h.n, firingNotification(fmt.Sprintf("g%03d", i), it))
	}
	res := firingNotification(fmt.Sprintf("g%03d", maxRecent+4), notify.Item{Alert: alert("vllm-0", notify.StatusResolved)})
	res.Status = notify.StatusResolved
	notifyOK(t, h.n, res)
	inc, err := h.n.RecentIncidents(context.Background(), 3)
	if err != nil || len(inc) != 3 {
		t.Fatalf("RecentIncidents = %+v, %v", inc, err)
	}
	if inc[0].Status != notify.StatusResolved || !inc[0].StartedAt.After(inc[1].StartedAt) || !inc[1].StartedAt.After(inc[2].StartedAt) {
		t.Fatalf("want newest first, the newest resolved: %+v", inc)
	}
	all, _ := h.n.RecentIncidents(context.Background(), 0)
	if len(all) != maxRecent {
		t.Fatalf("the index holds %d threads, want at most %d", len(all), maxRecent)
	}
}

// A response_url comes in the request: only Slack's own hosts (and, for tests, api_url's host
// and slack.response_url_hosts) are ever called.
func TestResponseURLsAreRestrictedToSlacksHosts(t *testing.T) {
	h := newHarness(t, nil, nil, "response")
	var hit atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit.Add(1) }))
	t.Cleanup(other.Close)
	msg := &slackgo.WebhookMessage{Text: "hi"}
	for _, u := range []string{other.URL + "/response/x", "https://hooks.slack.com.evil.example/commands/1", "http://hooks.slack.com/commands/1", "file:///etc/passwd"} {
		if err := h.api.Respond(context.Background(), u, msg); err == nil {
			t.Errorf("Respond(%s) was allowed", u)
		}
	}
	if hit.Load() != 0 {
		t.Fatalf("a host that is not Slack's was called %d times", hit.Load())
	}
	if err := h.api.Respond(context.Background(), h.slack.ResponseURL("ok"), msg); err != nil {
		t.Fatalf("api_url's host must be allowed: %v", err)
	}
	h.cfg.ResponseURLHosts = []string{strings.TrimPrefix(other.URL, "http://")}
	if err := h.api.Respond(context.Background(), other.URL+"/response/x", msg); err != nil || hit.Load() != 1 {
		t.Fatalf("a host in response_url_hosts must be allowed: %v (hits %d)", err, hit.Load())
	}
}

// A response_url is a credential (it posts to the channel for half an hour): when the call to it
// fails, the error (which is logged) names its host only, and is still classified as retryable.
func TestAFailedResponseURLIsNamedByItsHostOnly(t *testing.T) {
	h := newHarness(t, nil, nil)
	u := h.slack.ResponseURL("T0KEN-SECRET")
	h.slack.Close()
	err := h.api.Respond(context.Background(), u, &slackgo.WebhookMessage{Text: "hi"})
	if err == nil || strings.Contains(err.Error(), "T0KEN-SECRET") || !strings.Contains(err.Error(), h.slack.URL) || !isRetryable(err) {
		t.Fatalf("err = %v (retryable %v); want a retryable error naming %s only", err, isRetryable(err), h.slack.URL)
	}
}

// The resolution reply follows an edit of the parent that already says resolved: a 429 on it is
// retried after Slack's Retry-After (within the notification), not dropped.
func TestARateLimitedResolutionReplyIsRetried(t *testing.T) {
	h := newHarness(t, nil, nil, "chat.update")
	var mu sync.Mutex
	posts := 0
	h.slack.Handle("chat.postMessage", func(c fakeslack.Call) fakeslack.Response {
		mu.Lock()
		defer mu.Unlock()
		posts++
		if c.Form.Get("thread_ts") != "" && posts == 2 {
			return fakeslack.Response{Status: 429, Header: map[string]string{"Retry-After": "0"}, Body: map[string]any{"ok": false, "error": "ratelimited"}}
		}
		return fakeslack.Response{Body: map[string]any{"ok": true, "channel": "C1", "ts": "1.2"}}
	})
	group := "g"
	notifyOK(t, h.n, firingNotification(group, item(playbooks.VerdictHealthy, "vllm-0")))
	res := firingNotification(group, notify.Item{Alert: alert("vllm-0", notify.StatusResolved)})
	res.Status = notify.StatusResolved
	notifyOK(t, h.n, res)
	calls := h.slack.Calls("chat.postMessage")
	if len(calls) != 3 || !strings.Contains(calls[2].Form.Get("text"), "resolved after") || calls[2].Form.Get("thread_ts") == "" {
		texts := make([]string, len(calls))
		for i, c := range calls {
			texts[i] = c.Form.Get("text")
		}
		t.Fatalf("want the parent, a rate-limited reply and its retry; got %d posts: %q", len(calls), texts)
	}
	if got := counterValue(h.m.APICalls.WithLabelValues(methodPostMessage, resultRateLimited)); got != 1 {
		t.Errorf("rate_limited = %v", got)
	}
}
