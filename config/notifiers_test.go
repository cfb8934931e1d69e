package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTeamsAndOutboundWebhooksLoadWithTheirSecretsFromFiles: the Teams webhook URL and every
// outbound webhook's secret come from their *_file twins (Kubernetes Secrets), list entries
// get the delivery defaults, and nothing secret is printed.
func TestTeamsAndOutboundWebhooksLoadWithTheirSecretsFromFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	teamsURL := write("teams-url", "https://prod.westeurope.logic.example/workflows/1/triggers/manual/paths/invoke?sig=teams-sig-123")
	bot := write("bot-secret", "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD8n4CJ7M8Ig4=")
	t.Setenv("TEST_TOOL_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	c, err := Parse("test.yaml", []byte(`
teams:
  webhook_url_file: `+teamsURL+`
  proxy_url: http://proxy.example:3128
outbound_webhooks:
  - name: incident-tool
    url: https://user:pw-456@tool.example/hook/path-tok-321?token=query-tok-654
    secret: "${TEST_TOOL_SECRET}"
    request_timeout: 3s
  - name: bot
    url: https://bot.example/hook
    secret_file: `+bot+`
    authorization: {credentials: bot-token-789}
`))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Teams.Enabled() || !strings.HasSuffix(c.Teams.WebhookURL.Reveal(), "sig=teams-sig-123") || c.Teams.RequestTimeout != 10*time.Second || c.Teams.HTTP.ProxyURL.URL == nil {
		t.Errorf("teams: %+v", c.Teams)
	}
	if len(c.OutboundWebhooks) != 2 {
		t.Fatalf("%d outbound webhooks", len(c.OutboundWebhooks))
	}
	tool, b := c.OutboundWebhooks[0], c.OutboundWebhooks[1]
	if tool.RequestTimeout != 3*time.Second || tool.MaxRetries != 3 || !tool.HTTP.FollowRedirects || tool.Secret.Reveal() != "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" {
		t.Errorf("incident-tool: %+v", tool)
	}
	if b.RequestTimeout != 10*time.Second || !strings.HasPrefix(b.Secret.Reveal(), "whsec_C2FV") || b.HTTP.Authorization == nil {
		t.Errorf("bot: %+v", b)
	}
	j, _ := json.Marshal(c)
	out := c.Redacted()
	for _, s := range []string{"teams-sig-123", "MfKQ9r8", "C2FVsBQ", "pw-456", "bot-token-789", "path-tok-321", "query-tok-654"} {
		if strings.Contains(out, s) || strings.Contains(string(j), s) {
			t.Errorf("the printed config shows %q:\n%s", s, out)
		}
	}
	for _, want := range []string{"teams:\n", "outbound_webhooks:\n", "name: incident-tool", "request_timeout: 3s", "url: https://tool.example\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the printed config lacks %q:\n%s", want, out)
		}
	}
}
