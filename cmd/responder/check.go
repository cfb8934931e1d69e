package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/vllm-responder/vllm-responder/config"
	"github.com/vllm-responder/vllm-responder/internal/configerr"
	"github.com/vllm-responder/vllm-responder/internal/secret"
	"github.com/vllm-responder/vllm-responder/internal/stack"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "configuration file (required)")
	quiet := fs.Bool("quiet", false, "print only errors")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *cfgPath == "" {
		fmt.Fprintln(stderr, "responder check: --config is required")
		return 2
	}
	c, err := config.Load(*cfgPath)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	set, err := stack.LoadPlaybooks(c)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if *quiet {
		return 0
	}
	fmt.Fprintf(stdout, "config %s: ok\n", *cfgPath)
	for _, d := range c.Deprecated {
		fmt.Fprintf(stdout, "  deprecated: %s\n", d)
	}
	notifier := notifiersLine(c)
	st := "memory (single replica)"
	if c.Redis.RedisEnabled() {
		st = "redis"
	}
	fmt.Fprintf(stdout, "  prometheus: %s\n  notifier:   %s\n  store:      %s\n  profiling:  %v\n", secret.URL(c.Prometheus.URL), notifier, st, c.Profile.Enabled)
	router := "router series excluded (" + c.VLLM.RouterLabel + `="")`
	if c.VLLM.RouterLabel == "" {
		router = "router series not excluded (vllm.router_label is empty)"
	}
	fmt.Fprintf(stdout, "  vllm:       metric prefix %s; pods by label %s (else instance); %s\n", c.VLLM.MetricPrefix, c.VLLM.PodLabel, router)
	tracesLine := "off"
	if c.Traces.Enabled() {
		tracesLine = fmt.Sprintf("Jaeger %s, service %q, the %d slowest over %s", secret.URL(c.Traces.URL), c.Traces.Service, c.Traces.Limit, configerr.FormatDuration(c.Traces.MinDuration))
	}
	fmt.Fprintf(stdout, "  traces:     %s\n", tracesLine)
	fmt.Fprintf(stdout, "playbooks (%d, in matching order):\n", len(set.All()))
	for _, p := range set.All() {
		origin := p.Source
		fmt.Fprintf(stdout, "  %-26s %-38s %d queries, %d verdicts  [%s]\n", p.Name, matchString(p), len(p.Queries), len(p.Verdicts), origin)
	}
	fmt.Fprintln(stdout, "\neffective configuration (secrets redacted):")
	fmt.Fprint(stdout, indent(c.Redacted(), "  "))
	return 0
}

func matchString(p *playbooks.Playbook) string {
	if p.OnDemand && len(p.Matchers) == 0 {
		return "(on demand)"
	}
	var parts []string
	for _, m := range p.Matchers {
		parts = append(parts, m.String())
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func indent(s, pre string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = pre + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

func runPlaybooksTest(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("playbooks test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "configuration file (optional: its playbooks.dir and params apply)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	dirs := fs.Args()
	if len(dirs) == 0 {
		fmt.Fprintln(stderr, "usage: responder playbooks test [--config FILE] DIR...")
		return 2
	}
	c := config.Default()
	if *cfgPath != "" {
		var err error
		if c, err = config.Load(*cfgPath); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}
	set, err := stack.LoadPlaybooks(c, dirs...)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	files, err := playbooks.LoadFixtures(dirs...)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	results := playbooks.RunFixtures(set, files)
	if len(results) == 0 {
		fmt.Fprintf(stderr, "no fixtures (*_test.yaml) found in %s\n", strings.Join(dirs, ", "))
		return 1
	}
	failed := 0
	for _, r := range results {
		if r.Diff == "" {
			continue
		}
		failed++
		fmt.Fprintf(stdout, "FAIL %s: %s\n%s\n\n", r.File, r.Name, indent(r.Diff, "  "))
	}
	fmt.Fprintf(stdout, "%d passed, %d failed\n", len(results)-failed, failed)
	if failed > 0 {
		return 1
	}
	return 0
}
