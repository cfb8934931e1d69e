package slack

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Slack API methods the metrics name (a fixed set).
const (
	methodPostMessage       = "chat.postMessage"
	methodUpdate            = "chat.update"
	methodPostEphemeral     = "chat.postEphemeral"
	methodFileUpload        = "files.upload"
	methodUsergroups        = "usergroups.users.list"
	methodResponseURL       = "response_url"
	methodHistory           = "conversations.history"
	methodConversationsList = "conversations.list"
)

// Results of a Slack API call.
const (
	resultOK          = "ok"
	resultRateLimited = "rate_limited"
	resultError       = "error"
	resultTimeout     = "timeout"
)

var (
	apiMethods  = []string{methodPostMessage, methodUpdate, methodPostEphemeral, methodFileUpload, methodUsergroups, methodResponseURL, methodHistory, methodConversationsList}
	apiResults  = []string{resultOK, resultRateLimited, resultError, resultTimeout}
	messageKind = []string{"parent", "reply", "edit", "resolved", "storm", "skipped"}
)

// metrics are the Slack app's own series. Every series exists from the start, at zero.
type metrics struct {
	APICalls         *prometheus.CounterVec
	Commands         *prometheus.CounterVec
	Interactions     *prometheus.CounterVec
	Refusals         *prometheus.CounterVec
	SignatureInvalid *prometheus.CounterVec
	Charts           *prometheus.CounterVec
	Messages         *prometheus.CounterVec
	// Corrections counts "Wrong verdict?" answers. Its labels are bounded: playbook names are
	// the loaded set and verdicts the fixed ids; a chosen verdict that is not one is refused
	// before it is counted. Series appear with the first correction of a pair.
	Corrections *prometheus.CounterVec
}

// newMetrics creates the series and registers them with reg (nil: not registered, for tests).
func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		APICalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vllm_responder_slack_api_calls_total",
			Help: "Slack API calls by method and result (ok, rate_limited, error, timeout).",
		}, []string{"method", "result"}),
		Commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vllm_responder_slack_commands_total",
			Help: "/vllm slash commands received (after signature verification), by subcommand.",
		}, []string{"subcommand"}),
		Interactions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vllm_responder_slack_interactions_total",
			Help: "Button clicks received (after signature verification), by action.",
		}, []string{"action"}),
		Refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vllm_responder_slack_refusals_total",
			Help: "Silence and capture requests refused because the user is not allowed, by action.",
		}, []string{"action"}),
		SignatureInvalid: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vllm_responder_slack_requests_rejected_total",
			Help: "Requests to the Slack endpoints rejected before any processing, by reason.",
		}, []string{"reason"}),
		Charts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vllm_responder_slack_charts_total",
			Help: "Charts rendered and uploaded, or failed (the diagnosis is posted either way).",
		}, []string{"result"}),
		Messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vllm_responder_slack_messages_total",
			Help: "Group (or incident) notifications handled, by what was done: parent message, thread reply, edit of an incident's parent (a member joined or resolved, the verdict changed), resolution, storm summary, skipped (nothing changed).",
		}, []string{"kind"}),
		Corrections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vllm_responder_verdict_corrections_total",
			Help: "Verdicts corrected from Slack's Wrong verdict? select (a fixture was written), by playbook, verdict given and verdict chosen.",
		}, []string{"playbook", "given", "chosen"}),
	}
	for _, meth := range apiMethods {
		for _, r := range apiResults {
			m.APICalls.WithLabelValues(meth, r)
		}
	}
	for _, s := range commandLabels() {
		m.Commands.WithLabelValues(s)
	}
	for _, a := range interactionActions() {
		m.Interactions.WithLabelValues(a)
	}
	m.Refusals.WithLabelValues("silence")
	m.Refusals.WithLabelValues("capture")
	for _, r := range []string{"missing_headers", "expired", "invalid_signature", "not_configured", "bad_request"} {
		m.SignatureInvalid.WithLabelValues(r)
	}
	m.Charts.WithLabelValues("rendered")
	m.Charts.WithLabelValues("failed")
	for _, k := range messageKind {
		m.Messages.WithLabelValues(k)
	}
	if reg != nil {
		reg.MustRegister(m.APICalls, m.Commands, m.Interactions, m.Refusals, m.SignatureInvalid, m.Charts, m.Messages, m.Corrections)
	}
	return m
}
