package testenv

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestPrometheusServesBackfilledHistory(t *testing.T) {
	now := time.Now().Add(-time.Minute).Unix()
	var om strings.Builder
	om.WriteString("# TYPE vllm:num_requests_waiting gauge\n")
	for ts := now - 3600; ts <= now; ts += 60 {
		fmt.Fprintf(&om, "vllm:num_requests_waiting{model_name=\"m\",pod=\"p\"} 7 %d\n", ts)
	}
	om.WriteString("# EOF\n")
	p := Prometheus(t, PromOptions{OpenMetrics: om.String()})
	resp, err := http.Get(p.URL + "/api/v1/query?query=vllm:num_requests_waiting")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), `"7"`) {
		t.Fatalf("backfilled sample not served: %s", b)
	}
}

func TestPrometheusScrapesATargetAddedLater(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "# TYPE late_metric gauge\nlate_metric 42")
	}))
	defer hs.Close()
	p := Prometheus(t, PromOptions{})
	addr := strings.TrimPrefix(hs.URL, "http://")
	p.AddTargets(t, Target{Addr: addr, Labels: map[string]string{"pod": "late"}})
	WaitFor(t, 30*time.Second, "the added target's sample", func() bool {
		resp, err := http.Get(p.URL + "/api/v1/query?query=late_metric%7Bpod%3D%22late%22%7D")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), `"42"`)
	})
}

func TestRedisCanBeStoppedAndStartedOnTheSamePort(t *testing.T) {
	r := StartRedis(t)
	addr := r.Addr
	r.Stop()
	r.Start()
	if r.Addr != addr {
		t.Fatalf("address changed: %s -> %s", addr, r.Addr)
	}
}

func TestAlertmanagerStarts(t *testing.T) {
	a := Alertmanager(t, "route: {receiver: x}\nreceivers: [{name: x}]\n")
	if !httpOK(a.URL + "/api/v2/status") {
		t.Fatal("alertmanager status not OK")
	}
}
