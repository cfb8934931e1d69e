package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestExampleConfigLoads(t *testing.T) {
	c, err := Load("../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Slack.Enabled() || c.Redis.URL != "" || c.Prometheus.URL == "" {
		t.Fatalf("the example must be a one-machine config (console, in-memory, Prometheus URL): %+v", c)
	}
}

func TestSecretsComeFromEnvAndFilesAndNeverPrint(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	os.WriteFile(file, []byte("from-a-file-123\n"), 0o600)
	t.Setenv("TEST_SLACK_TOKEN", "xoxb-from-env-456")
	t.Setenv("TEST_PORT", "9191")
	cfg := `
listen: "127.0.0.1:${TEST_PORT}"
prometheus: {url: "http://${TEST_UNSET_HOST:-localhost}:9090"}
webhook: {bearer_token_file: ` + file + `}
slack: {bot_token: "${TEST_SLACK_TOKEN}", signing_secret: "sign-789", channel: "#x"}
redis: {url: "redis://:hunter2@localhost:6379/0", password: "redis-pw-000"}
mcp: {enabled: true, bearer_token_file: ` + file + `}
probe: {enabled: true, api_key: "probe-key-321"}
`
	c, err := Parse("test.yaml", []byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if c.Webhook.BearerToken.Reveal() != "from-a-file-123" || c.Slack.BotToken.Reveal() != "xoxb-from-env-456" {
		t.Fatalf("secrets not loaded: file %q env %q", c.Webhook.BearerToken.Reveal(), c.Slack.BotToken.Reveal())
	}
	if !c.MCP.Enabled || c.MCP.BearerToken.Reveal() != "from-a-file-123" {
		t.Fatalf("mcp.bearer_token_file not read: %q", c.MCP.BearerToken.Reveal())
	}
	if c.Listen != "127.0.0.1:9191" || c.Prometheus.URL != "http://localhost:9090" {
		t.Fatalf("env expansion: listen %q, url %q", c.Listen, c.Prometheus.URL)
	}
	j, _ := json.Marshal(c)
	for _, out := range []string{c.Redacted(), string(j)} {
		for _, s := range []string{"from-a-file-123", "xoxb-from-env-456", "sign-789", "hunter2", "redis-pw-000", "probe-key-321"} {
			if strings.Contains(out, s) {
				t.Fatalf("rendered config leaks %q:\n%s", s, out)
			}
		}
	}
	if !strings.Contains(c.Redacted(), "<secret>") {
		t.Fatal("secrets should render as <secret>")
	}
}

func TestAnEnvValueCannotChangeTheYAMLStructure(t *testing.T) {
	t.Setenv("TEST_EVIL", "x\nlisten: \":1\"\nprometheus: {url: http://evil}")
	c, err := Parse("test.yaml", []byte("slack: {channel: \"${TEST_EVIL}\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != ":8080" || c.Prometheus.URL != "http://localhost:9090" || !strings.HasPrefix(c.Slack.Channel, "x\n") {
		t.Fatalf("an environment value rewrote the config: listen %q url %q", c.Listen, c.Prometheus.URL)
	}
}

func TestSentinelConfig(t *testing.T) {
	c, err := Parse("t.yaml", []byte("redis: {sentinel: {master_name: vllm, addrs: ['10.0.0.1:26379']}}\n"))
	if err != nil || !c.Redis.RedisEnabled() {
		t.Fatalf("sentinel config: %v", err)
	}
}

// A value from the environment is a string, never YAML: a token that reads as null in YAML
// (null, ~, Null, NULL) is that token, and webhook auth stays on.
func TestAnEnvValueThatLooksLikeNullIsAString(t *testing.T) {
	for _, v := range []string{"null", "~", "Null", "NULL", "true", "0x10", "[a]"} {
		t.Run(v, func(t *testing.T) {
			t.Setenv("TEST_WEBHOOK_TOKEN", v)
			t.Setenv("TEST_WORKERS", "7")
			c, err := Parse("test.yaml", []byte("webhook:\n  bearer_token: ${TEST_WEBHOOK_TOKEN}\ndispatch:\n  workers: ${TEST_WORKERS}\n"))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Webhook.BearerToken.Reveal(); got != v {
				t.Fatalf("bearer_token = %q, want the environment's %q (auth must not turn off)", got, v)
			}
			if c.Dispatch.Workers != 7 {
				t.Fatalf("a number from the environment is still a number: workers = %d", c.Dispatch.Workers)
			}
		})
	}
}

// badConfigs pins every error the loader gives, as alertmanager's config/testdata/conf.*.yml do:
// each file under testdata/bad and the exact message it must give, one line per error. Every
// section's Validate returns all its errors, the loader names the section once and the file
// before each. Errors of the decode (unknown keys, types, durations) come all at once too, in the
// order of their lines, each with its line in the file as written (blank lines and comments
// included), and before any of Validate's: internal/strictyaml.
var badConfigs = []struct {
	file string
	want []string
}{
	{"absurd_body_limit.yaml", []string{"test.yaml: webhook.max_body_bytes: must be between 1 and 67108864, got 10000000000"}},
	{"absurd_queue_size.yaml", []string{"test.yaml: dispatch.queue_size: must be between 1 and 100000, got 2000000000"}},
	{"absurd_workers.yaml", []string{"test.yaml: dispatch.workers: must be between 1 and 256, got 5000000"}},
	{"alertmanager_url_and_ca_file.yaml", []string{
		"test.yaml: alertmanager.url: must be an http:// or https:// URL",
		"test.yaml: alertmanager.tls_config.ca_file: open /nonexistent/ca.pem: no such file or directory",
	}},
	{"bad_duration_after_blank_lines.yaml", []string{`test.yaml: line 5: dispatch.dedup_window: not a valid duration string: "soon"`}},
	{"bool_type_error.yaml", []string{`test.yaml: line 3: slack.socket_mode: "perhaps" is not true or false`}},
	{"dispatch_no_workers.yaml", []string{
		"test.yaml: dispatch.workers: must be between 1 and 256, got 0",
		"test.yaml: dispatch.queue_size: must be between 1 and 100000, got 0",
	}},
	{"dispatch_run_shorter_than_query.yaml", []string{"test.yaml: dispatch.run_timeout: must be at least prometheus.query_timeout (20s)"}},
	{"duration_from_env.yaml", []string{`test.yaml: line 3: dispatch.drain_timeout: not a valid duration string: "soon"`}},
	{"duration_go_fraction.yaml", []string{`test.yaml: line 3: dispatch.notify_timeout: unknown unit "." in duration "1.5s"`}},
	{"duration_mapping.yaml", []string{"test.yaml: line 3: dispatch.run_timeout: want a duration, got a mapping"}},
	{"duration_negative.yaml", []string{`test.yaml: line 3: profile.cooldown: not a valid duration string: "-5m"`}},
	{"duration_unknown_unit.yaml", []string{`test.yaml: line 4: prometheus.query_timeout: unknown unit "x" in duration "5x"`}},
	{"empty.yaml", []string{"test.yaml: the file is empty (nothing but comments or whitespace): write {} to take every default"}},
	{"env_default_checked.yaml", []string{"test.yaml: webhook.max_body_bytes: must be between 1 and 67108864, got 0"}},
	{"env_number_not_a_number.yaml", []string{`test.yaml: line 3: dispatch.workers: "soon" is not an integer`}},
	{"every_section_at_once.yaml", []string{
		"test.yaml: listen: required",
		`test.yaml: log.level: "loud" is not one of debug, info, warn, error`,
		"test.yaml: webhook.max_body_bytes: must be between 1 and 67108864, got 0",
		"test.yaml: redis.sentinel.addrs: required with master_name (host:port of each sentinel)",
		"test.yaml: profile.lock_ttl: must be at least 1s (it is refreshed every third of it), got 500ms",
		`test.yaml: vllm.pod_label: "a-b" is not a valid label name`,
		"test.yaml: mcp.bearer_token: required with mcp.enabled (or mcp.bearer_token_file)",
	}},
	{"http_client_config_bad_value.yaml", []string{"test.yaml: line 5: prometheus.tls_config.min_version: unknown TLS version: TLS99"}},
	{"http_client_config_nested_type_error.yaml", []string{`test.yaml: line 4: prometheus.tls_config.insecure_skip_verify: "perhaps" is not true or false`}},
	{"http_client_config_scalar_for_a_map.yaml", []string{`test.yaml: line 7: traces.oauth2.endpoint_params: want a mapping, got "none"`}},
	{"http_client_config_type_error.yaml", []string{`test.yaml: line 4: alertmanager.follow_redirects: "maybe" is not true or false`}},
	{"integer_overflow.yaml", []string{`test.yaml: line 3: dispatch.workers: "99999999999999999999" is not an integer`}},
	{"incidents_every_error.yaml", []string{
		"test.yaml: incidents.key[1]: alertname would make every alert name an incident of its own: an incident joins alerts across names",
		`test.yaml: incidents.key[2]: "model_name" is listed twice`,
		`test.yaml: incidents.key[3]: "llm-d.ai/role" is not a valid label name`,
		"test.yaml: incidents.quiet_time: must be between 0s and 1d, got 2d",
		`test.yaml: incidents.symptom_matchers[1]: "alertname~VLLM" is not an Alertmanager matcher like alertname=~"VLLM.*LatencyP99High": bad matcher format: alertname~VLLM`,
	}},
	{"incidents_no_key.yaml", []string{"test.yaml: incidents.key: at least one label (namespace and model_name: one incident per model), or enabled: false"}},
	{"kubernetes_labels_and_selector.yaml", []string{
		`test.yaml: kubernetes.namespace_label: "exported-namespace" is not a valid label name`,
		`test.yaml: kubernetes.pod_label: "" is not a valid label name`,
		`test.yaml: kubernetes.selector: write the matchers without braces, e.g. job="kube-state-metrics"`,
	}},
	{"kubernetes_same_labels.yaml", []string{
		`test.yaml: kubernetes.pod_label: must differ from namespace_label ("exported_pod")`,
		"test.yaml: kubernetes.selector: must not match the metric name: the queries name their metrics",
	}},
	{"kubernetes_selector_not_matchers.yaml", []string{
		`test.yaml: kubernetes.selector: not PromQL label matchers like job="kube-state-metrics": 1:6: parse error: unexpected identifier "kube" in label matching, expected string`,
	}},
	{"list_for_a_string.yaml", []string{"test.yaml: line 2: listen: want a string, got a list"}},
	{"key_written_twice.yaml", []string{"test.yaml: line 3: listen: written twice (first at line 1)"}},
	{"listen_empty.yaml", []string{"test.yaml: listen: required"}},
	{"log_level_and_format.yaml", []string{
		`test.yaml: log.level: "loud" is not one of debug, info, warn, error`,
		`test.yaml: log.format: "text" is not one of json, console`,
	}},
	{"mapping_for_a_map_of_numbers.yaml", []string{`test.yaml: line 3: playbooks.params: want a mapping, got "none"`}},
	{"mcp_without_token.yaml", []string{"test.yaml: mcp.bearer_token: required with mcp.enabled (or mcp.bearer_token_file)"}},
	{"triage_namespaces.yaml", []string{
		`test.yaml: triage.namespaces[1]: "Team_B" is not a Kubernetes namespace name`,
		`test.yaml: triage.namespaces[2]: "team-a" is listed twice`,
	}},
	{"outbound_webhooks_each_entry_checked.yaml", []string{
		"test.yaml: outbound_webhooks[1].url: must be an http(s) URL",
		"test.yaml: outbound_webhooks[1].secret: must start with whsec_ (the value is not shown)",
		"test.yaml: outbound_webhooks[1].max_retries: must be between 0 and 10",
		`test.yaml: outbound_webhooks[1].name: "incident-io" is already the name of outbound_webhooks[0]`,
	}},
	{"outbound_webhooks_secret_file_missing.yaml", []string{"test.yaml: outbound_webhooks[0].secret_file: open /nonexistent/webhook-secret: no such file or directory"}},
	{"outbound_webhooks_unknown_key.yaml", []string{`test.yaml: line 4: unknown key "outbound_webhooks[0].sekret"`}},
	{"profile_default_over_max.yaml", []string{"test.yaml: profile.default_duration: 2m exceeds max_duration 1m"}},
	{"profile_error_prefixed_once.yaml", []string{"test.yaml: profile.default_duration: must be positive, got 0s"}},
	{"profile_kind_bad_regex.yaml", []string{"test.yaml: profile.kinds[0].match.pod: error parsing regexp: missing closing ): `canary-(.*`"}},
	{"profile_kind_dir_no_bucket.yaml", []string{`test.yaml: profile.kinds[0].torch_profiler_dir: s3 URI without a bucket: "s3:///traces"`}},
	{"profile_kind_dir_not_torch.yaml", []string{"test.yaml: profile.kinds[0].torch_profiler_dir: only for profiler: torch (with cuda, vLLM writes no torch traces)"}},
	{"profile_kind_dir_relative.yaml", []string{`test.yaml: profile.kinds[0].torch_profiler_dir: must be an absolute path or an s3:// or gs:// URI, got "traces/vllm-0"`}},
	{"profile_kind_dir_unknown_store.yaml", []string{`test.yaml: profile.kinds[0].torch_profiler_dir: unsupported object store "az" (s3://, gs://), got "az://c/traces"`}},
	{"profile_kind_every_error.yaml", []string{
		`test.yaml: profile.kinds[0].match: unknown label "cluster" (one of namespace, pod, model_name)`,
		"test.yaml: profile.kinds[0].match.pod: error parsing regexp: missing closing ): `(`",
		`test.yaml: profile.kinds[0].profiler: must be one of torch, cuda, proton, got "nsys"`,
		"test.yaml: profile.kinds[0].torch_profiler_dir: only for profiler: torch (with nsys, vLLM writes no torch traces)",
		`test.yaml: profile.kinds[0].trace_hint: template: trace_hint:1:2: executing "trace_hint" at <.node>: map has no entry for key "node"`,
		"test.yaml: profile.kinds[1].torch_profiler_dir: template: torch_profiler_dir:1: unclosed action",
	}},
	{"profile_kind_unknown_label.yaml", []string{`test.yaml: profile.kinds[1].match: unknown label "cluster" (one of namespace, pod, model_name)`}},
	{"profile_kind_unknown_profiler.yaml", []string{`test.yaml: profile.kinds[0].profiler: must be one of torch, cuda, proton, got "cude"`}},
	{"profile_lock_ttl_too_short.yaml", []string{"test.yaml: profile.lock_ttl: must be at least 1s (it is refreshed every third of it), got 500ms"}},
	{"profile_networks_not_cidr.yaml", []string{
		`test.yaml: profile.allowed_networks[1]: "10.0.0.1" is not a CIDR (10.0.0.0/8, fd00::/8)`,
		`test.yaml: profile.allowed_networks[2]: "fd00::" is not a CIDR (10.0.0.0/8, fd00::/8)`,
	}},
	{"profile_silence.yaml", []string{
		"test.yaml: profile.silence.expected_flush: must be positive, got 0s",
		"test.yaml: profile.silence.alertnames: error parsing regexp: missing closing ): `VLLM(.*`",
	}},
	{"profile_trace_hint_unknown_label.yaml", []string{`test.yaml: profile.trace_dir_hint: template: trace_dir_hint:1:2: executing "trace_dir_hint" at <.node>: map has no entry for key "node"`}},
	{"profile_unknown_key.yaml", []string{`test.yaml: line 3: unknown key "profile.stop_timout"`}},
	{"profile_url_bad_template.yaml", []string{"test.yaml: profile.url_template: template: url_template:1: unclosed action"}},
	{"profile_url_unknown_label.yaml", []string{`test.yaml: profile.url_template: template: url_template:1:9: executing "url_template" at <.host>: map has no entry for key "host"`}},
	{"profile_url_without_scheme.yaml", []string{`test.yaml: profile.url_template: must render an http(s) URL with a host, got "10.0.0.1:8000"`}},
	{"profile_zero_durations.yaml", []string{
		"test.yaml: profile.default_duration: must be positive, got 0s",
		"test.yaml: profile.max_duration: must be positive, got 0s",
		"test.yaml: profile.start_timeout: must be positive, got 0s",
		"test.yaml: profile.stop_timeout: must be positive, got 0s",
		"test.yaml: profile.lock_ttl: must be positive, got 0s",
		"test.yaml: profile.janitor_interval: must be positive, got 0s",
	}},
	{"probe_bad_values.yaml", []string{
		"test.yaml: probe.timeout: must be between 500ms and 20s, got 100ms",
		"test.yaml: probe.min_interval: must be at least timeout (100ms), got 50ms: a pod is probed at most once per interval",
		`test.yaml: probe.url_template: must render an http(s) URL with a host, got "10.0.0.1:8000"`,
		`test.yaml: probe.allowed_networks[1]: "10.0.0.1" is not a CIDR (10.0.0.0/8, fd00::/8)`,
	}},
	{"probe_timeout_past_the_run.yaml", []string{"test.yaml: probe.timeout: must be shorter than dispatch.run_timeout (10s): a stalled diagnosis waits for the probe"}},
	{"only_comments.yaml", []string{"test.yaml: the file is empty (nothing but comments or whitespace): write {} to take every default"}},
	{"only_document_marker.yaml", []string{"test.yaml: the file is empty (nothing but comments or whitespace): write {} to take every default"}},
	{"prometheus_header_files_missing.yaml", []string{
		"test.yaml: prometheus.http_headers.X-Scope-OrgID.files: open /nonexistent/org: no such file or directory",
		"test.yaml: prometheus.http_headers.X-Tenant.files: open /nonexistent/tenant: no such file or directory",
	}},
	{"prometheus_password_file_missing.yaml", []string{"test.yaml: prometheus.basic_auth.password_file: open /nonexistent/pw: no such file or directory"}},
	{"prometheus_sizes_and_timeout.yaml", []string{
		"test.yaml: prometheus.max_concurrent_queries: must be between 1 and 1024, got 0",
		"test.yaml: prometheus.queries_per_request: must be between 1 and 100, got 0",
		"test.yaml: prometheus.query_timeout: must be positive",
	}},
	{"prometheus_two_auth_methods.yaml", []string{"test.yaml: prometheus: at most one of basic_auth, oauth2, bearer_token & bearer_token_file must be configured"}},
	{"prometheus_url_empty.yaml", []string{"test.yaml: prometheus.url: required"}},
	{"prometheus_url_no_scheme.yaml", []string{"test.yaml: prometheus.url: must be an http:// or https:// URL"}},
	{"redis_sentinel_without_addrs.yaml", []string{"test.yaml: redis.sentinel.addrs: required with master_name (host:port of each sentinel)"}},
	{"redis_url_and_sentinel.yaml", []string{"test.yaml: redis: set url or sentinel, not both"}},
	{"redis_url_hides_its_password.yaml", []string{"test.yaml: redis.url: must look like redis://host:6379/0 (the value is not shown: it may hold a password)"}},
	{"scalar_for_a_list.yaml", []string{`test.yaml: line 4: redis.sentinel.addrs: want a list, got "10.0.0.1:26379"`}},
	{"scalar_for_a_section.yaml", []string{`test.yaml: line 2: prometheus: want a mapping of keys, got "http://localhost:9090"`}},
	{"secret_and_its_file.yaml", []string{"test.yaml: webhook.bearer_token: set either bearer_token or bearer_token_file, not both"}},
	{"secret_files_missing.yaml", []string{
		"test.yaml: slack.bot_token_file: open /nonexistent/slack-bot-token: no such file or directory",
		"test.yaml: redis.password_file: open /nonexistent/redis-password: no such file or directory",
		"test.yaml: redis.sentinel.password_file: open /nonexistent/sentinel-password: no such file or directory",
		"test.yaml: profile.bearer_token_file: open /nonexistent/profile-token: no such file or directory",
		"test.yaml: probe.api_key_file: open /nonexistent/probe-key: no such file or directory",
		"test.yaml: mcp.bearer_token_file: open /nonexistent/mcp-token: no such file or directory",
	}},
	{"slack_allowed_ids.yaml", []string{
		`test.yaml: slack.allowed_users[1]: "alice" is not a Slack user id (U... or W...)`,
		`test.yaml: slack.allowed_usergroups[0]: "U012AB" is not a Slack user group id (S...)`,
		`test.yaml: slack.allowed_channels[0]: "#vllm" is not a Slack channel id (C... or G...)`,
	}},
	{"slack_api_url.yaml", []string{"test.yaml: slack.api_url: must be an http(s) URL"}},
	{"slack_bot_token_needs_channel.yaml", []string{"test.yaml: slack.channel: required when bot_token is set"}},
	{"slack_durations_and_sizes.yaml", []string{
		"test.yaml: slack.request_timeout: must be positive",
		"test.yaml: slack.thread_ttl: must be positive",
		"test.yaml: slack.parent_wait: must be positive",
		"test.yaml: slack.chart_timeout: must be positive",
		"test.yaml: slack.silence_duration: must be positive",
		"test.yaml: slack.max_retries: must be between 0 and 10",
		"test.yaml: slack.storm_threshold: must be at least 1",
	}},
	{"slack_needs_bot_token.yaml", []string{
		"test.yaml: slack.bot_token: required when signing_secret is set",
		"test.yaml: slack.bot_token: required when socket_mode is true",
		"test.yaml: slack.app_token: required when socket_mode is true",
	}},
	{"slack_tokens_swapped.yaml", []string{
		"test.yaml: slack.app_token: must be an app-level token (xapp-...)",
		"test.yaml: slack.bot_token: is an app-level token (xapp-...); put it in app_token and use the bot token (xoxb-...) here",
	}},
	{"slack_unknown_key.yaml", []string{`test.yaml: line 3: unknown key "slack.chanel"`}},
	{"slack_url_template_results.yaml", []string{
		`test.yaml: slack.grafana_url_template: template: grafana:1:25: executing "grafana" at <.Modle>: can't evaluate field Modle in type notify.linkData`,
		`test.yaml: slack.traces_url_template: result "m" is not an absolute http(s) URL`,
	}},
	{"slack_url_templates.yaml", []string{
		"test.yaml: slack.grafana_url_template: template: grafana:1: unclosed action",
		`test.yaml: slack.traces_url_template: template: traces:1: function "service" not defined`,
	}},
	{"string_for_a_number.yaml", []string{`test.yaml: line 3: playbooks.params.ttft-p99-high.ttft_p99_seconds: "high" is not a number`}},
	{"syntax_error.yaml", []string{"test.yaml: line 3: could not find expected ':'"}},
	{"traces_credentials_file_missing.yaml", []string{"test.yaml: traces.authorization.credentials_file: open /nonexistent/jaeger-token: no such file or directory"}},
	{"traces_empty_service_name.yaml", []string{
		`test.yaml: traces.services["llama"]: empty service name`,
		`test.yaml: traces.services["qwen"]: empty service name`,
	}},
	{"traces_limits.yaml", []string{
		"test.yaml: traces.limit: must be between 1 and 50",
		"test.yaml: traces.search_limit: must be at least limit (51)",
	}},
	{"traces_service_required.yaml", []string{`test.yaml: traces.service: required (the OTEL_SERVICE_NAME of the model's vLLM pods, e.g. "vllm-{{ .model_name }}")`}},
	{"traces_templates.yaml", []string{
		"test.yaml: traces.service: 1: unclosed action",
		`test.yaml: traces.tags["a.b"]: 1: unexpected {{end}}`,
		`test.yaml: traces.tags["k8s.pod.name"]: 1: unclosed action`,
	}},
	{"traces_timeout_too_long.yaml", []string{"test.yaml: traces.timeout: must be shorter than dispatch.run_timeout (30s): the diagnosis is posted without traces rather than late"}},
	{"traces_two_auth_methods.yaml", []string{"test.yaml: traces: at most one of basic_auth, oauth2 & authorization must be configured"}},
	{"traces_unknown_key.yaml", []string{`test.yaml: line 2: unknown key "traces.servise"`}},
	{"traces_urls.yaml", []string{
		"test.yaml: traces.url: must be an http:// or https:// URL",
		"test.yaml: traces.ui_url: must be an http:// or https:// URL",
	}},
	{"traces_zero_timeout.yaml", []string{"test.yaml: traces.timeout: must be positive"}},
	{"teams_webhook_url_not_http.yaml", []string{
		"test.yaml: teams.webhook_url: must be an http(s) URL: the Workflows trigger's HTTP URL (the value is not shown: it carries a signature)",
		"test.yaml: teams.request_timeout: must be positive",
	}},
	{"two_decode_errors.yaml", []string{
		`test.yaml: line 3: unknown key "prometheus.urll"`,
		`test.yaml: line 5: dispatch.workers: "many" is not an integer`,
	}},
	{"type_error_names_its_key.yaml", []string{`test.yaml: line 4: dispatch.workers: "many" is not an integer`}},
	{"unknown_header_key.yaml", []string{`test.yaml: line 6: unknown key "alertmanager.http_headers.X-Scope-OrgID.value"`}},
	{"unknown_key_after_blank_lines.yaml", []string{`test.yaml: line 7: unknown key "prometheus.urll"`}},
	{"unknown_key_in_http_client_config.yaml", []string{`test.yaml: line 4: unknown key "prometheus.basic_auth.usernme"`}},
	{"unknown_key_in_tls_config.yaml", []string{`test.yaml: line 4: unknown key "traces.oauth2.tls_config.server"`}},
	{"unknown_top_level_key.yaml", []string{`test.yaml: line 3: unknown key "prometheus_url"`}},
	{"vllm_names.yaml", []string{
		`test.yaml: vllm.metric_prefix: "kserve_vllm" must be a metric name prefix ending in a colon, like vllm: or kserve_vllm:`,
		`test.yaml: vllm.router_label: "1x" is not a valid label name`,
		`test.yaml: vllm.pod_label: "pod-name" is not a valid label name`,
		`test.yaml: vllm.role_label: "llm-d.ai/role" is not a valid label name (empty turns the prefill/decode pools off)`,
	}},
	{"storm_threshold_twice.yaml", []string{"test.yaml: slack.storm_threshold: deprecated, and it differs from dispatch.storm_threshold (7, 5): set only dispatch.storm_threshold"}},
	{"storm_threshold_zero.yaml", []string{"test.yaml: dispatch.storm_threshold: must be between 1 and 10000, got 0"}},
	{"webhook_two_auth_methods.yaml", []string{"test.yaml: webhook: set bearer_token or basic_auth, not both"}},
	{"webhook_username_without_password.yaml", []string{"test.yaml: webhook.basic_auth.password: required with a username"}},
}

func TestEveryBadConfigGivesItsExactError(t *testing.T) {
	t.Setenv("CONFIG_TEST_SOON", "soon")
	t.Setenv("CONFIG_TEST_UNSET", "")
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	pinned := map[string]bool{}
	for _, tc := range badConfigs {
		pinned[tc.file] = true
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata/bad", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			want := strings.Join(tc.want, "\n")
			_, err = Parse("test.yaml", data)
			if err == nil {
				t.Fatalf("accepted; want\n  %s", want)
			}
			if err.Error() != want {
				t.Fatalf("error\n  %s\nwant\n  %s", strings.ReplaceAll(err.Error(), "\n", "\n  "), strings.ReplaceAll(want, "\n", "\n  "))
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("an error shows a password: %v", err)
			}
		})
	}
	for _, f := range files {
		if !pinned[filepath.Base(f)] {
			t.Errorf("%s: no expected error in badConfigs", f)
		}
	}
}

// Durations are time.Duration once loaded, written in Prometheus' syntax (1d, 1w, 1h30m) as
// they always were; `responder check` prints them so, and what it prints loads again.
func TestDurationsKeepTheFilesSyntax(t *testing.T) {
	c, err := Parse("t.yaml", []byte("dispatch: {dedup_window: 1d, group_cooldown: 0, drain_timeout: 90s}\nslack: {thread_ttl: 2w}\nprofile: {cooldown: 1h30m}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for key, got := range map[string][2]time.Duration{
		"dispatch.dedup_window":   {c.Dispatch.DedupWindow, 24 * time.Hour},
		"dispatch.group_cooldown": {c.Dispatch.GroupCooldown, 0},
		"dispatch.drain_timeout":  {c.Dispatch.DrainTimeout, 90 * time.Second},
		"slack.thread_ttl":        {c.Slack.ThreadTTL, 14 * 24 * time.Hour},
		"profile.cooldown":        {c.Profile.Cooldown, 90 * time.Minute},
		"prometheus.cache_ttl":    {c.Prometheus.CacheTTL, 10 * time.Second},
	} {
		if got[0] != got[1] {
			t.Errorf("%s = %s, want %s", key, got[0], got[1])
		}
	}
	out := c.Redacted()
	for _, want := range []string{"dedup_window: 1d\n", "group_cooldown: 0s\n", "drain_timeout: 1m30s\n", "thread_ttl: 2w\n", "cooldown: 1h30m\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the printed config has no %q:\n%s", want, out)
		}
	}
	again, err := Parse("printed.yaml", []byte(out))
	if err != nil {
		t.Fatalf("the printed config does not load: %v\n%s", err, out)
	}
	if again.Dispatch != c.Dispatch || again.Profile.Cooldown != c.Profile.Cooldown || again.Slack.ThreadTTL != c.Slack.ThreadTTL {
		t.Fatalf("the printed config loads other values: %+v, want %+v", again.Dispatch, c.Dispatch)
	}
}

// An empty file is refused (testdata/bad/empty.yaml); {} asks for every default, and loads the
// configuration Default returns (compared as `responder check` prints them: Validate compiles
// templates into unexported fields).
func TestAnEmptyMappingTakesEveryDefault(t *testing.T) {
	c, err := Parse("t.yaml", []byte("# every default\n{}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Redacted() != Default().Redacted() {
		t.Fatalf("{} loaded\n%s\nwant the defaults\n%s", c.Redacted(), Default().Redacted())
	}
}

// slack.storm_threshold, deprecated, still sets the one storm threshold (dispatch's, which every
// notifier reads) and says so; alone, dispatch.storm_threshold is the threshold and nothing is
// deprecated; the two may agree.
func TestTheDeprecatedSlackStormThresholdStillSetsTheThreshold(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		want       int
		deprecated bool
	}{
		{"neither", `{}`, 5, false},
		{"dispatch's", `dispatch: {storm_threshold: 9}`, 9, false},
		{"slack's, deprecated", `slack: {storm_threshold: 7}`, 7, true},
		{"both, agreeing", "slack: {storm_threshold: 7}\ndispatch: {storm_threshold: 7}", 7, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse("test.yaml", []byte(c.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Dispatch.StormThreshold != c.want || (len(cfg.Deprecated) > 0) != c.deprecated {
				t.Errorf("threshold %d, deprecated %q; want %d, deprecated %v", cfg.Dispatch.StormThreshold, cfg.Deprecated, c.want, c.deprecated)
			}
			if c.deprecated && !strings.Contains(strings.Join(cfg.Deprecated, "\n"), "set dispatch.storm_threshold") {
				t.Errorf("the deprecation does not say what to set: %q", cfg.Deprecated)
			}
		})
	}
}
