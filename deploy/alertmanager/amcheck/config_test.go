// Package amcheck loads the Alertmanager configurations of deploy/alertmanager with Alertmanager's
// own config loader (a module of its own: see go.mod).
package amcheck

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/prometheus/alertmanager/config"
	"github.com/prometheus/alertmanager/dispatch"
	"github.com/prometheus/common/model"
)

// receiversOf is where Alertmanager's routing tree sends an alert with labels.
func receiversOf(conf *config.Config, labels model.LabelSet) []string {
	var out []string
	for _, r := range dispatch.NewRoute(conf.Route, nil).Match(labels) {
		out = append(out, r.RouteOpts.Receiver)
	}
	return out
}

var vllmAlerts = []string{"VLLMTimeToFirstTokenP99High", "VLLMInterTokenLatencyP99High",
	"VLLMSpecDecodeAcceptanceDropped", "VLLMKVCacheNearFull", "VLLMRequestAbortRateHigh", "VLLMKVTransferFailing",
	"VLLMQueueDepthHigh", "VLLMEngineStalled", "VLLMGPUFault"}

// TestEveryConfigLoadsAndRoutesAsItsCommentsSay loads each file with the loader of the
// Alertmanager module this project builds against (v0.35, which knows update_message: Debian's
// amtool 0.25 does not), and checks where a vLLM alert and any other alert go.
func TestEveryConfigLoadsAndRoutesAsItsCommentsSay(t *testing.T) {
	for _, tc := range []struct {
		file          string
		vllm, other   []string
		updateMessage bool
	}{
		// The plain receiver: the responder and your paging receiver.
		{"alertmanager.yml", []string{"vllm-responder", "default"}, []string{"default"}, false},
		// Set-up 1: the vLLM alerts to the responder only; one Slack message per group (its).
		{"beside-slack-responder-only.yml", []string{"vllm-responder"}, []string{"slack"}, true},
		// Set-up 2: the responder (to its own channel) and Alertmanager's Slack message.
		{"beside-slack-two-channels.yml", []string{"vllm-responder", "slack"}, []string{"slack"}, true},
	} {
		t.Run(tc.file, func(t *testing.T) {
			conf, err := config.LoadFile(filepath.Join("..", tc.file))
			if err != nil {
				t.Fatalf("Alertmanager refuses it: %v", err)
			}
			for _, a := range vllmAlerts {
				got := receiversOf(conf, model.LabelSet{"alertname": model.LabelValue(a), "namespace": "llm", "model_name": "m", "pod": "p"})
				if !slices.Equal(got, tc.vllm) {
					t.Errorf("%s goes to %v, want %v", a, got, tc.vllm)
				}
			}
			if got := receiversOf(conf, model.LabelSet{"alertname": "NodeDown", "namespace": "kube-system"}); !slices.Equal(got, tc.other) {
				t.Errorf("NodeDown goes to %v, want %v", got, tc.other)
			}
			updates := false
			for _, r := range conf.Receivers {
				for _, s := range r.SlackConfigs {
					updates = updates || s.UpdateMessage
				}
				for _, w := range r.WebhookConfigs {
					if !w.SendResolved() || w.MaxAlerts != 0 {
						t.Errorf("receiver %s: the responder needs send_resolved and every alert (max_alerts: 0)", r.Name)
					}
				}
			}
			if updates != tc.updateMessage {
				t.Errorf("update_message on Alertmanager's Slack message: %v, want %v", updates, tc.updateMessage)
			}
		})
	}
}

// TestTheLoaderKnowsUpdateMessage: a misspelt or unknown key fails the loader, so the files above
// are checked for real (update_message is a key it knows, not one it ignores).
func TestTheLoaderKnowsUpdateMessage(t *testing.T) {
	base := "route: {receiver: s}\nreceivers:\n  - name: s\n    slack_configs:\n      - api_url: https://slack.com/api/chat.postMessage\n        channel: '#a'\n        http_config: {authorization: {credentials: x}}\n"
	if _, err := config.Load(base + "        update_message: true\n"); err != nil {
		t.Fatalf("update_message refused: %v", err)
	}
	if _, err := config.Load(base + "        update_mesage: true\n"); err == nil {
		t.Fatal("a misspelt key was accepted: the loader would not catch a typo in the files")
	}
	if _, err := config.Load("route: {receiver: s}\nreceivers:\n  - name: s\n    slack_configs:\n      - api_url: https://hooks.slack.com/services/T/B/x\n        channel: '#a'\n        update_message: true\n"); err == nil {
		t.Fatal("update_message with an incoming-webhook URL was accepted; Alertmanager needs a bot token for it")
	}
}
