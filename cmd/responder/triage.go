package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	cfgpkg "github.com/vllm-responder/vllm-responder/config"
	"github.com/vllm-responder/vllm-responder/dispatch"
	"github.com/vllm-responder/vllm-responder/evidence"
	"github.com/vllm-responder/vllm-responder/internal/secret"
	"github.com/vllm-responder/vllm-responder/notify/console"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

// labelFlags collects repeated --label k=v.
type labelFlags map[string]string

func (l labelFlags) String() string { return fmt.Sprint(map[string]string(l)) }

func (l labelFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q is not k=v", s)
	}
	l[k] = v
	return nil
}

// triageOutput is the JSON contract of `triage --output json` (README.md, "Command line").
type triageOutput struct {
	*playbooks.Diagnosis
}

func runTriage(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("triage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "configuration file (required)")
	promURL := fs.String("prometheus", "", "Prometheus URL (overrides prometheus.url)")
	alert := fs.String("alert", "", "alert name: run the playbook that matches it (default: on-demand triage)")
	output := fs.String("output", "text", "output format: text or json")
	timeout := fs.Duration("timeout", 30*time.Second, "deadline for the whole diagnosis")
	atFlag := fs.String("at", "", "run as of this time (RFC 3339 or Unix seconds): every query evaluated then, baselines a day before it (default: now)")
	fixture := fs.String("fixture", "", "also write the diagnosis' recorded values as a playbook fixture to this *_test.yaml file (with --expect)")
	expect := fs.String("expect", "", "the verdict the --fixture expects: the one you believe is right (playbooks test fails until the playbook gives it)")
	labels := labelFlags{}
	fs.Var(labels, "label", "alert label k=v, repeatable (model_name=..., pod=..., namespace=...)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "responder triage: "+format+"\n", a...)
		return 1
	}
	if *output != "text" && *output != "json" {
		return fail("--output must be text or json, not %q", *output)
	}
	if *cfgPath == "" {
		return fail("--config is required")
	}
	if err := checkFixtureFlags(*fixture, *expect); err != nil {
		return fail("%v", err)
	}
	var at time.Time
	if *atFlag != "" {
		var err error
		if at, err = parseAt(*atFlag, time.Now()); err != nil {
			return fail("--at: %v", err)
		}
	}
	c, err := loadConfigFor(*cfgPath, *promURL)
	if err != nil {
		return fail("%s", oneLine(err))
	}
	set, err := loadPlaybooks(c)
	if err != nil {
		return fail("%s", oneLine(err))
	}
	api, err := newPrometheusAPI(c)
	if err != nil {
		return fail("%s", oneLine(err))
	}
	if *alert != "" {
		labels["alertname"] = *alert
	}
	engine, err := newEngine(c, api, nil, zerolog.Nop())
	if err != nil {
		return fail("%s", oneLine(err))
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	d, err := dispatch.TriageAt(ctx, set, engine, labels, at)
	if unavailable, ok := errors.AsType[*evidence.UnavailableError](err); ok {
		return fail("Prometheus at %s unreachable: %s", secret.URL(c.Prometheus.URL), unavailable.Reason)
	}
	if err != nil {
		return fail("%s", oneLine(err))
	}
	if *fixture != "" {
		if err := writeFixture(*fixture, d, *expect); err != nil {
			return fail("--fixture: %v", err)
		}
		fmt.Fprintf(stderr, "responder triage: fixture written to %s (verdict %s, expects %s)\n", *fixture, d.Verdict, *expect)
	}
	if *output == "json" {
		b, err := encodeTriage(d)
		if err != nil {
			return fail("%v", err)
		}
		_, _ = stdout.Write(b)
		return 0
	}
	var b strings.Builder
	fmt.Fprintf(&b, "playbook: %s\n", d.Playbook)
	if !at.IsZero() {
		fmt.Fprintf(&b, "evaluated at: %s (--at)\n", d.EvaluatedAt.UTC().Format(time.RFC3339))
	}
	console.WriteDiagnosis(&b, d, "")
	fmt.Fprint(stdout, b.String())
	return 0
}

// encodeTriage is the JSON of `triage --output json` (also the MCP triage tool's answer).
func encodeTriage(d *playbooks.Diagnosis) ([]byte, error) {
	if d.Actions == nil {
		d.Actions = []string{}
	}
	if d.Evidence == nil {
		d.Evidence = []playbooks.Evidence{}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(triageOutput{d}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// checkFixtureFlags checks --fixture and --expect before anything runs.
func checkFixtureFlags(file, expect string) error {
	switch {
	case file == "" && expect == "":
		return nil
	case file == "":
		return errors.New("--expect needs --fixture FILE")
	case expect == "":
		return errors.New("--fixture needs --expect VERDICT (the verdict you believe is right)")
	case !slices.Contains(playbooks.KnownVerdicts, expect):
		return fmt.Errorf("--expect: unknown verdict %q (one of %s)", expect, strings.Join(playbooks.KnownVerdicts, ", "))
	case !strings.HasSuffix(file, "_test.yaml") && !strings.HasSuffix(file, "_test.yml"):
		return fmt.Errorf("--fixture: %s: playbooks test reads only files named *_test.yaml", file)
	}
	if _, err := os.Stat(file); err == nil {
		return fmt.Errorf("--fixture: %s exists; not overwriting it", file)
	}
	return nil
}

// writeFixture writes the diagnosis as a fixture expecting expect; an existing file is kept.
func writeFixture(file string, d *playbooks.Diagnosis, expect string) error {
	out, err := playbooks.FixtureFromDiagnosis(d, expect)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(out); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// maxAtSkew is how far in the future --at may be (clock skew between this host and Prometheus).
const maxAtSkew = time.Minute

// parseAt reads --at: RFC 3339 (2026-05-27T10:30:00Z, offsets and fractions allowed) or Unix
// seconds (1780000000, fractions allowed). A time in the future is an error.
func parseAt(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1e11 {
			return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time (2006-01-02T15:04:05Z) nor Unix seconds", s)
		}
		sec, frac := math.Modf(f)
		t = time.Unix(int64(sec), int64(frac*1e9))
	}
	if t.After(now.Add(maxAtSkew)) {
		return time.Time{}, fmt.Errorf("%s is in the future (now %s)", t.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return t, nil
}

// oneLine joins a multi-error into one line for the CLI contract.
func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

// loadConfigFor loads the config file of a one-shot subcommand (triage, mcp), with --prometheus
// (promURL, when set) in place of prometheus.url, validated again.
func loadConfigFor(path, promURL string) (*cfgpkg.Config, error) {
	c, err := cfgpkg.Load(path)
	if err != nil || promURL == "" {
		return c, err
	}
	c.Prometheus.URL = promURL
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}
