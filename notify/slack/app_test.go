package slack

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"
	slackgo "github.com/slack-go/slack"

	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/notify/slack/fakeslack"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/silence"
	"github.com/vllm-responder/vllm-responder/triage"
)

const signingSecret = "8f742231b10e8888abcd99yyyzzz85a5"

type fakeTriager struct {
	mu     sync.Mutex
	labels []map[string]string
	err    error
	// incident is the open incident every triage names (nil: none).
	incident *notify.Incident
}

func (f *fakeTriager) Triage(_ context.Context, labels map[string]string) (*triage.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.labels = append(f.labels, labels)
	if f.err != nil {
		return nil, f.err
	}
	return &triage.Result{Diagnosis: &playbooks.Diagnosis{Playbook: "on-demand", Verdict: playbooks.VerdictInconclusive, Title: "Inconclusive",
		Summary: "no rule explains it", Scope: labels, OfferProfile: true}, Incident: f.incident}, nil
}

func (f *fakeTriager) calls() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.labels) }

type fakeCapturer struct {
	mu      sync.Mutex
	started []string
	refuse  error
}

func (f *fakeCapturer) StartCapture(_ context.Context, pod string, d time.Duration, by string, done func(string, error)) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuse != nil {
		return "", f.refuse
	}
	f.started = append(f.started, fmt.Sprintf("%s %s %s", pod, d, by))
	go done("trace at /profiles/"+pod+".pt.trace.json.gz", nil)
	return "Cost: pod " + pod + " stops serving while vLLM flushes the trace. The last measured flush on this pod took 42s.", nil
}

func (f *fakeCapturer) Running(context.Context) ([]string, error) {
	return []string{"vllm-0 by slack:alice (U1), 7s left"}, nil
}

type fakeSilencer struct {
	mu   sync.Mutex
	got  []silence.Silence
	fail error
}

func (f *fakeSilencer) Create(_ context.Context, s silence.Silence) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return "", f.fail
	}
	f.got = append(f.got, s)
	return "sil-123", nil
}
func (f *fakeSilencer) URL(id string) string { return "http://am.example/#/silences/" + id }

type env struct {
	slack    *fakeslack.Server
	app      *app
	srv      *httptest.Server
	cfg      *Config
	m        *metrics
	triager  *fakeTriager
	capturer *fakeCapturer
	silencer *fakeSilencer
}

type envOpt func(*Config, *appOptions)

func newEnv(t *testing.T, allowed []string, opts ...envOpt) *env {
	t.Helper()
	fs := fakeslack.New(t, allowed...)
	cfg := &Config{BotToken: "xoxb-test", SigningSecret: signingSecret, Channel: "#" + fakeslack.ChannelName, APIURL: fs.APIURL()}
	cfg.SetDefaults()
	cfg.PostInterval = time.Millisecond
	e := &env{slack: fs, cfg: cfg, triager: &fakeTriager{}, capturer: &fakeCapturer{}, silencer: &fakeSilencer{}}
	o := appOptions{Config: cfg, Triager: e.triager, Capturer: e.capturer, Silencer: e.silencer, Logger: zerolog.New(zerolog.NewTestWriter(t))}
	for _, f := range opts {
		f(cfg, &o)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	e.m = newMetrics(nil)
	o.API = newAPI(cfg, e.m, o.Logger, nil)
	app, err := newApp(o)
	if err != nil {
		t.Fatal(err)
	}
	e.app = app
	mux := http.NewServeMux()
	mux.Handle("POST /slack/commands", app.CommandsHandler())
	mux.Handle("POST /slack/interactions", app.InteractionsHandler())
	e.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		e.srv.Close()
		_ = app.Close(context.Background())
	})
	return e
}

func sign(sec string, ts time.Time, body string) http.Header {
	h := http.Header{}
	s := strconv.FormatInt(ts.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(sec))
	fmt.Fprintf(mac, "v0:%s:%s", s, body)
	h.Set("X-Slack-Request-Timestamp", s)
	h.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	h.Set("Content-Type", "application/x-www-form-urlencoded")
	return h
}

func (e *env) post(t *testing.T, path, body string, h http.Header) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(body))
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = fmt.Fprint(&b, readAll(resp))
	return resp.StatusCode, b.String()
}

func readAll(r *http.Response) string {
	buf := new(strings.Builder)
	_, _ = ioCopy(buf, r)
	return buf.String()
}

func (e *env) command(t *testing.T, text, user string) (int, string) {
	body := url.Values{"command": {"/vllm"}, "text": {text}, "user_id": {user}, "user_name": {"alice"},
		"channel_id": {"C0INCIDENT"}, "response_url": {e.slack.ResponseURL("cmd")}}.Encode()
	return e.post(t, "/slack/commands", body, sign(signingSecret, time.Now(), body))
}

func counter(c prometheus.Counter) float64 {
	var m dto.Metric
	_ = c.Write(&m)
	return m.GetCounter().GetValue()
}

func TestEveryRequestsSignatureIsVerifiedBeforeAnythingElse(t *testing.T) {
	e := newEnv(t, nil) // any Slack call fails the test
	body := url.Values{"command": {"/vllm"}, "text": {"triage"}, "user_id": {"U1"}, "response_url": {e.slack.ResponseURL("x")}}.Encode()
	now := time.Now()
	missing := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	cases := []struct {
		name   string
		body   string
		header http.Header
		reason string
	}{
		{"wrong secret", body, sign("not-the-secret", now, body), "invalid_signature"},
		{"tampered body", strings.Replace(body, "triage", "status", 1), sign(signingSecret, now, body), "invalid_signature"},
		{"expired timestamp", body, sign(signingSecret, now.Add(-6*time.Minute), body), "expired"},
		{"future timestamp", body, sign(signingSecret, now.Add(6*time.Minute), body), "expired"},
		{"missing headers", body, missing, "missing_headers"},
		{"malformed signature", body, func() http.Header {
			h := sign(signingSecret, now, body)
			h.Set("X-Slack-Signature", "v0=zz")
			return h
		}(), "invalid_signature"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, path := range []string{"/slack/commands", "/slack/interactions"} {
				before := counter(e.m.SignatureInvalid.WithLabelValues(c.reason))
				status, _ := e.post(t, path, c.body, c.header)
				if status != http.StatusUnauthorized {
					t.Errorf("%s: status %d, want 401", path, status)
				}
				if got := counter(e.m.SignatureInvalid.WithLabelValues(c.reason)); got != before+1 {
					t.Errorf("%s: %s rejections %v -> %v", path, c.reason, before, got)
				}
			}
		})
	}
	e.app.Wait()
	if e.triager.calls() != 0 {
		t.Error("an unverified request reached the triager")
	}
	t.Run("valid", func(t *testing.T) {
		e.slack.Handle("response", func(fakeslack.Call) fakeslack.Response { return fakeslack.Response{Body: "ok"} })
		status, _ := e.post(t, "/slack/commands", body, sign(signingSecret, now, body))
		if status != http.StatusOK {
			t.Errorf("status %d", status)
		}
		e.app.Wait()
		if e.triager.calls() != 1 {
			t.Error("a valid request did not run")
		}
	})
}

func TestWithoutASigningSecretTheEndpointsRefuseEverything(t *testing.T) {
	e := newEnv(t, nil, func(c *Config, _ *appOptions) { c.SigningSecret = "" })
	body := "text=triage"
	if status, _ := e.post(t, "/slack/commands", body, sign(signingSecret, time.Now(), body)); status != http.StatusServiceUnavailable {
		t.Errorf("status %d", status)
	}
}

func TestTriageIsAcknowledgedAtOnceAndTheDiagnosisFollowsOnResponseURL(t *testing.T) {
	e := newEnv(t, []string{"response"})
	status, body := e.command(t, "triage meta-llama/Llama-3.1-8B vllm-0", "U1")
	if status != 200 || !strings.Contains(body, "Running triage for model `meta-llama/Llama-3.1-8B`, pod `vllm-0`") || !strings.Contains(body, `"response_type":"ephemeral"`) {
		t.Fatalf("ack %d %s", status, body)
	}
	calls := e.slack.WaitCalls(t, "response", 1, 10*time.Second)
	var msg slackgo.WebhookMessage
	if err := json.Unmarshal(calls[0].Body, &msg); err != nil {
		t.Fatal(err)
	}
	raw := string(calls[0].Body)
	if msg.ResponseType != "in_channel" || !strings.Contains(raw, "Inconclusive") || !strings.Contains(raw, actionCapture) {
		t.Errorf("response %s", raw)
	}
	// The capture button asks before it stalls a serving pod.
	if !strings.Contains(raw, `"confirm":{"title":{"type":"plain_text","text":"Profile this serving pod?"`) ||
		!strings.Contains(raw, "Pod `vllm-0` stops serving while vLLM flushes the trace") || !strings.Contains(raw, "Its vLLM alerts are silenced") {
		t.Errorf("the Capture profile button has no confirmation dialog saying the cost: %s", raw)
	}
	if l := e.triager.labels[0]; l["model_name"] != "meta-llama/Llama-3.1-8B" || l["pod"] != "vllm-0" {
		t.Errorf("triager got %v", l)
	}
	if got := counter(e.m.Commands.WithLabelValues("triage")); got != 1 {
		t.Errorf("triage commands = %v", got)
	}
}

func TestBadInputAnswersWithUsageAndNeverReachesTheTriager(t *testing.T) {
	e := newEnv(t, nil)
	for _, text := range []string{`triage x"}) or vector(1`, "explode", "profile", "triage a b c"} {
		status, body := e.command(t, text, "U1")
		if status != 200 || !strings.Contains(body, "Usage") || strings.Contains(body, "goroutine") {
			t.Errorf("%q: %d %s", text, status, body)
		}
	}
	e.app.Wait()
	if e.triager.calls() != 0 {
		t.Error("invalid input reached the triager")
	}
	if got := counter(e.m.Commands.WithLabelValues("invalid")); got != 4 {
		t.Errorf("invalid = %v", got)
	}
}

func TestATriageFailureIsOneLineNotAStackTrace(t *testing.T) {
	e := newEnv(t, []string{"response"})
	e.triager.err = errors.New("prometheus unreachable: dial tcp 10.0.0.1:9090: connect: refused\ngoroutine 1 [running]:")
	e.command(t, "triage", "U1")
	raw := string(e.slack.WaitCalls(t, "response", 1, 10*time.Second)[0].Body)
	if !strings.Contains(raw, "Triage failed: prometheus unreachable") || strings.Contains(raw, "goroutine") {
		t.Errorf("response %s", raw)
	}
}

func TestProfileCommand(t *testing.T) {
	t.Run("without a capturer says it is not configured", func(t *testing.T) {
		e := newEnv(t, nil, func(_ *Config, o *appOptions) { o.Capturer = nil })
		_, body := e.command(t, "profile vllm-0", "U1")
		if !strings.Contains(body, "not configured") {
			t.Errorf("ack %s", body)
		}
	})
	t.Run("a user outside the allowed lists is refused with the reason", func(t *testing.T) {
		e := newEnv(t, []string{"response", "usergroups.users.list"}, func(c *Config, _ *appOptions) {
			c.AllowedUsers = []string{"U0BOSS"}
			c.AllowedUsergroups = []string{"S0SRE"}
		})
		e.command(t, "profile vllm-0 10s", "U0INTERN")
		raw := unesc(e.slack.WaitCalls(t, "response", 1, 10*time.Second)[0].Body)
		if !strings.Contains(raw, "You may not capture profiles: this is limited to the allowed users or <!subteam^S0SRE>.") {
			t.Errorf("response %s", raw)
		}
		if len(e.capturer.started) != 0 {
			t.Error("a refused user started a capture")
		}
		if got := counter(e.m.Refusals.WithLabelValues("capture")); got != 1 {
			t.Errorf("refusals = %v", got)
		}
	})
	t.Run("a member of an allowed user group captures, and the report follows", func(t *testing.T) {
		e := newEnv(t, []string{"response", "usergroups.users.list"}, func(c *Config, _ *appOptions) {
			c.AllowedUsergroups = []string{"S0SRE"}
		})
		e.command(t, "profile vllm-0 10s", "U0ONCALL")
		calls := e.slack.WaitCalls(t, "response", 2, 10*time.Second)
		all := string(calls[0].Body) + string(calls[1].Body)
		if !strings.Contains(all, "started a profile capture of pod `vllm-0`") || !strings.Contains(all, "/profiles/vllm-0.pt.trace.json.gz") ||
			!strings.Contains(all, "The last measured flush on this pod took 42s") {
			t.Errorf("responses %s", all)
		}
		if got := e.capturer.started; len(got) != 1 || got[0] != "vllm-0 10s slack:alice (U0ONCALL)" {
			t.Errorf("started %v", got)
		}
	})
	t.Run("a window longer than profile.max_duration is refused at once, and help says the limit", func(t *testing.T) {
		e := newEnv(t, nil, func(_ *Config, o *appOptions) { o.MaxCapture = time.Minute })
		_, body := e.command(t, "profile vllm-0 3m", "U1")
		if !strings.Contains(body, "at most 1m (profile.max_duration); you asked for 3m") {
			t.Errorf("ack %s", body)
		}
		if len(e.capturer.started) != 0 {
			t.Error("a capture longer than the maximum was started")
		}
		if _, help := e.command(t, "help", "U1"); !strings.Contains(help, "at most `1m`") {
			t.Errorf("help %s", help)
		}
	})
	t.Run("a refusal from the capturer is shown as is", func(t *testing.T) {
		e := newEnv(t, []string{"response"})
		e.capturer.refuse = errors.New("pod vllm-0 is being profiled by slack:bob (U2) until 12:01:30")
		e.command(t, "profile vllm-0", "U1")
		raw := string(e.slack.WaitCalls(t, "response", 1, 10*time.Second)[0].Body)
		if !strings.Contains(raw, "Capture refused: pod vllm-0 is being profiled by slack:bob") {
			t.Errorf("response %s", raw)
		}
	})
}

// fakeIncidents lists one recent incident; threads are the parents of incidents by id.
type fakeIncidents struct{ threads map[string][2]string }

func (fakeIncidents) RecentIncidents(context.Context, int) ([]incident, error) {
	return []incident{{Alertname: "VLLMKVCacheNearFull", Status: "firing", StartedAt: time.Date(2025, 6, 1, 11, 50, 0, 0, time.UTC), Alerts: 2}}, nil
}

func (f fakeIncidents) IncidentThread(_ context.Context, id string) (string, string, bool) {
	th, ok := f.threads[id]
	return th[0], th[1], ok
}

// A triage of a scope with an open incident answers in the incident's thread and says so, there
// and to the user; an incident with no thread here (another channel's, or its parent not posted
// yet) is answered where any triage is (the hard negative).
func TestATriageOfAScopeWithAnOpenIncidentAnswersInItsThread(t *testing.T) {
	threads := map[string][2]string{"3fa9c1d2e0a1": {fakeslack.ChannelID, "1700000000.000001"}}
	e := newEnv(t, []string{"response", "chat.postMessage"}, func(_ *Config, o *appOptions) { o.Incidents = fakeIncidents{threads: threads} })
	e.triager.incident = &notify.Incident{ID: "3fa9c1d2e0a1", Verdict: playbooks.VerdictCapacityPastKnee}
	e.command(t, "triage meta-llama/Llama-3.1-8B", "U1")
	post := e.slack.WaitCalls(t, "chat.postMessage", 1, 10*time.Second)[0]
	if post.Form.Get("channel") != fakeslack.ChannelID || post.Form.Get("thread_ts") != "1700000000.000001" {
		t.Fatalf("the answer is not in the incident's thread: %v", post.Form)
	}
	if b := post.Form.Get("blocks"); !strings.Contains(b, "answered in the thread of incident `3fa9c1d2e0a1`: this scope's alerts are open here") || !strings.Contains(b, "Inconclusive") {
		t.Errorf("the answer in the thread does not say why it is there: %s", b)
	}
	raw := string(e.slack.WaitCalls(t, "response", 1, 10*time.Second)[0].Body)
	if !strings.Contains(raw, `"response_type":"ephemeral"`) || !strings.Contains(raw, "answered in the thread of incident `3fa9c1d2e0a1` in \\u003c#"+fakeslack.ChannelID+"\\u003e") {
		t.Errorf("the user is not told where the answer is: %s", raw)
	}

	e.triager.incident = &notify.Incident{ID: "0123456789ab", Verdict: playbooks.VerdictCapacityPastKnee}
	e.command(t, "triage meta-llama/Llama-3.1-8B", "U1")
	raw = string(e.slack.WaitCalls(t, "response", 2, 10*time.Second)[1].Body)
	if !strings.Contains(raw, `"response_type":"in_channel"`) || !strings.Contains(raw, "Inconclusive") {
		t.Errorf("an incident without a thread here: the answer is not on the response URL: %s", raw)
	}
	if n := len(e.slack.Calls("chat.postMessage")); n != 1 {
		t.Errorf("%d posts, want the first answer only", n)
	}
}

func TestStatusListsCapturesAndIncidents(t *testing.T) {
	e := newEnv(t, []string{"response"}, func(_ *Config, o *appOptions) { o.Incidents = fakeIncidents{} })
	e.command(t, "status", "U1")
	raw := string(e.slack.WaitCalls(t, "response", 1, 10*time.Second)[0].Body)
	for _, want := range []string{"vllm-0 by slack:alice (U1), 7s left", "VLLMKVCacheNearFull", "firing since Jun 1 11:50 UTC (2 alerts)"} {
		if !strings.Contains(raw, want) {
			t.Errorf("status lacks %q: %s", want, raw)
		}
	}
}

func (e *env) click(t *testing.T, action string, labels map[string]string, user string) {
	t.Helper()
	v, _ := encodeButtonValue(e.cfg.buttonKey(), action, buttonValue{Labels: labels})
	payload, _ := json.Marshal(map[string]any{
		"type":         "block_actions",
		"user":         map[string]any{"id": user, "name": "alice"},
		"channel":      map[string]any{"id": "C0INCIDENT"},
		"message":      map[string]any{"ts": "1700000000.000001"},
		"response_url": e.slack.ResponseURL("click"),
		"actions":      []map[string]any{{"action_id": action, "block_id": "b", "type": "button", "value": v}},
	})
	body := url.Values{"payload": {string(payload)}}.Encode()
	status, _ := e.post(t, "/slack/interactions", body, sign(signingSecret, time.Now(), body))
	if status != 200 {
		t.Fatalf("click status %d", status)
	}
}

var alertLabels = map[string]string{"alertname": "VLLMKVCacheNearFull", "pod": "vllm-0", "model_name": "m", "namespace": "inference"}

func TestSilenceButtonSilencesTheAlertsLabelsAndSaysWhoDidIt(t *testing.T) {
	e := newEnv(t, []string{"chat.postMessage"})
	e.click(t, actionSilence, alertLabels, "U1")
	post := e.slack.WaitCalls(t, "chat.postMessage", 1, 10*time.Second)[0]
	if post.Form.Get("thread_ts") != "1700000000.000001" || !strings.Contains(post.Form.Get("text"), "<@U1> silenced `VLLMKVCacheNearFull` for 1h0m0s") {
		t.Errorf("reply %v", post.Form)
	}
	s := e.silencer.got[0]
	if len(s.Matchers) != 4 || s.CreatedBy != "slack:alice (U1)" || s.EndsAt.Sub(s.StartsAt) != time.Hour {
		t.Errorf("silence %+v", s)
	}
}

func TestSilenceRefusalIsEphemeralAndSaysWhy(t *testing.T) {
	e := newEnv(t, []string{"chat.postEphemeral"}, func(c *Config, _ *appOptions) {
		c.AllowedChannels = []string{"C0OPS"}
	})
	e.click(t, actionSilence, alertLabels, "U1")
	c := e.slack.WaitCalls(t, "chat.postEphemeral", 1, 10*time.Second)[0]
	if c.Form.Get("user") != "U1" || !strings.Contains(c.Form.Get("text"), "You may not silence alerts: this is limited to certain channels: <#C0OPS>") {
		t.Errorf("ephemeral %v", c.Form)
	}
	if len(e.silencer.got) != 0 {
		t.Error("refused silence was created")
	}
}

func TestCaptureButtonWithoutACapturerSaysSo(t *testing.T) {
	e := newEnv(t, []string{"chat.postEphemeral"}, func(_ *Config, o *appOptions) { o.Capturer = nil })
	e.click(t, actionCapture, alertLabels, "U1")
	c := e.slack.WaitCalls(t, "chat.postEphemeral", 1, 10*time.Second)[0]
	if !strings.Contains(c.Form.Get("text"), "not configured") {
		t.Errorf("ephemeral %v", c.Form)
	}
}

func TestCaptureButtonStartsACaptureAndPostsTheReportInTheThread(t *testing.T) {
	e := newEnv(t, []string{"chat.postMessage"})
	e.click(t, actionCapture, alertLabels, "U1")
	posts := e.slack.WaitCalls(t, "chat.postMessage", 2, 10*time.Second)
	all := posts[0].Form.Get("text") + posts[1].Form.Get("text")
	if !strings.Contains(all, "started a profile capture of pod `vllm-0`") || !strings.Contains(all, "/profiles/vllm-0.pt.trace.json.gz") ||
		!strings.Contains(all, "Cost: pod vllm-0 stops serving") {
		t.Errorf("posts %q", all)
	}
}

func TestRerunButtonRunsTheAlertsPlaybookAndRepliesInTheThread(t *testing.T) {
	e := newEnv(t, []string{"chat.postMessage"})
	e.click(t, actionRerun, alertLabels, "U1")
	post := e.slack.WaitCalls(t, "chat.postMessage", 1, 10*time.Second)[0]
	if post.Form.Get("thread_ts") != "1700000000.000001" || !strings.Contains(unesc([]byte(post.Form.Get("blocks"))), "Triage re-run by <@U1>") {
		t.Errorf("reply %v", post.Form)
	}
	if e.triager.labels[0]["alertname"] != "VLLMKVCacheNearFull" {
		t.Errorf("triager got %v", e.triager.labels[0])
	}
}

// unesc undoes encoding/json's HTML escaping, to compare with what Slack shows.
func unesc(b []byte) string {
	return strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(b))
}
