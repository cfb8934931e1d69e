package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

// Check is one readiness check (Prometheus reachable, store reachable).
type Check struct {
	Name string
	// Required checks fail /readyz; others are reported only.
	Required bool
	Func     func(ctx context.Context) error
}

// Routes are the handlers the server mounts; nil ones are not mounted.
type Routes struct {
	Webhook           http.Handler
	SlackCommands     http.Handler
	SlackInteractions http.Handler
	// MCP is the streamable-HTTP MCP endpoint (nil: mcp.enabled is off).
	MCP      http.Handler
	Gatherer prometheus.Gatherer
	Ready    []Check
}

// NewMux mounts every endpoint of `responder serve`.
func NewMux(r Routes) *http.ServeMux {
	mux := http.NewServeMux()
	if r.Webhook != nil {
		mux.Handle("/alertmanager", r.Webhook)
	}
	if r.SlackCommands != nil {
		mux.Handle("/slack/commands", r.SlackCommands)
	}
	if r.SlackInteractions != nil {
		mux.Handle("/slack/interactions", r.SlackInteractions)
	}
	if r.MCP != nil {
		mux.Handle("/mcp", r.MCP)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, req *http.Request) {
		ctx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
		defer cancel()
		code := http.StatusOK
		var body []byte
		for _, c := range r.Ready {
			if err := c.Func(ctx); err != nil {
				state := "degraded"
				if c.Required {
					code, state = http.StatusServiceUnavailable, "failing"
				}
				body = append(body, []byte(c.Name+": "+state+": "+err.Error()+"\n")...)
				continue
			}
			body = append(body, []byte(c.Name+": ok\n")...)
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(code)
		_, _ = w.Write(body)
	})
	if r.Gatherer != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(r.Gatherer, promhttp.HandlerOpts{}))
	}
	return mux
}

// Logging logs every request with its status and duration (snake_case fields).
func Logging(log zerolog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		ev := log.Debug()
		if sw.status >= 400 {
			ev = log.Info()
		}
		ev.Str("method", r.Method).Str("path", r.URL.Path).Int("status", sw.status).
			Dur("duration", time.Since(start)).Str("remote_addr", r.RemoteAddr).Msg("http request")
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// NewServer returns an http.Server with timeouts that refuse slow-loris clients.
func NewServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
}
