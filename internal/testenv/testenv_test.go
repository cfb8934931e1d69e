package testenv

import (
	"fmt"
	"io"
	"net/http"
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
