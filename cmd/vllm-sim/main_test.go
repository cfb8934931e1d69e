package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the logger and the test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRunServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	ready := make(chan string, 1)
	done := make(chan int, 1)
	go func() {
		done <- runWith(ctx, []string{"--listen", "127.0.0.1:0", "--scenario", "healthy", "--metric-names", "legacy",
			"--model-name", "test/model", "--profiler-dir", t.TempDir(), "--profile-flush-delay", "10ms"}, &logs, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case code := <-done:
		t.Fatalf("exited early with %d: %s", code, logs.String())
	case <-time.After(10 * time.Second):
		t.Fatal("not ready within 10s")
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `vllm:gpu_cache_usage_perc{engine="0",model_name="test/model"}`) {
		t.Errorf("legacy metric with the model name missing:\n%.500s", body)
	}
	resp, err = http.Post("http://"+addr+"/start_profile", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("start_profile status %d with --profiler-dir", resp.StatusCode)
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
	if !strings.Contains(logs.String(), `"listen_addr":"`+addr+`"`) {
		t.Errorf("the listen address is not logged: %s", logs.String())
	}
}

func TestBadFlagsExitNonZero(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"an unknown scenario is rejected", []string{"--scenario", "nope"}},
		{"unknown metric names are rejected", []string{"--metric-names", "old"}},
		{"an impossible KV pool is rejected", []string{"--num-gpu-blocks", "1"}},
		{"a KV role other than consumer is rejected", []string{"--kv-role", "producer"}},
		{"as many pod names as addresses", []string{"--pod-names", "a,b"}},
		{"service discovery labels are k=v", []string{"--sd-labels", "namespace"}},
		{"no speculation with a negative token count", []string{"--num-speculative-tokens", "-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out syncBuffer
			if code := runWith(context.Background(), append([]string{"--listen", "127.0.0.1:0"}, tc.args...), &out, nil); code == 0 {
				t.Fatalf("exit code 0, want non-zero")
			}
		})
	}
}

// Several --listen addresses serve several pods, each its own engine; a fleet scenario posted to
// any of them switches all, and a wedged pod still answers /health and /metrics.
func TestSeveralListenAddressesServeAFleet(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	ready := make(chan string, 1)
	done := make(chan int, 1)
	go func() {
		done <- runWith(ctx, []string{"--listen", "127.0.0.1:0,127.0.0.1:0,127.0.0.1:0", "--scenario", "healthy"}, &logs, ready)
	}()
	var addrs []string
	select {
	case a := <-ready:
		addrs = strings.Split(a, ",")
	case code := <-done:
		t.Fatalf("exited early with %d: %s", code, logs.String())
	case <-time.After(10 * time.Second):
		t.Fatal("not ready within 10s")
	}
	if len(addrs) != 3 {
		t.Fatalf("ready with %v; want three addresses", addrs)
	}
	resp, err := http.Post("http://"+addrs[2]+"/admin/fleet", "application/json", strings.NewReader(`{"scenario":"engine-stall"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"engine_stalled":true`) {
		t.Fatalf("POST /admin/fleet: %d %s", resp.StatusCode, body)
	}
	for i, a := range addrs {
		r, err := http.Get("http://" + a + "/admin/scenario")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if stalled := strings.Contains(string(b), `"engine_stalled":true`); stalled != (i == 0) {
			t.Errorf("pod %d: engine_stalled %v, want %v: %s", i, stalled, i == 0, b)
		}
		if h, err := http.Get("http://" + a + "/health"); err != nil || h.StatusCode != 200 {
			t.Errorf("pod %d /health: %v %v", i, h, err)
		} else {
			h.Body.Close()
		}
	}
	if r, err := http.Post("http://"+addrs[0]+"/admin/fleet", "application/json", strings.NewReader(`{"scenario":"no-such"}`)); err != nil || r.StatusCode != 400 {
		t.Errorf("an unknown fleet scenario: %v %v; want 400", r, err)
	} else {
		r.Body.Close()
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("did not stop within 10s of cancellation")
	}
}

// The feature flags turn on what vLLM exports under each feature, and the pods are listed for
// Prometheus's HTTP service discovery under their names.
func TestFeatureFlagsTurnOnTheirFamiliesAndEndpoints(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	ready := make(chan string, 1)
	done := make(chan int, 1)
	go func() {
		done <- runWith(ctx, []string{"--listen", "127.0.0.1:0,127.0.0.1:0", "--scenario", "idle", "--pod-names", "vllm-a,vllm-b",
			"--sd-labels", "namespace=demo", "--kv-role", "consumer", "--num-speculative-tokens", "3", "--enable-lora", "--max-loras", "4",
			"--lora-modules", "sql=/adapters/sql,chat", "--server-dev-mode"}, &logs, ready)
	}()
	var addrs []string
	select {
	case a := <-ready:
		addrs = strings.Split(a, ",")
	case code := <-done:
		t.Fatalf("exited early with %d: %s", code, logs.String())
	case <-time.After(10 * time.Second):
		t.Fatal("not ready within 10s")
	}
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get("http://" + addrs[0] + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	resp, err := http.Post("http://"+addrs[0]+"/v1/completions", "application/json", strings.NewReader(`{"model":"sql","prompt":"select","max_tokens":2}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("a request for the adapter sql: %d", resp.StatusCode)
	}
	metrics := get("/metrics")
	for _, family := range []string{"vllm:num_requests_kv_fetch_by_stage", "vllm:nixl_xfer_time_seconds", "vllm:spec_decode_num_drafts_total",
		`vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct",position="2"}`,
		`vllm:lora_requests_info{max_lora="4",running_lora_adapters="`} {
		if !strings.Contains(metrics, family) {
			t.Errorf("/metrics lacks %s", family)
		}
	}
	if targets := get("/admin/targets"); !strings.Contains(targets, `"labels":{"namespace":"demo","pod":"vllm-a"}`) || !strings.Contains(targets, `"pod":"vllm-b"`) {
		t.Errorf("/admin/targets: %s", targets)
	}
	if models := get("/v1/models"); !strings.Contains(models, `"id":"sql"`) || !strings.Contains(models, `"id":"chat"`) {
		t.Errorf("/v1/models does not list the adapters: %s", models)
	}
	if s := get("/is_sleeping"); !strings.Contains(s, `"is_sleeping":false`) {
		t.Errorf("/is_sleeping with --server-dev-mode: %s", s)
	}
	cancel()
	<-done
}

// --dcgm-listen serves a dcgm-exporter stand-in per pod on its own address: the pod's TP ranks
// hold the node's first GPUs, labelled with the pod's name and the --sd-labels namespace, the
// rest idle without pod labels.
func TestDCGMListenServesAnExporterPerPod(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	ready := make(chan string, 1)
	done := make(chan int, 1)
	go func() {
		done <- runWith(ctx, []string{"--listen", "127.0.0.1:0,127.0.0.1:0", "--scenario", "healthy", "--tensor-parallel-size", "2",
			"--dcgm-listen", "127.0.0.1:0,127.0.0.1:0", "--gpus-per-node", "4", "--sd-labels", "namespace=demo"}, &logs, ready)
	}()
	select {
	case <-ready:
	case code := <-done:
		t.Fatalf("exited early with %d: %s", code, logs.String())
	case <-time.After(10 * time.Second):
		t.Fatal("not ready within 10s")
	}
	addrs := regexp.MustCompile(`"node":"(gpu-node-[01])","dcgm_listen_addr":"([^"]+)","pod_name":"([^"]+)"`).FindAllStringSubmatch(logs.String(), -1)
	if len(addrs) != 2 {
		t.Fatalf("want two exporters logged, got %v: %s", addrs, logs.String())
	}
	for _, a := range addrs {
		resp, err := http.Get("http://" + a[2] + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", a[2], resp.StatusCode)
		}
		held := regexp.MustCompile(`(?m)^DCGM_FI_DEV_SM_CLOCK\{gpu="[0-9]",[^}]*Hostname="` + a[1] + `",[^}]*,container="vllm",namespace="demo",pod="` + a[3] + `"\} [0-9]+$`)
		idle := regexp.MustCompile(`(?m)^DCGM_FI_DEV_SM_CLOCK\{gpu="[23]",[^}]*Hostname="` + a[1] + `",DCGM_FI_DRIVER_VERSION="[^"]+"\} [0-9]+$`)
		if n, m := len(held.FindAllString(string(body), -1)), len(idle.FindAllString(string(body), -1)); n != 2 || m != 2 {
			t.Errorf("%s: %d GPUs held by %s, %d idle; want 2 and 2:\n%s", a[1], n, a[3], m, body)
		}
	}
	cancel()
	<-done

	for _, bad := range [][]string{
		{"--listen", "127.0.0.1:0", "--dcgm-listen", "127.0.0.1:0,127.0.0.1:0"},
		{"--listen", "127.0.0.1:0", "--dcgm-listen", "127.0.0.1:0", "--dcgm-flavor", "5.0"},
		{"--listen", "127.0.0.1:0", "--dcgm-listen", "127.0.0.1:0", "--tensor-parallel-size", "4", "--gpus-per-node", "2"},
	} {
		var errb syncBuffer
		if code := runWith(context.Background(), bad, &errb, nil); code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", bad, code, errb.String())
		}
	}
}
