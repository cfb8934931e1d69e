package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/notify/slack/fakeslack"
)

// Issue 23.2 at every surface: with two models in Prometheus, `responder triage`, the MCP triage
// tool and `/vllm triage` with no model and no pod each give a diagnosis about one model (the
// one whose KV cache preempts), every evidence query scoped to it, naming the other.
func TestEverySurfaceTriagesOneModelWhenNoneIsNamed(t *testing.T) {
	t.Parallel()
	healthy := func(pod, model string) testenv.VLLMLoad {
		l := testenv.HealthyLoad
		l.Pod, l.Model = pod, model
		return l
	}
	kv := healthy("beta-0", "beta")
	kv.KV, kv.PreemptionRate, kv.Running, kv.Waiting, kv.Decode, kv.ITL = 0.99, 2, 120, 20, 30, 0.06
	prom := testenv.RecordedPrometheus(t, []testenv.VLLMLoad{healthy("alpha-0", "alpha"), healthy("alpha-1", "alpha"), kv, healthy("beta-1", "beta")})
	const others = `the others: model_name="alpha" namespace="llm" (healthy)`

	t.Run("responder triage", func(t *testing.T) {
		res, stderr, code := triageCLI(t, "--config", writeConfig(t, prom.URL, ""))
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if res.Verdict != "kv-preemption" || len(res.Notes) == 0 || !strings.Contains(res.Notes[0], others) {
			t.Errorf("verdict %s, notes %q; want kv-preemption naming the other model", res.Verdict, res.Notes)
		}
		for _, ev := range res.Evidence {
			if !strings.Contains(ev.Query, `model_name="beta"`) {
				t.Errorf("evidence %s is not scoped to the model: %s", ev.Name, ev.Query)
			}
		}
	})

	t.Run("the MCP triage tool", func(t *testing.T) {
		cs := inMemoryMCP(t, prom.URL)
		text, isErr := callText(t, cs, "triage", map[string]any{})
		if isErr || !strings.Contains(text, `"verdict": "kv-preemption"`) || !strings.Contains(text, `"model_name": "beta"`) || !strings.Contains(text, `"models": [`) {
			t.Fatalf("error=%v\n%s", isErr, text)
		}
	})

	t.Run("/vllm triage", func(t *testing.T) {
		fs := fakeslack.New(t, "response")
		const secret = "signing-s3cret"
		srv, _ := startResponder(t, prom.URL, fmt.Sprintf("slack: {bot_token: xoxb-test, signing_secret: %s, channel: \"#vllm\", api_url: %q, charts: false}\n",
			secret, fs.APIURL()))
		postSlashCommand(t, srv, secret, "triage", fs.ResponseURL("cmd"))
		var answer string
		testenv.WaitFor(t, 60*time.Second, "the triage on response_url", func() bool {
			for _, c := range fs.Calls("response") {
				if strings.Contains(string(c.Body), "kv-preemption") {
					answer = string(c.Body)
					return true
				}
			}
			return false
		})
		if !strings.Contains(answer, "Triage of model `beta`") || !strings.Contains(answer, "model_name=") || !strings.Contains(answer, "alpha") {
			t.Errorf("the answer does not name the model and the other:\n%s", answer)
		}
	})
}
