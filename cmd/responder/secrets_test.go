package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/notify/slack/fakeslack"
)

// No secret appears in the logs (at debug level), in HTTP answers, on the console or in what is
// posted to Slack, while the paths that log errors are exercised: bad webhook credentials, forged
// Slack requests, Prometheus unreachable, Redis down.
func TestNoSecretAppearsInLogsOrAnswers(t *testing.T) {
	t.Parallel()
	const (
		webhookToken  = "whk-SECRET-7f3a9c"
		botToken      = "xoxb-SECRET-4411"
		signingSecret = "sgn-SECRET-c0ffee"
		redisPassword = "rds-SECRET-beef"
		promToken     = "prm-SECRET-bearer"
		promPassword  = "prm-SECRET-basic"
		hookPathToken = "hook-SECRET-path"
		hookQuery     = "hook-SECRET-query"
	)
	secrets := []string{webhookToken, botToken, signingSecret, redisPassword, promToken, promPassword, hookPathToken, hookQuery}

	// An incident tool's webhook URL with its token in the path and the query string.
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(hook.Close)
	hookURL := hook.URL + "/hooks/" + hookPathToken + "?token=" + hookQuery

	// A Redis that wants a password.
	rport := testenv.FreePort(t)
	raddr := "127.0.0.1:" + strconv.Itoa(rport)
	redis := testenv.Start(t, "redis-server", testenv.Binary(t, "redis-server"), "--port", strconv.Itoa(rport), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir(), "--requirepass", redisPassword)

	slack := fakeslack.New(t, "chat.postMessage")
	// Prometheus is unreachable: nothing listens there. Its URL carries a password and a token.
	promURL := fmt.Sprintf("http://reader:%s@127.0.0.1:%d", promPassword, testenv.FreePort(t))
	var logs syncBuf
	u, out, stop := serveWith(t, fmt.Sprintf(`prometheus: {url: %q, bearer_token: %q, query_timeout: 2s}
log: {level: debug}
webhook: {bearer_token: %q}
slack: {bot_token: %q, signing_secret: %q, channel: C0INCIDENT, api_url: %q, charts: false}
redis: {url: "redis://:%s@%s/0"}
outbound_webhooks: [{name: tool, url: %q, secret: "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD8n4CJ7M8Ig4="}]
`, promURL, promToken, webhookToken, botToken, signingSecret, slack.APIURL(), redisPassword, raddr, hookURL), &logs)

	var answers strings.Builder
	record := func(what string, a hookAnswer) {
		fmt.Fprintf(&answers, "%s: %d %v %s %s\n", what, a.Status, a.Err, a.RetryAfter, a.Body)
	}
	get := func(path string) int {
		r, err := http.Get(u + path)
		if err != nil {
			fmt.Fprintf(&answers, "GET %s: %v\n", path, err)
			return 0
		}
		defer r.Body.Close()
		var b strings.Builder
		_, _ = fmt.Fprint(&b, r.Header)
		buf := make([]byte, 1<<16)
		n, _ := r.Body.Read(buf)
		fmt.Fprintf(&answers, "GET %s: %d %s %s\n", path, r.StatusCode, b.String(), buf[:n])
		return r.StatusCode
	}
	testenv.WaitFor(t, 10*time.Second, "ready with Redis up", func() bool { return get("/readyz") == 200 })

	// Bad credentials on the webhook.
	body := webhook("g1", "VLLMKVCacheNearFull", "vllm-kv", "f1")
	for _, h := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", "Basic " + "d3Jvbmc6d3Jvbmc="}} {
		a := postHook(u, body, h...)
		if a.Status != http.StatusUnauthorized {
			t.Errorf("webhook with %v: %d, want 401", h, a.Status)
		}
		record("webhook bad auth", a)
	}
	// Forged Slack requests.
	for _, path := range []string{"/slack/commands", "/slack/interactions"} {
		req, _ := http.NewRequest(http.MethodPost, u+path, strings.NewReader(url.Values{"text": {"triage"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(time.Now().Unix(), 10))
		req.Header.Set("X-Slack-Signature", "v0=00")
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4096)
		n, _ := r.Body.Read(buf)
		r.Body.Close()
		fmt.Fprintf(&answers, "POST %s forged: %d %s\n", path, r.StatusCode, buf[:n])
		if r.StatusCode != http.StatusUnauthorized {
			t.Errorf("forged %s: %d, want 401", path, r.StatusCode)
		}
	}
	// A good webhook while Prometheus is unreachable: the diagnosis says so, in Slack.
	a := postHook(u, body, "Authorization", "Bearer "+webhookToken)
	record("webhook", a)
	mustAccept(t, a, 1, 0)
	posts := slack.WaitCalls(t, "chat.postMessage", 1, 30*time.Second)
	if !strings.Contains(string(posts[0].Body), "unreachable") && !strings.Contains(string(posts[0].Body), "could+not+be+reached") {
		t.Errorf("the Slack post does not say Prometheus is unreachable: %s", posts[0].Body)
	}
	get("/readyz")
	get("/metrics")

	// Redis down: readiness reports the store degraded and says why; a webhook is still accepted and posted to Slack
	// (without thread state: a new message rather than a lost diagnosis).
	redis.Stop()
	testenv.WaitFor(t, 10*time.Second, "/readyz to report the store degraded", func() bool {
		return get("/readyz") == 200 && strings.Contains(answers.String(), "store: degraded")
	})
	a = postHook(u, webhook("g2", "VLLMKVCacheNearFull", "vllm-kv", "f2"), "Authorization", "Bearer "+webhookToken)
	record("webhook redis down", a)
	slack.WaitCalls(t, "chat.postMessage", 2, 30*time.Second)
	if err := stop(); err != nil {
		fmt.Fprintf(&answers, "serve: %v\n", err)
	}

	if !strings.Contains(logs.String(), `"level":"debug"`) {
		t.Fatal("no debug lines were logged: the test does not see what it should")
	}
	var slackBodies strings.Builder
	for _, c := range slack.Calls("") {
		slackBodies.Write(c.Body)
		slackBodies.WriteByte('\n')
	}
	for where, text := range map[string]string{"logs": logs.String(), "HTTP answers": answers.String(), "console": out.String(), "Slack posts": slackBodies.String()} {
		for _, s := range secrets {
			if where == "Slack posts" && s == botToken {
				continue // the bot token is how slack-go authenticates to Slack
			}
			if strings.Contains(text, s) {
				i := strings.Index(text, s)
				t.Errorf("%s contain the secret %q: ...%s...", where, s, text[max(0, i-200):min(len(text), i+100)])
			}
		}
	}
}
