// Package fakeslack is a Slack Web API stand-in for tests: an httptest server that records every
// call and fails the test on a call nobody expected.
package fakeslack

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// The workspace's incident channel: every post lands there.
const (
	ChannelID   = "C0INCIDENT"
	ChannelName = "vllm-incidents"
)

// Call is one request the server received.
type Call struct {
	Method string // the API method ("chat.postMessage"), "upload" or "response"
	Path   string
	Form   url.Values
	Body   []byte
}

// Blocks returns the call's blocks parameter as generic JSON.
func (c Call) Blocks() []map[string]any {
	var b []map[string]any
	_ = json.Unmarshal([]byte(c.Form.Get("blocks")), &b)
	return b
}

// Response is what a handler answers.
type Response struct {
	Status int
	Header map[string]string
	Body   any // marshalled as JSON; a string is sent as is
	// Hold, when set, delays the answer until it is closed (a slow Slack); the call is recorded
	// at once, and other calls are answered meanwhile.
	Hold <-chan struct{}
}

// Handler answers one method.
type Handler func(c Call) Response

// Server is the fake Slack.
type Server struct {
	*httptest.Server
	t        testing.TB
	mu       sync.Mutex
	calls    []Call
	handlers map[string]Handler
	seq      int
	changed  chan struct{}
}

// New starts a fake Slack that answers the methods in allowed with plausible successes.
// Every other method fails the test unless given a handler with Handle.
func New(t testing.TB, allowed ...string) *Server {
	s := &Server{t: t, handlers: map[string]Handler{}, changed: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	for _, m := range allowed {
		h, ok := s.defaults()[m]
		if !ok {
			t.Fatalf("fakeslack: no default for %s", m)
		}
		s.handlers[m] = h
	}
	return s
}

// URL of the API, with the trailing slash slack.OptionAPIURL wants.
func (s *Server) APIURL() string { return s.Server.URL + "/api/" }

// ResponseURL is a response_url that lands on this server.
func (s *Server) ResponseURL(id string) string { return s.Server.URL + "/response/" + id }

// Handle sets the handler of a method.
func (s *Server) Handle(method string, h Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[method] = h
}

func ok(extra map[string]any) Response {
	body := map[string]any{"ok": true}
	for k, v := range extra {
		body[k] = v
	}
	return Response{Status: 200, Body: body}
}

func (s *Server) nextTS() string {
	s.seq++
	return fmt.Sprintf("1700000000.%06d", s.seq)
}

func (s *Server) defaults() map[string]Handler {
	return map[string]Handler{
		"chat.postMessage": func(c Call) Response {
			return ok(map[string]any{"channel": ChannelID, "ts": s.nextTS()})
		},
		// One page: the workspace's incident channel.
		"conversations.list": func(c Call) Response {
			return ok(map[string]any{"channels": []map[string]any{{"id": ChannelID, "name": ChannelName}}})
		},
		"chat.update": func(c Call) Response {
			return ok(map[string]any{"channel": c.Form.Get("channel"), "ts": c.Form.Get("ts"), "text": c.Form.Get("text")})
		},
		"chat.postEphemeral": func(c Call) Response { return ok(map[string]any{"message_ts": s.nextTS()}) },
		"files.getUploadURLExternal": func(c Call) Response {
			return ok(map[string]any{"upload_url": s.Server.URL + "/upload/F0CHART", "file_id": "F0CHART"})
		},
		"upload": func(c Call) Response { return Response{Status: 200, Body: "OK - 1234"} },
		"files.completeUploadExternal": func(c Call) Response {
			return ok(map[string]any{"files": []map[string]string{{"id": "F0CHART", "title": "chart"}}})
		},
		"response": func(c Call) Response { return Response{Status: 200, Body: "ok"} },
		"usergroups.users.list": func(c Call) Response {
			return ok(map[string]any{"users": []string{"U0ONCALL"}})
		},
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	c := Call{Path: r.URL.Path, Body: body}
	switch {
	case strings.HasPrefix(r.URL.Path, "/api/"):
		c.Method = strings.TrimPrefix(r.URL.Path, "/api/")
	case strings.HasPrefix(r.URL.Path, "/upload/"):
		c.Method = "upload"
	case strings.HasPrefix(r.URL.Path, "/response/"):
		c.Method = "response"
	default:
		c.Method = r.URL.Path
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		c.Form, _ = url.ParseQuery(string(body))
	}
	s.mu.Lock()
	s.calls = append(s.calls, c)
	h := s.handlers[c.Method]
	close(s.changed)
	s.changed = make(chan struct{})
	var resp Response
	if h != nil {
		resp = h(c)
	}
	s.mu.Unlock()
	if h == nil {
		s.t.Errorf("fakeslack: unexpected call %s %s", r.Method, r.URL.Path)
		resp = Response{Status: 200, Body: map[string]any{"ok": false, "error": "unexpected_call_in_test"}}
	}
	if resp.Hold != nil {
		select {
		case <-resp.Hold:
		case <-r.Context().Done():
			return
		}
	}
	for k, v := range resp.Header {
		w.Header().Set(k, v)
	}
	var out []byte
	if str, isStr := resp.Body.(string); isStr {
		out = []byte(str)
	} else {
		w.Header().Set("Content-Type", "application/json")
		out, _ = json.Marshal(resp.Body)
	}
	w.WriteHeader(max(resp.Status, 200))
	_, _ = w.Write(out)
}

// Calls returns the calls of one method (all calls for "").
func (s *Server) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Methods lists the methods called, in order.
func (s *Server) Methods() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, c := range s.calls {
		out = append(out, c.Method)
	}
	return out
}

// WaitCalls waits until method was called at least n times and returns those calls.
func (s *Server) WaitCalls(t testing.TB, method string, n int, timeout time.Duration) []Call {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if c := s.Calls(method); len(c) >= n {
			return c
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("fakeslack: waited %s for %d %s calls, got %d (calls: %v)", timeout, n, method, len(s.Calls(method)), s.Methods())
			return nil
		}
	}
}
