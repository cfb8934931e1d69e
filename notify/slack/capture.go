package slack

import (
	"fmt"

	slackgo "github.com/slack-go/slack"

	"github.com/vllm-responder/vllm-responder/notify"
)

// captureConfirm is the confirmation dialog of a Capture profile button: what a capture costs
// the pod, said before it starts. stop_profile runs in vLLM's engine loop, so the pod serves
// nothing while the trace is flushed; silenced says whether the responder silences the pod's
// alerts meanwhile (an Alertmanager is configured). The last measured flush on the pod is given
// when the capture starts (it is looked up then, not when the message was posted).
func captureConfirm(pod string, silenced bool) *slackgo.ConfirmationBlockObject {
	alerts := "Its vLLM alerts are silenced while the capture runs."
	if !silenced {
		alerts = "No Alertmanager is configured: its alerts will fire."
	}
	text := fmt.Sprintf("Pod `%s` stops serving while vLLM flushes the trace (minutes on big models; every engine of the pod). %s The last measured flush on this pod is posted when the capture starts.",
		escapeCode(truncate(notify.Printable(pod), 60)), alerts)
	c := slackgo.NewConfirmationBlockObject(
		plain("Profile this serving pod?", 100),
		slackgo.NewTextBlockObject(slackgo.MarkdownType, truncate(text, 300), false, false),
		plain("Capture profile", 30),
		plain("Cancel", 30),
	)
	return c.WithStyle(slackgo.StyleDanger)
}
