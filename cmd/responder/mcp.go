package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"

	cfgpkg "github.com/vllm-responder/vllm-responder/config"
	"github.com/vllm-responder/vllm-responder/dispatch"
	"github.com/vllm-responder/vllm-responder/evidence"
	"github.com/vllm-responder/vllm-responder/internal/secret"
	"github.com/vllm-responder/vllm-responder/mcpserver"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/store"
)

// mcpTriageTimeout bounds one triage tool call (under serve's 30 s write timeout).
const mcpTriageTimeout = 25 * time.Second

// newMCPServer is the MCP server on the playbooks, engine and store of this responder. Its
// triage is `responder triage`'s: the same run, the same errors, the same JSON.
func newMCPServer(c *cfgpkg.Config, set *playbooks.Set, engine *evidence.Engine, st store.Store) (*mcp.Server, error) {
	return mcpserver.New(mcpserver.Options{
		Set: set, Store: st, Version: version, Encode: encodeTriage,
		ParseAt: func(s string) (time.Time, error) { return parseAt(s, time.Now()) },
		Triage: func(ctx context.Context, labels map[string]string, at time.Time) (*playbooks.Diagnosis, error) {
			ctx, cancel := context.WithTimeout(ctx, mcpTriageTimeout)
			defer cancel()
			d, err := dispatch.TriageAt(ctx, set, engine, labels, at)
			if unavailable, ok := errors.AsType[*evidence.UnavailableError](err); ok {
				return nil, fmt.Errorf("Prometheus at %s unreachable: %s", secret.URL(c.Prometheus.URL), unavailable.Reason)
			}
			if err != nil {
				return nil, errors.New(oneLine(err))
			}
			return d, nil
		},
	})
}

// mcpHandler is /mcp of `responder serve` (nil when mcp.enabled is off).
func mcpHandler(c *cfgpkg.Config, set *playbooks.Set, engine *evidence.Engine, st store.Store) (http.Handler, error) {
	if !c.MCP.Enabled {
		return nil, nil
	}
	s, err := newMCPServer(c, set, engine, st)
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
	c, err := loadConfigFor(*cfgPath, *promURL)
	if err != nil {
		return fail("%s", oneLine(err))
	}
	log := newLogger(c.Log, stderr)
	set, err := loadPlaybooks(c)
	if err != nil {
		return fail("%s", oneLine(err))
	}
	var api v1.API
	if api, err = newPrometheusAPI(c); err != nil {
		return fail("%s", oneLine(err))
	}
	engine, err := newEngine(c, api, nil, log)
	if err != nil {
		return fail("%s", oneLine(err))
	}
	store.SetRedisLogger(log)
	st, _, err := newStore(c)
	if err != nil {
		return fail("%s", oneLine(err))
	}
	defer st.Close()
	s, err := newMCPServer(c, set, engine, st)
	if err != nil {
		return fail("%v", err)
	}
	log.Info().Int("playbooks", len(set.All())).Msg("responder mcp serving on stdio")
	t := &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}
	if err := s.Run(ctx, t); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		log.Error().Err(err).Msg("mcp session ended")
		return 1
	}
	return 0
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
