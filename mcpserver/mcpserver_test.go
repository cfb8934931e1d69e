package mcpserver

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/evidence"
	"github.com/vllm-responder/vllm-responder/facts/sources"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/triage"
)

func testServerOptions(t *testing.T) Options {
	t.Helper()
	pbs, err := playbooks.Builtin(sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	set, err := playbooks.NewSet(pbs, nil, playbooks.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q := noQueries{t}
	tr, err := triage.New(triage.Options{Set: set, Engine: evidence.NewEngine(q, evidence.EngineOptions{}), Querier: q})
	if err != nil {
		t.Fatal(err)
	}
	return Options{Set: set, Triage: tr}
}

// noQueries fails the test on any query: these tests never triage.
type noQueries struct{ t *testing.T }

func (q noQueries) Query(context.Context, string, time.Time) (model.Value, error) {
	q.t.Error("triage must not run")
	return nil, errors.New("no queries here")
}

func TestTheHTTPEndpointRefusesAMissingOrWrongBearerToken(t *testing.T) {
	s, err := New(testServerOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, token, header string }{
		{"no header", "right", ""},
		{"a wrong token", "right", "Bearer wrong"},
		{"the right token as basic auth", "right", "Basic right"},
		{"no token configured lets nobody in", "", "Bearer "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(HTTPHandler(s, tc.token))
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
				t.Fatalf("status %d, want 401 with WWW-Authenticate", resp.StatusCode)
			}
		})
	}
}

// Every verdict id has a meaning, and every rule of a built-in playbook that gives it says what
// it means there.
func TestEveryVerdictIsExplainedByThePlaybooks(t *testing.T) {
	tl := &tools{o: testServerOptions(t)}
	for _, v := range playbooks.KnownVerdicts {
		_, out, err := tl.explain(context.Background(), nil, explainIn{Verdict: v})
		if err != nil {
			t.Fatal(err)
		}
		if out.Meaning == "" {
			t.Errorf("%s: no meaning (playbooks.VerdictMeaning)", v)
		}
		for _, r := range out.Rules {
			if r.Means == "" {
				t.Errorf("%s: a rule of %s has no meaning", v, r.Playbook)
			}
		}
	}
}
