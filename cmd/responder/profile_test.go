package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/notify/slack/fakeslack"
	"github.com/vllm-responder/vllm-responder/sim"
)

// TestSlackProfileCommandCapturesAProfileOnTheRealProfiler follows `/vllm profile` through the
// whole service: signature check, the Slack app, the capturer adapter, the profile service
// resolving the pod through a real Prometheus, and vllm-sim's profiler endpoints; the report comes
// back on response_url and a trace file is written.
func TestSlackProfileCommandCapturesAProfileOnTheRealProfiler(t *testing.T) {
	eng, err := sim.NewEngine(sim.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	prof := sim.NewProfiler(t.TempDir(), 100*time.Millisecond, 1, zerolog.Nop())
	vllm := httptest.NewServer(sim.NewServer(eng, prof, zerolog.Nop()))
	defer vllm.Close()
	prom := testenv.Prometheus(t, testenv.PromOptions{ScrapeTargets: []testenv.Target{{
		Addr: strings.TrimPrefix(vllm.URL, "http://"), Labels: map[string]string{"pod": "vllm-sim-0", "namespace": "llm"}}}})
	testenv.WaitFor(t, 30*time.Second, "Prometheus to scrape vllm-sim", func() bool {
		r, err := http.Get(prom.URL + "/api/v1/query?query=" + url.QueryEscape(`vllm:num_requests_running{pod="vllm-sim-0"}`))
		if err != nil {
			return false
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return strings.Contains(string(b), `"pod":"vllm-sim-0"`)
	})

	fs := fakeslack.New(t, "response")
	const secret = "signing-s3cret"
	url_, _ := startResponder(t, prom.URL, fmt.Sprintf(`slack: {bot_token: xoxb-test, signing_secret: %s, channel: C0INCIDENT, api_url: %q, charts: false}
profile: {enabled: true, default_duration: 1s, cooldown: 1s}
`, secret, fs.APIURL()))

	start := time.Now()
	postSlashCommand(t, url_, secret, "profile vllm-sim-0 1s", fs.ResponseURL("cmd"))
	if time.Since(start) > 3*time.Second {
		t.Fatalf("the command must be acknowledged at once, not after %s", time.Since(start))
	}

	testenv.WaitFor(t, 60*time.Second, "the capture report on response_url", func() bool {
		for _, c := range fs.Calls("response") {
			if strings.Contains(string(c.Body), "captured") {
				return true
			}
		}
		return false
	})
	st := prof.State()
	if st.Starts != 1 || st.Stops != 1 || st.Active || len(st.Traces) == 0 {
		t.Fatalf("profiler state after the capture: %+v", st)
	}
}

// postSlashCommand sends `/vllm text` to the responder at srv, signed with secret as Slack signs
// it, and fails unless it is acknowledged with 200.
func postSlashCommand(t *testing.T, srv, secret, text, responseURL string) {
	t.Helper()
	body := url.Values{"command": {"/vllm"}, "text": {text}, "user_id": {"U1"}, "user_name": {"alice"},
		"channel_id": {"C1"}, "response_url": {responseURL}}.Encode()
	req, _ := http.NewRequest(http.MethodPost, srv+"/slack/commands", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%s:%s", ts, body)
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/vllm %s: status %d", text, resp.StatusCode)
	}
}
