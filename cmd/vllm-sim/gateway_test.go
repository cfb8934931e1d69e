package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

var gatewayAddr = regexp.MustCompile(`"gateway_addr":"([^"]+)"`)

// --gateway-listen serves the stand-in in front of the pods: its own /metrics and
// /admin/gateway; the pods' /metrics stay the engines'.
func TestAGatewayStandInServesInFrontOfThePods(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	ready := make(chan string, 1)
	done := make(chan int, 1)
	go func() {
		done <- runWith(ctx, []string{"--listen", "127.0.0.1:0,127.0.0.1:0", "--gateway-listen", "127.0.0.1:0",
			"--gateway-kind", "llm-d-epp", "--gateway-pool", "llama", "--gateway-scenario", "gateway-healthy"}, &logs, ready)
	}()
	select {
	case <-ready:
	case code := <-done:
		t.Fatalf("exited early with %d: %s", code, logs.String())
	case <-time.After(10 * time.Second):
		t.Fatal("not ready within 10s")
	}
	m := gatewayAddr.FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("the gateway's address is not logged: %s", logs.String())
	}
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get("http://" + m[1] + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if body := get("/metrics"); !strings.Contains(body, `llm_d_epp_flow_control_pool_saturation{inference_pool="llama",stage="effective"}`) {
		t.Errorf("the EPP's saturation is missing from the gateway's /metrics:\n%.800s", body)
	}
	post := func(body string) int {
		t.Helper()
		resp, err := http.Post("http://"+m[1]+"/admin/gateway", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(`{"scenario":"gateway-held"}`); code != 200 {
		t.Errorf("POST /admin/gateway gateway-held: %d", code)
	}
	if s := get("/admin/gateway"); !strings.Contains(s, `"scenario":"gateway-held"`) {
		t.Errorf("GET /admin/gateway: %s", s)
	}
	if code := post(`{"scenario":"no-such"}`); code != 400 {
		t.Errorf("an unknown gateway scenario: %d, want 400", code)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit code %d: %s", code, logs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("did not stop within 10s of cancellation")
	}
}

// A gateway that cannot play its scenario refuses to start: a bad kind is a usage error, a
// scenario the kind cannot show fails the run.
func TestAGatewayThatCannotPlayItsScenarioDoesNotStart(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"--gateway-listen", "127.0.0.1:0", "--gateway-kind", "envoy"}, 2},
		{[]string{"--gateway-listen", "127.0.0.1:0", "--gateway-kind", "production-stack", "--gateway-scenario", "gateway-held"}, 1},
	} {
		var logs syncBuffer
		args := append([]string{"--listen", "127.0.0.1:0"}, tc.args...)
		if code := runWith(context.Background(), args, &logs, nil); code != tc.code {
			t.Errorf("%v: exit %d, want %d: %s", tc.args, code, tc.code, logs.String())
		}
	}
}
