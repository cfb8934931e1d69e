// Package handlers holds the responder's HTTP endpoints: the Alertmanager webhook, health and
// readiness, its own /metrics, and the mounting of the Slack endpoints; with body limits, auth
// and request logging.
package handlers

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	jsoniter "github.com/json-iterator/go"
	"github.com/prometheus/alertmanager/template"
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
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.answer(w, http.StatusMethodNotAllowed, "bad_request", webhookResponse{Status: "error", Error: "use POST"})
		return
	}
	if !h.authorized(r) {
		h.event(zerolog.WarnLevel, r).Msg("webhook request without valid credentials")
		w.Header().Set("WWW-Authenticate", `Bearer realm="vllm-responder"`)
		h.answer(w, http.StatusUnauthorized, "unauthorized", webhookResponse{Status: "error", Error: "missing or invalid credentials"})
		return
	}
	limit := h.MaxBodyBytes
	if limit <= 0 {
		limit = 1 << 20
	}
	buf := getBuffer(r.ContentLength)
	defer putBuffer(buf)
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
	body := buf.Bytes() // decoded into copies: nothing keeps it past this request
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			h.event(zerolog.WarnLevel, r).Int64("limit_bytes", limit).Msg("webhook body too large")
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
			h.Metrics.AlertOutcome("invalid").Add(float64(len(rejected)))
		}
		h.event(zerolog.WarnLevel, r).Int("rejected", len(rejected)).Strs("problems", rejected[:min(len(rejected), maxProblems)]).Msg("webhook alerts refused")
	}
	if err != nil {
		h.event(zerolog.WarnLevel, r).Err(err).Int("body_bytes", len(body)).Msg("malformed webhook")
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
		h.event(zerolog.WarnLevel, r).Str("group_key", msg.GroupKey).Str("result", result).Msg("webhook refused for now; Alertmanager will retry")
		h.answer(w, http.StatusServiceUnavailable, result, webhookResponse{Status: "error", Error: err.Error()})
		return
	case err != nil:
		// Not the payload's fault: 500, so that Alertmanager retries.
		h.event(zerolog.ErrorLevel, r).Err(err).Str("group_key", msg.GroupKey).Int("alerts", len(msg.Alerts)).Msg("webhook could not be accepted")
		h.answer(w, http.StatusInternalServerError, "internal_error", webhookResponse{Status: "error", Error: "internal error"})
		return
	}
	result := "accepted"
	if acc.New == 0 && acc.Duplicates > 0 {
		result = "duplicate"
	}
	// A re-send that is all duplicates (most of what Alertmanager sends: every group again each
	// group_interval) causes no work: it is logged at debug level, new work at info.
	level := zerolog.InfoLevel
	if acc.New == 0 {
		level = zerolog.DebugLevel
	}
	h.event(level, r).Str("group_key", msg.GroupKey).Str("status", msg.Status).Int("alerts", len(msg.Alerts)).
		Int("accepted", acc.New).Int("duplicates", acc.Duplicates).Msg("webhook accepted")
	h.answer(w, http.StatusOK, result, webhookResponse{Status: "ok", Accepted: acc.New, Duplicates: acc.Duplicates,
		Rejected: len(rejected), Problems: rejected[:min(len(rejected), maxProblems)]})
}

// event starts a log line about request r at level (nil, and free, below the logger's level).
// There is no per-request logger: the answer path allocates only for what is logged.
func (h *Webhook) event(level zerolog.Level, r *http.Request) *zerolog.Event {
	return h.Logger.WithLevel(level).Str("remote_addr", r.RemoteAddr)
}

func (h *Webhook) answer(w http.ResponseWriter, code int, result string, body webhookResponse) {
	if h.Metrics != nil {
		h.Metrics.WebhookResult(result).Inc()
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

// bodies are the webhook's read buffers, reused: a notification is read into one, decoded (the
// message holds copies of its strings) and the buffer returned.
var bodies sync.Pool

// maxPooledBody: a buffer grown past this (a notification of thousands of alerts) is left to the
// GC rather than kept for every later request.
const maxPooledBody = 64 << 10

// getBuffer returns an empty buffer with room for the body Content-Length announces (unknown:
// -1), up to maxPooledBody: a larger body grows the buffer as it arrives, never on a claim alone.
func getBuffer(contentLength int64) *bytes.Buffer {
	buf, _ := bodies.Get().(*bytes.Buffer)
	if buf == nil {
		buf = new(bytes.Buffer)
	}
	if contentLength > 0 {
		// ReadFrom wants MinRead bytes free to read the end of the body without growing.
		buf.Grow(int(min(contentLength, maxPooledBody-bytes.MinRead)) + bytes.MinRead)
	}
	return buf
}

func putBuffer(buf *bytes.Buffer) {
	if buf.Cap() > maxPooledBody {
		return
	}
	buf.Reset()
	bodies.Put(buf)
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
	if err := unmarshal(body, &msg); err != nil { // also refuses trailing data
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

// fastJSON decodes a notification about 3 times faster than encoding/json, whose behaviour it
// is configured to copy: decoding was most of the webhook's answer time and of its allocations
// (a notification of 5 alerts: 3.8 KB, 130 µs, 247 allocations with encoding/json).
var fastJSON = jsoniter.ConfigCompatibleWithStandardLibrary

// jsoniter decodes a map by reflection, with two allocations per entry besides the strings; a
// notification's label and annotation sets (template.KV) are most of its entries. Registration
// is process-wide in jsoniter, and only this decoder decodes template.KV.
func init() {
	jsoniter.RegisterTypeDecoderFunc("template.KV", decodeKV)
}

// decodeKV decodes a label or annotation set as encoding/json decodes a map[string]string: null
// is nil, a null value is "", and anything else (a number) is an error (encoding/json then
// decodes the body, for its refusal).
func decodeKV(ptr unsafe.Pointer, iter *jsoniter.Iterator) {
	kv := (*template.KV)(ptr)
	if iter.ReadNil() {
		*kv = nil
		return
	}
	if *kv == nil {
		*kv = make(template.KV, 8)
	}
	iter.ReadMapCB(func(iter *jsoniter.Iterator, key string) bool {
		if next := iter.WhatIsNext(); next != jsoniter.StringValue && next != jsoniter.NilValue {
			iter.ReportError("decode template.KV", "a value that is not a string")
			return false
		}
		(*kv)[key] = iter.ReadString()
		return iter.Error == nil
	})
}

// unmarshal decodes body as encoding/json does (the same message, the same refusals, the same
// error text): the fast decoder decodes only a body encoding/json's own scanner finds valid JSON
// (and UTF-8, which encoding/json would repair), and whatever it refuses, or any other body, is
// decoded by encoding/json, whose answer is the one given. FuzzFastDecodeMatchesEncodingJSON
// holds the two to the same messages.
func unmarshal(body []byte, msg *dispatch.Message) error {
	if utf8.Valid(body) && json.Valid(body) {
		if err := fastJSON.Unmarshal(body, msg); err == nil {
			return nil
		}
		*msg = dispatch.Message{}
	}
	return json.Unmarshal(body, msg)
}

// truncate keeps a value echoed in an error short.
func truncate(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}
