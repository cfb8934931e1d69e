package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

// TestMain lets testscript run the real main in-process as the command `responder` of the
// scripts in testdata/script (as cloudflare/pint's cmd/pint/tests do).
//
// The tests of this package run in parallel (t.Parallel; two at a time, go test's -parallel is
// GOMAXPROCS): each starts its own peers (Prometheus, Alertmanager, vllm-sim, a responder on
// ports of its own) and mostly waits on their clocks (scrapes, alerts' for:), so the end-to-end
// chain's minutes pass beside the other tests instead of after them. Its file, a_e2e_test.go,
// sorts first: the parallel tests start in the order first, last, then backwards, and the
// longest must start first, not last. Three stay sequential: a bound on a duration is their
// check (TestSlowPrometheusGivesPartialEvidenceMarkedAsSuch,
// TestSlackProfileCommandCapturesAProfileOnTheRealProfiler), or a storm of their own would load
// the machine under the others (TestSIGTERMDuringAStormDrainsEveryAcceptedAlert).
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"responder": func() { os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// recordedAt is the end of the recorded data the scripts' Prometheus holds: `triage --at` this
// time gives the same diagnosis, to the byte, on every run.
var recordedAt = time.Date(2026, 5, 27, 10, 30, 0, 0, time.UTC)

// TestScripts pins the CLI's exact output and exit codes (testdata/script/*.txtar, the README's
// examples among them). $PROM is a real Prometheus holding testenv.ScenarioLoads recorded up to
// $AT; $UNREACHABLE is a Prometheus URL nothing listens on. UPDATE_SCRIPTS=1 rewrites the
// scripts' cmp files from what the commands print (review the diff).
func TestScripts(t *testing.T) {
	t.Parallel()
	prom := testenv.Prometheus(t, testenv.PromOptions{OpenMetrics: testenv.RecordedVLLM(recordedAt, testenv.ScenarioLoads())})
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: os.Getenv("UPDATE_SCRIPTS") == "1",
		Setup: func(env *testscript.Env) error {
			env.Setenv("PROM", prom.URL)
			env.Setenv("AT", recordedAt.Format(time.RFC3339))
			env.Setenv("UNREACHABLE", "http://127.0.0.1:1")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){"exits": exits, "unvary": unvary},
	})
}

// exits CODE CMD ARGS... runs CMD as exec does (its stdout and stderr are then checked as
// exec's) and fails unless it exits with CODE: exec only tells zero from non-zero, and the
// CLI's exit codes are a contract (0 done, 1 failed, 2 a usage error).
func exits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE CMD [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

// varying matches the JSON fields whose value differs run to run (how long a diagnosis took).
var varying = regexp.MustCompile(`("duration_ms": )[0-9.e+-]+`)

// unvary IN OUT writes IN (a file, or stdout) to OUT with every varying value set to 0, for cmp.
func unvary(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: unvary IN OUT")
	}
	out := varying.ReplaceAllString(ts.ReadFile(args[0]), "${1}0")
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(out), 0o644))
}
