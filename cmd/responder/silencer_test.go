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

	cfgpkg "github.com/vllm-responder/vllm-responder/config"
	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/silence"
)

// TestCaptureSilencesUseTheAlertmanagerHTTPConfig: a capture's silence goes through the same
// Alertmanager client as the Silence button, with alertmanager's http_config (here a bearer
// token a proxy in front of a real Alertmanager demands), not a bare client that the proxy
// refuses.
func TestCaptureSilencesUseTheAlertmanagerHTTPConfig(t *testing.T) {
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

	c, err := cfgpkg.Parse("test.yaml", fmt.Appendf(nil, "alertmanager:\n  url: %s\n  authorization: {credentials: am-t0ken}\n", proxy.URL))
	if err != nil {
		t.Fatal(err)
	}
	type creator interface {
		Create(context.Context, silence.Silence) (string, error)
	}
	for name, mk := range map[string]func(*cfgpkg.Config) (creator, error){
		"capture":      func(c *cfgpkg.Config) (creator, error) { return newCaptureSilencer(c) },
		"slack button": func(c *cfgpkg.Config) (creator, error) { return newSlackSilencer(c) },
	} {
		s, err := mk(c)
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
