package testenv

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Target is one scrape target with the labels the scrape config adds (pod, namespace: vLLM adds
// none of its own).
type Target struct {
	Addr   string
	Labels map[string]string
	// Job is the scrape job (default vllm); targets of one job share its relabelling.
	Job string
}

// PromOptions configures a test Prometheus.
type PromOptions struct {
	// OpenMetrics, when set, is backfilled into the TSDB with `promtool tsdb create-blocks-from
	// openmetrics` before the server starts: recorded series with history. End it with "# EOF".
	OpenMetrics string
	// BackfillRules, when set with OpenMetrics, are rule files whose recording rules are
	// evaluated over the whole recorded history (`promtool tsdb create-blocks-from rules`, at
	// each group's interval) once the server holds it; the server is then restarted with their
	// series. Backfilled series carry no staleness markers (a rule that records a series only
	// while a condition holds would seem to go on for the lookback after it): the shipped
	// recording rules record every series all the time.
	BackfillRules []string
	// BackfillFrom and BackfillTo bound the rules' backfill (the recorded history's span).
	BackfillFrom, BackfillTo time.Time
	// ScrapeTargets are scraped every ScrapeInterval (default 1s).
	ScrapeTargets  []Target
	ScrapeInterval time.Duration
	// RuleFiles are loaded and evaluated every EvaluationInterval (default 1s).
	RuleFiles          []string
	EvaluationInterval time.Duration
	// Alertmanagers receive the alerts (host:port).
	Alertmanagers []string
	// MetricRelabelConfigs is the YAML list of metric_relabel_configs of the vllm job (KServe's
	// PodMonitor renames vllm:* to kserve_vllm:* this way), indented for the job.
	MetricRelabelConfigs string
	// WebConfig is the content of Prometheus' --web.config.file (tls_server_config,
	// basic_auth_users). With tls_server_config the URL is https. Client, then required, is what
	// the readiness check uses (it must trust the certificate and send the credentials).
	WebConfig string
	Client    *http.Client
}

// Binaries: PROMETHEUS_BIN and PROMTOOL_BIN, when set, name the Prometheus under test (the
// opt-in PROMETHEUS3=1 make test points them at a Prometheus 3 built from its Go module);
// otherwise Debian's on PATH.
func promBinary(t testing.TB, env, name string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	return Binary(t, name)
}

// PromServer is a real Prometheus started for a test.
type PromServer struct {
	URL     string
	Dir     string
	Proc    *Process
	opts    PromOptions
	cfgPath string
	// RecordedUntil is when the recorded history ends (RecordedPrometheusWithRules): the rules'
	// series are backfilled up to it and no further, so that evaluating there reads both alike
	// (past it, a backfilled series, which has no staleness marker, would seem to go on for the
	// lookback while the raw series have ended).
	RecordedUntil time.Time
	// RecordedAt is the "now" a recorded history was written for (RecordedPrometheus: its last
	// samples are 15 s before it): a triage evaluated there (--at) reads the recording as if run
	// at once, however long the backfill and the test took.
	RecordedAt time.Time
}

// Prometheus starts a real Prometheus on a loopback port and waits until it is ready.
func Prometheus(t testing.TB, o PromOptions) *PromServer {
	t.Helper()
	bin := promBinary(t, "PROMETHEUS_BIN", "prometheus")
	dir := t.TempDir()
	data := dir + "/data"
	if o.OpenMetrics != "" {
		promtool := promBinary(t, "PROMTOOL_BIN", "promtool")
		src := writeFile(t, dir, "backfill.om", o.OpenMetrics)
		mustRun(t, promtool, "tsdb", "create-blocks-from", "openmetrics", src, data)
	}
	if o.ScrapeInterval == 0 {
		o.ScrapeInterval = time.Second
	}
	if o.EvaluationInterval == 0 {
		o.EvaluationInterval = time.Second
	}
	cfgPath := writeFile(t, dir, "prometheus.yml", configYAML(o))
	port := FreePort(t)
	p := &PromServer{URL: "http://" + addr(port), Dir: dir, opts: o, cfgPath: cfgPath}
	args := []string{"--config.file=" + cfgPath}
	ready := httpOK
	if o.WebConfig != "" {
		args = append(args, "--web.config.file="+writeFile(t, dir, "web.yml", o.WebConfig))
		if strings.Contains(o.WebConfig, "tls_server_config") {
			p.URL = "https://" + addr(port)
		}
		if o.Client == nil {
			t.Fatal("testenv.Prometheus: WebConfig needs a Client for the readiness check")
		}
		ready = func(u string) bool { return clientOK(o.Client, u) }
	}
	args = append(args,
		"--storage.tsdb.path="+data,
		"--storage.tsdb.retention.time=30d",
		"--web.listen-address="+addr(port),
		"--web.enable-lifecycle",
		"--query.lookback-delta=5m",
	)
	p.Proc = Start(t, "prometheus", bin, args...)
	WaitFor(t, 60*time.Second, "prometheus to be ready", func() bool { return ready(p.URL + "/-/ready") })
	if len(o.BackfillRules) > 0 && o.OpenMetrics != "" {
		promtool := promBinary(t, "PROMTOOL_BIN", "promtool")
		blocks := dir + "/rule-blocks"
		mustRun(t, promtool, append([]string{"tsdb", "create-blocks-from", "rules", "--quiet",
			"--start=" + strconv.FormatInt(o.BackfillFrom.Unix(), 10), "--end=" + strconv.FormatInt(o.BackfillTo.Unix(), 10),
			"--url=" + p.URL, "--output-dir=" + blocks}, o.BackfillRules...)...)
		p.Proc.Stop()
		entries, err := os.ReadDir(blocks)
		if err != nil {
			t.Fatalf("rule backfill: %v", err)
		}
		for _, e := range entries {
			if err := os.Rename(blocks+"/"+e.Name(), data+"/"+e.Name()); err != nil {
				t.Fatalf("rule backfill: %v", err)
			}
		}
		p.Proc = Start(t, "prometheus", bin, args...)
		WaitFor(t, 60*time.Second, "prometheus to be ready with the recorded rules", func() bool { return ready(p.URL + "/-/ready") })
	}
	return p
}

// configYAML is the prometheus.yml of o (its intervals defaulted).
func configYAML(o PromOptions) string {
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "global:\n  scrape_interval: %s\n  evaluation_interval: %s\n", dur(o.ScrapeInterval), dur(o.EvaluationInterval))
	if len(o.RuleFiles) > 0 {
		cfg.WriteString("rule_files:\n")
		for _, f := range o.RuleFiles {
			fmt.Fprintf(&cfg, "  - %q\n", f)
		}
	}
	if len(o.Alertmanagers) > 0 {
		cfg.WriteString("alerting:\n  alertmanagers:\n    - static_configs:\n        - targets:\n")
		for _, a := range o.Alertmanagers {
			fmt.Fprintf(&cfg, "            - %q\n", a)
		}
	}
	if len(o.ScrapeTargets) > 0 {
		cfg.WriteString("scrape_configs:\n")
		var jobs []string
		byJob := map[string][]Target{}
		for _, tg := range o.ScrapeTargets {
			if tg.Job == "" {
				tg.Job = "vllm"
			}
			if _, ok := byJob[tg.Job]; !ok {
				jobs = append(jobs, tg.Job)
			}
			byJob[tg.Job] = append(byJob[tg.Job], tg)
		}
		for _, job := range jobs {
			fmt.Fprintf(&cfg, "  - job_name: %q\n", job)
			if job == "vllm" && o.MetricRelabelConfigs != "" {
				cfg.WriteString("    metric_relabel_configs:\n" + o.MetricRelabelConfigs + "\n")
			}
			cfg.WriteString("    static_configs:\n")
			for _, tg := range byJob[job] {
				fmt.Fprintf(&cfg, "      - targets: [%q]\n", tg.Addr)
				if len(tg.Labels) > 0 {
					cfg.WriteString("        labels:\n")
					for k, v := range tg.Labels {
						fmt.Fprintf(&cfg, "          %s: %q\n", k, v)
					}
				}
			}
		}
	}
	return cfg.String()
}

// AddTargets adds scrape targets to a running Prometheus (its config rewritten, then
// POST /-/reload) and waits until each is scraped up: a pod that appears later, with no history
// before it.
func (p *PromServer) AddTargets(t testing.TB, targets ...Target) {
	t.Helper()
	p.opts.ScrapeTargets = append(p.opts.ScrapeTargets, targets...)
	if err := os.WriteFile(p.cfgPath, []byte(configYAML(p.opts)), 0o644); err != nil {
		t.Fatal(err)
	}
	p.Reload(t)
	client := p.opts.Client
	if client == nil {
		client = http.DefaultClient
	}
	for _, tg := range targets {
		WaitFor(t, time.Minute, "prometheus to scrape "+tg.Addr, func() bool { return p.targetUp(client, tg.Addr) })
	}
}

// Reload makes Prometheus read its config and rule files again (POST /-/reload): after a test
// rewrote a rule file, for example.
func (p *PromServer) Reload(t testing.TB) {
	t.Helper()
	client := p.opts.Client
	if client == nil {
		client = http.DefaultClient
	}
	r, err := client.Post(p.URL+"/-/reload", "", nil)
	if err != nil {
		t.Fatalf("prometheus reload: %v", err)
	}
	r.Body.Close()
	if r.StatusCode != 200 {
		t.Fatalf("prometheus reload: %s", r.Status)
	}
}

// targetUp reports whether the target at addr is scraped with health "up".
func (p *PromServer) targetUp(client *http.Client, addr string) bool {
	r, err := client.Get(p.URL + "/api/v1/targets?state=active")
	if err != nil {
		return false
	}
	defer r.Body.Close()
	var resp struct {
		Data struct {
			ActiveTargets []struct {
				ScrapeURL string `json:"scrapeUrl"`
				Health    string `json:"health"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	if json.NewDecoder(r.Body).Decode(&resp) != nil {
		return false
	}
	for _, a := range resp.Data.ActiveTargets {
		if strings.Contains(a.ScrapeURL, "//"+addr+"/") && a.Health == "up" {
			return true
		}
	}
	return false
}

// Stop stops the server.
func (p *PromServer) Stop() { p.Proc.Stop() }

// dur formats a duration the way Prometheus configs want it (whole milliseconds).
func dur(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + "ms" }
