package sim

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestPyFloatRendersLikePrometheusClient(t *testing.T) {
	// Expected strings are what prometheus_client's floatToGoString returns.
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{1, "1.0"}, {0, "0.0"}, {0.001, "0.001"}, {2.5, "2.5"}, {2560, "2560.0"}, {7680, "7680.0"},
		{123456, "123456.0"}, {1234567, "1.234567e+06"}, {5e6, "5e+06"}, {1764584357.25, "1.76458435725e+09"},
		{0.00005, "5e-05"}, {1e16, "1e+16"}, {-3, "-3.0"},
	} {
		if got := pyFloat(tc.in); got != tc.want {
			t.Errorf("pyFloat(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func scrape(t *testing.T, url, accept string) (string, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url+"/metrics", nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.Header.Get("Content-Type"), string(b)
}

func TestExpositionIsPrometheusClients(t *testing.T) {
	url, _ := startServer(t, DefaultConfig(), "idle", nil)
	ctype, body := scrape(t, url, "text/plain")
	if !strings.HasPrefix(ctype, "text/plain; version=0.0.4") {
		t.Errorf("content type %q", ctype)
	}
	lbl := `engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"`
	for _, want := range []string{
		"# TYPE vllm:num_preemptions_total counter\nvllm:num_preemptions_total{" + lbl + "} 0.0\n",
		"# TYPE vllm:num_preemptions_created gauge\nvllm:num_preemptions_created{" + lbl + "} ",
		`vllm:time_to_first_token_seconds_bucket{engine="0",le="1.0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0`,
		`vllm:time_to_first_token_seconds_bucket{engine="0",le="2560.0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0`,
		`vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0` + "\nvllm:time_to_first_token_seconds_count{" + lbl + "} 0.0\nvllm:time_to_first_token_seconds_sum{" + lbl + "} 0.0\n",
		"# TYPE vllm:time_to_first_token_seconds_created gauge\n",
		"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{" + lbl + "} 0.0\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	for _, r := range []string{"stop", "length", "abort", "error", "repetition"} {
		want := `vllm:request_success_total{engine="0",finished_reason="` + r + `",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0`
		if !strings.Contains(body, want) {
			t.Errorf("finished_reason %q is not pre-created at 0", r)
		}
	}
	if strings.Contains(body, "_created gauge") && strings.Contains(body, "vllm:num_requests_running_created") {
		t.Error("gauges have no _created sample")
	}
	m := regexp.MustCompile(`vllm:prompt_tokens_created\{[^}]*\} ([0-9.e+]+)`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no vllm:prompt_tokens_created sample")
	}
	if !strings.HasSuffix(m[1], "e+09") {
		t.Errorf("created timestamp %q is not rendered as prometheus_client does (1.7...e+09)", m[1])
	}

	// The API server process's own series, as prometheus_client's process collector renders
	// them: a counter without a _created sample, the start time in exponent form.
	for _, want := range []string{
		"# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total ",
		"# TYPE process_open_fds gauge\nprocess_open_fds ",
		"# TYPE process_max_fds gauge\nprocess_max_fds 1.048576e+06\n",
		"# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes ",
		"# TYPE process_virtual_memory_bytes gauge\n",
		"# TYPE vllm:engine_sleep_state gauge\n",
		`vllm:engine_sleep_state{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct",sleep_state="awake"} 1.0`,
		`vllm:admission_rejections_total{model_name="meta-llama/Llama-3.1-8B-Instruct",reason="max_num_queued_reqs"} 0.0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, "process_cpu_seconds_created") {
		t.Error("process_cpu_seconds_total has no _created sample in prometheus_client")
	}
	if !regexp.MustCompile(`\nprocess_start_time_seconds [0-9.]+e\+09\n`).MatchString(body) {
		t.Error("process_start_time_seconds is not rendered as prometheus_client does (1.7...e+09)")
	}

	if ctype, _ := scrape(t, url, "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"); !strings.HasPrefix(ctype, "text/plain; version=0.0.4") {
		t.Errorf("content type %q for a scraper that prefers OpenMetrics: vllm-sim answers the text format", ctype)
	}
}

func TestBothNamesCarryTheSameValues(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MetricNames = NamesBoth
	v := newVirtual(t, cfg, "healthy")
	v.run(10 * time.Second)
	s := v.snap()
	if a, b := s.values["vllm:kv_cache_usage_perc"], s.values["vllm:gpu_cache_usage_perc"]; a != b || a == 0 {
		t.Errorf("kv_cache_usage_perc=%v gpu_cache_usage_perc=%v, want the same non-zero value", a, b)
	}
	if a, b := s.hists["vllm:inter_token_latency_seconds"].GetSampleCount(), s.hists["vllm:time_per_output_token_seconds"].GetSampleCount(); a != b || a == 0 {
		t.Errorf("ITL count %d, TPOT count %d, want the same non-zero count", a, b)
	}
}
