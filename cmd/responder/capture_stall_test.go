package main

// A profile capture stalls its pod (stop_profile runs in vLLM's engine loop), which raises the
// pod's own alerts. On the real chain (vllm-sim -> Prometheus with the alert rules -> Alertmanager
// -> this responder's webhook), a capture taken with `responder profile` holds a silence of the
// pod's vLLM alerts: the alert the stall raises is suppressed in Alertmanager and never reaches
// the responder, while the same alert on another pod does.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

// amAlertStates lists Alertmanager's alerts as "alertname/pod" -> state (active, suppressed).
func amAlertStates(t *testing.T, amURL string) map[string]string {
	t.Helper()
	resp, err := http.Get(amURL + "/api/v2/alerts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var alerts []struct {
		Labels map[string]string `json:"labels"`
		Status struct {
			State string `json:"state"`
		} `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&alerts); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, a := range alerts {
		out[a.Labels["alertname"]+"/"+a.Labels["pod"]] = a.Status.State
	}
	return out
}

// amSilencesBy lists the silences created by createdBy as id -> state.
func amSilencesBy(t *testing.T, amURL, createdBy string) map[string]string {
	t.Helper()
	resp, err := http.Get(amURL + "/api/v2/silences")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sils []struct {
		ID        string `json:"id"`
		CreatedBy string `json:"createdBy"`
		Status    struct {
			State string `json:"state"`
		} `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&sils); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range sils {
		if s.CreatedBy == createdBy {
			out[s.ID] = s.Status.State
		}
	}
	return out
}

// fireAlert posts an alert to Alertmanager as Prometheus would.
func fireAlert(t *testing.T, amURL string, labels map[string]string) {
	t.Helper()
	b, _ := json.Marshal([]map[string]any{{"labels": labels, "startsAt": time.Now(), "endsAt": time.Now().Add(time.Hour)}})
	resp, err := http.Post(amURL+"/api/v2/alerts", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("posting an alert: %s", resp.Status)
	}
}

func TestAStalledPodDuringACaptureNotifiesNobody(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	simBin := filepath.Join(dir, "vllm-sim")
	rules := filepath.Join(dir, "rules.yml")
	goRun(t, "build", "-o", simBin, "./cmd/vllm-sim")
	// The fast rules with shorter windows: the stall's TTFT spike fires within seconds.
	goRun(t, "run", "./cmd/rulegen", "-profile", "fast", "-set", "rate_window=10s", "-set", "gauge_window=5s",
		"-set", "eval_interval=1s", "-set", "alerts.ttft.for=2s", "-set", "alerts.queue.for=2s", "-o", rules)

	const flush = 15 * time.Second
	simPort := testenv.FreePort(t)
	testenv.Start(t, "vllm-sim", simBin, "--listen", fmt.Sprintf("127.0.0.1:%d", simPort), "--scenario", "healthy", "--seed", "7",
		"--profiler-dir", t.TempDir(), "--profile-flush-delay", flush.String(), "--log-level", "warn")

	respPort := testenv.FreePort(t)
	am := testenv.Alertmanager(t, fmt.Sprintf(`
route:
  receiver: responder
  group_by: [alertname]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: responder
    webhook_configs:
      - url: http://127.0.0.1:%d/alertmanager
        send_resolved: false
`, respPort))
	prom := testenv.Prometheus(t, testenv.PromOptions{
		ScrapeTargets:      []testenv.Target{{Addr: fmt.Sprintf("127.0.0.1:%d", simPort), Labels: map[string]string{"pod": "vllm-0", "namespace": "llm"}}},
		ScrapeInterval:     500 * time.Millisecond,
		RuleFiles:          []string{rules},
		EvaluationInterval: time.Second,
		Alertmanagers:      []string{am.Addr},
	})
	cfg := promConfig(prom.URL) + fmt.Sprintf(`alertmanager: {url: %q}
dispatch: {dedup_window: 1h}
profile:
  enabled: true
  default_duration: 2s
  stop_timeout: 2m
  cooldown: 0s
  silence: {margin: 40s, expected_flush: 5s}
`, am.URL)
	_, out, _ := serveOn(t, respPort, cfg, nil)
	cfgPath := filepath.Join(dir, "profile.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 30*time.Second, "Prometheus to scrape the pod", func() bool {
		return promScalar(prom.URL, `sum(rate(vllm:generation_tokens_total{pod="vllm-0"}[5s]))`) != "none"
	})
	if a := promAlerts(prom.URL); len(a) != 0 {
		t.Fatalf("alerts before the capture: %v", a)
	}

	// The capture, as an SRE would take it.
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		var o, e strings.Builder
		code := runProfile(context.Background(), []string{"--config", cfgPath, "--pod", "vllm-0", "--requested-by", "e2e-sre"}, &o, &e)
		done <- result{code, o.String(), e.String()}
	}()

	// The stall raises the pod's TTFT alert; Alertmanager holds it back.
	testenv.WaitFor(t, 2*time.Minute, "the stall's TTFT alert to reach Alertmanager, suppressed", func() bool {
		return amAlertStates(t, am.URL)["VLLMTimeToFirstTokenP99High/vllm-0"] == "suppressed"
	})
	// The same alert on another pod, in the same Alertmanager group, does get through.
	fireAlert(t, am.URL, map[string]string{"alertname": "VLLMTimeToFirstTokenP99High", "pod": "control-1", "namespace": "llm"})
	testenv.WaitFor(t, time.Minute, "the control alert to be diagnosed", func() bool { return len(consoleVerdicts(out.String())["VLLMTimeToFirstTokenP99High/control-1"]) > 0 })

	var r result
	select {
	case r = <-done:
	case <-time.After(3 * time.Minute):
		t.Fatal("responder profile did not return")
	}
	if r.code != 0 || !strings.Contains(r.stdout, "Its vLLM alerts are silenced until") || !strings.Contains(r.stdout, "alerts: silenced until") {
		t.Fatalf("responder profile: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}

	// After the flush and the margin the silence ends, by which time the stall has left the
	// alert's window: what fires later (another control alert) comes without the pod.
	testenv.WaitFor(t, 2*time.Minute, "the capture's silence to end and the pod's alerts to resolve", func() bool {
		for _, st := range amSilencesBy(t, am.URL, "vllm-responder for e2e-sre") {
			if st != "expired" {
				return false
			}
		}
		for _, a := range promAlerts(prom.URL) {
			if strings.Contains(a, "/vllm-0 ") {
				return false
			}
		}
		return true
	})
	fireAlert(t, am.URL, map[string]string{"alertname": "VLLMTimeToFirstTokenP99High", "pod": "control-2", "namespace": "llm"})
	testenv.WaitFor(t, time.Minute, "the second control alert to be diagnosed", func() bool { return len(consoleVerdicts(out.String())["VLLMTimeToFirstTokenP99High/control-2"]) > 0 })

	if strings.Contains(out.String(), `pod="vllm-0"`) {
		t.Fatalf("the captured pod's alert reached the responder:\n%s", out.String())
	}
	if len(amSilencesBy(t, am.URL, "vllm-responder for e2e-sre")) == 0 {
		t.Error("the capture created no silence")
	}
}
