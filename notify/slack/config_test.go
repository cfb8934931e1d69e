package slack

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestConfigErrorsNameTheirField(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no channel", Config{BotToken: "xoxb-1", SigningSecret: "s"}, "channel: required when bot_token is set"},
		{"socket mode without app token", Config{BotToken: "xoxb-1", Channel: "#c", SocketMode: true}, "app_token: required when socket_mode is true"},
		{"a bot token in app_token", Config{BotToken: "xoxb-1", Channel: "#c", SocketMode: true, AppToken: "xoxb-2"}, "app_token: must be an app-level token (xapp-...)"},
		{"an app token as bot token", Config{BotToken: "xapp-1", Channel: "#c"}, "bot_token: is an app-level token"},
		{"signing secret alone", Config{SigningSecret: "s"}, "bot_token: required when signing_secret is set"},
		{"bad api url", Config{BotToken: "xoxb-1", Channel: "#c", APIURL: "localhost:9"}, "api_url: must be an http(s) URL"},
		{"template syntax", Config{GrafanaURLTemplate: "https://g/{{.Model"}, "grafana_url_template: template: grafana:1: unclosed action"},
		{"template field", Config{TracesURLTemplate: "https://j/?m={{.Modle}}"}, `traces_url_template: template: traces:1:15: executing "traces" at <.Modle>: can't evaluate field Modle`},
		{"template not a URL", Config{TracesURLTemplate: "{{.Model}}"}, "traces_url_template: result \"m\" is not an absolute http(s) URL"},
		{"user name instead of id", Config{AllowedUsers: []string{"@alice"}}, `allowed_users[0]: "@alice" is not a Slack user id (U... or W...)`},
		{"group handle instead of id", Config{AllowedUsergroups: []string{"sre"}}, `allowed_usergroups[0]: "sre" is not a Slack user group id (S...)`},
		{"channel name instead of id", Config{AllowedChannels: []string{"#ops"}}, `allowed_channels[0]: "#ops" is not a Slack channel id (C... or G...)`},
		{"negative retries", Config{MaxRetries: -1}, "max_retries: must be between 0 and 10"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.SetDefaults()
			err := c.cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestAnEmptyConfigIsValidAndDisabled(t *testing.T) {
	var c Config
	c.SetDefaults()
	if err := c.Validate(); err != nil || c.Enabled() || c.interactive() {
		t.Errorf("err=%v enabled=%v interactive=%v", err, c.Enabled(), c.interactive())
	}
}

func TestSecretsNeverAppearWhenTheConfigIsPrinted(t *testing.T) {
	c := Config{BotToken: "xoxb-very-secret", SigningSecret: "sign-very-secret", AppToken: "xapp-very-secret", Channel: "#c"}
	c.SetDefaults()
	y, _ := yaml.Marshal(c)
	j, _ := json.Marshal(c)
	for _, out := range []string{string(y), string(j)} {
		if strings.Contains(out, "very-secret") {
			t.Errorf("secret in %s", out)
		}
	}
}

func TestConfigDecodesStrictlyFromYAML(t *testing.T) {
	src := `
bot_token: xoxb-1
signing_secret: s
channel: "#vllm-incidents"
post_interval: 2s
allowed_users: [U012ABC]
`
	dec := yaml.NewDecoder(strings.NewReader(src))
	dec.KnownFields(true)
	var c Config
	if err := dec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	c.SetDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.PostInterval != 2*time.Second || c.SilenceDuration != time.Hour || !c.interactive() {
		t.Errorf("%+v", c)
	}
}
