package prometheus

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/gpu"
)

var committed = map[string]string{"production": ProductionFile, "fast": FastFile, "kserve": KServeFile}

func TestCommittedRulesFilesAreUpToDate(t *testing.T) {
	for profile, file := range committed {
		t.Run(profile, func(t *testing.T) {
			want, err := RenderProfile(profile)
			if err != nil {
				t.Fatal(err)
			}
			have, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(have, want) {
				t.Fatalf("%s is stale: it differs from the rendering of vllm-alerts.rules.yml.tmpl with profile %q; run `go generate ./deploy/prometheus` and commit the result", file, profile)
			}
		})
	}
}

// The fast variant must be the production rules with other windows, durations,
// thresholds and severities: never a different expression.
func TestProductionAndFastDifferOnlyInParameters(t *testing.T) {
	prod := mustRules(t, "production")
	fast := mustRules(t, "fast")
	window := regexp.MustCompile(`\[[0-9a-z]+\]`)
	number := regexp.MustCompile(`\b[0-9]+(\.[0-9]+)?(ms|s|m|h|d|w|y)?\b`) // 0.9, 10s, 5m
	normalize := func(s string) string {
		return number.ReplaceAllString(window.ReplaceAllString(s, "[W]"), "N")
	}
	if len(prod) != len(fast) {
		t.Fatalf("production has %d rules, fast %d", len(prod), len(fast))
	}
	for i := range prod {
		p, f := prod[i], fast[i]
		if p.Alert != f.Alert || p.Record != f.Record {
			t.Errorf("rule %d: production %s%s, fast %s%s", i, p.Alert, p.Record, f.Alert, f.Record)
			continue
		}
		if p.Record != "" {
			// The stall history's minute is the playbooks' (their stall_recent_min counts from
			// it), in every profile: only the group's interval differs (and the offset that
			// looks one interval back).
			if normalize(p.Expr) != normalize(f.Expr) || strings.Contains(p.Expr, "[1m]") != strings.Contains(f.Expr, "[1m]") {
				t.Errorf("%s: the recorded stall history differs between profiles:\nproduction: %s\nfast:       %s", p.Record, p.Expr, f.Expr)
			}
			continue
		}
		if normalize(p.Expr) != normalize(f.Expr) {
			t.Errorf("%s: expressions differ beyond windows and thresholds:\nproduction: %s\nfast:       %s", p.Alert, p.Expr, f.Expr)
		}
		if p.Expr == f.Expr {
			t.Errorf("%s: fast expression equals production; the fast profile should shorten its windows", p.Alert)
		}
		for k := range p.Annotations {
			if normalize(p.Annotations[k]) != normalize(f.Annotations[k]) {
				t.Errorf("%s: annotation %s differs beyond parameters", p.Alert, k)
			}
		}
		if len(p.Labels) != len(f.Labels) || len(p.Annotations) != len(f.Annotations) {
			t.Errorf("%s: label or annotation keys differ", p.Alert)
		}
	}
}

// A record of an engine's (engine:) is one series per engine of a pod, one of a target's
// (target:) one per pod's API server, with model_name and the role either way.
func TestEveryAlertCarriesSeverityAndAnnotationsAndEveryRecordOneSeriesPerEngineOrTarget(t *testing.T) {
	runbook := regexp.MustCompile(`^https://github\.com/vllm-responder/vllm-responder/blob/main/docs/playbooks/[a-z0-9-]+\.md$`)
	for _, r := range mustRules(t, "production") {
		if r.Record != "" {
			by, of := "by (namespace, pod, instance, engine, model_name, llm_isvc_role)", "engine of a pod"
			if strings.HasPrefix(r.Record, "target:") {
				by, of = "by (namespace, pod, instance, model_name, llm_isvc_role)", "pod's API server"
			}
			if !strings.Contains(r.Expr, by) {
				t.Errorf("%s: not one series per %s (with model_name and the role)", r.Record, of)
			}
			continue
		}
		if r.Labels["severity"] == "" {
			t.Errorf("%s: no severity label", r.Alert)
		}
		for _, k := range []string{"summary", "description"} {
			if r.Annotations[k] == "" {
				t.Errorf("%s: no %s annotation", r.Alert, k)
			}
		}
		if !runbook.MatchString(r.Annotations["runbook_url"]) {
			t.Errorf("%s: runbook_url %q does not point at docs/playbooks/<name>.md", r.Alert, r.Annotations["runbook_url"])
		}
		if r.Alert == GPUAlertName {
			// dcgm-exporter's series carry no model_name: the GPU alert is kept to the GPUs of
			// pods that serve vLLM by a join on vLLM's own series.
			if !strings.Contains(r.Expr, "and on (namespace, pod)\ngroup by (namespace, pod) (last_over_time(vllm:num_requests_running") {
				t.Errorf("%s: not joined to vLLM's pods by (namespace, pod)", r.Alert)
			}
			continue
		}
		if !strings.Contains(r.Expr, "by (namespace, pod, model_name") {
			t.Errorf("%s: not aggregated by (namespace, pod, model_name)", r.Alert)
		}
	}
}

// The static profile leaves the GPU alert out (no pod names to join a GPU to), the others have
// it; a profile whose GPU labels are wrong fails to load, naming the key.
func TestGPUAlertFollowsTheGPUSettings(t *testing.T) {
	for profile, want := range map[string]bool{"production": true, "fast": true, "kserve": true, "sim": true, "static": false} {
		got := false
		for _, r := range mustRules(t, profile) {
			got = got || r.Alert == GPUAlertName
		}
		if got != want {
			t.Errorf("profile %s: %s in the rules %v, want %v", profile, GPUAlertName, got, want)
		}
	}
	// honor_labels true: the holder in pod/namespace, the node in hostname (dcgm-exporter main).
	b, err := RenderProfile("production", "gpu.pod_label=pod", "gpu.namespace_label=namespace", "gpu.node_label=hostname")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`DCGM_FI_DEV_ROW_REMAP_FAILURE{pod!=""}`, `by (hostname, gpu, UUID, namespace, pod)`, `"node", "$1", "hostname", "(.+)"`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("rendered with honor_labels settings: no %s", want)
		}
	}
	if bytes.Contains(b, []byte("exported_pod")) || bytes.Contains(b, []byte("Hostname")) {
		t.Error("rendered with honor_labels settings: the default labels are left in the rules")
	}
}

func TestShippedProfilesHaveNoWarnings(t *testing.T) {
	for profile := range committed {
		p, err := LoadProfile(profile)
		if err != nil {
			t.Fatal(err)
		}
		if w := p.Warnings(); len(w) > 0 {
			t.Errorf("profile %s: %v", profile, w)
		}
	}
}

func TestOverridesChangeOnlyTheirParameter(t *testing.T) {
	p, err := LoadProfile("fast", "alerts.queue.threshold=5", "rate_window=1m", "alerts.ttft.severity=page", "eval_interval=")
	if err != nil {
		t.Fatal(err)
	}
	if p.Alerts.Queue.Threshold != 5 || p.RateWindow != "1m" || p.Alerts.TTFT.Severity != "page" || p.EvalInterval != "" {
		t.Fatalf("overrides not applied: %+v", p)
	}
	if p.GaugeWindow != "15s" || p.Alerts.Queue.For != "15s" || p.Alerts.KVCache.Threshold != 0.9 {
		t.Fatalf("overrides disturbed other parameters: %+v", p)
	}
	// Loading again without overrides must not see the previous overrides (no shared maps).
	again, err := LoadProfile("fast")
	if err != nil {
		t.Fatal(err)
	}
	if again.Alerts.Queue.Threshold != 20 || again.RateWindow != "30s" {
		t.Fatalf("overrides leaked into the next load: %+v", again)
	}
}

func TestLoadProfileErrorsNameTheKey(t *testing.T) {
	tests := []struct {
		name      string
		profile   string
		overrides []string
		want      string
	}{
		{"unknown profile", "staging", nil, `profiles.yaml: unknown profile "staging" (have fast, kserve, production, sim, static)`},
		{"override without =", "production", []string{"rate_window"}, `override "rate_window": want key=value, e.g. alerts.ttft.threshold=2.5`},
		{"unknown override key", "production", []string{"alerts.ttft.treshold=3"}, `override "alerts.ttft.treshold=3": unknown key "alerts.ttft.treshold"`},
		{"override of a section", "production", []string{"alerts.ttft=3"}, `override "alerts.ttft=3": key "alerts.ttft" is a section, not a value`},
		{"override below a value", "production", []string{"rate_window.x=3"}, `override "rate_window.x=3": key "rate_window" is a value, not a section`},
		{"bad duration", "production", []string{"rate_window=5 minutes"}, `profile "production": rate_window: "5 minutes" is not a positive Prometheus duration (e.g. 30s, 5m)`},
		{"zero duration", "production", []string{"alerts.queue.for=0s"}, `profile "production": alerts.queue.for: "0s" is not a positive Prometheus duration (e.g. 30s, 5m)`},
		{"fraction above 1", "production", []string{"alerts.kv_cache.threshold=90"}, `profile "production": alerts.kv_cache.threshold: 90 must be above 0 and at most 1`},
		{"negative threshold", "production", []string{"alerts.ttft.threshold=-1"}, `profile "production": alerts.ttft.threshold: -1 must be above 0`},
		{"no traffic floor", "production", []string{"alerts.abort.min_started_rate=0"}, `profile "production": alerts.abort.min_started_rate: 0 must be above 0 (it keeps idle models quiet)`},
		{"bad severity", "production", []string{"alerts.itl.severity=Page Me"}, `profile "production": alerts.itl.severity: "Page Me" must be a lower-case word such as warning or critical`},
		{"threshold of the wrong type", "production", []string{"alerts.queue.threshold=lots"}, `profile "production": yaml: unmarshal errors:`},
		{"bad gpu label", "production", []string{"gpu.node_label=host-name"}, `profile "production": gpu.node_label: "host-name" is not a valid label name`},
		{"gpu pod label against the vllm pod label", "production", []string{"pod_label=kubernetes_pod_name", "gpu.pod_label=pod"}, `profile "production": gpu.pod_label: "pod" with pod_label "kubernetes_pod_name": the GPU rule cannot tell the two apart; relabel one of them, or set gpu.enabled false`},
		{"no xids", "production", []string{"alerts.gpu_fault.xids=[]"}, `profile "production": alerts.gpu_fault.xids: empty (list the XIDs that mean drain the node or reset the GPU)`},
		{"bad recent", "production", []string{"alerts.gpu_fault.recent=soon"}, `profile "production": alerts.gpu_fault.recent: "soon" is not a positive Prometheus duration (e.g. 30s, 5m)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadProfile(tt.profile, tt.overrides...)
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error\n  %q\nwant prefix\n  %q", err, tt.want)
			}
		})
	}
}

// promtool is required, not optional: CI installs it (Debian package prometheus).
func promtool(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PROMTOOL_BIN"); p != "" { // PROMETHEUS3=1 make test: promtool of Prometheus 3
		return p
	}
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found on PATH (%v): install it (apt-get install prometheus) to check the alert rules", err)
	}
	return path
}

func runPromtool(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command(promtool(t), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func TestPromtoolCheckRules(t *testing.T) {
	// The committed files, plus a one-off variant rendered with overrides.
	b, err := RenderProfile("fast", "alerts.ttft.threshold=1", "rate_window=1m", "eval_interval=")
	if err != nil {
		t.Fatal(err)
	}
	custom := filepath.Join(t.TempDir(), "custom.rules.yml")
	if err := os.WriteFile(custom, b, 0o644); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, "check", "rules", ProductionFile, FastFile, custom)
}

func TestPromtoolUnitTests(t *testing.T) {
	files, err := filepath.Glob("tests/*.yml")
	if err != nil {
		t.Fatal(err)
	}
	fast, err := filepath.Glob("tests/fast/*.yml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 || len(fast) == 0 {
		t.Fatalf("expected promtool tests in tests/ and tests/fast/, found %v %v", files, fast)
	}
	runPromtool(t, append([]string{"test", "rules"}, append(files, fast...)...)...)
}

func mustRules(t *testing.T, profile string) []Rule {
	t.Helper()
	b, err := RenderProfile(profile)
	if err != nil {
		t.Fatal(err)
	}
	rf, err := ParseRules(b)
	if err != nil {
		t.Fatal(err)
	}
	var rules []Rule
	for _, g := range rf.Groups {
		rules = append(rules, g.Rules...)
	}
	return rules
}

// The responder's gpu: defaults read the GPU series as the production rules do: the same pod,
// namespace and node labels, the same drain/reset XIDs, the same recent period.
func TestTheResponderGPUDefaultsAreTheProductionProfiles(t *testing.T) {
	p, err := LoadProfile("production")
	if err != nil {
		t.Fatal(err)
	}
	var c gpu.Config
	c.SetDefaults()
	if got, want := [3]string{c.PodLabel, c.NamespaceLabel, c.NodeLabel}, [3]string{p.GPU.PodLabel, p.GPU.NamespaceLabel, p.GPU.NodeLabel}; got != want {
		t.Errorf("gpu labels: responder %v, profiles.yaml %v", got, want)
	}
	if !slices.Equal(c.XIDs, p.Alerts.GPUFault.XIDs) {
		t.Errorf("gpu xids: responder %v, profiles.yaml %v", c.XIDs, p.Alerts.GPUFault.XIDs)
	}
	if got := model.Duration(c.Recent).String(); got != p.Alerts.GPUFault.Recent {
		t.Errorf("gpu recent: responder %s, profiles.yaml %s", got, p.Alerts.GPUFault.Recent)
	}
}
