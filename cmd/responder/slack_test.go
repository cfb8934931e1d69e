package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/notify/slack/fakeslack"
)

// TestServeWithSlackPostsTheDiagnosisToSlack checks the wiring of `serve`: with a bot token the
// diagnosis goes to Slack (a local recording server; Slack itself is unreachable), not the console.
func TestServeWithSlackPostsTheDiagnosisToSlack(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var posts []string
	slackSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/chat.postMessage"):
			mu.Lock()
			posts = append(posts, string(b))
			mu.Unlock()
			_, _ = w.Write([]byte(`{"ok":true,"channel":"C1","ts":"1700000000.000100"}`))
		case strings.HasSuffix(r.URL.Path, "/files.getUploadURLExternal"), strings.HasSuffix(r.URL.Path, "/files.completeUploadExternal"):
			// Chart uploads are allowed (and may fail): they never block the post.
			_, _ = w.Write([]byte(`{"ok":false,"error":"not_in_this_test"}`))
		default:
			t.Errorf("unexpected Slack call %s", r.URL.Path)
			_, _ = w.Write([]byte(`{"ok":false,"error":"unexpected"}`))
		}
	}))
	defer slackSrv.Close()

	prom := startRecordedPrometheus(t)
	url, out := startResponder(t, prom.URL, `slack: {bot_token: xoxb-test, signing_secret: s, channel: C0VLLM, api_url: "`+slackSrv.URL+`/", charts: false}
`)
	body := `{"version":"4","groupKey":"g","status":"firing","receiver":"r","groupLabels":{},"commonLabels":{"alertname":"VLLMKVCacheNearFull"},"commonAnnotations":{},"externalURL":"http://am",
"alerts":[{"status":"firing","labels":{"alertname":"VLLMKVCacheNearFull","pod":"vllm-kv","namespace":"llm","model_name":"llama"},"annotations":{},"startsAt":"2026-11-29T10:00:00Z","endsAt":"0001-01-01T00:00:00Z","generatorURL":"http://prom","fingerprint":"f1"}]}`
	r, err := http.Post(url+"/alertmanager", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	testenv.WaitFor(t, 30*time.Second, "a chat.postMessage", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(posts) > 0
	})
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(posts[0], "kv-preemption") && !strings.Contains(posts[0], "KV preemption") {
		t.Fatalf("the Slack post does not carry the diagnosis: %s", posts[0])
	}
	if strings.Contains(out.String(), "verdict:") {
		t.Fatal("with Slack configured the console notifier must not be used")
	}
}

// TestTheChartIsRenderedFromARealPrometheusAndUploadedIntoTheThread: the TTFT playbook's chart
// (TTFT p99 and queue depth over the last hour) comes from range queries against a real
// Prometheus and lands in the diagnosis' thread as a PNG.
func TestTheChartIsRenderedFromARealPrometheusAndUploadedIntoTheThread(t *testing.T) {
	t.Parallel()
	fs := fakeslack.New(t, "chat.postMessage", "files.getUploadURLExternal", "upload", "files.completeUploadExternal")
	prom := startRecordedPrometheus(t)
	url, _ := startResponder(t, prom.URL, `slack: {bot_token: xoxb-test, channel: C0INCIDENT, api_url: "`+fs.APIURL()+`", charts: true}
`)
	body := `{"version":"4","groupKey":"g-chart","status":"firing","receiver":"r","groupLabels":{},"commonLabels":{"alertname":"VLLMTimeToFirstTokenP99High"},"commonAnnotations":{},"externalURL":"http://am",
"alerts":[{"status":"firing","labels":{"alertname":"VLLMTimeToFirstTokenP99High","pod":"vllm-capacity","namespace":"llm","model_name":"llama"},"annotations":{},"startsAt":"` +
		time.Now().Add(-5*time.Minute).UTC().Format(time.RFC3339) + `","endsAt":"0001-01-01T00:00:00Z","generatorURL":"http://prom","fingerprint":"c1"}]}`
	r, err := http.Post(url+"/alertmanager", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	uploads := fs.WaitCalls(t, "upload", 1, 60*time.Second)
	if !bytes.Contains(uploads[0].Body, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("the upload is not a PNG (%d bytes)", len(uploads[0].Body))
	}
	done := fs.WaitCalls(t, "files.completeUploadExternal", 1, 30*time.Second)
	if ts := done[0].Form.Get("thread_ts"); ts == "" {
		t.Fatalf("the chart was not posted into the diagnosis' thread: %v", done[0].Form)
	}
	if posts := fs.Calls("chat.postMessage"); len(posts) != 1 {
		t.Fatalf("want one parent post, got %d", len(posts))
	}
}
