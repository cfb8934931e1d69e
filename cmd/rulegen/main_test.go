package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rules "github.com/vllm-responder/vllm-responder/deploy/prometheus"
)

func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

func TestFastProfileIsWrittenToTheNamedFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "fast.yml")
	code, stdout, stderr := runCmd(t, "-profile", "fast", "-o", out)
	if code != 0 || stdout != "" || stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := rules.RenderProfile("fast")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, want) {
		t.Fatal("written file differs from the rendering")
	}
	if !strings.Contains(string(b), "[30s]") || !strings.Contains(string(b), "for: 15s") {
		t.Fatalf("fast rules lack 30s windows or for: 15s:\n%s", b)
	}
}

func TestProductionGoesToStdoutByDefault(t *testing.T) {
	code, stdout, stderr := runCmd(t)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stdout, `profile "production"`) || !strings.Contains(stdout, "[5m]") {
		t.Fatalf("unexpected output:\n%s", stdout)
	}
}

func TestOverridesReachTheRulesAndWarn(t *testing.T) {
	code, stdout, stderr := runCmd(t, "-profile", "fast", "-set", "alerts.queue.threshold=5", "-set", "alerts.ttft.threshold=30")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stdout, "avg_over_time(vllm:num_requests_waiting{server=\"\"}[15s]))\n          ) > 5\n") {
		t.Fatalf("queue threshold override missing:\n%s", stdout)
	}
	if !strings.Contains(stderr, "rulegen: warning: alerts.ttft.threshold 30 s is above") {
		t.Fatalf("no warning about the old top TTFT bucket: %q", stderr)
	}
}

func TestCheckReportsStaleFiles(t *testing.T) {
	dir := t.TempDir()
	fresh := filepath.Join(dir, "fresh.yml")
	if code, _, stderr := runCmd(t, "-o", fresh); code != 0 {
		t.Fatalf("render: %s", stderr)
	}
	if code, _, stderr := runCmd(t, "-check", fresh); code != 0 {
		t.Fatalf("fresh file reported stale: %s", stderr)
	}
	code, _, stderr := runCmd(t, "-profile", "fast", "-check", fresh)
	if code != 1 || !strings.Contains(stderr, "is stale for profile \"fast\": run go generate ./deploy/prometheus") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

func TestListProfiles(t *testing.T) {
	code, stdout, _ := runCmd(t, "-list")
	if code != 0 || stdout != "fast\nkserve\nproduction\nsim\nstatic\n" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
}

func TestBadInvocations(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown profile", []string{"-profile", "nope"}, 1, `rulegen: profiles.yaml: unknown profile "nope" (have fast, kserve, production, sim, static)`},
		{"unknown key", []string{"-set", "alerts.foo.threshold=1"}, 1, `rulegen: override "alerts.foo.threshold=1": unknown key "alerts.foo"`},
		{"stray argument", []string{"fast"}, 2, `rulegen: unexpected argument "fast"`},
		{"both -o and -check", []string{"-o", "a", "-check", "b"}, 2, "rulegen: -o and -check are exclusive"},
		{"unknown flag", []string{"-frobnicate"}, 2, "flag provided but not defined: -frobnicate"},
		{"missing file for -check", []string{"-check", "/nonexistent/rules.yml"}, 1, "rulegen: open /nonexistent/rules.yml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d (want %d), stderr %q (want %q)", code, tt.code, stderr, tt.want)
			}
			if stdout != "" {
				t.Fatalf("stdout %q on failure", stdout)
			}
		})
	}
}
