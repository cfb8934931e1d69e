package slack

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/vllm-responder/vllm-responder/notify/slack/fakeslack"
)

// socketPeer is Slack's side of a Socket Mode connection: it sends envelopes and collects acks.
type socketPeer struct {
	srv  *httptest.Server
	send chan any
	mu   sync.Mutex
	acks map[string]json.RawMessage
	got  chan struct{}
}

func newSocketPeer(t *testing.T) *socketPeer {
	p := &socketPeer{send: make(chan any, 10), acks: map[string]json.RawMessage{}, got: make(chan struct{}, 10)}
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			t.Errorf("upgrade: %v", err)
			return
		}
		defer c.Close()
		_ = c.WriteJSON(map[string]any{"type": "hello", "num_connections": 1})
		go func() {
			for m := range p.send {
				_ = c.WriteJSON(m)
			}
		}()
		for {
			var ack struct {
				EnvelopeID string          `json:"envelope_id"`
				Payload    json.RawMessage `json:"payload"`
			}
			if err := c.ReadJSON(&ack); err != nil {
				return
			}
			p.mu.Lock()
			p.acks[ack.EnvelopeID] = ack.Payload
			p.mu.Unlock()
			p.got <- struct{}{}
		}
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *socketPeer) waitAck(t *testing.T, id string) json.RawMessage {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		p.mu.Lock()
		a, ok := p.acks[id]
		p.mu.Unlock()
		if ok {
			return a
		}
		select {
		case <-p.got:
		case <-deadline:
			t.Fatalf("no ack for envelope %s", id)
		}
	}
}

func TestSocketModeRoutesCommandsAndClicksLikeTheHTTPEndpoints(t *testing.T) {
	peer := newSocketPeer(t)
	e := newEnv(t, []string{"response", "chat.postMessage"}, func(c *Config, _ *appOptions) {
		c.SocketMode = true
		c.AppToken = "xapp-test"
		c.SigningSecret = ""
	})
	e.slack.Handle("apps.connections.open", func(fakeslack.Call) fakeslack.Response {
		return fakeslack.Response{Body: map[string]any{"ok": true, "url": "ws" + strings.TrimPrefix(peer.srv.URL, "http") + "/ws"}}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.app.RunSocketMode(ctx) }()

	peer.send <- map[string]any{"type": "slash_commands", "envelope_id": "env-cmd", "accepts_response_payload": true,
		"payload": map[string]any{"command": "/vllm", "text": "triage llama vllm-0", "user_id": "U1", "channel_id": "C0INCIDENT",
			"response_url": e.slack.ResponseURL("sock")}}
	ack := peer.waitAck(t, "env-cmd")
	if !strings.Contains(string(ack), "Running triage for model `llama`, pod `vllm-0`") {
		t.Errorf("command ack %s", ack)
	}
	e.slack.WaitCalls(t, "response", 1, 10*time.Second)

	v, _ := encodeButtonValue(e.cfg.buttonKey(), actionSilence, buttonValue{Labels: alertLabels})
	peer.send <- map[string]any{"type": "interactive", "envelope_id": "env-click", "payload": map[string]any{
		"type": "block_actions", "user": map[string]any{"id": "U1", "name": "alice"}, "channel": map[string]any{"id": "C0INCIDENT"},
		"message": map[string]any{"ts": "1700000000.000001"},
		"actions": []map[string]any{{"action_id": actionSilence, "block_id": "b", "type": "button", "value": v}}}}
	peer.waitAck(t, "env-click")
	post := e.slack.WaitCalls(t, "chat.postMessage", 1, 10*time.Second)[0]
	if !strings.Contains(post.Form.Get("text"), "silenced `VLLMKVCacheNearFull`") {
		t.Errorf("click reply %v", post.Form)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("RunSocketMode: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RunSocketMode did not return after cancel")
	}
	close(peer.send)
}
