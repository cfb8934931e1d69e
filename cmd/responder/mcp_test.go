package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vllm-responder/vllm-responder/internal/promql"
	"github.com/vllm-responder/vllm-responder/internal/stack"
	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

// bearerTransport adds the MCP bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func buildResponder(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "responder")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// callText calls a tool and returns its text answer and whether it is a tool error.
func callText(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// The MCP tools of the real binary, over stdio (`responder mcp`) and streamable HTTP
// (`responder serve` with mcp.enabled), against a real Prometheus: triage answers what the CLI
// prints, a bad argument is a clear tool error, and no tool writes anything.
func TestMCPToolsOverStdioAndHTTPAnswerAsTheCLIDoes(t *testing.T) {
	t.Parallel()
	bin := buildResponder(t)
	prom := startRecordedPrometheus(t)
	port := testenv.FreePort(t)
	const token = "mcp-test-token-5ff1"
	cfg := writeConfig(t, prom.URL, fmt.Sprintf("listen: \"127.0.0.1:%d\"\nmcp: {enabled: true, bearer_token: %q}\n", port, token))

	serve := exec.Command(bin, "serve", "--config", cfg)
	var serveErr syncBuf
	serve.Stderr = &serveErr
	serve.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = serve.Process.Kill()
		_ = serve.Wait()
		if t.Failed() {
			t.Logf("serve stderr:\n%s", serveErr.String())
		}
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	testenv.WaitFor(t, 20*time.Second, "the binary to serve", func() bool { return statusOf(base+"/healthz") == 200 })

	if a := postHook(base, webhook("g-mcp", "VLLMKVCacheNearFull", "vllm-kv", "f-mcp")); a.Err != nil || a.Status != 200 {
		t.Fatalf("webhook: %d %v %s", a.Status, a.Err, a.Body)
	}
	if code := statusOf(base + "/mcp"); code != http.StatusUnauthorized {
		t.Errorf("/mcp without the bearer token answered %d, want 401", code)
	}

	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	ctx := context.Background()
	transports := map[string]func() mcp.Transport{
		"stdio": func() mcp.Transport {
			cmd := exec.Command(bin, "mcp", "--config", cfg)
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			return &mcp.CommandTransport{Command: cmd}
		},
		"streamable HTTP": func() mcp.Transport {
			return &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{token}}, DisableStandaloneSSE: true}
		},
	}
	for name, tr := range transports {
		t.Run(name, func(t *testing.T) {
			cs, err := client.Connect(ctx, tr(), nil)
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer cs.Close()

			var names []string
			for tool, err := range cs.Tools(ctx, nil) {
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, tool.Name)
				if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
					t.Errorf("tool %s is not marked read-only", tool.Name)
				}
			}
			if got := strings.Join(names, ","); got != "explain_verdict,list_playbooks,recent_diagnoses,triage" {
				t.Fatalf("tools %s: want exactly the four read-only ones (no silence, no capture)", got)
			}

			for _, tc := range []struct{ alert, pod, want string }{
				{"VLLMTimeToFirstTokenP99High", "vllm-kv", "kv-preemption"},
				{"", "vllm-capacity", "capacity-past-knee"},
			} {
				args := map[string]any{"pod": tc.pod, "labels": map[string]string{"namespace": "llm"}}
				cli := []string{"--config", cfg, "--label", "pod=" + tc.pod, "--label", "namespace=llm"}
				if tc.alert != "" {
					args["alert"] = tc.alert
					cli = append(cli, "--alert", tc.alert)
				}
				text, isErr := callText(t, cs, "triage", args)
				if isErr {
					t.Fatalf("triage %v: tool error %s", args, text)
				}
				var got triageJSON
				if err := json.Unmarshal([]byte(text), &got); err != nil {
					t.Fatalf("triage answered no JSON: %v\n%s", err, text)
				}
				want, stderr, code := triageCLI(t, cli...)
				if code != 0 {
					t.Fatalf("CLI exit %d: %s", code, stderr)
				}
				if got.Verdict != tc.want || got.Verdict != want.Verdict || got.Playbook != want.Playbook || got.Title != want.Title || len(got.Evidence) != len(want.Evidence) {
					t.Errorf("MCP triage gave %s/%s %q (%d evidence), the CLI %s/%s %q (%d), want %s",
						got.Playbook, got.Verdict, got.Title, len(got.Evidence), want.Playbook, want.Verdict, want.Title, len(want.Evidence), tc.want)
				}
			}

			for _, bad := range []struct {
				tool string
				args map[string]any
				want string
			}{
				{"triage", map[string]any{"pod": "vllm-kv", "at": "yesterday"}, `at: "yesterday" is neither an RFC 3339 time`},
				{"triage", map[string]any{"alert": "NoSuchAlert"}, `no playbook matches alert "NoSuchAlert" (known: VLLM`},
				{"triage", map[string]any{"labels": map[string]string{"bad-name": "x"}}, `label "bad-name": not a label name`},
				{"triage", map[string]any{"pod": 42}, "pod"},
				{"explain_verdict", map[string]any{"verdict": "slow"}, `unknown verdict "slow" (one of capacity-past-knee,`},
				{"recent_diagnoses", map[string]any{"limit": 5000}, "limit: 5000 is not between 1 and 100"},
			} {
				text, isErr := callText(t, cs, bad.tool, bad.args)
				if !isErr || !strings.Contains(text, bad.want) {
					t.Errorf("%s %v: error=%v %q, want a tool error containing %q", bad.tool, bad.args, isErr, text, bad.want)
				}
			}

			text, isErr := callText(t, cs, "explain_verdict", map[string]any{"verdict": "kv-preemption"})
			if isErr || !strings.Contains(text, "requests are being preempted") || !strings.Contains(text, `"playbook":"ttft-p99-high"`) {
				t.Errorf("explain_verdict kv-preemption: %s", text)
			}
			text, isErr = callText(t, cs, "list_playbooks", nil)
			if isErr || !strings.Contains(text, `"name":"engine-stalled"`) || !strings.Contains(text, `alertname=\"VLLMEngineStalled\"`) || !strings.Contains(text, `"engine-stalled"`) {
				t.Errorf("list_playbooks: %s", text)
			}
			text, isErr = callText(t, cs, "recent_diagnoses", map[string]any{"limit": 5})
			if isErr || !strings.Contains(text, `"diagnoses":`) {
				t.Errorf("recent_diagnoses: %s", text)
			}
			if name == "streamable HTTP" { // the serving responder diagnosed the webhook (stdio has its own memory store)
				testenv.WaitFor(t, 30*time.Second, "recent_diagnoses to list the webhook's diagnosis", func() bool {
					text, isErr := callText(t, cs, "recent_diagnoses", nil)
					return !isErr && strings.Contains(text, `"alertname":"VLLMKVCacheNearFull"`) && strings.Contains(text, `"verdict":"kv-preemption"`)
				})
			}
		})
	}
}

// MCP triage with Prometheus unreachable is a tool error of one line naming the server and the
// reason the engine gave, as `responder triage` prints it.
func TestMCPTriageWithPrometheusUnreachableNamesTheServerAndTheReason(t *testing.T) {
	t.Parallel()
	url := fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t))
	cs := inMemoryMCP(t, url)

	text, isErr := callText(t, cs, "triage", map[string]any{"pod": "vllm-0"})
	want := "Prometheus at " + url + " unreachable: "
	if !isErr || !strings.Contains(text, want) || !strings.Contains(text, "connection refused") || strings.Contains(text, "\n") {
		t.Fatalf("error=%v %q; want one line with %q and the reason", isErr, text, want)
	}
}

// MCP triage takes no label value longer than promql.MaxLabelValue: a 16 KiB model name (which
// went to Prometheus in 19 requests) is a tool error before any query; the longest value allowed
// is sent (and meets the unreachable Prometheus).
func TestMCPTriageRefusesALabelValueLongerThanTheBound(t *testing.T) {
	t.Parallel()
	cs := inMemoryMCP(t, fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t)))
	for _, args := range []map[string]any{
		{"model": strings.Repeat("m", 16<<10)},
		{"pod": strings.Repeat("p", promql.MaxLabelValue+1)},
		{"labels": map[string]string{"namespace": strings.Repeat("n", 1<<17)}},
	} {
		text, isErr := callText(t, cs, "triage", args)
		if !isErr || !strings.Contains(text, "value too long (") || !strings.Contains(text, fmt.Sprintf("bytes, at most %d)", promql.MaxLabelValue)) {
			t.Errorf("error=%v %.200q; want a tool error saying the value is too long", isErr, text)
		}
	}
	text, isErr := callText(t, cs, "triage", map[string]any{"model": strings.Repeat("m", promql.MaxLabelValue)})
	if !isErr || !strings.Contains(text, "unreachable") {
		t.Errorf("a value of the bound: error=%v %.200q; want it sent to Prometheus (unreachable)", isErr, text)
	}
}

// inMemoryMCP is a client session with the MCP server of a responder on the Prometheus at
// promURL (the in-memory store), closed with the test.
func inMemoryMCP(t *testing.T, promURL string) *mcp.ClientSession {
	t.Helper()
	c, err := stack.LoadConfig(writeConfig(t, promURL, ""))
	if err != nil {
		t.Fatal(err)
	}
	sk, err := stack.New(c, stack.Options{Playbooks: true, Store: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sk.Close() })
	s, err := newMCPServer(sk)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}
