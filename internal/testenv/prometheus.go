package testenv

import (
	"fmt"
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
}

// PromOptions configures a test Prometheus.
type PromOptions struct {
	// OpenMetrics, when set, is backfilled into the TSDB with `promtool tsdb create-blocks-from
	// openmetrics` before the server starts: recorded series with history. End it with "# EOF".
	OpenMetrics string
	// ScrapeTargets are scraped every ScrapeInterval (default 1s).
	ScrapeTargets  []Target
	ScrapeInterval time.Duration
	// RuleFiles are loaded and evaluated every EvaluationInterval (default 1s).
	RuleFiles          []string
	EvaluationInterval time.Duration
	// Alertmanagers receive the alerts (host:port).
	Alertmanagers []string
}

// PromServer is a real Prometheus started for a test.
type PromServer struct {
	URL  string
	Dir  string
	Proc *Process
}

// Prometheus starts a real Prometheus on a loopback port and waits until it is ready.
func Prometheus(t testing.TB, o PromOptions) *PromServer {
	t.Helper()
	bin := Binary(t, "prometheus")
	dir := t.TempDir()
	data := dir + "/data"
	if o.OpenMetrics != "" {
		promtool := Binary(t, "promtool")
		src := writeFile(t, dir, "backfill.om", o.OpenMetrics)
		mustRun(t, promtool, "tsdb", "create-blocks-from", "openmetrics", src, data)
	}
	if o.ScrapeInterval == 0 {
		o.ScrapeInterval = time.Second
	}
	if o.EvaluationInterval == 0 {
		o.EvaluationInterval = time.Second
	}
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
		cfg.WriteString("scrape_configs:\n  - job_name: vllm\n    static_configs:\n")
		for _, tg := range o.ScrapeTargets {
			fmt.Fprintf(&cfg, "      - targets: [%q]\n", tg.Addr)
			if len(tg.Labels) > 0 {
				cfg.WriteString("        labels:\n")
				for k, v := range tg.Labels {
					fmt.Fprintf(&cfg, "          %s: %q\n", k, v)
				}
			}
		}
	}
	cfgPath := writeFile(t, dir, "prometheus.yml", cfg.String())
	port := FreePort(t)
	p := &PromServer{URL: "http://" + addr(port), Dir: dir}
	p.Proc = Start(t, "prometheus", bin,
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+data,
		"--storage.tsdb.retention.time=30d",
		"--web.listen-address="+addr(port),
		"--web.enable-lifecycle",
		"--query.lookback-delta=5m",
	)
	WaitFor(t, 60*time.Second, "prometheus to be ready", func() bool { return httpOK(p.URL + "/-/ready") })
	return p
}

// Stop stops the server.
func (p *PromServer) Stop() { p.Proc.Stop() }

// dur formats a duration the way Prometheus configs want it (whole milliseconds).
func dur(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + "ms" }
