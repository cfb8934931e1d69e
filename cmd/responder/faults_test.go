package main

// Fault injection with the real components: each test breaks one peer (Prometheus, Slack, Redis,
// the process itself, the work queue) and shows what the responder does about it. Every wait is
// on a condition, every test bounded.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/evidence"
	"github.com/vllm-responder/vllm-responder/facts/sources"
	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
	"github.com/vllm-responder/vllm-responder/notify/slack/fakeslack"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/sim"
)

// slowProm is a reverse proxy in front of a real Prometheus that holds back the queries whose
// text contains match (for delay, or until release is closed), and passes everything else.
type slowProm struct {
	URL     string
	match   string
	delay   time.Duration
	release chan struct{}
	held    atomic.Int32 // queries being held right now
	seen    atomic.Int32 // queries held so far
	mu      sync.Mutex
	passed  map[string]bool // queries passed through and answered
}

// answered is how many distinct queries passed through and were answered.
func (p *slowProm) answered() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.passed)
}

// answeredAbout counts the distinct requests answered whose PromQL contains sub, and the others.
func (p *slowProm) answeredAbout(sub string) (with, without int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for q := range p.passed {
		if strings.Contains(q, sub) {
			with++
		} else {
			without++
		}
	}
	return with, without
}

func startSlowProm(t *testing.T, target, match string, delay time.Duration) *slowProm {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &slowProm{match: match, delay: delay, release: make(chan struct{}), passed: map[string]bool{}}
	proxy := httputil.NewSingleHostReverseProxy(u)
	port := testenv.FreePort(t)
	srv := &http.Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if strings.Contains(r.URL.RawQuery+string(body), match) {
				p.seen.Add(1)
				p.held.Add(1)
				select {
				case <-time.After(p.delay):
				case <-p.release:
				case <-r.Context().Done():
				}
				p.held.Add(-1)
				proxy.ServeHTTP(w, r)
				return
			}
			proxy.ServeHTTP(w, r)
			if strings.HasSuffix(r.URL.Path, "/api/v1/query") {
				form, _ := url.ParseQuery(string(body))
				q := form.Get("query")
				if q == "" {
					q = r.URL.Query().Get("query")
				}
				p.mu.Lock()
				p.passed[q] = true
				p.mu.Unlock()
			}
		})}
	go func() { _ = srv.ListenAndServe() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	p.URL = srv.Addr
	p.URL = "http://" + p.URL
	testenv.WaitFor(t, 5*time.Second, "the delaying proxy", func() bool {
		r, err := http.Get(p.URL + "/-/ready")
		if err != nil {
			return false
		}
		r.Body.Close()
		return true
	})
	return p
}

// readyzSays reports whether /readyz answers 200 and its body contains want.
func readyzSays(u, want string) bool {
	r, err := http.Get(u + "/readyz")
	if err != nil {
		return false
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r.StatusCode == 200 && strings.Contains(string(b), want)
}

// webhook is one Alertmanager message with one firing alert.
func webhook(group, alertname, pod, fingerprint string) string {
	return fmt.Sprintf(`{"version":"4","groupKey":%q,"status":"firing","receiver":"r","groupLabels":{},"commonLabels":{"alertname":%q},"commonAnnotations":{},"externalURL":"http://am",
"alerts":[{"status":"firing","labels":{"alertname":%q,"pod":%q,"namespace":"llm","model_name":"llama"},"annotations":{},"startsAt":"2026-11-29T10:00:00Z","endsAt":"0001-01-01T00:00:00Z","generatorURL":"http://prom","fingerprint":%q}]}`,
		group, alertname, alertname, pod, fingerprint)
}

type hookAnswer struct {
	Status     int
	RetryAfter string
	Body       string
	Err        error
}

func postHook(url, body string, header ...string) hookAnswer {
	req, _ := http.NewRequest(http.MethodPost, url+"/alertmanager", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		return hookAnswer{Err: err}
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return hookAnswer{Status: r.StatusCode, RetryAfter: r.Header.Get("Retry-After"), Body: string(b)}
}

func mustAccept(t *testing.T, a hookAnswer, wantAccepted, wantDup int) {
	t.Helper()
	if a.Err != nil || a.Status != 200 {
		t.Fatalf("webhook answer %d %v %s, want 200", a.Status, a.Err, a.Body)
	}
	var got webhookBody
	_ = json.Unmarshal([]byte(a.Body), &got)
	if got.Accepted != wantAccepted || got.Duplicates != wantDup {
		t.Fatalf("webhook answer %s: want accepted %d, duplicates %d", a.Body, wantAccepted, wantDup)
	}
}

type webhookBody struct {
	Status     string `json:"status"`
	Accepted   int    `json:"accepted"`
	Duplicates int    `json:"duplicates"`
	Error      string `json:"error"`
}

// Prometheus stops while a diagnosis is gathering evidence: the diagnosis is still written, says
// which queries could not reach Prometheus and lists what is missing; once it is gone for good,
// the next diagnosis says Prometheus is unreachable instead of guessing a verdict.
func TestPrometheusStoppedMidRunStillYieldsADiagnosisThatSaysWhatIsMissing(t *testing.T) {
	t.Parallel()
	prom := startRecordedPrometheus(t)
	proxy := startSlowProm(t, prom.URL, "histogram_quantile", 30*time.Second)
	url, out, _ := serveWith(t, fmt.Sprintf("prometheus: {url: %q, query_timeout: 20s}\nlog: {level: error}\n", proxy.URL), nil)

	// The queries of the playbook this alert runs: the quantile ones are held, the others must
	// all have been answered before Prometheus stops, or there is no partial evidence to show.
	held, passed := splitQueries(t, map[string]string{"alertname": "VLLMTimeToFirstTokenP99High", "pod": "vllm-capacity",
		"namespace": "llm", "model_name": "llama"}, "histogram_quantile")
	mustAccept(t, postHook(url, webhook("g1", "VLLMTimeToFirstTokenP99High", "vllm-capacity", "f1")), 1, 0)
	testenv.WaitFor(t, 60*time.Second, "every quantile query held and every other query answered", func() bool {
		// (kube-state-metrics is read after the judgement, only when a rule on the way reads it)
		return int(proxy.held.Load()) == held && proxy.answered() == passed
	})
	prom.Stop()
	close(proxy.release) // the held queries now reach a Prometheus that is gone
	testenv.WaitFor(t, 30*time.Second, "the degraded diagnosis", func() bool { return strings.Contains(out.String(), "verdict:") })
	got := out.String()
	for _, want := range []string{"could not reach Prometheus", "missing:", "ttft_p99"} {
		if !strings.Contains(got, want) {
			t.Errorf("diagnosis lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "verdict:  no-data") {
		t.Errorf("queries that failed are unknown, not absent: no-data is a guess:\n%s", got)
	}

	mustAccept(t, postHook(url, webhook("g2", "VLLMKVCacheNearFull", "vllm-kv", "f2")), 1, 0)
	testenv.WaitFor(t, 30*time.Second, "the second diagnosis", func() bool { return strings.Count(out.String(), "verdict:") == 2 })
	second := out.String()[len(got):]
	for _, want := range []string{"verdict:  inconclusive", "Prometheus unreachable: no evidence gathered", "ERROR: Prometheus could not be reached", "missing:"} {
		if !strings.Contains(second, want) {
			t.Errorf("diagnosis with Prometheus down lacks %q:\n%s", want, second)
		}
	}
}

// builtinPlaybookFor is the builtin playbook that labels match.
func builtinPlaybookFor(t *testing.T, labels map[string]string) *playbooks.Playbook {
	t.Helper()
	b, err := playbooks.Builtin(sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	set, err := playbooks.NewSet(b, nil, playbooks.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pb, ok := set.Match(labels)
	if !ok {
		t.Fatalf("no playbook matches %v", labels)
	}
	return pb
}

// splitQueries counts the distinct requests a run of the playbook that labels match sends:
// those containing match, and the others.
func splitQueries(t *testing.T, labels map[string]string, match string) (matching, others int) {
	t.Helper()
	pb := builtinPlaybookFor(t, labels)
	in, out := map[string]bool{}, map[string]bool{}
	add := func(e string) {
		if strings.Contains(e, match) {
			in[e] = true
		} else {
			out[e] = true
		}
	}
	// the check for the recorded stall history (none here), its queries a few to a request, and
	// the fleet request
	for _, r := range evidence.RequestsWith(pb, labels, 0, vllmnames.Default(), false) {
		add(r)
	}
	if len(in) == 0 || len(out) == 0 {
		t.Fatalf("playbook %s: %d requests with %q, %d without: the test needs both", pb.Name, len(in), match, len(out))
	}
	return len(in), len(out)
}

// Prometheus answers the quantile queries slower than prometheus.query_timeout: the diagnosis
// comes with the evidence that did arrive and the late queries marked. The verdict (capacity,
// from the queue) reads no quantile, so none is listed as missing: missing is what a rule needed.
func TestSlowPrometheusGivesPartialEvidenceMarkedAsSuch(t *testing.T) {
	prom := startRecordedPrometheus(t)
	proxy := startSlowProm(t, prom.URL, "histogram_quantile", 45*time.Second)
	url, out, _ := serveWith(t, fmt.Sprintf("prometheus: {url: %q, query_timeout: 700ms}\nlog: {level: error}\n", proxy.URL), nil)

	start := time.Now()
	mustAccept(t, postHook(url, webhook("g1", "VLLMTimeToFirstTokenP99High", "vllm-capacity", "f1")), 1, 0)
	testenv.WaitFor(t, 30*time.Second, "the diagnosis", func() bool { return strings.Contains(out.String(), "verdict:") })
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("diagnosis took %s: the query deadline did not cut the slow queries", took)
	}
	if proxy.seen.Load() == 0 {
		t.Fatal("no query was slowed: the test proves nothing")
	}
	got := out.String()
	for _, want := range []string{"query deadline of 700ms exceeded", "Queue share of TTFT", "verdict:  "} {
		if !strings.Contains(got, want) {
			t.Errorf("diagnosis lacks %q:\n%s", want, got)
		}
	}
	if !strings.Contains(got, "verdict:  capacity-past-knee") || strings.Contains(got, "missing:") {
		t.Errorf("want capacity past the knee, which no late query decides, with nothing missing:\n%s", got)
	}
	// The evidence that did arrive is there with numbers (the queue share is not a quantile).
	if strings.Contains(got, "Prometheus unreachable") {
		t.Errorf("a slow Prometheus was reported unreachable:\n%s", got)
	}
}

// Slack refuses the first post (429 with Retry-After, or a 503): the notification is retried (by
// the one retry loop, after Slack's Retry-After or a backoff) and lands once; no duplicate
// reaches the channel.
func TestSlackRateLimitsAndServerErrorsAreRetriedWithoutDuplicatePosts(t *testing.T) {
	t.Parallel()
	prom := startRecordedPrometheus(t)
	for _, c := range []struct {
		name   string
		refuse fakeslack.Response
		result string // the notifier's result once it lands
		first  string // the outcome of the refused attempt
	}{
		{"429 with Retry-After", fakeslack.Response{Status: 429, Header: map[string]string{"Retry-After": "1"}, Body: map[string]any{"ok": false, "error": "ratelimited"}}, "retried", "rate_limited"},
		{"503", fakeslack.Response{Status: 503, Body: "upstream unavailable"}, "retried", "retryable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			slack := fakeslack.New(t)
			var n atomic.Int32
			var posted atomic.Int32
			slack.Handle("chat.postMessage", func(fakeslack.Call) fakeslack.Response {
				if n.Add(1) == 1 {
					return c.refuse
				}
				posted.Add(1)
				return fakeslack.Response{Status: 200, Body: map[string]any{"ok": true, "channel": "C1", "ts": fmt.Sprintf("1700000000.%06d", n.Load())}}
			})
			url, out, stop := serveWith(t, fmt.Sprintf(`prometheus: {url: %q}
log: {level: error}
slack: {bot_token: xoxb-test, signing_secret: s, channel: C0INCIDENT, api_url: %q, charts: false}
`, prom.URL, slack.APIURL()), nil)
			mustAccept(t, postHook(url, webhook("g1", "VLLMKVCacheNearFull", "vllm-kv", "f1")), 1, 0)
			testenv.WaitFor(t, 30*time.Second, "the notification to land", func() bool {
				return metricValue(t, url, fmt.Sprintf(`vllm_responder_notifications_total{result=%q}`, c.result)) == "1"
			})
			for outcome, want := range map[string]string{c.first: "1", "ok": "1"} {
				if got := metricValue(t, url, fmt.Sprintf(`vllm_responder_notification_attempts_total{outcome=%q}`, outcome)); got != want {
					t.Errorf("attempts{outcome=%q} = %s, want %s", outcome, got, want)
				}
			}
			// The notifier is done with it: stop the service so nothing else can post, then count.
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if got := n.Load(); got != 2 {
				t.Errorf("chat.postMessage called %d times, want 2 (one refused, one retry)", got)
			}
			if got := posted.Load(); got != 1 {
				t.Errorf("%d posts landed, want exactly 1", got)
			}
			if strings.Contains(out.String(), "verdict:") {
				t.Error("with Slack configured the console must not be used")
			}
		})
	}
}

// Redis restarts under a running responder: /readyz stays ready but reports the store degraded
// while it is down, and recovers by itself; alerts are still accepted while it is down (a duplicate post beats a lost alert), and
// deduplication works again once it is back.
func TestRedisRestartIsSurvivedAndDeduplicationComesBack(t *testing.T) {
	t.Parallel()
	redis := testenv.StartRedis(t)
	url, out, _ := serveWith(t, fmt.Sprintf("prometheus: {url: \"http://127.0.0.1:1\"}\nlog: {level: error}\nredis: {url: \"redis://%s/0\", key_prefix: %q}\ndispatch: {dedup_window: 1h}\n",
		redis.Addr, "faults-"+fmt.Sprint(time.Now().UnixNano())+":"), nil)
	testenv.WaitFor(t, 10*time.Second, "ready with Redis up", func() bool { return readyzSays(url, "store: ok") })

	mustAccept(t, postHook(url, webhook("g1", "VLLMKVCacheNearFull", "vllm-kv", "f1")), 1, 0)
	mustAccept(t, postHook(url, webhook("g1", "VLLMKVCacheNearFull", "vllm-kv", "f1")), 0, 1)

	redis.Stop()
	testenv.WaitFor(t, 10*time.Second, "/readyz to report the store degraded (and stay ready)", func() bool {
		return readyzSays(url, "store: degraded")
	})
	// Accepted without deduplication rather than refused: the alert is not lost.
	mustAccept(t, postHook(url, webhook("g2", "VLLMKVCacheNearFull", "vllm-kv", "f2")), 1, 0)

	redis.Start()
	testenv.WaitFor(t, 20*time.Second, "/readyz to recover by itself", func() bool { return readyzSays(url, "store: ok") })
	mustAccept(t, postHook(url, webhook("g3", "VLLMKVCacheNearFull", "vllm-kv", "f3")), 1, 0)
	mustAccept(t, postHook(url, webhook("g3", "VLLMKVCacheNearFull", "vllm-kv", "f3")), 0, 1)
	testenv.WaitFor(t, 30*time.Second, "the three diagnoses", func() bool { return strings.Count(out.String(), "[FIRING]") == 3 })
}

// SIGTERM during a storm of webhooks, against the real binary: every webhook answered 200 is
// diagnosed before the process exits (within dispatch.drain_timeout, exit status 0); webhooks that
// arrive while it drains get 503 with Retry-After, and once the listener closes, connection
// refused. Nothing accepted is dropped silently.
func TestSIGTERMDuringAStormDrainsEveryAcceptedAlert(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "responder")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	prom := startRecordedPrometheus(t)
	proxy := startSlowProm(t, prom.URL, "histogram_quantile", 300*time.Millisecond)
	port := testenv.FreePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`listen: "127.0.0.1:%d"
prometheus: {url: %q}
log: {level: info}
dispatch: {workers: 2, queue_size: 100, drain_timeout: 40s}
`, port, proxy.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr syncBuf
	cmd := exec.Command(bin, "serve", "--config", cfg)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() {
			t.Logf("stderr:\n%s", stderr.String())
		}
	})
	testenv.WaitFor(t, 10*time.Second, "the binary to serve", func() bool { return statusOf(url+"/healthz") == 200 })

	var mu sync.Mutex
	accepted := map[string]bool{}
	var refused503, refusedConn, other []string
	fire := func(id string) hookAnswer {
		a := postHook(url, webhook("storm-"+id, "VLLMTimeToFirstTokenP99High", "storm-"+id, id))
		mu.Lock()
		defer mu.Unlock()
		switch {
		case a.Err != nil && errors.Is(a.Err, syscall.ECONNREFUSED):
			refusedConn = append(refusedConn, id)
		case a.Err == nil && a.Status == 503 && a.RetryAfter != "":
			refused503 = append(refused503, id)
		case a.Err == nil && a.Status == 200:
			accepted[id] = true
		default:
			other = append(other, fmt.Sprintf("%s: %d %v %s", id, a.Status, a.Err, a.Body))
		}
		return a
	}
	// The storm: 4 senders fire 6 webhooks each at once; SIGTERM arrives while those are being
	// diagnosed, and the senders keep firing until they are refused.
	var wg sync.WaitGroup
	for s := 0; s < 4; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 6; i++ {
				fire(fmt.Sprintf("a%d-%d", s, i))
			}
		}()
	}
	wg.Wait()
	testenv.WaitFor(t, 10*time.Second, "diagnoses in flight", func() bool { return proxy.held.Load() > 0 })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	signalledAt := time.Now()
	for s := 0; s < 4; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				if a := fire(fmt.Sprintf("b%d-%d", s, i)); a.Err != nil || a.Status == 503 {
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("responder exited with %v (drain incomplete?)", err)
		}
		t.Logf("exited %s after SIGTERM", time.Since(signalledAt).Round(time.Millisecond))
	case <-time.After(45 * time.Second):
		t.Fatal("responder did not exit within the drain deadline")
	}
	// Sending after exit: the listener is gone.
	if a := postHook(url, webhook("late", "VLLMTimeToFirstTokenP99High", "late", "late")); a.Err == nil {
		t.Errorf("a webhook after exit got an answer: %d", a.Status)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(other) > 0 {
		t.Errorf("answers that are neither 200, 503+Retry-After nor connection refused:\n%s", strings.Join(other, "\n"))
	}
	if len(refused503) == 0 {
		t.Errorf("no webhook got 503 while draining (connection refused: %d)", len(refusedConn))
	}
	got := stdout.String()
	var lost []string
	for id := range accepted {
		if !strings.Contains(got, `pod="storm-`+id+`"`) {
			lost = append(lost, id)
		}
	}
	if len(lost) > 0 {
		t.Fatalf("%d of %d accepted alerts were never diagnosed: %v\nstdout tail:\n%s", len(lost), len(accepted), lost, tailOf(got, 3000))
	}
	if n := strings.Count(got, "[FIRING]"); n != len(accepted) {
		t.Errorf("%d diagnoses for %d accepted alerts", n, len(accepted))
	}
	if !strings.Contains(stderr.String(), "drained; bye") {
		t.Errorf("no clean drain in the log:\n%s", tailOf(stderr.String(), 2000))
	}
	t.Logf("accepted %d, 503 while draining %d, connection refused %d", len(accepted), len(refused503), len(refusedConn))
}

func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// The work queue is full (one worker, room for one, a slow Prometheus): the webhook answers 503
// with Retry-After, and the real Alertmanager's own retry later gets every group diagnosed, once.
func TestAFullQueueAnswers503AndAlertmanagersRetrySucceeds(t *testing.T) {
	t.Parallel()
	prom := startRecordedPrometheus(t)
	proxy := startSlowProm(t, prom.URL, "histogram_quantile", 1500*time.Millisecond)
	url, out, _ := serveWith(t, fmt.Sprintf("prometheus: {url: %q}\nlog: {level: error}\ndispatch: {workers: 1, queue_size: 1}\n", proxy.URL), nil)

	am := testenv.Alertmanager(t, fmt.Sprintf(`
route:
  receiver: responder
  group_by: [alertname, pod]
  group_wait: 0s
  group_interval: 1m
  repeat_interval: 1h
receivers:
  - name: responder
    webhook_configs:
      - url: %s/alertmanager
`, url))
	pods := []string{"vllm-capacity", "vllm-kv", "vllm-prefill", "vllm-decode"}
	start := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	var alerts []string
	for _, p := range pods {
		alerts = append(alerts, fmt.Sprintf(`{"labels":{"alertname":"VLLMTimeToFirstTokenP99High","namespace":"llm","pod":%q,"model_name":"llama"},"startsAt":%q,"endsAt":%q}`,
			p, start, time.Now().Add(time.Hour).UTC().Format(time.RFC3339)))
	}
	postAlerts(t, am.URL, "["+strings.Join(alerts, ",")+"]")

	testenv.WaitFor(t, 30*time.Second, "a webhook refused with queue_full", func() bool {
		v := metricValue(t, url, `vllm_responder_webhook_requests_total{result="queue_full"}`)
		return v != "" && v != "0"
	})
	testenv.WaitFor(t, 50*time.Second, "every group diagnosed after Alertmanager's retries", func() bool {
		return strings.Count(out.String(), "[FIRING]") >= len(pods)
	})
	got := out.String()
	for _, p := range pods {
		if !strings.Contains(got, fmt.Sprintf("pod=%q", p)) {
			t.Errorf("pod %s was never diagnosed", p)
		}
	}
	if n := strings.Count(got, "[FIRING]"); n != len(pods) {
		t.Errorf("%d diagnoses for %d groups:\n%s", n, len(pods), got)
	}
}

// Captures fail closed on the store: with Redis down, `responder profile` against a real vllm-sim
// scraped by a real Prometheus is refused before the profiler is touched (no lock, no capture);
// once Redis is back, captures run again. (profile/e2e_test.go covers Redis dying mid-capture.)
func TestCapturesAreRefusedWhileRedisIsDownAndRunAgainAfter(t *testing.T) {
	t.Parallel()
	eng, err := sim.NewEngine(sim.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	prof := sim.NewProfiler(t.TempDir(), 0, 1, zerolog.Nop())
	vllm := httptest.NewServer(sim.NewServer(eng, prof, zerolog.Nop()))
	t.Cleanup(vllm.Close)
	prom := testenv.Prometheus(t, testenv.PromOptions{ScrapeInterval: 200 * time.Millisecond,
		ScrapeTargets: []testenv.Target{{Addr: strings.TrimPrefix(vllm.URL, "http://"), Labels: map[string]string{"pod": "vllm-0", "namespace": "llm"}}}})
	redis := testenv.StartRedis(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`prometheus: {url: %q}
log: {level: error}
redis: {url: "redis://%s/0"}
profile: {enabled: true, default_duration: 200ms, cooldown: 0s, start_timeout: 5s, stop_timeout: 10s}
`, prom.URL, redis.Addr)), 0o600); err != nil {
		t.Fatal(err)
	}
	capture := func() (int, string) {
		var out, errb bytes.Buffer
		code := runProfile(context.Background(), []string{"--config", cfg, "--pod", "vllm-0", "--requested-by", "faults"}, &out, &errb)
		return code, out.String() + errb.String()
	}
	// What the first capture assumes: Prometheus has scraped the pod (the capture finds the
	// pod's endpoint from its series). On a loaded machine that can take a while.
	testenv.WaitFor(t, 120*time.Second, "Prometheus to have scraped the pod", func() bool {
		return promHasResult(prom.URL, `vllm:num_requests_running{pod="vllm-0"}`)
	})
	testenv.WaitFor(t, 60*time.Second, "a first capture", func() bool {
		code, _ := capture()
		return code == 0
	})
	if s := prof.State(); s.Starts != 1 || s.Stops != 1 || s.Active {
		t.Fatalf("profiler after one capture: %+v", s)
	}

	redis.Stop()
	code, msg := capture()
	if code == 0 || !strings.Contains(msg, "store") {
		t.Fatalf("capture with Redis down: exit %d, %q; want a refusal that names the store", code, msg)
	}
	t.Logf("refused with Redis down: %s", strings.TrimSpace(msg))
	if s := prof.State(); s.Starts != 1 || s.Active {
		t.Fatalf("the profiler was touched while Redis was down: %+v", s)
	}

	redis.Start()
	testenv.WaitFor(t, 60*time.Second, "captures to run again", func() bool {
		code, _ := capture()
		return code == 0
	})
	if s := prof.State(); s.Starts != 2 || s.Stops != 2 || s.Active {
		t.Fatalf("profiler after Redis came back: %+v", s)
	}
}

// promHasResult reports whether an instant query of the Prometheus at promURL returns a series.
func promHasResult(promURL, query string) bool {
	r, err := http.Get(promURL + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return false
	}
	defer r.Body.Close()
	var ans struct {
		Data struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	return r.StatusCode == 200 && json.NewDecoder(r.Body).Decode(&ans) == nil && len(ans.Data.Result) > 0
}
