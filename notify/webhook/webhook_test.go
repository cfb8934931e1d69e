package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/alertmanager/template"
	"github.com/rs/zerolog"
	"gopkg.in/yaml.v3"

	"github.com/vllm-responder/vllm-responder/internal/secret"
	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

// testSecret is 32 random bytes in the spec's form.
const testSecret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD8n4CJ7M8Ig4="

// TestTheSignatureIsStandardWebhooks checks Sign against the example of the Standard Webhooks
// specification (its reference libraries' test vector), computed by none of this code.
func TestTheSignatureIsStandardWebhooks(t *testing.T) {
	key, err := Key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	got := Sign(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Errorf("Sign = %s, want the spec's %s", got, want)
	}
}

// receiver is an incident tool's endpoint: it verifies every request from the specification
// alone (not with this package's code), refuses a timestamp outside the replay window and an id
// it already accepted, and answers the scripted statuses before accepting.
type receiver struct {
	t        *testing.T
	srv      *httptest.Server
	key      []byte
	mu       sync.Mutex
	now      time.Time
	script   []int
	seen     map[string]bool
	accepted []*http.Request
	bodies   [][]byte
	refused  []string
	ids      []string
}

func newReceiver(t *testing.T, script ...int) *receiver {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(testSecret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{t: t, key: key, now: time.Now(), script: script, seen: map[string]bool{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/hooks/vllm" {
		r.t.Errorf("unexpected request %s %s", req.Method, req.URL)
		http.NotFound(w, req)
		return
	}
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	refuse := func(status int, why string) {
		r.refused = append(r.refused, why)
		http.Error(w, why, status)
	}
	id, tsText, sigs := req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp"), req.Header.Get("webhook-signature")
	r.ids = append(r.ids, id)
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if id == "" || err != nil {
		refuse(http.StatusBadRequest, "missing headers")
		return
	}
	if d := r.now.Sub(time.Unix(ts, 0)); d > 5*time.Minute || d < -5*time.Minute {
		refuse(http.StatusBadRequest, "stale timestamp")
		return
	}
	mac := hmac.New(sha256.New, r.key)
	mac.Write([]byte(id + "." + tsText + "." + string(body)))
	want := mac.Sum(nil)
	valid := false
	for _, s := range strings.Fields(sigs) {
		v, b64, _ := strings.Cut(s, ",")
		got, err := base64.StdEncoding.DecodeString(b64)
		if v == "v1" && err == nil && hmac.Equal(got, want) {
			valid = true
		}
	}
	if !valid {
		refuse(http.StatusUnauthorized, "bad signature")
		return
	}
	if r.seen[id] {
		refuse(http.StatusConflict, "replayed id")
		return
	}
	if len(r.script) > 0 {
		status := r.script[0]
		r.script = r.script[1:]
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
		http.Error(w, "scripted", status)
		return
	}
	r.seen[id] = true
	r.accepted = append(r.accepted, req.Clone(context.Background()))
	r.bodies = append(r.bodies, body)
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) url() string { return r.srv.URL + "/hooks/vllm" }

// encodeForTest stands in for cmd/responder's triage encoder (the one contract of
// `responder triage --output json`, wired and checked in cmd/responder): here only the shape of
// the envelope around it is under test.
func encodeForTest(d *playbooks.Diagnosis) ([]byte, error) { return json.Marshal(d) }

func newNotifier(t *testing.T, url string) *Notifier {
	t.Helper()
	var c Config
	if err := c.UnmarshalYAML(mustNode(t, "name: incident-tool\nurl: "+url+"\nsecret: "+testSecret+"\n")); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	n, err := New(&c, encodeForTest, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func retrying(n *Notifier) *notify.Retrying {
	p := n.cfg.RetryPolicy()
	p.Backoff = time.Millisecond
	return &notify.Retrying{Notifier: n, Policy: p, Logger: zerolog.Nop()}
}

var startTS = time.Date(2025, 6, 1, 11, 50, 0, 0, time.UTC)

func notification(items ...notify.Item) *notify.Notification {
	return &notify.Notification{GroupKey: `{}:{alertname="VLLMKVCacheNearFull"}`, Status: notify.StatusFiring, Receiver: "vllm-responder",
		ExternalURL: "http://alertmanager.example", GroupLabels: map[string]string{"alertname": "VLLMKVCacheNearFull"},
		CommonLabels: map[string]string{"alertname": "VLLMKVCacheNearFull"}, Items: items, Source: notify.SourceAlertmanager,
		ReceivedAt: startTS.Add(time.Minute)}
}

func alert(pod, status string) template.Alert {
	return template.Alert{Status: status, Labels: map[string]string{"alertname": "VLLMKVCacheNearFull", "pod": pod, "model_name": "m"},
		StartsAt: startTS, Fingerprint: "fp-" + pod, GeneratorURL: "http://prometheus.example/graph"}
}

func diag(v string) *playbooks.Diagnosis {
	x := 0.97
	return &playbooks.Diagnosis{Playbook: "kv-cache-near-full", Verdict: v, Title: "KV pressure", Summary: "KV cache 97% full",
		Evidence: []playbooks.Evidence{{Name: "kv_usage", Value: &x, Text: "97%", Query: "max(vllm:kv_cache_usage_perc)"}}, EvaluatedAt: startTS}
}

func TestADeliveryIsSignedAndCarriesTheGroupAndItsDiagnoses(t *testing.T) {
	rcv := newReceiver(t)
	shared := diag(playbooks.VerdictKVPressure)
	n := notification(notify.Item{Alert: alert("vllm-0", "firing"), Diagnosis: shared}, notify.Item{Alert: alert("vllm-1", "firing"), Diagnosis: shared},
		notify.Item{Alert: alert("vllm-2", "firing"), Unmatched: true})
	if _, err := retrying(newNotifier(t, rcv.url())).Notify(context.Background(), n); err != nil {
		t.Fatalf("%v (refused: %v)", err, rcv.refused)
	}
	if len(rcv.bodies) != 1 || len(rcv.refused) != 0 {
		t.Fatalf("accepted %d, refused %v", len(rcv.bodies), rcv.refused)
	}
	var p struct {
		Type      string `json:"type"`
		Timestamp string `json:"timestamp"`
		Data      struct {
			Group struct {
				Status   string `json:"status"`
				GroupKey string `json:"groupKey"`
				Alerts   []struct {
					Status      string            `json:"status"`
					Labels      map[string]string `json:"labels"`
					StartsAt    time.Time         `json:"startsAt"`
					Fingerprint string            `json:"fingerprint"`
					Diagnosis   *int              `json:"diagnosis"`
					Unmatched   bool              `json:"unmatched"`
				} `json:"alerts"`
			} `json:"group"`
			Diagnoses []json.RawMessage `json:"diagnoses"`
		} `json:"data"`
	}
	if err := json.Unmarshal(rcv.bodies[0], &p); err != nil {
		t.Fatal(err)
	}
	g := p.Data.Group
	if p.Type != TypeFiring || g.Status != "firing" || g.GroupKey != n.GroupKey || len(g.Alerts) != 3 || len(p.Data.Diagnoses) != 1 {
		t.Fatalf("payload %s", rcv.bodies[0])
	}
	for i, a := range g.Alerts[:2] {
		if a.Diagnosis == nil || *a.Diagnosis != 0 || a.Fingerprint != "fp-vllm-"+strconv.Itoa(i) || !a.StartsAt.Equal(startTS) || a.Labels["pod"] != "vllm-"+strconv.Itoa(i) {
			t.Errorf("alert %d: %+v", i, a)
		}
	}
	if a := g.Alerts[2]; a.Diagnosis != nil || !a.Unmatched {
		t.Errorf("the unmatched alert: %+v", a)
	}
	want, _ := encodeForTest(shared)
	var compact bytes.Buffer
	_ = json.Compact(&compact, want)
	if string(p.Data.Diagnoses[0]) != compact.String() {
		t.Errorf("diagnosis is not the encoder's output:\n%s\n%s", p.Data.Diagnoses[0], compact.String())
	}
	if got := rcv.accepted[0].Header.Get("webhook-id"); got != MessageID(n) || !strings.HasPrefix(got, "msg_") {
		t.Errorf("webhook-id %q", got)
	}
}

// The incident of a delivery's alerts goes with it as data.incident: id, key, opened, the
// incident's verdict and its members, each with its role; a delivery without one has none.
func TestADeliveryCarriesItsIncident(t *testing.T) {
	rcv := newReceiver(t)
	n := notification(notify.Item{Alert: alert("vllm-0", "firing"), Diagnosis: diag(playbooks.VerdictKVPressure)})
	n.Incident = &notify.Incident{ID: "3fa9c1d2e0a1", Key: map[string]string{"model_name": "m", "namespace": "llm"}, Opened: startTS, Started: startTS,
		Verdict: playbooks.VerdictCapacityPastKnee, Cause: notify.Cause{Alertname: "VLLMQueueDepthHigh", Title: "Capacity, past the knee"}, Seq: 2,
		Members: []notify.Member{
			{Fingerprint: "q-vllm-0", Alertname: "VLLMQueueDepthHigh", Pod: "vllm-0", Verdict: playbooks.VerdictCapacityPastKnee, Role: notify.RoleCause, Status: "firing", StartsAt: startTS, Joined: startTS},
			{Fingerprint: "fp-vllm-0", Alertname: "VLLMKVCacheNearFull", Pod: "vllm-0", Verdict: playbooks.VerdictKVPressure, Role: notify.RoleSymptom, Status: "firing", StartsAt: startTS, Joined: startTS},
		},
		Change: notify.IncidentChange{Joined: []string{"fp-vllm-0"}}}
	plain := notification(notify.Item{Alert: alert("vllm-1", "firing"), Diagnosis: diag(playbooks.VerdictKVPressure)})
	for _, nt := range []*notify.Notification{n, plain} {
		if _, err := retrying(newNotifier(t, rcv.url())).Notify(context.Background(), nt); err != nil {
			t.Fatal(err)
		}
	}
	var p struct {
		Data struct {
			Incident map[string]json.RawMessage `json:"incident"`
		} `json:"data"`
	}
	if err := json.Unmarshal(rcv.bodies[0], &p); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"id": `"3fa9c1d2e0a1"`, "key": `{"model_name":"m","namespace":"llm"}`, "opened": `"2025-06-01T11:50:00Z"`, "verdict": `"capacity-past-knee"`,
		"change": `{"joined":["fp-vllm-0"]}`,
	} {
		if got := string(p.Data.Incident[key]); got != want {
			t.Errorf("incident.%s = %s, want %s", key, got, want)
		}
	}
	if m := string(p.Data.Incident["members"]); !strings.Contains(m, `"alertname":"VLLMQueueDepthHigh","pod":"vllm-0","verdict":"capacity-past-knee","role":"cause"`) ||
		!strings.Contains(m, `"role":"symptom"`) {
		t.Errorf("members %s", m)
	}
	if strings.Contains(string(rcv.bodies[1]), `"incident"`) {
		t.Errorf("a delivery without an incident names one: %s", rcv.bodies[1])
	}
}

func TestAResolutionIsItsOwnType(t *testing.T) {
	rcv := newReceiver(t)
	n := notification(notify.Item{Alert: alert("vllm-0", "resolved")})
	n.Status = notify.StatusResolved
	if _, err := retrying(newNotifier(t, rcv.url())).Notify(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rcv.bodies[0]), `"type":"diagnosis.resolved"`) || !strings.Contains(string(rcv.bodies[0]), `"diagnosis":null`) {
		t.Errorf("body %s", rcv.bodies[0])
	}
}

func TestTheReceiverRefusesReplaysAndForgeries(t *testing.T) {
	rcv := newReceiver(t)
	if _, err := retrying(newNotifier(t, rcv.url())).Notify(context.Background(), notification(notify.Item{Alert: alert("vllm-0", "firing"), Diagnosis: diag("kv-pressure")})); err != nil {
		t.Fatal(err)
	}
	orig, body := rcv.accepted[0], rcv.bodies[0]
	send := func(mutate func(h http.Header, b []byte) []byte) int {
		h := orig.Header.Clone()
		b := mutate(h, bytes.Clone(body))
		req, _ := http.NewRequest(http.MethodPost, rcv.url(), bytes.NewReader(b))
		req.Header = h
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := send(func(http.Header, []byte) []byte { return body }); got != http.StatusConflict {
		t.Errorf("the same request again (within the window): %d, want 409", got)
	}
	if got := send(func(_ http.Header, b []byte) []byte { return bytes.Replace(b, []byte("97%"), []byte("10%"), 1) }); got != http.StatusUnauthorized {
		t.Errorf("a tampered body: %d, want 401", got)
	}
	if got := send(func(h http.Header, b []byte) []byte { h.Set("webhook-id", "msg_other"); return b }); got != http.StatusUnauthorized {
		t.Errorf("another id under the same signature: %d, want 401", got)
	}
	rcv.mu.Lock()
	rcv.now = rcv.now.Add(6 * time.Minute)
	delete(rcv.seen, orig.Header.Get("webhook-id")) // even a receiver that forgot the id
	rcv.mu.Unlock()
	if got := send(func(http.Header, []byte) []byte { return body }); got != http.StatusBadRequest {
		t.Errorf("the request six minutes later: %d, want 400 (outside the replay window)", got)
	}
}

func TestRateLimitsAndServerErrorsAreRetriedWithAFreshSignatureAndTheSameID(t *testing.T) {
	rcv := newReceiver(t, http.StatusTooManyRequests, http.StatusServiceUnavailable)
	n := notification(notify.Item{Alert: alert("vllm-0", "firing"), Diagnosis: diag("kv-pressure")})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := retrying(newNotifier(t, rcv.url())).Notify(ctx, n); err != nil {
		t.Fatal(err)
	}
	if len(rcv.ids) != 3 || len(rcv.accepted) != 1 || len(rcv.refused) != 0 {
		t.Fatalf("ids %v, accepted %d, refused %v", rcv.ids, len(rcv.accepted), rcv.refused)
	}
	for _, id := range rcv.ids {
		if id != MessageID(n) {
			t.Errorf("attempt id %s, want %s on every attempt", id, MessageID(n))
		}
	}
}

func TestAClientErrorIsNotRetried(t *testing.T) {
	rcv := newReceiver(t, http.StatusBadRequest)
	_, err := retrying(newNotifier(t, rcv.url())).Notify(context.Background(), notification(notify.Item{Alert: alert("vllm-0", "firing"), Diagnosis: diag("kv-pressure")}))
	if err == nil || len(rcv.ids) != 1 {
		t.Fatalf("err=%v after %d attempts, want one failed attempt", err, len(rcv.ids))
	}
}

func TestAWrongSecretIsRefusedByTheReceiver(t *testing.T) {
	rcv := newReceiver(t)
	n := newNotifier(t, rcv.url())
	n.key = bytes.Repeat([]byte{7}, 32)
	_, err := n.Notify(context.Background(), notification(notify.Item{Alert: alert("vllm-0", "firing"), Diagnosis: diag("kv-pressure")}))
	if err == nil || len(rcv.refused) != 1 || rcv.refused[0] != "bad signature" {
		t.Fatalf("err=%v refused=%v", err, rcv.refused)
	}
}

func TestConfigErrorsNameTheKeyAndNeverTheSecret(t *testing.T) {
	for _, tc := range []struct {
		yaml, want string
	}{
		{"name: Bad Name\nurl: https://x.example\nsecret: " + testSecret, `name: "Bad Name" must be 1 to 32`},
		{"name: a\nsecret: " + testSecret, "url: required"},
		{"name: a\nurl: ftp://x\nsecret: " + testSecret, "url: must be an http(s) URL"},
		{"name: a\nurl: https://x.example", "secret: required"},
		{"name: a\nurl: https://x.example\nsecret: hunter2-plaintext", "secret: must start with whsec_"},
		{"name: a\nurl: https://x.example\nsecret: whsec_aHVudGVyMg==", "secret: decodes to 7 bytes; want 24 to 64"},
		{"name: a\nurl: https://x.example\nsecret: whsec_!!notbase64", "secret: is not whsec_ followed by standard base64"},
		{"name: a\nurl: https://x.example\nsecret: " + testSecret + "\nmax_retries: 11", "max_retries: must be between 0 and 10"},
	} {
		var c Config
		if err := c.UnmarshalYAML(mustNode(t, tc.yaml)); err != nil {
			t.Fatal(err)
		}
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.yaml, err, tc.want)
			continue
		}
		for _, s := range []string{"hunter2", "aHVudGVyMg", "C2FVsBQ"} {
			if strings.Contains(err.Error(), s) {
				t.Errorf("%q: the error shows the secret: %v", tc.yaml, err)
			}
		}
	}
	var c Config
	if err := c.UnmarshalYAML(mustNode(t, "name: a\nurl: https://x.example\nsecret: "+testSecret)); err != nil {
		t.Fatal(err)
	}
	if c.RequestTimeout != 10*time.Second || c.MaxRetries != 3 || !c.HTTP.FollowRedirects {
		t.Errorf("a list entry did not get the delivery defaults: %+v", c.HTTPDelivery)
	}
	if s := secret.Secret(testSecret).String(); strings.Contains(s, "C2FV") {
		t.Errorf("the secret prints as %q", s)
	}
}

func mustNode(t *testing.T, s string) *yaml.Node {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(s), &n); err != nil {
		t.Fatal(err)
	}
	return n.Content[0]
}

// Issue 33.6: a redirect to another host is never followed with a signed body (the copy would
// verify with the receiver's secret, and could be replayed to it): the receiver elsewhere gets
// nothing, and the 3xx is a failure the retry loop does not retry, naming where it pointed. The
// hard negative: a redirect on the receiver's own origin is followed and delivered.
func TestARedirectToAnotherHostIsNeverFollowedWithTheSignedBody(t *testing.T) {
	elsewhere := newReceiver(t) // verifies with the same secret, as a copy would
	moved := httptest.NewServer(http.RedirectHandler(elsewhere.url(), http.StatusTemporaryRedirect))
	t.Cleanup(moved.Close)
	n := notification(notify.Item{Alert: alert("vllm-0", "firing"), Diagnosis: diag("kv-pressure")})
	_, err := retrying(newNotifier(t, moved.URL+"/hooks/vllm")).Notify(context.Background(), n)
	if err == nil || !strings.Contains(err.Error(), "HTTP 307: redirect to "+elsewhere.srv.URL+" not followed") {
		t.Errorf("err = %v; want the redirect refused, naming its host", err)
	}
	if len(elsewhere.ids) != 0 {
		t.Fatalf("the other host received %d signed copies", len(elsewhere.ids))
	}

	rcv := newReceiver(t)
	same := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/old" {
			http.Redirect(w, req, "/hooks/vllm", http.StatusPermanentRedirect)
			return
		}
		rcv.serve(w, req)
	}))
	t.Cleanup(same.Close)
	rcv.srv = same
	if _, err := retrying(newNotifier(t, same.URL+"/old")).Notify(context.Background(), n); err != nil || len(rcv.accepted) != 1 {
		t.Fatalf("a redirect on the same origin: err=%v, accepted %d; want it followed and delivered", err, len(rcv.accepted))
	}
}

// Only http(s) URLs go out as the group's or an alert's URL (issue 33.8, in every integration):
// a receiver that renders externalURL or generatorURL as a link is never handed a javascript:
// one; an http(s) URL goes as it is.
func TestOnlyHTTPURLsGoOutAsURLs(t *testing.T) {
	bad := alert("vllm-0", "firing")
	bad.GeneratorURL = "javascript:alert(1)"
	n := notification(notify.Item{Alert: bad, Diagnosis: diag(playbooks.VerdictKVPressure)}, notify.Item{Alert: alert("vllm-1", "firing"), Unmatched: true})
	n.ExternalURL = "javascript:alert(2)"
	body, err := Body(n, encodeForTest)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(body), "javascript:") {
		t.Errorf("a javascript: URL went out: %s", body)
	}
	if !strings.Contains(string(body), `"generatorURL":"http://prometheus.example/graph"`) || !strings.Contains(string(body), `"externalURL":""`) {
		t.Errorf("the http(s) URL should go as it is and the other as empty: %s", body)
	}
}
