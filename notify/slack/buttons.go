package slack

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	slackgo "github.com/slack-go/slack"

	"github.com/vllm-responder/vllm-responder/playbooks"
)

// The buttons under a diagnosis, in one table: what each shows, when, and what its click does.
// Adding a button is one entry in buttonTable (and the function its click runs); the alert
// messages, the on-demand answers, the click routing and the interactions metric all read it.

// Button action ids, the interaction's action_id.
const (
	actionRerun        = "vllm_rerun"
	actionSilence      = "vllm_silence"
	actionCapture      = "vllm_capture"
	actionWrongVerdict = "vllm_wrong_verdict"
)

// button is one entry of the table.
type button struct {
	action string
	// metric is the action label of vllm_responder_slack_interactions_total.
	metric string
	// signed: the button carries a signed buttonValue (the alert's labels), checked before the
	// click runs. The Wrong verdict? select carries a record id instead (see correctVerdict).
	signed bool
	// element renders the button under one diagnosis, or returns nil when it is not shown
	// there; value is the button's signed value ("" when the labels do not fit).
	element func(s buttonScope, value string) slackgo.BlockElement
	// click runs the work behind a click (in the background, under the work deadline).
	click func(a *app, ctx context.Context, log zerolog.Logger, c click)
}

// buttonScope is what decides which buttons a diagnosis message shows.
type buttonScope struct {
	d      *playbooks.Diagnosis // nil for an alert no playbook matched
	labels map[string]string    // the alert's labels, or the triage scope
	now    time.Time
	// alert: an alert message (an on-demand answer has no Re-run or Silence button, and a
	// plain Capture button).
	alert bool
	// silence: Silence is offered (an Alertmanager is configured and the alert has a
	// fingerprint); silenceConfigured says whether captures silence the pod's alerts.
	silence, silenceConfigured bool
	silenceLabel               string
	// capture: a capturer is configured.
	capture bool
}

// buttonTable is the table (a function, not a variable: the clicks render buttons again).
func buttonTable() []button {
	return []button{
		{action: actionRerun, metric: "rerun", signed: true, click: (*app).rerun,
			element: func(s buttonScope, value string) slackgo.BlockElement {
				if !s.alert || s.d == nil || value == "" {
					return nil
				}
				return slackgo.NewButtonBlockElement(actionRerun, value, plain(rerunLabel(s.d, s.now), 75))
			}},
		{action: actionSilence, metric: "silence", signed: true, click: (*app).silenceAlert,
			element: func(s buttonScope, value string) slackgo.BlockElement {
				if !s.silence || value == "" {
					return nil
				}
				return slackgo.NewButtonBlockElement(actionSilence, value, plain(cmp.Or(s.silenceLabel, "Silence"), 75))
			}},
		{action: actionCapture, metric: "capture", signed: true, click: (*app).captureFromButton,
			element: func(s buttonScope, value string) slackgo.BlockElement {
				if !s.capture || s.d == nil || !s.d.OfferProfile || s.labels["pod"] == "" || value == "" {
					return nil
				}
				b := slackgo.NewButtonBlockElement(actionCapture, value, plain("Capture profile", 75))
				if s.alert {
					b.Style = slackgo.StylePrimary
				}
				b.Confirm = captureConfirm(s.labels["pod"], s.silenceConfigured)
				return b
			}},
		{action: actionWrongVerdict, metric: "wrong_verdict", click: (*app).correctVerdict,
			element: func(s buttonScope, _ string) slackgo.BlockElement {
				if sel := wrongVerdictSelect(s.d); sel != nil {
					return sel
				}
				return nil
			}},
	}
}

// interactionActions are the label values of the interactions metric: one per button, and
// "unknown" for a click on anything else.
func interactionActions() []string {
	var out []string
	for _, b := range buttonTable() {
		out = append(out, b.metric)
	}
	return append(out, "unknown")
}

// buttonBlock is the row of buttons of one diagnosis, or nil when none is shown.
func buttonBlock(key []byte, s buttonScope) slackgo.Block {
	var els []slackgo.BlockElement
	for _, b := range buttonTable() {
		value := ""
		if b.signed {
			value, _ = encodeButtonValue(key, b.action, buttonValue{Labels: s.labels})
		}
		if el := b.element(s, value); el != nil {
			els = append(els, el)
		}
	}
	if len(els) == 0 {
		return nil
	}
	return slackgo.NewActionBlock("", els...)
}

// findButton returns the table's entry for action.
func findButton(action string) (button, bool) {
	for _, b := range buttonTable() {
		if b.action == action {
			return b, true
		}
	}
	return button{}, false
}

// The button codec: what a button carries, signed.

// buttonValue is what a diagnosis button carries back to the interaction handler: the alert's
// labels (or the triage scope), so the click needs no state on the server, and an HMAC that
// binds them to the button's action under a server key: a click with a value the message did
// not offer (crafted labels, another button's value) is refused.
type buttonValue struct {
	Labels map[string]string `json:"l"`
	Sig    string            `json:"s,omitempty"`
}

// errButtonSignature is a button value whose signature does not match.
var errButtonSignature = errors.New("button value: signature does not match (not a value this responder offered)")

// buttonKey is the server key that signs button values: derived from the signing secret (the
// app token with Socket Mode), which every replica shares.
func (c *Config) buttonKey() []byte {
	m := hmac.New(sha256.New, []byte(cmp.Or(c.SigningSecret.Reveal(), c.AppToken.Reveal(), c.BotToken.Reveal())))
	m.Write([]byte("vllm-responder button value v1"))
	return m.Sum(nil)
}

func buttonSig(key []byte, action string, labels map[string]string) string {
	b, _ := json.Marshal(labels) // map keys sorted: canonical
	m := hmac.New(sha256.New, key)
	m.Write([]byte(action))
	m.Write([]byte{0})
	m.Write(b)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// encodeButtonValue returns the signed value of the button for action, and false when it does
// not fit Slack's limit.
func encodeButtonValue(key []byte, action string, v buttonValue) (string, bool) {
	v.Sig = buttonSig(key, action, v.Labels)
	b, err := json.Marshal(v)
	if err != nil || len(b) > maxButtonValue {
		return "", false
	}
	return string(b), true
}

// decodeButtonValue parses the value of a click on action and checks its signature.
func decodeButtonValue(key []byte, action, s string) (buttonValue, error) {
	var v buttonValue
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return v, fmt.Errorf("button value: %w", err)
	}
	if !hmac.Equal([]byte(v.Sig), []byte(buttonSig(key, action, v.Labels))) {
		return buttonValue{}, errButtonSignature
	}
	return v, nil
}
