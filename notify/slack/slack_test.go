package slack

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/notify/slack/fakeslack"
	"github.com/vllm-responder/vllm-responder/store"
	"github.com/vllm-responder/vllm-responder/triage"
)

type noTriage struct{}

func (noTriage) Triage(context.Context, map[string]string) (*triage.Result, error) {
	return nil, context.Canceled
}

// New is the integration's one entry point: it registers the Slack metrics, shares the pacing
// through a Redis store, and Start mounts the app only when Slack can reach it.
func TestNewBuildsTheIntegrationAndStartMountsTheAppOnlyWhenSlackCanReachIt(t *testing.T) {
	fs := fakeslack.New(t)
	newSlack := func(t *testing.T, cfg *Config, st store.Store, reg prometheus.Registerer) *Slack {
		t.Helper()
		s, err := New(Options{Config: cfg, Store: st, Registerer: reg, Logger: zerolog.New(zerolog.NewTestWriter(t))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close(context.Background()) })
		return s
	}

	t.Run("the metrics are registered", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		newSlack(t, testConfig(fs.APIURL()), store.NewMemory(), reg)
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, mf := range mfs {
			names = append(names, mf.GetName())
		}
		if !strings.Contains(strings.Join(names, " "), "vllm_responder_slack_api_calls_total") {
			t.Fatalf("registered %v, want the Slack series", names)
		}
	})

	t.Run("a Redis store shares the pacing, a memory store does not", func(t *testing.T) {
		rs, err := store.NewRedis("redis://127.0.0.1:1/0", "", "tenant-a:") // not dialled until used
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rs.Close() })
		if p := newSlack(t, testConfig(fs.APIURL()), rs, nil).api.pace; p.shared != store.Pacer(rs) {
			t.Errorf("with Redis: shared=%v, want the Redis store", p.shared)
		}
		if p := newSlack(t, testConfig(fs.APIURL()), store.NewMemory(), nil).api.pace; p.shared != nil {
			t.Error("with the memory store the pacing is shared")
		}
	})

	t.Run("without a signing secret nor Socket Mode nothing is mounted", func(t *testing.T) {
		cfg := testConfig(fs.APIURL())
		cfg.SigningSecret = ""
		cmds, acts, err := newSlack(t, cfg, store.NewMemory(), nil).Start(context.Background(), noTriage{})
		if err != nil || cmds != nil || acts != nil {
			t.Fatalf("Start = %v, %v, %v; want no handlers", cmds, acts, err)
		}
	})

	t.Run("with a signing secret the endpoints verify every request", func(t *testing.T) {
		cmds, acts, err := newSlack(t, testConfig(fs.APIURL()), store.NewMemory(), nil).Start(context.Background(), noTriage{})
		if err != nil || cmds == nil || acts == nil {
			t.Fatalf("Start = %v, %v, %v; want both handlers", cmds, acts, err)
		}
		for _, h := range []http.Handler{cmds, acts} {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/slack/commands", strings.NewReader("text=help")))
			if w.Code != http.StatusUnauthorized {
				t.Errorf("an unsigned request got %d, want 401", w.Code)
			}
		}
	})
}
