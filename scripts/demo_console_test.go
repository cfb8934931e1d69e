// Package scripts holds tests of the shell scripts' own logic (the scripts are not Go).
package scripts

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// console writes a console output in which the first diagnosis of VLLMQueueDepthHigh on pod
// vllm-demo-0 comes early and many more follow, as a long demo prints them.
func console(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("[FIRING] VLLMQueueDepthHigh  (1 alert(s))\n")
	b.WriteString("VLLMQueueDepthHigh namespace=\"demo\" pod=\"vllm-demo-0\"\n  verdict:  capacity-past-knee\n")
	b.WriteString("  Capacity, past the knee, and HPA vllm-demo is at its ceiling (3 of max 3): raise maxReplicas or shed load\n")
	for i := 0; i < n; i++ {
		b.WriteString("[FIRING] VLLMTimeToFirstTokenP99High  (1 alert(s))\n")
		b.WriteString("VLLMTimeToFirstTokenP99High namespace=\"demo\" pod=\"vllm-demo-0\"\n  verdict:  prefill-bound\n")
		b.WriteString("    evidence line that makes the output long, as the console notifier's evidence tables do\n")
		b.WriteString("[RESOLVED] VLLMTimeToFirstTokenP99High  (1 alert(s))\n")
	}
	f := filepath.Join(t.TempDir(), "responder.out")
	if err := os.WriteFile(f, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// run sources demo-console.sh under the demo's own shell options and runs script.
func run(t *testing.T, consoleFile, script string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", "-c", "set -euo pipefail\nsource ./demo-console.sh\n"+script)
	cmd.Env = append(os.Environ(), "CONSOLE="+consoleFile, "POD=vllm-demo-0")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestTheDemoReadsAVerdictEarlyInALongConsoleOutput(t *testing.T) {
	// 40,000 diagnoses: megabytes after the match, far more than a pipe holds. A reader that
	// stops at the first match must not fail the demo (it did: tail | awk exit, SIGPIPE, 141).
	f := console(t, 40000)
	out, err := run(t, f, `got=$(verdict_after 0 VLLMQueueDepthHigh); echo "got=$got"`)
	if err != nil || strings.TrimSpace(out) != "got=capacity-past-knee" {
		t.Fatalf("verdict_after: %v\n%s", err, out)
	}
	out, err = run(t, f, `got=$(title_after 0 VLLMQueueDepthHigh); echo "got=$got"`)
	if err != nil || strings.TrimSpace(out) != "got=Capacity, past the knee, and HPA vllm-demo is at its ceiling (3 of max 3): raise maxReplicas or shed load" {
		t.Fatalf("title_after: %v\n%s", err, out)
	}
	out, err = run(t, f, `got=$(verdict_after 4 VLLMQueueDepthHigh); echo "got=$got"`)
	if err != nil || strings.TrimSpace(out) != "got=" {
		t.Fatalf("verdict_after past the match: want nothing, got %v\n%s", err, out)
	}
}

func TestTheDemoCountsResolvedAlertsWhateverTheOutputSize(t *testing.T) {
	f := console(t, 40000)
	// The first alert (line 1) never resolved: not all clear from line 0; from line 4 every
	// alert that fired has resolved.
	if out, err := run(t, f, `resolved_since 0`); err == nil {
		t.Fatalf("resolved_since 0: want failure (an alert never resolved)\n%s", out)
	}
	if out, err := run(t, f, `resolved_since 4`); err != nil {
		t.Fatalf("resolved_since 4: %v\n%s", err, out)
	}
}

// The demo counts the parents of the incidents a scenario's alerts are in, and the alerts the
// largest has, from the console's incident lines (not the alert lines under them).
func TestTheDemoCountsTheIncidentsAScenarioOpened(t *testing.T) {
	out := `[FIRING] VLLMQueueDepthHigh  (1 alert(s), group g1)
incident 3fa9c1d2e0a1  model_name="llama" namespace="demo"  (1 alert, firing; opened)
  members:
  - VLLMQueueDepthHigh pod vllm-demo-0: capacity-past-knee, cause  (new)
VLLMQueueDepthHigh namespace="demo" pod="vllm-demo-0"
  verdict:  capacity-past-knee
[FIRING] VLLMTimeToFirstTokenP99High  (1 alert(s), group g2)
incident 3fa9c1d2e0a1  model_name="llama" namespace="demo"  (6 alerts, all firing; 1 alert joined)
  - VLLMTimeToFirstTokenP99High pod vllm-demo-2: capacity-past-knee, symptom  (new)
[FIRING] VLLMTimeToFirstTokenP99High  (1 alert(s), group g3)
incident 0123456789ab  model_name="llama" namespace="demo-ring"  (2 alerts, all firing; opened)
`
	f := filepath.Join(t.TempDir(), "responder.out")
	if err := os.WriteFile(f, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	for from, want := range map[string]string{"0": "2 6", "6": "2 6", "8": "1 2", "11": "0 0"} {
		got, err := run(t, f, "incidents_after "+from)
		if err != nil || strings.TrimSpace(got) != want {
			t.Errorf("incidents_after %s = %q (%v), want %q", from, got, err, want)
		}
	}
	// Of one key: the same model in another namespace (the demo's second ring) is another
	// incident.
	if got, err := run(t, f, `incidents_after 0 'namespace="demo"'`); err != nil || strings.TrimSpace(got) != "1 6" {
		t.Errorf("incidents_after 0 of namespace demo = %q (%v)", got, err)
	}
	// The incident lines are no alert of the pod: the verdict is still the alert's own.
	if got, err := run(t, f, `verdict_after 0 VLLMQueueDepthHigh`); err != nil || strings.TrimSpace(got) != "capacity-past-knee" {
		t.Errorf("verdict_after: %q (%v)", got, err)
	}
}
