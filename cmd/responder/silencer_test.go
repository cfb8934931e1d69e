package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/config"
	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/notify/slack"
	"github.com/vllm-responder/vllm-responder/profile"
	"github.com/vllm-responder/vllm-responder/silence"
)

// TestCaptureSilencesUseTheAlertmanagerHTTPConfig: a capture's silence goes through the same
// Alertmanager client as the Silence button, with alertmanager's http_config (here a bearer
// token a proxy in front of a real Alertmanager demands), not a bare client that the proxy
// refuses.
func TestCaptureSilencesUseTheAlertmanagerHTTPConfig(t *testing.T) {
	t.Parallel()
	am := testenv.Alertmanager(t, "route: {receiver: none}\nreceivers: [{name: none}]\n")
	u, err := url.Parse(am.URL)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer am-t0ken" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)

	c, err := config.Parse("test.yaml", fmt.Appendf(nil, "alertmanager:\n  url: %s\n  authorization: {credentials: am-t0ken}\n", proxy.URL))
	if err != nil {
		t.Fatal(err)
	}
	type creator interface {
		Create(context.Context, silence.Silence) (string, error)
	}
	for name, as := range map[string]func(silencer) creator{
		"capture":      func(s silencer) creator { return profile.Silencer(s) },
		"slack button": func(s silencer) creator { return slack.Silencer(s) },
	} {
		s0, err := newSilencer(c)
		if err != nil || s0 == nil {
			t.Fatalf("%s: silencer %v, %v", name, s0, err)
		}
		s := as(s0)
		if err != nil || s == nil {
			t.Fatalf("%s: silencer %v, %v", name, s, err)
		}
		now := time.Now()
		id, err := s.Create(context.Background(), silence.ForLabels(map[string]string{"pod": "vllm-0"}, now, time.Minute, "test", name))
		if err != nil || id == "" {
			t.Fatalf("%s: creating a silence through the authenticated proxy: id %q, %v", name, id, err)
		}
	}
}
