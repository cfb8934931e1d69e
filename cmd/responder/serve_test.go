package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/config"
	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// serveOn runs `responder serve` in-process on a loopback port with the config text (listen is
// added), logging at debug level to logw (nil: discarded); out receives the console notifier's
// output. stop ends it and returns serve's error; when the test does not call stop, cleanup does
// and fails the test on an error.
func serveOn(t *testing.T, port int, cfgText string, logw io.Writer) (url string, out *syncBuf, stop func() error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(fmt.Sprintf("listen: \"127.0.0.1:%d\"\n%s", port, cfgText)), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if logw == nil {
		logw = io.Discard
	}
	out = &syncBuf{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, c, zerolog.New(logw).Level(zerolog.DebugLevel), out) }()
	var once sync.Once
	var serr error
	stopped := false
	stopOnce := func() error {
		once.Do(func() { cancel(); serr = <-done })
		return serr
	}
	t.Cleanup(func() {
		explicit := stopped
		if err := stopOnce(); err != nil && !explicit {
			t.Errorf("serve: %v", err)
		}
	})
	url = fmt.Sprintf("http://127.0.0.1:%d", port)
	testenv.WaitFor(t, 10*time.Second, "responder /healthz", func() bool { return statusOf(url+"/healthz") == 200 })
	return url, out, func() error { stopped = true; return stopOnce() }
}

// serveWith is serveOn on a free port.
func serveWith(t *testing.T, cfgText string, logw io.Writer) (url string, out *syncBuf, stop func() error) {
	t.Helper()
	return serveOn(t, testenv.FreePort(t), cfgText, logw)
}

// startResponder runs `responder serve` on the Prometheus at promURL, with extra config.
func startResponder(t *testing.T, promURL, extra string) (url string, out *syncBuf) {
	t.Helper()
	url, out, _ = serveWith(t, promConfig(promURL)+extra, nil)
	return url, out
}

// statusOf returns the status code of GET u, 0 when it cannot be reached.
func statusOf(u string) int {
	r, err := http.Get(u)
	if err != nil {
		return 0
	}
	r.Body.Close()
	return r.StatusCode
}

func metricValue(t *testing.T, url, series string) string {
	r, err := http.Get(url + "/metrics")
	if err != nil {
		return ""
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, series+" ") {
			return strings.TrimPrefix(line, series+" ")
		}
	}
	return ""
}

func postAlerts(t *testing.T, amURL, body string) {
	t.Helper()
	r, err := http.Post(amURL+"/api/v2/alerts", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != 200 {
		t.Fatalf("alertmanager refused alerts: %d %s", r.StatusCode, b)
	}
}

func TestAlertmanagerDeliversARealWebhookThatIsDiagnosedOnceAndResolved(t *testing.T) {
	t.Parallel()
	prom := startRecordedPrometheus(t)
	url, out := startResponder(t, prom.URL, "webhook: {bearer_token: t0ken}\n")
	am := testenv.Alertmanager(t, fmt.Sprintf(`
route:
  receiver: responder
  group_by: [alertname, namespace, model_name]
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 1s
receivers:
  - name: responder
    webhook_configs:
      - url: %s/alertmanager
        send_resolved: true
        http_config:
          authorization: {credentials: t0ken}
`, url))

	start := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	alert := func(endsAt string) string {
		return fmt.Sprintf(`[{"labels":{"alertname":"VLLMTimeToFirstTokenP99High","namespace":"llm","pod":"vllm-capacity","model_name":"llama","severity":"critical"},
"annotations":{"summary":"TTFT p99 high"},"startsAt":%q,"endsAt":%q,"generatorURL":"http://prometheus/graph"}]`, start, endsAt)
	}
	postAlerts(t, am.URL, alert(time.Now().Add(time.Hour).UTC().Format(time.RFC3339)))

	testenv.WaitFor(t, 60*time.Second, "the diagnosis on the console", func() bool {
		return strings.Contains(out.String(), "verdict:  capacity-past-knee")
	})
	// Alertmanager re-sends the group every repeat_interval: the responder must see a re-send and
	// not diagnose it again.
	testenv.WaitFor(t, 60*time.Second, "a re-sent alert counted as duplicate", func() bool {
		v := metricValue(t, url, `vllm_responder_alerts_received_total{outcome="duplicate"}`)
		return v != "" && v != "0"
	})
	if n := strings.Count(out.String(), "[FIRING]"); n != 1 {
		t.Fatalf("diagnosed %d times, want once:\n%s", n, out)
	}

	postAlerts(t, am.URL, alert(time.Now().Add(-time.Second).UTC().Format(time.RFC3339)))
	testenv.WaitFor(t, 60*time.Second, "the resolution on the console", func() bool {
		return strings.Contains(out.String(), "[RESOLVED]")
	})
	if n := strings.Count(out.String(), "[FIRING]"); n != 1 {
		t.Fatalf("a resolution was treated as a new incident:\n%s", out)
	}
	if v := metricValue(t, url, `vllm_responder_playbook_runs_total{verdict="capacity-past-knee"}`); v != "1" {
		t.Fatalf("playbook runs by verdict = %q, want 1", v)
	}
}

func TestWebhookWithoutTheConfiguredTokenIsRefused(t *testing.T) {
	t.Parallel()
	url, _ := startResponder(t, "http://127.0.0.1:1", "webhook: {bearer_token: t0ken}\n")
	r, err := http.Post(url+"/alertmanager", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", r.StatusCode)
	}
}
