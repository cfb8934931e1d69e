package chartcheck

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/strvals"
)

// valueSet is one way of installing the chart: a values file from ci/ and --set overrides.
type valueSet struct {
	name string
	file string   // relative to the chart; "" = values.yaml only
	sets []string // --set expressions
}

// The value sets the tests render. "default" needs only a Redis (two replicas by default).
var valueSets = []valueSet{
	{name: "default", sets: []string{"redis.url=redis://redis.monitoring.svc:6379/0"}},
	{name: "all-on", file: "ci/all-on-values.yaml"},
	{name: "single", sets: []string{"replicaCount=1"}},
	{name: "sentinel", sets: []string{"redis.sentinel.masterName=mymaster",
		"redis.sentinel.addrs={redis-sentinel-0.redis:26379,redis-sentinel-1.redis:26379}"}},
}

const (
	releaseName      = "vllm-responder"
	releaseNamespace = "monitoring"
)

func (vs valueSet) values(t *testing.T) map[string]any {
	t.Helper()
	vals := map[string]any{}
	if vs.file != "" {
		v, err := chartutil.ReadValuesFile(filepath.Join(chartDir, vs.file))
		if err != nil {
			t.Fatal(err)
		}
		vals = v.AsMap()
	}
	for _, s := range vs.sets {
		if err := strvals.ParseInto(s, vals); err != nil {
			t.Fatalf("--set %s: %v", s, err)
		}
	}
	return vals
}

// renderChart renders the chart as `helm template` does (install, release vllm-responder in
// namespace monitoring) with helm's own packages, and returns the manifests of templates/*.yaml
// in name order, joined as one multi-document stream.
func renderChart(t *testing.T, vals map[string]any) (string, error) {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return renderLoaded(ch, vals)
}

func renderLoaded(ch *chart.Chart, vals map[string]any) (string, error) {
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: releaseName, Namespace: releaseNamespace, IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		return "", err
	}
	out, err := engine.Render(ch, rv)
	if err != nil {
		return "", err
	}
	names := make([]string, 0, len(out))
	for n := range out {
		if strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		if strings.TrimSpace(out[n]) == "" {
			continue
		}
		b.WriteString("---\n# Source: " + n + "\n" + out[n] + "\n")
	}
	return b.String(), nil
}

// renderedInProcess renders every value set in-process: what the tests check when no helm CLI
// output is given (CHARTCHECK_RENDERED).
func renderedInProcess(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, vs := range valueSets {
		s, err := renderChart(t, vs.values(t))
		if err != nil {
			t.Fatalf("rendering %s: %v", vs.name, err)
		}
		out[vs.name] = []byte(s)
	}
	return out
}

func TestHelmLintIsClean(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			l := lint.All(chartDir, vs.values(t), releaseNamespace, false)
			for _, m := range l.Messages {
				// Like `helm lint --strict`: warnings fail too; "icon is recommended" is info.
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint: %s", m)
				}
			}
		})
	}
}

func TestTwoReplicasWithoutRedisFailWithAClearMessage(t *testing.T) {
	_, err := renderChart(t, map[string]any{})
	if err == nil {
		t.Fatal("rendering 2 replicas without redis.url succeeded")
	}
	if !strings.Contains(err.Error(), "with 2 or more replicas the responder needs shared state") ||
		!strings.Contains(err.Error(), "redis.url") {
		t.Errorf("unclear error: %v", err)
	}
	for _, c := range []struct {
		name string
		sets []string
	}{
		{"bundled redis", []string{"redis.bundled.enabled=true"}},
		{"one replica", []string{"replicaCount=1"}},
	} {
		vals := map[string]any{}
		for _, s := range c.sets {
			if err := strvals.ParseInto(s, vals); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := renderChart(t, vals); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func TestOtherMisconfigurationsFailToRender(t *testing.T) {
	for _, c := range []struct {
		set, want string
	}{
		{"config.listen=:9090", "config.listen: set by the chart"},
		{"config.redis.url=redis://x:6379/0", "use redis.url (top level)"},
		{"redis.sentinel.masterName=m", "redis.sentinel.addrs: required"},
		{"config.redis.sentinel.master_name=m", "use redis.sentinel (top level)"},
		{"config.prometheus.url=", "config.prometheus.url is required"},
		{"config.slack.socket_mode=true", "secrets.slackAppToken.existingSecret"},
		{"playbooks.existingConfigMap=mine", "playbooks.existingConfigMapFiles"},
		{"secrets.slackBotToken.key=", "secrets.slackBotToken.key: required"},
		{"config.outbound_webhooks[0].name=bot,config.outbound_webhooks[0].url=https://bot.example/h", "set outboundWebhookSecrets.bot: {existingSecret"},
		{"outboundWebhookSecrets.bot.existingSecret=s", "outboundWebhookSecrets.bot: existingSecret and key are required"},
		{"config.vllm.metric_prefix=other:", `ships rules for config.vllm.metric_prefix vllm: and kserve_vllm:, not "other:"`},
		{"dcgmExporter.serviceMonitor.enabled=true,dcgmExporter.serviceMonitor.namespace=gpu-operator", "dcgmExporter.serviceMonitor.selector: the labels of your dcgm-exporter Service are required"},
		{"dcgmExporter.serviceMonitor.enabled=true,dcgmExporter.serviceMonitor.selector.app=nvidia-dcgm-exporter", "dcgmExporter.serviceMonitor.namespace: the namespace of your dcgm-exporter Service is required"},
	} {
		vals := map[string]any{}
		for _, s := range []string{"replicaCount=1", c.set} {
			if err := strvals.ParseInto(s, vals); err != nil {
				t.Fatal(err)
			}
		}
		if strings.HasPrefix(c.set, "config.vllm.metric_prefix") {
			_ = strvals.ParseInto("prometheusRule.enabled=true", vals)
		}
		if strings.HasPrefix(c.set, "secrets.slackBotToken.key") {
			_ = strvals.ParseInto("secrets.slackBotToken.existingSecret=s", vals)
		}
		_, err := renderChart(t, vals)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--set %s: want an error containing %q, got %v", c.set, c.want, err)
		}
	}
}

// TestInProcessRenderMatchesValuesFiles keeps valueSets and ci/ in step: every ci/*.yaml is
// rendered by some value set.
func TestEveryCIValuesFileIsRendered(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(chartDir, "ci", "*.yaml"))
	for _, f := range files {
		rel, _ := filepath.Rel(chartDir, f)
		found := false
		for _, vs := range valueSets {
			found = found || vs.file == rel
		}
		if !found {
			t.Errorf("%s is not in valueSets", rel)
		}
	}
	if _, err := os.Stat(filepath.Join(chartDir, "values.yaml")); err != nil {
		t.Fatal(err)
	}
}

// TestPrometheusRuleFollowsTheMetricPrefix: with config.vllm.metric_prefix kserve_vllm: the
// PrometheusRule queries KServe's names, and the default vLLM's own.
func TestPrometheusRuleFollowsTheMetricPrefix(t *testing.T) {
	for prefix, want := range map[string]string{"": "(vllm:num_requests_waiting{", "kserve_vllm:": "(kserve_vllm:num_requests_waiting{"} {
		vals := map[string]any{}
		sets := []string{"replicaCount=1", "prometheusRule.enabled=true"}
		if prefix != "" {
			sets = append(sets, "config.vllm.metric_prefix="+prefix)
		}
		for _, s := range sets {
			if err := strvals.ParseInto(s, vals); err != nil {
				t.Fatal(err)
			}
		}
		out, err := renderChart(t, vals)
		if err != nil {
			t.Fatal(err)
		}
		i := strings.Index(out, "kind: PrometheusRule")
		if i < 0 {
			t.Fatalf("prefix %q: no PrometheusRule rendered", prefix)
		}
		rule := out[i:]
		if j := strings.Index(rule, "\n---"); j >= 0 {
			rule = rule[:j]
		}
		if !strings.Contains(rule, want) {
			t.Errorf("prefix %q: the PrometheusRule does not query %s", prefix, want)
		}
		if prefix != "" && strings.Contains(rule, "(vllm:") {
			t.Errorf("prefix %q: the PrometheusRule still queries vllm: names", prefix)
		}
	}
}
