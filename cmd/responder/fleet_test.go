package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	rules "github.com/vllm-responder/vllm-responder/deploy/prometheus"
	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/sim"
)

// Tests of the setups vLLM fleets commonly run on: KServe's renamed metrics, the production-stack
// router beside the engines, and a static scrape config without pod labels. Each scrapes a real
// vllm-sim with a real Prometheus.

func startSim(t *testing.T) *httptest.Server {
	t.Helper()
	eng, err := sim.NewEngine(sim.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sim.NewServer(eng, sim.NewProfiler(t.TempDir(), 10*time.Millisecond, 1, zerolog.Nop()), zerolog.Nop()))
	t.Cleanup(srv.Close)
	return srv
}

// promQuery returns the result vector of an instant query, as JSON-decoded samples.
func promQuery(t *testing.T, promURL, q string) []map[string]any {
	t.Helper()
	r, err := http.Get(promURL + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var ans struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []map[string]any `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(r.Body).Decode(&ans); err != nil || ans.Status != "success" {
		t.Fatalf("query %s: %v %s", q, err, ans.Error)
	}
	return ans.Data.Result
}

func waitForSeries(t *testing.T, promURL, q string) {
	t.Helper()
	testenv.WaitFor(t, 60*time.Second, "Prometheus to scrape "+q, func() bool {
		r, err := http.Get(promURL + "/api/v1/query?query=" + url.QueryEscape(q))
		if err != nil {
			return false
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return strings.Contains(string(b), `"value"`)
	})
}

func evidenceValue(res triageJSON, name string) *float64 {
	for _, e := range res.Evidence {
		if e.Name == name {
			return e.Value
		}
	}
	return nil
}

// TestKServeRenamedMetricsAreFoundWithTheirPrefix: vllm-sim scraped through KServe's rename
// (a metric_relabel_configs rule vllm:* -> kserve_vllm:*) is no-data with vLLM's own names and
// diagnosed with vllm.metric_prefix kserve_vllm:.
func TestKServeRenamedMetricsAreFoundWithTheirPrefix(t *testing.T) {
	t.Parallel()
	vllm := startSim(t)
	prom := testenv.Prometheus(t, testenv.PromOptions{
		ScrapeTargets: []testenv.Target{{Addr: strings.TrimPrefix(vllm.URL, "http://"), Labels: map[string]string{"namespace": "llm", "pod": "llama-predictor-0"}}},
		MetricRelabelConfigs: `      - source_labels: [__name__]
        regex: "vllm:(.*)"
        target_label: __name__
        replacement: "kserve_vllm:$1"`,
	})
	waitForSeries(t, prom.URL, `kserve_vllm:num_requests_running{pod="llama-predictor-0"}`)
	if got := promQuery(t, prom.URL, `{__name__=~"vllm:.+"}`); len(got) != 0 {
		t.Fatalf("the rename left %d vllm: series", len(got))
	}

	res, stderr, code := triageCLI(t, "--config", writeConfig(t, prom.URL, ""), "--label", "pod=llama-predictor-0")
	if code != 0 || res.Verdict != "no-data" {
		t.Fatalf("with vLLM's own names: exit %d, verdict %q (want no-data): %s", code, res.Verdict, stderr)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "queried vLLM metrics named vllm:* (vllm.metric_prefix") {
		t.Errorf("the no-data diagnosis does not say which names it queried: %v", res.Notes)
	}
	res, stderr, code = triageCLI(t, "--config", writeConfig(t, prom.URL, "vllm: {metric_prefix: \"kserve_vllm:\"}\n"), "--label", "pod=llama-predictor-0")
	if code != 0 || res.Verdict != "healthy" {
		t.Fatalf("with metric_prefix kserve_vllm:: exit %d, verdict %q (want healthy): %s %+v", code, res.Verdict, stderr, res)
	}
	if v := evidenceValue(res, "running"); v == nil {
		t.Fatalf("no running requests read under kserve_vllm: %+v", res.Evidence)
	}
	for _, e := range res.Evidence {
		if strings.Contains(strings.ReplaceAll(e.Query, "kserve_vllm:", ""), "vllm:") {
			t.Errorf("%s still queries a vllm: name: %s", e.Name, e.Query)
		}
	}

	var out bytes.Buffer
	if code := run(context.Background(), []string{"check", "--config", writeConfig(t, prom.URL, "vllm: {metric_prefix: \"kserve_vllm:\"}\n")}, &out, io.Discard); code != 0 ||
		!strings.Contains(out.String(), "metric prefix kserve_vllm:") {
		t.Fatalf("responder check does not print the prefix in force (exit %d):\n%s", code, out.String())
	}
}

// routerExporter stands in for vLLM's production-stack router: its own vllm:num_requests_running
// and _waiting per backend engine, labelled server, with far more than the engine has.
func routerExporter(t *testing.T, backend, model string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{server=%q,model_name=%q} 300\n", backend, model)
		fmt.Fprintf(w, "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{server=%q,model_name=%q} 500\n", backend, model)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestTheRouterIsNotTakenForAnEngine: with a production-stack router scraped into the same
// Prometheus, the playbooks read the engine's queue (not the router's 500), the queue rule does
// not fire for it, and the router's pod cannot be profiled.
func TestTheRouterIsNotTakenForAnEngine(t *testing.T) {
	t.Parallel()
	vllm := startSim(t)
	model := sim.DefaultConfig().ModelName
	router := routerExporter(t, vllm.URL, model)
	prom := testenv.Prometheus(t, testenv.PromOptions{ScrapeTargets: []testenv.Target{
		{Addr: strings.TrimPrefix(vllm.URL, "http://"), Labels: map[string]string{"namespace": "llm", "pod": "vllm-0"}},
		{Addr: strings.TrimPrefix(router.URL, "http://"), Labels: map[string]string{"namespace": "llm", "pod": "vllm-router-0"}, Job: "router"},
	}})
	waitForSeries(t, prom.URL, `vllm:num_requests_waiting{pod="vllm-router-0"}`)
	waitForSeries(t, prom.URL, `vllm:num_requests_waiting{pod="vllm-0"}`)

	// The router's 300 running show in the running batch unless its series are excluded. (The
	// queue reads vLLM's num_requests_waiting_by_reason where the engine exports it, which the
	// router does not: the router's waiting would not count there either way.)
	for _, c := range []struct {
		name, extra string
		router      bool
	}{
		{"router series excluded (the default)", "", false},
		{"router_label empty: the router counts (the test can fail)", "vllm: {router_label: \"\"}\n", true},
	} {
		res, stderr, code := triageCLI(t, "--config", writeConfig(t, prom.URL, c.extra), "--label", "model_name="+model)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.name, code, stderr)
		}
		if v := evidenceValue(res, "waiting"); v == nil || *v != 0 {
			t.Errorf("%s: waiting %v, want the engine's 0", c.name, v)
		}
		if v := evidenceValue(res, "running"); v == nil || (*v >= 300) != c.router {
			t.Errorf("%s: running %v; the router's 300 counted: want %v", c.name, v, c.router)
		}
	}

	// The queue rule, evaluated by this Prometheus as rendered for it: nothing above threshold.
	for _, r := range mustRenderedRules(t, "fast") {
		if r.Alert != "VLLMQueueDepthHigh" {
			continue
		}
		if got := promQuery(t, prom.URL, r.Expr); len(got) != 0 {
			t.Errorf("VLLMQueueDepthHigh would fire for %v", got)
		}
		if got := promQuery(t, prom.URL, strings.ReplaceAll(r.Expr, `{server=""}`, "")); len(got) != 1 {
			t.Errorf("without the exclusion the rule should fire for the router, got %v", got)
		}
	}

	var errb bytes.Buffer
	cfg := writeConfig(t, prom.URL, "profile: {enabled: true, default_duration: 1s}\n")
	if code := run(context.Background(), []string{"profile", "--config", cfg, "--pod", "vllm-router-0"}, io.Discard, &errb); code != 1 ||
		!strings.Contains(errb.String(), `no vllm:num_requests_running series with pod="vllm-router-0"`) {
		t.Fatalf("profiling the router: exit %d: %s", code, errb.String())
	}
}

func mustRenderedRules(t *testing.T, profile string, sets ...string) []rules.Rule {
	t.Helper()
	b, err := rules.RenderProfile(profile, sets...)
	if err != nil {
		t.Fatal(err)
	}
	rf, err := rules.ParseRules(b)
	if err != nil {
		t.Fatal(err)
	}
	var out []rules.Rule
	for _, g := range rf.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

// TestStaticScrapeConfigWithoutPodFallsBackToInstance: vllm-sim scraped by a static config with
// only job and instance. An alert grouped by instance (the static rules) is diagnosed on that
// instance, the diagnosis says so, and the instance can be profiled.
func TestStaticScrapeConfigWithoutPodFallsBackToInstance(t *testing.T) {
	t.Parallel()
	vllm := startSim(t)
	instance := strings.TrimPrefix(vllm.URL, "http://")
	prom := testenv.Prometheus(t, testenv.PromOptions{ScrapeTargets: []testenv.Target{{Addr: instance}}})
	waitForSeries(t, prom.URL, `vllm:num_requests_running{instance="`+instance+`"}`)

	// The static profile's rules group by instance: each rule's expression without its
	// threshold returns one series per instance here.
	for _, r := range mustRenderedRules(t, "static", "alerts.queue.threshold=0.5") {
		if r.Alert != "VLLMQueueDepthHigh" {
			continue
		}
		q := strings.Replace(r.Expr, "> 0.5", ">= 0", 1)
		got := promQuery(t, prom.URL, q)
		if len(got) != 1 || got[0]["metric"].(map[string]any)["instance"] != instance {
			t.Fatalf("%s: want one series for instance %s, got %v", q, instance, got)
		}
	}

	var out bytes.Buffer
	code := run(context.Background(), []string{"triage", "--output", "json", "--config", writeConfig(t, prom.URL, ""),
		"--alert", "VLLMQueueDepthHigh", "--label", "instance=" + instance, "--label", "model_name=" + sim.DefaultConfig().ModelName}, &out, io.Discard)
	var res struct {
		Verdict  string            `json:"verdict"`
		PodLabel string            `json:"pod_label"`
		Scope    map[string]string `json:"scope"`
		Notes    []string          `json:"notes"`
		Evidence []struct {
			Name  string   `json:"name"`
			Value *float64 `json:"value"`
			Query string   `json:"query"`
		} `json:"evidence"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || code != 0 {
		t.Fatalf("exit %d, %v: %s", code, err, out.String())
	}
	if res.Verdict == "no-data" || res.PodLabel != "instance" || res.Scope["instance"] != instance {
		t.Fatalf("verdict %s, pod_label %q, scope %v: want the instance as the pod", res.Verdict, res.PodLabel, res.Scope)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "pod selected by the instance label") {
		t.Errorf("the diagnosis does not say which label it used: %v", res.Notes)
	}
	for _, e := range res.Evidence {
		if !strings.Contains(e.Query, `instance="`+instance+`"`) {
			t.Errorf("%s not scoped to the instance: %s", e.Name, e.Query)
		}
	}

	// Profiling: the pod name given is looked up as a pod, then as an instance.
	var pout, perr bytes.Buffer
	cfg := writeConfig(t, prom.URL, "profile: {enabled: true, default_duration: 1s, allowed_networks: [127.0.0.0/8]}\n")
	if code := run(context.Background(), []string{"profile", "--config", cfg, "--pod", instance, "--duration", "1s"}, &pout, &perr); code != 0 {
		t.Fatalf("profile by instance: exit %d: %s %s", code, pout.String(), perr.String())
	}
}
