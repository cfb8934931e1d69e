package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vllm-responder/vllm-responder/config"
	"github.com/vllm-responder/vllm-responder/internal/stack"
	"github.com/vllm-responder/vllm-responder/mcpserver"
	"github.com/vllm-responder/vllm-responder/triage"
)

// newMCPServer is the MCP server on the playbooks, triage and store of this responder. Its
// triage is `responder triage`'s: the same run, the same errors, the same JSON.
func newMCPServer(st *stack.Stack) (*mcp.Server, error) {
	return mcpserver.New(mcpserver.Options{Set: st.Playbooks, Triage: st.Triage, Store: st.Store, Version: version})
}

// mcpHandler is /mcp of `responder serve` (nil when mcp.enabled is off).
func mcpHandler(c *config.Config, st *stack.Stack) (http.Handler, error) {
	if !c.MCP.Enabled {
		return nil, nil
	}
	s, err := newMCPServer(st)
	if err != nil {
		return nil, err
	}
	return mcpserver.HTTPHandler(s, c.MCP.BearerToken.Reveal()), nil
}

// runMCP serves the MCP tools on stdin/stdout until the client closes stdin. Logs go to stderr:
// stdout is the protocol.
func runMCP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "configuration file (required)")
	promURL := fs.String("prometheus", "", "Prometheus URL (overrides prometheus.url)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "responder mcp: "+format+"\n", a...)
		return 1
	}
	if *cfgPath == "" {
		return fail("--config is required")
	}
	c, err := stack.LoadConfig(*cfgPath, stack.PrometheusURL(*promURL))
	if err != nil {
		return fail("%s", triage.OneLine(err))
	}
	st, err := stack.New(c, stack.Options{Logs: stderr, Playbooks: true, Store: true})
	if err != nil {
		return fail("%s", triage.OneLine(err))
	}
	defer st.Close()
	s, err := newMCPServer(st)
	if err != nil {
		return fail("%v", err)
	}
	st.Log.Info().Int("playbooks", len(st.Playbooks.All())).Msg("responder mcp serving on stdio")
	t := &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}
	if err := s.Run(ctx, t); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		st.Log.Error().Err(err).Msg("mcp session ended")
		return 1
	}
	return 0
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
