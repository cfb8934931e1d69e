// Package mcpserver serves the responder's read-only tools over the Model Context Protocol, so
// that agents that investigate incidents ask a tool that knows vLLM instead of guessing PromQL:
// triage (the same diagnosis and JSON as `responder triage --output json`), list_playbooks,
// recent_diagnoses and explain_verdict. No tool writes anything: silences and profile captures
// are never exposed. `responder mcp` serves it on stdio, `responder serve` on /mcp (streamable
// HTTP, behind its own bearer token).
package mcpserver

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/store"
	"github.com/vllm-responder/vllm-responder/triage"
)

// Options are what the tools read. Set and Triage are required.
type Options struct {
	Set *playbooks.Set
	// Triage runs the triage tool as `responder triage` runs (the same errors, the same JSON).
	Triage *triage.Service
	// Store holds the recent-diagnoses index (nil: recent_diagnoses answers with none).
	Store   store.Store
	Version string
}

// New returns the MCP server with its tools.
func New(o Options) (*mcp.Server, error) {
	if o.Set == nil || o.Triage == nil {
		return nil, errors.New("mcp server: playbooks and triage are required")
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "vllm-responder", Version: o.Version}, &mcp.ServerOptions{
		Instructions: "Read-only vLLM incident tools: triage runs the responder's playbooks against Prometheus and returns the diagnosis " +
			"(verdict, evidence, fleet view); explain_verdict says what a verdict id means and what to do.",
	})
	t := &tools{o: o}
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(s, &mcp.Tool{Name: "triage", Annotations: readOnly,
		Description: "Diagnose a vLLM model or pod now (or as of `at`): runs the playbook of `alert` (default: the on-demand triage) " +
			"against Prometheus and returns exactly the JSON of `responder triage --output json` (playbook, verdict, title, summary, actions, evidence, fleet)."},
		t.triage)
	mcp.AddTool(s, &mcp.Tool{Name: "list_playbooks", Annotations: readOnly,
		Description: "The loaded playbooks: name, the alerts they match and the verdicts each can give."}, t.listPlaybooks)
	mcp.AddTool(s, &mcp.Tool{Name: "recent_diagnoses", Annotations: readOnly,
		Description: "The responder's most recent diagnoses (newest first), from its store."}, t.recent)
	mcp.AddTool(s, &mcp.Tool{Name: "explain_verdict", Annotations: readOnly,
		Description: "What a verdict id means, how each playbook decides it and the actions it recommends, from the playbooks."}, t.explain)
	return s, nil
}

// HTTPHandler serves s as streamable HTTP (stateless, JSON answers) behind a bearer token.
func HTTPHandler(s *mcp.Server, bearerToken string) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	want := []byte("Bearer " + bearerToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if bearerToken == "" || subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="vllm-responder mcp"`)
			http.Error(w, "unauthorized: send mcp.bearer_token as Authorization: Bearer ...", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

type tools struct {
	o Options
}

// triageIn are the triage tool's arguments.
type triageIn struct {
	Alert  string            `json:"alert,omitempty" jsonschema:"alert name (VLLMTimeToFirstTokenP99High, ...): run the playbook that matches it; empty: the on-demand triage"`
	Model  string            `json:"model,omitempty" jsonschema:"the model_name label of the vLLM series; without it (and without a pod) the triage is about one model: the only one, or the one with the most severe verdict, the others listed in models"`
	Pod    string            `json:"pod,omitempty" jsonschema:"the pod; without one the triage names the model's worst pod"`
	Labels map[string]string `json:"labels,omitempty" jsonschema:"more alert labels (namespace, ...)"`
	At     string            `json:"at,omitempty" jsonschema:"evaluate as of this time: RFC 3339 or Unix seconds (default now)"`
}

func (t *tools) triage(ctx context.Context, _ *mcp.CallToolRequest, in triageIn) (*mcp.CallToolResult, any, error) {
	req := triage.Request{Alert: in.Alert, Labels: maps.Clone(in.Labels)}
	if req.Labels == nil {
		req.Labels = map[string]string{}
	}
	for k, v := range map[string]string{"model_name": in.Model, "pod": in.Pod} {
		if v != "" {
			req.Labels[k] = v
		}
	}
	if in.At != "" {
		var err error
		if req.At, err = triage.ParseAt(in.At, time.Now()); err != nil {
			return nil, nil, fmt.Errorf("at: %w", err)
		}
	}
	res, err := t.o.Triage.Run(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	b, err := res.JSON()
	if err != nil {
		return nil, nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil, nil
}

// playbookInfo is one entry of list_playbooks.
type playbookInfo struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Match       []string `json:"match"`
	OnDemand    bool     `json:"on_demand,omitempty"`
	Verdicts    []string `json:"verdicts"`
	Source      string   `json:"source"`
}

// playbooksOut is list_playbooks' answer.
type playbooksOut struct {
	Playbooks []playbookInfo `json:"playbooks"`
}

func (t *tools) listPlaybooks(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, playbooksOut, error) {
	out := playbooksOut{Playbooks: []playbookInfo{}}
	for _, p := range t.o.Set.All() {
		info := playbookInfo{Name: p.Name, Description: p.Description, OnDemand: p.OnDemand, Source: p.Source, Match: []string{}}
		for _, m := range p.Matchers {
			info.Match = append(info.Match, m.String())
		}
		for _, v := range p.Verdicts {
			if !slices.Contains(info.Verdicts, v.ID) {
				info.Verdicts = append(info.Verdicts, v.ID)
			}
		}
		out.Playbooks = append(out.Playbooks, info)
	}
	sort.Slice(out.Playbooks, func(i, j int) bool { return out.Playbooks[i].Name < out.Playbooks[j].Name })
	return nil, out, nil
}

// recentIn are recent_diagnoses' arguments.
type recentIn struct {
	Limit int `json:"limit,omitempty" jsonschema:"how many, newest first (default 20, at most 100)"`
}

// recentOut is recent_diagnoses' answer.
type recentOut struct {
	Diagnoses []notify.RecentDiagnosis `json:"diagnoses"`
}

func (t *tools) recent(ctx context.Context, _ *mcp.CallToolRequest, in recentIn) (*mcp.CallToolResult, recentOut, error) {
	if in.Limit < 0 || in.Limit > notify.MaxRecent {
		return nil, recentOut{}, fmt.Errorf("limit: %d is not between 1 and %d", in.Limit, notify.MaxRecent)
	}
	limit := in.Limit
	if limit == 0 {
		limit = 20
	}
	if t.o.Store == nil {
		return nil, recentOut{Diagnoses: []notify.RecentDiagnosis{}}, nil
	}
	ds, err := notify.RecentDiagnoses(ctx, t.o.Store, limit)
	if err != nil {
		return nil, recentOut{}, fmt.Errorf("the store could not be read: %w", err)
	}
	return nil, recentOut{Diagnoses: ds}, nil
}

// explainIn are explain_verdict's arguments.
type explainIn struct {
	Verdict string `json:"verdict" jsonschema:"a verdict id, as in a diagnosis' verdict field (kv-preemption, ...)"`
}

// verdictRule is how one playbook decides a verdict.
type verdictRule struct {
	Playbook string   `json:"playbook"`
	When     string   `json:"when"`
	Means    string   `json:"means,omitempty"`
	Actions  []string `json:"actions,omitempty"`
	Runbook  string   `json:"runbook"`
}

// explainOut is explain_verdict's answer.
type explainOut struct {
	Verdict string        `json:"verdict"`
	Meaning string        `json:"meaning"`
	Rules   []verdictRule `json:"rules"`
}

func (t *tools) explain(_ context.Context, _ *mcp.CallToolRequest, in explainIn) (*mcp.CallToolResult, explainOut, error) {
	id := strings.Trim(strings.TrimSpace(in.Verdict), "`")
	if !slices.Contains(playbooks.KnownVerdicts, id) {
		return nil, explainOut{}, fmt.Errorf("verdict: unknown verdict %q (one of %s)", in.Verdict, strings.Join(playbooks.KnownVerdicts, ", "))
	}
	out := explainOut{Verdict: id, Meaning: playbooks.VerdictMeaning(id), Rules: []verdictRule{}}
	for _, p := range t.o.Set.All() {
		for _, v := range p.Verdicts {
			if v.ID != id {
				continue
			}
			r := verdictRule{Playbook: p.Name, When: v.When, Means: v.Meaning, Runbook: "docs/playbooks/" + p.Name + ".md"}
			for _, a := range v.Actions {
				if a.Tree != nil && a.Root != nil {
					r.Actions = append(r.Actions, a.Root.String())
				}
			}
			out.Rules = append(out.Rules, r)
		}
	}
	return nil, out, nil
}
