package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/vllm-responder/vllm-responder/dispatch"
	"github.com/vllm-responder/vllm-responder/metrics"
)

// recorder is an Acceptor that remembers what it got, or refuses with err.
type recorder struct {
	mu   sync.Mutex
	msgs []*dispatch.Message
	err  error
}

func (r *recorder) Accept(_ context.Context, m *dispatch.Message, _ time.Time) (dispatch.Accepted, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return dispatch.Accepted{}, r.err
	}
	r.msgs = append(r.msgs, m)
	return dispatch.Accepted{New: len(m.Alerts)}, nil
}

const validPayload = `{"version":"4","groupKey":"{}:{alertname=\"VLLMTimeToFirstTokenP99High\"}","truncatedAlerts":0,
"status":"firing","receiver":"vllm-responder","groupLabels":{"alertname":"VLLMTimeToFirstTokenP99High"},
"commonLabels":{"alertname":"VLLMTimeToFirstTokenP99High"},"commonAnnotations":{},"externalURL":"http://am",
"alerts":[{"status":"firing","labels":{"alertname":"VLLMTimeToFirstTokenP99High","pod":"p\"}or vector(1)#","model_name":"m\\\n"},
"annotations":{},"startsAt":"2026-11-29T10:00:00Z","endsAt":"0001-01-01T00:00:00Z","generatorURL":"http://prom","fingerprint":"abc"}]}`

func TestWebhookAnswersByAlertmanagersRetryRules(t *testing.T) {
	big := `{"version":"4","status":"firing","alerts":[` + strings.Repeat(" ", 2<<20) + `]}`
	cases := []struct {
		name       string
		body       string
		auth       string
		acceptErr  error
		wantCode   int
		wantInBody string
	}{
		{name: "a valid payload is accepted", body: validPayload, wantCode: 200, wantInBody: `"accepted":1`},
		{name: "malformed JSON is a 400", body: `{"version":"4",`, wantCode: 400, wantInBody: "malformed JSON"},
		{name: "trailing garbage is a 400", body: validPayload + `}`, wantCode: 400, wantInBody: "malformed JSON"},
		{name: "a wrong version is a 400", body: strings.Replace(validPayload, `"version":"4"`, `"version":"3"`, 1), wantCode: 400, wantInBody: `unsupported webhook version`},
		{name: "a missing version is a 400", body: `{"status":"firing","alerts":[]}`, wantCode: 400, wantInBody: "missing"},
		{name: "no alerts is a 400", body: `{"version":"4","status":"firing","alerts":[]}`, wantCode: 400, wantInBody: "no alerts"},
		{name: "an alert without alertname is a 400", body: `{"version":"4","status":"firing","alerts":[{"labels":{"pod":"x"}}]}`, wantCode: 400, wantInBody: "alerts[0]: no alertname"},
		{name: "an oversize body is a 413", body: big, wantCode: 413, wantInBody: "larger than"},
		{name: "a full queue is a 503 with Retry-After", body: validPayload, acceptErr: dispatch.ErrQueueFull, wantCode: 503, wantInBody: "queue full"},
		{name: "shutting down is a 503", body: validPayload, acceptErr: dispatch.ErrShuttingDown, wantCode: 503, wantInBody: "shutting down"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{err: tc.acceptErr}
			h := &Webhook{Acceptor: rec, MaxBodyBytes: 1 << 20, Metrics: metrics.New(prometheus.NewRegistry()), Logger: zerolog.Nop()}
			req := httptest.NewRequest(http.MethodPost, "/alertmanager", strings.NewReader(tc.body))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != tc.wantCode {
				t.Fatalf("code %d, want %d: %s", w.Code, tc.wantCode, w.Body)
			}
			if !strings.Contains(w.Body.String(), tc.wantInBody) {
				t.Fatalf("body %s does not say %q", w.Body, tc.wantInBody)
			}
			if tc.wantCode == 503 && w.Header().Get("Retry-After") == "" {
				t.Fatal("503 without Retry-After")
			}
			if tc.wantCode >= 400 && tc.acceptErr == nil && len(rec.msgs) > 0 {
				t.Fatal("a refused payload reached the dispatcher")
			}
		})
	}
}

func TestWebhookKeepsHostileLabelValuesIntact(t *testing.T) {
	rec := &recorder{}
	h := &Webhook{Acceptor: rec, Logger: zerolog.Nop()}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/alertmanager", strings.NewReader(validPayload)))
	if w.Code != 200 {
		t.Fatal(w.Body)
	}
	a := rec.msgs[0].Alerts[0]
	if a.Labels["pod"] != `p"}or vector(1)#` || a.Labels["model_name"] != "m\\\n" || rec.msgs[0].GroupKey == "" {
		t.Fatalf("labels changed on the way in: %q", a.Labels)
	}
}

// Bodies are read into reused buffers: a message accepted (and queued, for a worker later) must
// hold copies, never bytes of a buffer the next request overwrites.
func TestAnAcceptedMessageKeepsItsValuesWhenTheNextBodyIsRead(t *testing.T) {
	rec := &recorder{}
	h := &Webhook{Acceptor: rec, Logger: zerolog.Nop()}
	other := strings.NewReplacer(`p\"}or vector(1)#`, `q\"}or vector(2)#`, "VLLMTimeToFirstTokenP99High", "VLLMTimeToFirstTokenP99Hugh", `"abc"`, `"xyz"`).Replace(validPayload)
	for _, body := range []string{validPayload, other, other} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/alertmanager", strings.NewReader(body)))
		if w.Code != 200 {
			t.Fatal(w.Body)
		}
	}
	first := rec.msgs[0]
	a := first.Alerts[0]
	if a.Labels["pod"] != `p"}or vector(1)#` || a.Labels["alertname"] != "VLLMTimeToFirstTokenP99High" || a.Fingerprint != "abc" ||
		first.GroupKey != `{}:{alertname="VLLMTimeToFirstTokenP99High"}` || first.CommonLabels["alertname"] != "VLLMTimeToFirstTokenP99High" {
		t.Fatalf("the first message changed when later bodies were read: %q %q %q", first.GroupKey, a.Labels, a.Fingerprint)
	}
	if rec.msgs[1].Alerts[0].Labels["pod"] != `q"}or vector(2)#` {
		t.Fatalf("the second body was not read: %q", rec.msgs[1].Alerts[0].Labels)
	}
}

func TestWebhookAuth(t *testing.T) {
	cases := []struct {
		name   string
		auth   WebhookAuth
		header func(*http.Request)
		want   int
	}{
		{"no auth configured lets requests in", WebhookAuth{}, func(*http.Request) {}, 200},
		{"the right bearer token is accepted", WebhookAuth{BearerToken: "s3cret"}, func(r *http.Request) { r.Header.Set("Authorization", "Bearer s3cret") }, 200},
		{"a wrong bearer token is refused", WebhookAuth{BearerToken: "s3cret"}, func(r *http.Request) { r.Header.Set("Authorization", "Bearer nope") }, 401},
		{"a missing bearer token is refused", WebhookAuth{BearerToken: "s3cret"}, func(*http.Request) {}, 401},
		{"basic auth with the right password is accepted", WebhookAuth{Username: "am", Password: "pw"}, func(r *http.Request) { r.SetBasicAuth("am", "pw") }, 200},
		{"basic auth with a wrong password is refused", WebhookAuth{Username: "am", Password: "pw"}, func(r *http.Request) { r.SetBasicAuth("am", "x") }, 401},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			h := &Webhook{Acceptor: rec, Auth: tc.auth, Logger: zerolog.Nop()}
			req := httptest.NewRequest(http.MethodPost, "/alertmanager", strings.NewReader(validPayload))
			tc.header(req)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != tc.want {
				t.Fatalf("code %d, want %d", w.Code, tc.want)
			}
			if strings.Contains(w.Body.String(), "s3cret") {
				t.Fatal("the answer echoes the token")
			}
		})
	}
}

func TestReadyzReportsRequiredAndOptionalChecks(t *testing.T) {
	mux := NewMux(Routes{Ready: []Check{
		{Name: "prometheus", Func: func(context.Context) error { return fmt.Errorf("down") }},
		{Name: "store", Required: true, Func: func(context.Context) error { return nil }},
	}})
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if w.Code != 200 || !strings.Contains(w.Body.String(), "prometheus: degraded: down") {
		t.Fatalf("optional check failing must not fail readiness: %d %s", w.Code, w.Body)
	}
	mux = NewMux(Routes{Ready: []Check{{Name: "store", Required: true, Func: func(context.Context) error { return fmt.Errorf("redis down") }}}})
	w = httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if w.Code != 503 {
		t.Fatalf("required check failing must fail readiness: %d", w.Code)
	}
	var v any
	_ = json.Unmarshal(nil, &v)
}

// One bad alert does not cost the others: the good alerts of the notification are accepted
// (Alertmanager never retries a 4xx), and the bad ones are reported in the answer and counted.
func TestBadAlertsAreRefusedOneByOneAndTheGoodOnesAccepted(t *testing.T) {
	body := `{"version":"4","groupKey":"g","status":"firing","alerts":[
{"status":"firing","labels":{"pod":"x"}},
{"status":"firing","labels":{"alertname":"VLLMKVCacheNearFull","pod":"a"}},
{"status":"exploded","labels":{"alertname":"VLLMKVCacheNearFull","pod":"b"}},
{"status":"resolved","labels":{"alertname":"VLLMKVCacheNearFull","pod":"c"}}]}`
	rec := &recorder{}
	m := metrics.New(prometheus.NewRegistry())
	h := &Webhook{Acceptor: rec, Metrics: m, Logger: zerolog.Nop()}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/alertmanager", strings.NewReader(body)))
	if w.Code != 200 {
		t.Fatalf("code %d: %s", w.Code, w.Body)
	}
	want := `{"status":"ok","accepted":2,"rejected":2,"problems":["alerts[0]: no alertname label","alerts[2]: status \"exploded\" is neither firing nor resolved"]}`
	if got := strings.TrimSpace(w.Body.String()); got != want {
		t.Fatalf("answer\n%s\nwant\n%s", got, want)
	}
	if len(rec.msgs) != 1 || len(rec.msgs[0].Alerts) != 2 || rec.msgs[0].Alerts[0].Labels["pod"] != "a" || rec.msgs[0].Alerts[1].Labels["pod"] != "c" {
		t.Fatalf("the dispatcher must get the two good alerts, got %+v", rec.msgs)
	}
	var c dto.Metric
	if err := m.AlertsReceived.WithLabelValues("invalid").Write(&c); err != nil || c.GetCounter().GetValue() != 2 {
		got := c.GetCounter().GetValue()
		t.Fatalf("invalid alerts counted %v, want 2", got)
	}
}

// An Acceptor's unexpected error is the responder's fault, not the payload's: 500 (Alertmanager
// retries it), counted as internal_error rather than bad_request, and logged with its cause.
func TestAnUnexpectedAcceptErrorIsA500CountedAndLogged(t *testing.T) {
	var logs strings.Builder
	m := metrics.New(prometheus.NewRegistry())
	h := &Webhook{Acceptor: &recorder{err: fmt.Errorf("store exploded")}, Metrics: m, Logger: zerolog.New(&logs)}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/alertmanager", strings.NewReader(validPayload)))
	if w.Code != http.StatusInternalServerError || !strings.Contains(w.Body.String(), `"error":"internal error"`) {
		t.Fatalf("code %d: %s", w.Code, w.Body)
	}
	for result, want := range map[string]float64{"internal_error": 1, "bad_request": 0} {
		var c dto.Metric
		if err := m.WebhookRequests.WithLabelValues(result).Write(&c); err != nil || c.GetCounter().GetValue() != want {
			t.Errorf("webhook requests {result=%q} = %v, want %v", result, c.GetCounter().GetValue(), want)
		}
	}
	var entry struct {
		Level    string `json:"level"`
		Error    string `json:"error"`
		GroupKey string `json:"group_key"`
	}
	if err := json.Unmarshal([]byte(logs.String()), &entry); err != nil {
		t.Fatalf("want one JSON log line, got %q: %v", logs.String(), err)
	}
	if entry.Level != "error" || entry.Error != "store exploded" || !strings.Contains(entry.GroupKey, "VLLMTimeToFirstTokenP99High") {
		t.Fatalf("log line %s", logs.String())
	}
}
