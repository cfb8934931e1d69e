package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// playbooksTest runs `responder playbooks test DIR`.
func playbooksTest(t *testing.T, dir string) (string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"playbooks", "test", dir}, &out, &errb)
	return out.String() + errb.String(), code
}

// A fixture written by `triage --fixture` from a real Prometheus reproduces the diagnosis offline:
// `playbooks test` passes when it expects the verdict given and fails, naming both verdicts, when
// it expects the one the user believes is right.
func TestTriageFixtureRoundTripsThroughPlaybooksTest(t *testing.T) {
	t.Parallel()
	prom := startRecordedPrometheus(t)
	cfg := writeConfig(t, prom.URL, "")
	cases := []struct {
		name, alert, pod, given, chosen string
	}{
		{"the TTFT alert of a preempting pod", "VLLMTimeToFirstTokenP99High", "vllm-kv", "kv-preemption", "capacity-past-knee"},
		{"on-demand triage with its fleet view", "", "vllm-capacity", "capacity-past-knee", "load-imbalance"},
		{"a narrow-batch ITL rise", "VLLMInterTokenLatencyP99High", "vllm-itl-narrow", "inconclusive", "decode-bound"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, expect := range []string{tc.given, tc.chosen} {
				dir := t.TempDir()
				file := filepath.Join(dir, "wrong_test.yaml")
				args := []string{"--config", cfg, "--label", "pod=" + tc.pod, "--label", "namespace=llm", "--fixture", file, "--expect", expect}
				if tc.alert != "" {
					args = append(args, "--alert", tc.alert)
				}
				res, stderr, code := triageCLI(t, args...)
				if code != 0 || res.Verdict != tc.given {
					t.Fatalf("exit %d, verdict %s, want %s: %s", code, res.Verdict, tc.given, stderr)
				}
				if !strings.Contains(stderr, "fixture written to "+file) {
					t.Errorf("stderr does not say where the fixture went: %q", stderr)
				}
				body, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(body), "pod: "+tc.pod) || !strings.Contains(string(body), "verdict: "+expect) {
					t.Fatalf("fixture lacks the alert's labels or the expected verdict:\n%s", body)
				}
				if tc.alert == "" && !strings.Contains(string(body), "  fleet:\n") {
					t.Fatalf("the on-demand triage's fixture lacks its fleet values:\n%s", body)
				}
				out, code := playbooksTest(t, dir)
				if expect == tc.given && code != 0 {
					t.Fatalf("the fixture of a %s diagnosis does not reproduce it (exit %d):\n%s\n%s", tc.given, code, out, body)
				}
				if expect != tc.given && (code == 0 || !strings.Contains(out, "-expected: "+expect) || !strings.Contains(out, "+got:      "+tc.given)) {
					t.Fatalf("a fixture expecting %s must fail with %s given (exit %d):\n%s", expect, tc.given, code, out)
				}
			}
		})
	}
}

func TestTriageFixtureFlagsAreCheckedBeforeAnythingRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	existing := filepath.Join(dir, "old_test.yaml")
	if err := os.WriteFile(existing, []byte("tests: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, "http://127.0.0.1:1", "")
	cases := []struct {
		name, want string
		args       []string
	}{
		{"--fixture without --expect", "--fixture needs --expect VERDICT", []string{"--fixture", filepath.Join(dir, "a_test.yaml")}},
		{"--expect without --fixture", "--expect needs --fixture FILE", []string{"--expect", "healthy"}},
		{"an unknown verdict", `--expect: unknown verdict "capacity" (one of capacity-past-knee,`, []string{"--fixture", filepath.Join(dir, "a_test.yaml"), "--expect", "capacity"}},
		{"a file playbooks test would not read", "playbooks test reads only files named *_test.yaml", []string{"--fixture", filepath.Join(dir, "a.yaml"), "--expect", "healthy"}},
		{"an existing file", "exists; not overwriting it", []string{"--fixture", existing, "--expect", "healthy"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := triageCLI(t, append([]string{"--config", cfg}, tc.args...)...)
			if code != 1 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q, want 1 and %q", code, stderr, tc.want)
			}
		})
	}
	if b, _ := os.ReadFile(existing); string(b) != "tests: []\n" {
		t.Fatalf("the existing fixture was changed: %q", b)
	}
}
