package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/stack"
	"github.com/vllm-responder/vllm-responder/notify/console"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/playbooks/fixture"
	"github.com/vllm-responder/vllm-responder/triage"
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

// runTriage is `responder triage`: the flags read into a triage.Request, the result printed.
func runTriage(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("triage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "configuration file (required)")
	promURL := fs.String("prometheus", "", "Prometheus URL (overrides prometheus.url)")
	alert := fs.String("alert", "", "alert name: run the playbook that matches it (default: on-demand triage)")
	output := fs.String("output", "text", "output format: text or json")
	timeout := fs.Duration("timeout", triage.Deadline, "deadline for the whole diagnosis")
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
	req := triage.Request{Alert: *alert, Labels: labels, Timeout: *timeout}
	if *atFlag != "" {
		var err error
		if req.At, err = triage.ParseAt(*atFlag, time.Now()); err != nil {
			return fail("--at: %v", err)
		}
	}
	c, err := stack.LoadConfig(*cfgPath, stack.PrometheusURL(*promURL))
	if err != nil {
		return fail("%s", triage.OneLine(err))
	}
	// The store only when it is shared (Redis): the open incident of the scope is named then.
	st, err := stack.New(c, stack.Options{Playbooks: true, Store: c.Redis.RedisEnabled()})
	if err != nil {
		return fail("%s", triage.OneLine(err))
	}
	defer st.Close()
	res, err := st.Triage.Run(ctx, req)
	if err != nil {
		return fail("%s", err)
	}
	if *fixture != "" {
		if err := writeFixture(*fixture, res.Diagnosis, *expect); err != nil {
			return fail("--fixture: %v", err)
		}
		fmt.Fprintf(stderr, "responder triage: fixture written to %s (verdict %s, expects %s)\n", *fixture, res.Verdict, *expect)
	}
	if *output == "json" {
		b, err := res.JSON()
		if err != nil {
			return fail("%v", err)
		}
		_, _ = stdout.Write(b)
		return 0
	}
	var b strings.Builder
	fmt.Fprintf(&b, "playbook: %s\n", res.Playbook)
	if !req.At.IsZero() {
		fmt.Fprintf(&b, "evaluated at: %s (--at)\n", res.EvaluatedAt.UTC().Format(time.RFC3339))
	}
	console.WriteDiagnosis(&b, res.Diagnosis, "")
	if inc := res.Incident; inc != nil {
		state := "firing since " + inc.Started.UTC().Format(time.RFC3339)
		if !inc.Open() {
			state = "resolved at " + inc.Resolved.UTC().Format(time.RFC3339) + " (an alert of it firing again soon rejoins it)"
		}
		fmt.Fprintf(&b, "incident: %s, %s: %d alerts, verdict %s\n", inc.ID, state, inc.Alerts(), inc.Verdict)
	}
	fmt.Fprint(stdout, b.String())
	return 0
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
	out, err := fixture.FromDiagnosis(d, expect)
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
