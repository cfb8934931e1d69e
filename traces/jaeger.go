// Package traces finds the slowest requests of a vLLM service in Jaeger: the "locate" rung of
// the triage ladder (metrics detect, traces locate, profiles explain). vLLM records one
// llm_request span per finished request with its queue, prefill and decode times and its token
// counts (docs/vllm-facts.md, "The `llm_request` spans"); a diagnosis lists the slowest of them and says in one line where
// their time went.
package traces

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	promconfig "github.com/prometheus/common/config"

	"github.com/vllm-responder/vllm-responder/internal/httpconfig"
)

// Request is one traced request, as vLLM's llm_request span describes it.
type Request struct {
	TraceID   string    `json:"trace_id"`
	RequestID string    `json:"request_id,omitempty"` // gen_ai.request.id
	Start     time.Time `json:"start"`                // arrival
	// Duration is the span's (arrival to final output); Queue, Prefill and Decode its phases
	// (gen_ai.latency.time_in_queue, time_in_model_prefill, time_in_model_decode).
	Duration         time.Duration `json:"duration"`
	Queue            time.Duration `json:"queue"`
	Prefill          time.Duration `json:"prefill"`
	Decode           time.Duration `json:"decode"`
	TTFT             time.Duration `json:"ttft"`
	PromptTokens     int           `json:"prompt_tokens"`
	CompletionTokens int           `json:"completion_tokens"`
	Link             string        `json:"link,omitempty"`
}

// Report is what a diagnosis shows of the traces: the slowest requests and what they have in
// common. Error says why there are none when the lookup failed.
type Report struct {
	Service     string            `json:"service"`
	Operation   string            `json:"operation"`
	Tags        map[string]string `json:"tags,omitempty"`
	Start       time.Time         `json:"start"`
	End         time.Time         `json:"end"`
	MinDuration time.Duration     `json:"min_duration"`
	// Searched is how many traced requests matched (at most the search limit: Capped).
	Searched int       `json:"searched"`
	Capped   bool      `json:"capped,omitempty"`
	Requests []Request `json:"requests"`
	Summary  string    `json:"summary"`
	// SearchLink opens the same search in the Jaeger UI.
	SearchLink string `json:"search_link,omitempty"`
	Error      string `json:"error,omitempty"`
	// Untraced is how many requests of the window vLLM's counters saw get a first token and never
	// finish (clients that gave up, disconnects): vLLM emits no span for an aborted or failed
	// request (vllm-project/vllm#32162), so none of them is in Requests, and the slowest of the
	// window may be among them. 0: none, or not known (MarkUntraced sets it).
	Untraced int `json:"untraced,omitempty"`
}

// AbortedNote is said with every list of slowest requests: vLLM records no span for an aborted
// request, so a client that gave up on a slow request leaves no trace of it.
const AbortedNote = "Aborted requests (client timeouts, disconnects) are never traced by vLLM, so the slowest of them are not here."

// MarkUntraced records that n requests of the window ended without a span (Untraced): the list
// is then of the slowest traced requests, and its summary says so.
func (r *Report) MarkUntraced(n int) {
	if n <= 0 {
		return
	}
	r.Untraced = n
	// Summarize's subject: "The slowest request ..." or "The 10 slowest requests ..."
	r.Summary = strings.Replace(r.Summary, "slowest request", "slowest traced request", 1)
}

// SummaryLine is the report's summary as one line shown with a diagnosis: with Untraced, how many
// requests of the window are not among the traced ones.
func (r *Report) SummaryLine() string {
	if r.Untraced > 0 {
		return fmt.Sprintf("%s %d requests of the window that never finished are not traced (vllm-project/vllm#32162).", r.Summary, r.Untraced)
	}
	return r.Summary
}

// Title is what the list of the report's requests is called: the slowest requests, or the
// slowest traced ones when requests of the window ended untraced.
func (r *Report) Title() string {
	if r.Untraced > 0 {
		return "Slowest traced requests"
	}
	return "Slowest requests"
}

// MissingNote is said with every list of the report's requests: which requests it leaves out
// and why; with Untraced, how many.
func (r *Report) MissingNote() string {
	if r.Untraced > 0 {
		return fmt.Sprintf("%d requests of the window got a first token and never finished (vLLM's counters) and are not here: "+
			"vLLM emits no span for an aborted or failed request (vllm-project/vllm#32162, open). Their clients gave up on them, "+
			"so the slowest requests of the window may be among them: this list is of the slowest traced ones.", r.Untraced)
	}
	return AbortedNote
}

// Client looks up slow requests in Jaeger's HTTP query API.
type Client struct {
	cfg  *Config
	http *http.Client
	base *url.URL
	ui   string
}

// NewClient builds a client for a validated, enabled Config.
func NewClient(cfg *Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	hc, err := promconfig.NewClientFromConfig(cfg.HTTPClientConfig, "traces", httpconfig.Options()...)
	if err != nil {
		return nil, fmt.Errorf("traces http client: %w", err)
	}
	base, err := url.Parse(strings.TrimRight(cfg.URL, "/"))
	if err != nil {
		return nil, err
	}
	ui := cfg.UIURL
	if ui == "" {
		ui = cfg.URL
	}
	return &Client{cfg: cfg, http: hc, base: base, ui: strings.TrimRight(ui, "/")}, nil
}

// Timeout is the lookup's own deadline.
func (c *Client) Timeout() time.Duration { return c.cfg.Timeout }

// Slowest returns the slowest llm_request spans of the alert's service that were in flight in
// [start, end]: those that started in it, and those that started up to the lookback before it
// and ended in it (Jaeger filters on start times only, and a request queued for minutes is just
// the one to show). It always returns a report; on failure its Error says why (and the error is
// returned too, for logs).
func (c *Client) Slowest(ctx context.Context, labels map[string]string, start, end time.Time) (*Report, error) {
	rep := &Report{Operation: Operation, Start: start, End: end, MinDuration: c.cfg.MinDuration, Requests: []Request{}}
	svc, err := c.cfg.ServiceFor(labels)
	if err == nil {
		rep.Service = svc
		rep.Tags, err = c.cfg.TagsFor(labels)
	}
	if err != nil {
		rep.Error = "cannot name the traced service: " + err.Error()
		return rep, errors.New(rep.Error)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, c.Timeout(), fmt.Errorf("traces lookup deadline of %s exceeded", c.Timeout()))
	defer cancel()
	q := c.query(rep, c.cfg.SearchLimit)
	rep.SearchLink = c.ui + "/search?" + c.query(rep, 20).Encode()
	reqs, traces, err := c.find(ctx, q, rep.Service, rep.Tags)
	if err != nil {
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		rep.Error = "Jaeger lookup failed: " + redact(err.Error())
		return rep, errors.New(rep.Error)
	}
	rep.Capped = traces >= c.cfg.SearchLimit
	kept := reqs[:0]
	for _, r := range reqs {
		// Ended in the window (or later), and as slow as asked: Jaeger's minDuration holds for
		// some span of a trace, which may be another service's.
		if !r.Start.Add(r.Duration).Before(start) && r.Duration >= rep.MinDuration {
			kept = append(kept, r)
		}
	}
	reqs = kept
	rep.Searched = len(reqs)
	all := append([]Request(nil), reqs...)
	sort.SliceStable(reqs, func(i, j int) bool { return reqs[i].Duration > reqs[j].Duration })
	if len(reqs) > c.cfg.Limit {
		reqs = reqs[:c.cfg.Limit]
	}
	for i := range reqs {
		reqs[i].Link = c.ui + "/trace/" + reqs[i].TraceID
	}
	rep.Requests = reqs
	rep.Summary = Summarize(rep, all)
	return rep, nil
}

// query is the /api/traces search (also the UI's /search): times in microseconds.
func (c *Client) query(rep *Report, limit int) url.Values {
	q := url.Values{}
	q.Set("service", rep.Service)
	q.Set("operation", rep.Operation)
	q.Set("start", strconv.FormatInt(rep.Start.Add(-c.cfg.Lookback).UnixMicro(), 10))
	q.Set("end", strconv.FormatInt(rep.End.UnixMicro(), 10))
	if rep.MinDuration > 0 {
		q.Set("minDuration", rep.MinDuration.String())
	}
	q.Set("limit", strconv.Itoa(limit))
	if len(rep.Tags) > 0 {
		b, _ := json.Marshal(rep.Tags)
		q.Set("tags", string(b))
	}
	return q
}

// jaegerResponse is the part of /api/traces' answer (Jaeger's UI model) that is read.
type jaegerResponse struct {
	Data []struct {
		TraceID string `json:"traceID"`
		Spans   []struct {
			TraceID       string     `json:"traceID"`
			SpanID        string     `json:"spanID"`
			OperationName string     `json:"operationName"`
			ProcessID     string     `json:"processID"`
			StartTime     int64      `json:"startTime"` // microseconds
			Duration      int64      `json:"duration"`  // microseconds
			Tags          []jaegerKV `json:"tags"`
		} `json:"spans"`
		// Processes are the trace's resources by processID: the service and its attributes.
		Processes map[string]struct {
			ServiceName string     `json:"serviceName"`
			Tags        []jaegerKV `json:"tags"`
		} `json:"processes"`
	} `json:"data"`
	Errors []struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
	} `json:"errors"`
}

type jaegerKV struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// hasTags reports whether every wanted tag is among the span's or its process's tags, with that
// value (Jaeger's search matches either; values compare as Jaeger shows them, as text).
func hasTags(want map[string]string, lists ...[]jaegerKV) bool {
	for k, v := range want {
		found := false
		for _, l := range lists {
			for _, kv := range l {
				if kv.Key == k && tagText(kv.Value) == v {
					found = true
				}
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// tagText is a tag's value as text: strings as they are, numbers and booleans as JSON has them.
func tagText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// maxBody bounds an answer: search_limit traces of one span each are well under it.
const maxBody = 64 << 20

// find runs the search and returns the llm_request spans of service (and, with tags, of the
// processes or spans that carry them), and how many traces Jaeger returned. Jaeger returns whole
// traces: one trace may also hold the llm_request spans of another model's service (an agent
// calling two models) or of a sibling pod, which are not this search's.
func (c *Client) find(ctx context.Context, q url.Values, service string, tags map[string]string) ([]Request, int, error) {
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + "/api/traces"
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, 0, err
	}
	var jr jaegerResponse
	jerr := json.Unmarshal(body, &jr)
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(body))
		if jerr == nil && len(jr.Errors) > 0 {
			msg = jr.Errors[0].Msg
		}
		if len(msg) > 200 {
			msg = msg[:200] + "..."
		}
		return nil, 0, fmt.Errorf("HTTP %d from /api/traces: %s", resp.StatusCode, msg)
	}
	if jerr != nil {
		return nil, 0, fmt.Errorf("/api/traces answer is not Jaeger's JSON: %w", jerr)
	}
	var out []Request
	for _, t := range jr.Data {
		for _, s := range t.Spans {
			if s.OperationName != Operation {
				continue // other spans of the same trace (a gateway's, a client's)
			}
			proc, known := t.Processes[s.ProcessID]
			if known && proc.ServiceName != service || !hasTags(tags, s.Tags, proc.Tags) {
				continue // another model's or another pod's request in a shared trace
			}
			r := Request{TraceID: s.TraceID, Start: time.UnixMicro(s.StartTime), Duration: time.Duration(s.Duration) * time.Microsecond}
			if r.TraceID == "" {
				r.TraceID = t.TraceID
			}
			for _, tag := range s.Tags {
				switch tag.Key {
				case "gen_ai.request.id":
					_ = json.Unmarshal(tag.Value, &r.RequestID)
				case "gen_ai.latency.time_in_queue":
					r.Queue = seconds(tag.Value)
				case "gen_ai.latency.time_in_model_prefill":
					r.Prefill = seconds(tag.Value)
				case "gen_ai.latency.time_in_model_decode":
					r.Decode = seconds(tag.Value)
				case "gen_ai.latency.time_to_first_token":
					r.TTFT = seconds(tag.Value)
				case "gen_ai.usage.prompt_tokens":
					r.PromptTokens = int(number(tag.Value))
				case "gen_ai.usage.completion_tokens":
					r.CompletionTokens = int(number(tag.Value))
				}
			}
			out = append(out, r)
		}
	}
	return out, len(jr.Data), nil
}

// number reads a tag value: Jaeger sends float64 and int64 tags as JSON numbers (and some
// converters as strings).
func number(raw json.RawMessage) float64 {
	var f float64
	if json.Unmarshal(raw, &f) == nil {
		return f
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		f, _ = strconv.ParseFloat(s, 64)
	}
	return f
}

func seconds(raw json.RawMessage) time.Duration {
	return time.Duration(number(raw) * float64(time.Second))
}

// redact drops query strings from errors such as `Get "http://host/api/traces?...": ...`.
func redact(msg string) string {
	if i := strings.Index(msg, "?"); i >= 0 {
		if j := strings.Index(msg[i:], "\""); j >= 0 {
			msg = msg[:i] + msg[i+j:]
		}
	}
	return msg
}
