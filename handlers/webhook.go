// Package handlers holds the responder's HTTP endpoints: the Alertmanager webhook, health and
// readiness, its own /metrics, and the mounting of the Slack endpoints; with body limits, auth
// and request logging.
package handlers

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/dispatch"
	"github.com/vllm-responder/vllm-responder/metrics"
)

// Acceptor takes a decoded webhook message (the dispatcher).
type Acceptor interface {
	Accept(ctx context.Context, msg *dispatch.Message, receivedAt time.Time) (dispatch.Accepted, error)
}

// WebhookAuth is the credential Alertmanager must present; all empty means none.
type WebhookAuth struct {
	BearerToken string
	Username    string
	Password    string
}

// Webhook serves POST /alertmanager. It answers by Alertmanager's retry rules: 200 once
// accepted, 4xx for a payload that can never be good, 503 with Retry-After when a retry helps.
type Webhook struct {
	Acceptor     Acceptor
	Auth         WebhookAuth
	MaxBodyBytes int64
	Metrics      *metrics.Responder
	Logger       zerolog.Logger
	// RetryAfter is sent with 503 (default 10s).
	RetryAfter time.Duration
}

// webhookResponse is the JSON body of every answer, so a person with curl sees what happened.
type webhookResponse struct {
	Status     string `json:"status"`
	Accepted   int    `json:"accepted,omitempty"`
	Duplicates int    `json:"duplicates,omitempty"`
	// Rejected counts the alerts left out because they can never be diagnosed (no alertname, a
	// bad status); Problems says why, for the first few.
	Rejected int      `json:"rejected,omitempty"`
	Problems []string `json:"problems,omitempty"`
	Error    string   `json:"error,omitempty"`
}

// maxProblems bounds the reasons an answer lists.
const maxProblems = 10

func (h *Webhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	received := time.Now()
	log := h.Logger.With().Str("remote_addr", r.RemoteAddr).Logger()
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.answer(w, http.StatusMethodNotAllowed, "bad_request", webhookResponse{Status: "error", Error: "use POST"})
		return
	}
	if !h.authorized(r) {
		log.Warn().Msg("webhook request without valid credentials")
		w.Header().Set("WWW-Authenticate", `Bearer realm="vllm-responder"`)
		h.answer(w, http.StatusUnauthorized, "unauthorized", webhookResponse{Status: "error", Error: "missing or invalid credentials"})
		return
	}
	limit := h.MaxBodyBytes
	if limit <= 0 {
		limit = 1 << 20
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			log.Warn().Int64("limit_bytes", limit).Msg("webhook body too large")
			h.answer(w, http.StatusRequestEntityTooLarge, "too_large", webhookResponse{Status: "error",
				Error: fmt.Sprintf("body larger than %d bytes (webhook.max_body_bytes; or set max_alerts in Alertmanager's webhook_config)", limit)})
			return
		}
		h.answer(w, http.StatusBadRequest, "bad_request", webhookResponse{Status: "error", Error: "could not read body"})
		return
	}
	msg, rejected, err := decodeMessage(body)
	if len(rejected) > 0 {
		// Bad alerts are refused one by one: the good ones of the notification still go on
		// (Alertmanager never retries a 4xx, so refusing all of it would lose them).
		if h.Metrics != nil {
			h.Metrics.AlertsReceived.WithLabelValues("invalid").Add(float64(len(rejected)))
		}
		log.Warn().Int("rejected", len(rejected)).Strs("problems", rejected[:min(len(rejected), maxProblems)]).Msg("webhook alerts refused")
	}
	if err != nil {
		log.Warn().Err(err).Int("body_bytes", len(body)).Msg("malformed webhook")
		h.answer(w, http.StatusBadRequest, "bad_request", webhookResponse{Status: "error", Error: err.Error()})
		return
	}
	// The work outlives this request: it must not be tied to r.Context(). The store call
	// for deduplication gets its own short deadline.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 3*time.Second)
	defer cancel()
	acc, err := h.Acceptor.Accept(ctx, msg, received)
	switch {
	case errors.Is(err, dispatch.ErrQueueFull), errors.Is(err, dispatch.ErrShuttingDown):
		result := "queue_full"
		if errors.Is(err, dispatch.ErrShuttingDown) {
			result = "shutting_down"
		}
		retry := h.RetryAfter
		if retry <= 0 {
			retry = 10 * time.Second
		}
		w.Header().Set("Retry-After", fmt.Sprint(int(retry.Seconds())))
		log.Warn().Str("group_key", msg.GroupKey).Str("result", result).Msg("webhook refused for now; Alertmanager will retry")
		h.answer(w, http.StatusServiceUnavailable, result, webhookResponse{Status: "error", Error: err.Error()})
		return
	case err != nil:
		// Not the payload's fault: 500, so that Alertmanager retries.
		log.Error().Err(err).Str("group_key", msg.GroupKey).Int("alerts", len(msg.Alerts)).Msg("webhook could not be accepted")
		h.answer(w, http.StatusInternalServerError, "internal_error", webhookResponse{Status: "error", Error: "internal error"})
		return
	}
	result := "accepted"
	if acc.New == 0 && acc.Duplicates > 0 {
		result = "duplicate"
	}
	// A re-send that is all duplicates (most of what Alertmanager sends: every group again each
	// group_interval) causes no work: it is logged at debug level, new work at info.
	ev := log.Info()
	if acc.New == 0 {
		ev = log.Debug()
	}
	ev.Str("group_key", msg.GroupKey).Str("status", msg.Status).Int("alerts", len(msg.Alerts)).
		Int("accepted", acc.New).Int("duplicates", acc.Duplicates).Msg("webhook accepted")
	h.answer(w, http.StatusOK, result, webhookResponse{Status: "ok", Accepted: acc.New, Duplicates: acc.Duplicates,
		Rejected: len(rejected), Problems: rejected[:min(len(rejected), maxProblems)]})
}

func (h *Webhook) answer(w http.ResponseWriter, code int, result string, body webhookResponse) {
	if h.Metrics != nil {
		h.Metrics.WebhookRequests.WithLabelValues(result).Inc()
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

func (h *Webhook) authorized(r *http.Request) bool {
	switch {
	case h.Auth.BearerToken != "":
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		return ok && subtle.ConstantTimeCompare([]byte(got), []byte(h.Auth.BearerToken)) == 1
	case h.Auth.Username != "":
		u, p, ok := r.BasicAuth()
		return ok && subtle.ConstantTimeCompare([]byte(u), []byte(h.Auth.Username)) == 1 &&
			subtle.ConstantTimeCompare([]byte(p), []byte(h.Auth.Password)) == 1
	default:
		return true
	}
}

// DecodeMessage decodes and checks an Alertmanager webhook body (version "4"). Alerts that can
// never be diagnosed (no alertname, a bad status) are left out of the message; it is an error
// only when none is left.
func DecodeMessage(body []byte) (*dispatch.Message, error) {
	msg, _, err := decodeMessage(body)
	return msg, err
}

// decodeMessage is DecodeMessage that also says which alerts it left out, and why.
func decodeMessage(body []byte) (*dispatch.Message, []string, error) {
	var msg dispatch.Message
	if err := json.Unmarshal(body, &msg); err != nil { // also refuses trailing data
		return nil, nil, fmt.Errorf("malformed JSON: %v", err)
	}
	switch {
	case msg.Version == "":
		return nil, nil, errors.New(`missing "version": not an Alertmanager webhook payload`)
	case msg.Version != "4":
		v := msg.Version
		if len(v) > 16 {
			v = v[:16] + "..."
		}
		return nil, nil, fmt.Errorf("unsupported webhook version %q (this responder speaks version 4)", v)
	case msg.Data == nil:
		return nil, nil, errors.New("empty message")
	case msg.Status != "firing" && msg.Status != "resolved":
		return nil, nil, fmt.Errorf(`status %q is neither "firing" nor "resolved"`, truncate(msg.Status))
	case len(msg.Alerts) == 0:
		return nil, nil, errors.New("no alerts in the message")
	}
	var rejected []string
	good := msg.Alerts[:0]
	for i, a := range msg.Alerts {
		switch {
		case a.Labels["alertname"] == "":
			rejected = append(rejected, fmt.Sprintf("alerts[%d]: no alertname label", i))
		case a.Status != "" && a.Status != "firing" && a.Status != "resolved":
			rejected = append(rejected, fmt.Sprintf("alerts[%d]: status %q is neither firing nor resolved", i, truncate(a.Status)))
		default:
			good = append(good, a)
		}
	}
	msg.Alerts = good
	if len(good) == 0 {
		more := ""
		if len(rejected) > 1 {
			more = fmt.Sprintf(" (and %d more)", len(rejected)-1)
		}
		return nil, rejected, fmt.Errorf("no valid alert in the message: %s%s", rejected[0], more)
	}
	return &msg, rejected, nil
}

// truncate keeps a value echoed in an error short.
func truncate(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}
