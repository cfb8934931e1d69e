package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

func TestConfigErrorsNameTheirKey(t *testing.T) {
	cases := map[string]struct{ yaml, want string }{
		"unknown key":                  {"listen: :8080\nprometheus: {urll: x}\n", `test.yaml: line 2: unknown key "prometheus.urll"`},
		"bad prometheus url":           {"prometheus: {url: 'localhost:9090'}\n", "test.yaml: prometheus.url: must be an http:// or https:// URL"},
		"bad redis url":                {"redis: {url: 'redis//:hunter2@x'}\n", "test.yaml: redis.url: must look like redis://"},
		"both auth kinds":              {"webhook: {bearer_token: a, basic_auth: {username: u, password: p}}\n", "test.yaml: webhook: set bearer_token or basic_auth, not both"},
		"bad log level":                {"log: {level: loud}\n", `test.yaml: log.level: "loud" is not one of`},
		"run shorter than query":       {"prometheus: {query_timeout: 20s}\ndispatch: {run_timeout: 10s}\n", "test.yaml: dispatch.run_timeout: must be at least"},
		"bad duration":                 {"dispatch: {dedup_window: soon}\n", `test.yaml: line 1: dispatch.dedup_window: not a valid duration string: "soon"`},
		"profile error, prefixed once": {"profile: {default_duration: 2m}\n", "test.yaml: profile.default_duration: 2m exceeds max_duration 1m"},
		"unknown profiler kind":        {"profile: {kinds: [{match: {pod: '=~canary-.*'}, profiler: nsys}]}\n", `test.yaml: profile.kinds[0].profiler: must be one of torch, cuda, proton, got "nsys"`},
		"mcp without its token":        {"mcp: {enabled: true}\n", "test.yaml: mcp.bearer_token: required with mcp.enabled (or mcp.bearer_token_file)"},
		"bad nested duration":          {"listen: :8080\nprometheus:\n  url: http://p\n  query_timeout: 5x\n", `test.yaml: line 4: prometheus.query_timeout: unknown unit "x" in duration "5x"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("test.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("error leaks a password: %v", err)
			}
		})
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
		for _, s := range []string{"from-a-file-123", "xoxb-from-env-456", "sign-789", "hunter2", "redis-pw-000"} {
			if strings.Contains(out, s) {
				t.Fatalf("rendered config leaks %q:\n%s", s, out)
			}
		}
	}
	if !strings.Contains(c.Redacted(), "<secret>") {
		t.Fatal("secrets should render as <secret>")
	}
}

func TestASecretAndItsFileTogetherIsAnError(t *testing.T) {
	_, err := Parse("test.yaml", []byte("webhook: {bearer_token: a, bearer_token_file: /etc/x}\n"))
	if err == nil || !strings.Contains(err.Error(), "webhook.bearer_token: set either bearer_token or bearer_token_file, not both") {
		t.Fatalf("got %v", err)
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
	if _, err := Parse("t.yaml", []byte("redis: {sentinel: {master_name: vllm}}\n")); err == nil || !strings.Contains(err.Error(), "redis.sentinel.addrs: required") {
		t.Fatalf("got %v", err)
	}
	if _, err := Parse("t.yaml", []byte("redis: {url: 'redis://x:6379', sentinel: {master_name: vllm, addrs: [a:1]}}\n")); err == nil || !strings.Contains(err.Error(), "redis: set url or sentinel, not both") {
		t.Fatalf("got %v", err)
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

// Each file under testdata/bad names the exact error it must give on its first line
// ("# error: ..."): the line in the file as written (blank lines included), the key, once.
func TestEveryBadConfigGivesItsExactError(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(data), "\n")
			want, ok := strings.CutPrefix(first, "# error: ")
			if !ok {
				t.Fatalf("%s: the first line must be \"# error: <the exact message>\"", f)
			}
			_, err = Parse("test.yaml", data)
			if err == nil {
				t.Fatalf("accepted; want %s", want)
			}
			if err.Error() != want {
				t.Fatalf("error\n  %s\nwant\n  %s", err, want)
			}
		})
	}
}
