package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/notify/slack/fakeslack"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/triage"
)

// recording is a local peer that records each POST and answers with the next scripted status
// (then 2xx). verify, when set, refuses what it returns an error for (401).
type recording struct {
	mu      sync.Mutex
	srv     *httptest.Server
	script  []int
	bodies  [][]byte
	headers []http.Header
	verify  func(h http.Header, body []byte) error
}

func newRecording(t *testing.T, path string, script ...int) *recording {
	r := &recording{script: script}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.URL.Path != path {
			t.Errorf("unexpected request %s %s", req.Method, req.URL)
			http.NotFound(w, req)
			return
		}
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.verify != nil {
			if err := r.verify(req.Header, b); err != nil {
				t.Errorf("refused: %v", err)
				http.Error(w, err.Error(), http.StatusUnauthorized)
				return
			}
		}
		r.bodies, r.headers = append(r.bodies, b), append(r.headers, req.Header.Clone())
		status := http.StatusAccepted
		if len(r.script) > 0 {
			status, r.script = r.script[0], r.script[1:]
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *recording) posts() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.bodies...)
}

const testWebhookSecret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD8n4CJ7M8Ig4="

// verifyStandardWebhook checks a request as a receiver does, from the specification alone.
func verifyStandardWebhook(h http.Header, body []byte) error {
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(testWebhookSecret, "whsec_"))
	m := hmac.New(sha256.New, key)
	m.Write([]byte(h.Get("webhook-id") + "." + h.Get("webhook-timestamp") + "." + string(body)))
	want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	if !hmac.Equal([]byte(h.Get("webhook-signature")), []byte(want)) {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// TestSlackTeamsAndASignedWebhookEachGetOnePostPerGroupState wires all three notifiers into
// `serve`: a diagnosis reaches each; Teams refusing the first post makes the notification fail
// (dispatch drops its claims), and Alertmanager's re-send then reaches Teams alone, not Slack
// or the webhook again. The webhook's diagnosis is exactly the triage JSON's.
func TestSlackTeamsAndASignedWebhookEachGetOnePostPerGroupState(t *testing.T) {
	t.Parallel()
	fs := fakeslack.New(t, "chat.postMessage")
	teams := newRecording(t, "/workflows/1/triggers/manual/paths/invoke", http.StatusBadRequest)
	hook := newRecording(t, "/hooks/vllm")
	hook.verify = verifyStandardWebhook
	prom := startRecordedPrometheus(t)
	url, out := startResponder(t, prom.URL, `slack: {bot_token: xoxb-test, channel: C0INCIDENT, api_url: "`+fs.APIURL()+`", charts: false}
teams: {webhook_url: "`+teams.srv.URL+`/workflows/1/triggers/manual/paths/invoke?sig=abc"}
outbound_webhooks:
  - {name: incident-tool, url: "`+hook.srv.URL+`/hooks/vllm", secret: "`+testWebhookSecret+`"}
`)
	body := `{"version":"4","groupKey":"g-three","status":"firing","receiver":"r","groupLabels":{},"commonLabels":{"alertname":"VLLMKVCacheNearFull"},"commonAnnotations":{},"externalURL":"http://am",
"alerts":[{"status":"firing","labels":{"alertname":"VLLMKVCacheNearFull","pod":"vllm-kv","namespace":"llm","model_name":"llama"},"annotations":{},"startsAt":"2026-11-29T10:00:00Z","endsAt":"0001-01-01T00:00:00Z","generatorURL":"http://prom","fingerprint":"f1"}]}`
	send := func() {
		r, err := http.Post(url+"/alertmanager", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
	}
	send()
	fs.WaitCalls(t, "chat.postMessage", 1, 30*time.Second)
	testenv.WaitFor(t, 30*time.Second, "the webhook delivery and Teams' refusal", func() bool {
		return len(hook.posts()) == 1 && len(teams.posts()) == 1
	})
	testenv.WaitFor(t, 30*time.Second, "the failed notification counted", func() bool {
		return metricValue(t, url, `vllm_responder_notifier_deliveries_total{notifier="teams",outcome="failed"}`) == "1"
	})
	// Alertmanager re-sends the group (repeat_interval): the claims were dropped, so it is
	// diagnosed again; only Teams, which failed, gets it.
	send()
	testenv.WaitFor(t, 30*time.Second, "the Teams post of the re-send", func() bool { return len(teams.posts()) == 2 })
	testenv.WaitFor(t, 30*time.Second, "slack and the webhook skipped as already delivered", func() bool {
		return metricValue(t, url, `vllm_responder_notifier_deliveries_total{notifier="slack",outcome="already_delivered"}`) == "1" &&
			metricValue(t, url, `vllm_responder_notifier_deliveries_total{notifier="webhook/incident-tool",outcome="already_delivered"}`) == "1"
	})
	if n := len(fs.Calls("chat.postMessage")); n != 1 {
		t.Errorf("%d Slack posts, want 1", n)
	}
	if n := len(hook.posts()); n != 1 {
		t.Errorf("%d webhook deliveries, want 1", n)
	}
	if !bytes.Contains(teams.posts()[1], []byte(`"contentType":"application/vnd.microsoft.card.adaptive"`)) ||
		!bytes.Contains(teams.posts()[1], []byte("FIRING: VLLMKVCacheNearFull")) {
		t.Errorf("the Teams post is not the firing card: %.300s", teams.posts()[1])
	}
	if strings.Contains(out.String(), "verdict:") {
		t.Error("with notifiers configured the console must not be used")
	}

	// The webhook's diagnosis is the one encoder's JSON: decoded and encoded again by it, it
	// is the same bytes.
	var p struct {
		Data struct {
			Diagnoses []json.RawMessage `json:"diagnoses"`
		} `json:"data"`
	}
	if err := json.Unmarshal(hook.posts()[0], &p); err != nil || len(p.Data.Diagnoses) != 1 {
		t.Fatalf("webhook body: %v %s", err, hook.posts()[0])
	}
	var d playbooks.Diagnosis
	if err := json.Unmarshal(p.Data.Diagnoses[0], &d); err != nil {
		t.Fatal(err)
	}
	again, err := triage.Encode(&d)
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, again)
	if compact.String() != string(p.Data.Diagnoses[0]) {
		t.Errorf("the webhook's diagnosis is not `triage --output json`'s:\n%s\n%s", p.Data.Diagnoses[0], compact.String())
	}
	for _, key := range []string{`"playbook":`, `"verdict":`, `"title":`, `"summary":`, `"actions":`, `"evidence":`} {
		if !bytes.Contains(p.Data.Diagnoses[0], []byte(key)) {
			t.Errorf("the diagnosis lacks %s", key)
		}
	}
}
