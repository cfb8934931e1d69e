package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// Server is the HTTP face of the simulated vLLM server.
type Server struct {
	eng     *Engine
	prof    *Profiler
	log     zerolog.Logger
	started time.Time
	mux     *http.ServeMux
}

// NewServer wires the engine and profiler to vLLM's HTTP surface. A nil or
// disabled profiler leaves /start_profile and /stop_profile unregistered (404).
func NewServer(eng *Engine, prof *Profiler, log zerolog.Logger) *Server {
	s := &Server{eng: eng, prof: prof, log: log, started: time.Now(), mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	s.mux.HandleFunc("GET /ping", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	s.mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"version": "0.11.0+sim"})
	})
	s.mux.Handle("GET /metrics", metricsHandler(eng.Gatherer()))
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("POST /v1/completions", s.completions)
	s.mux.HandleFunc("POST /v1/chat/completions", s.chatCompletions)
	if prof.Enabled() {
		eng.SetStepObserver(prof.Record)
		prof.AttachEngine(eng)
		s.mux.HandleFunc("POST /start_profile", s.startProfile)
		s.mux.HandleFunc("POST /stop_profile", s.stopProfile)
	}
	s.mux.HandleFunc("GET /admin/scenario", s.getScenario)
	s.mux.HandleFunc("POST /admin/scenario", s.setScenario)
	s.mux.HandleFunc("GET /admin/profile", s.profileState)
	s.mux.HandleFunc("GET /admin/stats", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, eng.Stats()) })
	s.mux.HandleFunc("POST /admin/hang", s.adminHang)
	s.mux.HandleFunc("POST /admin/restart", s.adminRestart)
	return s
}

// EnableDevEndpoints serves vLLM's development endpoints (VLLM_SERVER_DEV_MODE=1): sleep mode
// (/sleep, /wake_up, /is_sleeping) and the RL ones this model covers (/pause, /resume,
// /is_paused, /update_weights).
func (s *Server) EnableDevEndpoints() {
	s.mux.HandleFunc("POST /sleep", s.devSleep)
	s.mux.HandleFunc("POST /wake_up", s.devWakeUp)
	s.mux.HandleFunc("GET /is_sleeping", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]bool{"is_sleeping": s.eng.Sleeping()})
	})
	s.mux.HandleFunc("POST /pause", s.devPause)
	s.mux.HandleFunc("POST /resume", func(w http.ResponseWriter, _ *http.Request) {
		s.eng.Resume()
		writeJSON(w, http.StatusOK, map[string]string{"status": "resumed"})
	})
	s.mux.HandleFunc("GET /is_paused", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]bool{"is_paused": s.eng.Paused()})
	})
	s.mux.HandleFunc("POST /update_weights", func(w http.ResponseWriter, r *http.Request) {
		if !s.await(r.Context(), s.eng.UpdateWeights(time.Now())) {
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"message": "Weights updated"})
	})
}

// ServeFleet adds GET and POST /admin/fleet: this pod is one of f's, and a fleet scenario
// posted to any of them switches all.
func (s *Server) ServeFleet(f *Fleet) {
	h := f.Handler()
	s.mux.Handle("GET /admin/fleet", h)
	s.mux.Handle("POST /admin/fleet", h)
	s.mux.HandleFunc("GET /admin/targets", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, f.Targets()) })
}

// ServeHTTP implements http.Handler, answering unknown paths like FastAPI does. While the
// server process is down (a crash, a restart) only the /admin/ endpoints answer: every other
// connection is closed without an answer, as a port with nothing behind it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, "/admin/") && s.eng.Down() {
		dropConnection(w)
		return
	}
	_, pattern := s.mux.Handler(r)
	if pattern == "" && !s.knownPath(r.URL.Path) {
		// Unknown path (or a profiler path without a profiler): FastAPI's 404.
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
		s.eng.CountHTTP("none", r.Method, http.StatusNotFound)
		return
	}
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	s.mux.ServeHTTP(rec, r)
	if !strings.HasPrefix(r.URL.Path, "/admin/") {
		s.eng.CountHTTP(r.URL.Path, r.Method, rec.status)
	}
}

// statusRecorder remembers the status a handler answered with.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// dropConnection closes the client's connection without an answer.
func dropConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			_ = c.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// await waits for an operation that ends at t and for its effects; false if the client went
// away first.
func (s *Server) await(ctx context.Context, t time.Time) bool {
	if !waitUntil(ctx, t) {
		return false
	}
	s.eng.CatchUp(time.Now())
	return true
}

// waitUntil waits for t; false if the client went away first.
func waitUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// knownPath reports whether some method is registered for path (so the mux
// answers 405 rather than our 404).
func (s *Server) knownPath(path string) bool {
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		req, err := http.NewRequest(m, path, nil)
		if err != nil {
			return false
		}
		if _, p := s.mux.Handler(req); p != "" {
			return true
		}
	}
	return false
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeOpenAIError(w http.ResponseWriter, code int, typ, msg string) {
	writeJSON(w, code, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	cfg := s.eng.Config()
	data := []map[string]any{{
		"id": cfg.ModelName, "object": "model", "created": s.started.Unix(), "owned_by": "vllm",
		"root": cfg.ModelName, "parent": nil, "max_model_len": cfg.MaxModelLen,
	}}
	if cfg.EnableLoRA {
		for _, a := range cfg.LoRAModules {
			data = append(data, map[string]any{
				"id": a, "object": "model", "created": s.started.Unix(), "owned_by": "vllm",
				"root": a, "parent": cfg.ModelName, "max_model_len": cfg.MaxModelLen,
			})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// approxTokens estimates a token count from text (about 4 characters a token).
func approxTokens(text string) int { return max(1, (len(text)+3)/4) }

type completionRequest struct {
	Model     string          `json:"model"`
	Prompt    json.RawMessage `json:"prompt"`
	Messages  []chatMessage   `json:"messages"`
	MaxTokens int             `json:"max_tokens"`
	// MaxCompletionTokens is the chat API's newer spelling.
	MaxCompletionTokens int `json:"max_completion_tokens"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) { s.serveCompletion(w, r, false) }

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	s.serveCompletion(w, r, true)
}

func (s *Server) serveCompletion(w http.ResponseWriter, r *http.Request, chat bool) {
	var req completionRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 8<<20)).Decode(&req); err != nil {
		writeOpenAIError(w, http.StatusBadRequest, "BadRequestError", "invalid JSON body: "+err.Error())
		return
	}
	cfg := s.eng.Config()
	var prompt int
	if chat {
		if len(req.Messages) == 0 {
			writeOpenAIError(w, http.StatusBadRequest, "BadRequestError", "messages must not be empty")
			return
		}
		for _, m := range req.Messages {
			b, _ := json.Marshal(m.Content)
			prompt += approxTokens(string(b)) + 4 // chat template overhead per message
		}
	} else {
		var text string
		var texts []string
		switch {
		case json.Unmarshal(req.Prompt, &text) == nil:
		case json.Unmarshal(req.Prompt, &texts) == nil:
			text = strings.Join(texts, "")
		default:
			writeOpenAIError(w, http.StatusBadRequest, "BadRequestError", "prompt must be a string or a list of strings")
			return
		}
		prompt = approxTokens(text)
	}
	if prompt >= cfg.MaxModelLen {
		writeOpenAIError(w, http.StatusBadRequest, "BadRequestError",
			fmt.Sprintf("This model's maximum context length is %d tokens. However, your request has %d input tokens.", cfg.MaxModelLen, prompt))
		return
	}
	maxTokens := req.MaxTokens
	if req.MaxCompletionTokens > 0 {
		maxTokens = req.MaxCompletionTokens
	}

	h, err := s.eng.Submit(time.Now(), r.URL.Path, req.Model, prompt, maxTokens, 0)
	switch {
	case errors.Is(err, ErrServerDown):
		dropConnection(w)
		return
	case errors.Is(err, ErrUnknownModel):
		writeOpenAIError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("The model `%s` does not exist.", req.Model))
		return
	case err != nil: // a queue limit: vLLM's GracefulHTTPError
		writeOpenAIError(w, http.StatusServiceUnavailable, "Service Unavailable", err.Error())
		return
	}
	var res Result
	select {
	case res = <-h.Done:
	case <-r.Context().Done():
		s.eng.Abort(h, time.Now()) // client disconnect
		return
	}
	if res.Err != nil {
		panic(http.ErrAbortHandler) // the server went down under the request
	}
	if d := time.Until(res.Finished); d > 0 {
		// The engine computed the step ahead of the wall clock; answer when it ends.
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
		}
		t.Stop()
	}
	text := strings.TrimSpace(strings.Repeat(" lorem", res.CompletionTokens))
	usage := map[string]int{"prompt_tokens": res.PromptTokens, "completion_tokens": res.CompletionTokens, "total_tokens": res.PromptTokens + res.CompletionTokens}
	id := fmt.Sprintf("%s-%d", "cmpl", time.Now().UnixNano())
	if chat {
		writeJSON(w, http.StatusOK, map[string]any{
			"id": "chat" + id, "object": "chat.completion", "created": time.Now().Unix(), "model": cfg.ModelName,
			"choices": []map[string]any{{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": res.FinishReason}},
			"usage":   usage,
		})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": id, "object": "text_completion", "created": time.Now().Unix(), "model": cfg.ModelName,
		"choices": []map[string]any{{"index": 0, "text": text, "logprobs": nil, "finish_reason": res.FinishReason}},
		"usage":   usage,
	})
}

func (s *Server) startProfile(w http.ResponseWriter, _ *http.Request) {
	if err := s.prof.Start(time.Now()); err != nil {
		writeOpenAIError(w, http.StatusConflict, "Conflict", err.Error())
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (s *Server) stopProfile(w http.ResponseWriter, r *http.Request) {
	// Detach from the request: the flush completes even if the client leaves.
	if err := s.prof.Stop(context.WithoutCancel(r.Context()), time.Now()); err != nil {
		s.log.Error().Err(err).Msg("stop_profile failed")
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (s *Server) profileState(w http.ResponseWriter, _ *http.Request) {
	if s.prof == nil {
		writeJSON(w, http.StatusOK, ProfilerState{Traces: []string{}})
		return
	}
	writeJSON(w, http.StatusOK, s.prof.State())
}

type scenarioResponse struct {
	Scenario Scenario `json:"scenario"`
	Stats    Stats    `json:"stats"`
}

func (s *Server) getScenario(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, scenarioResponse{Scenario: s.eng.Scenario(), Stats: s.eng.Stats()})
}

// setScenario switches the load: body {"scenario":"overload","arrival_rate":30,"reset":true}
// or query ?name=overload[&arrival_rate=30][&reset=false].
func (s *Server) setScenario(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Scenario    string   `json:"scenario"`
		Name        string   `json:"name"`
		ArrivalRate *float64 `json:"arrival_rate"`
		Reset       *bool    `json:"reset"`
	}
	if r.ContentLength != 0 {
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&body); err != nil && err != io.EOF {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid JSON body: " + err.Error()})
			return
		}
	}
	q := r.URL.Query()
	name := firstNonEmpty(body.Scenario, body.Name, q.Get("name"), q.Get("scenario"))
	if name == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "scenario name required: body {\"scenario\":\"overload\"} or ?name=overload"})
		return
	}
	sc, err := LookupScenario(name)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	if body.ArrivalRate != nil {
		sc.ArrivalRate = *body.ArrivalRate
	} else if v := q.Get("arrival_rate"); v != "" {
		var f float64
		if _, err := fmt.Sscan(v, &f); err != nil || f < 0 {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "arrival_rate must be a number >= 0"})
			return
		}
		sc.ArrivalRate = f
	}
	reset := true
	if body.Reset != nil {
		reset = *body.Reset
	} else if v := q.Get("reset"); v == "false" || v == "0" {
		reset = false
	}
	s.eng.SetScenario(sc, reset, time.Now())
	s.log.Info().Str("scenario", sc.Name).Float64("arrival_rate", sc.ArrivalRate).Bool("reset", reset).Msg("scenario switched")
	writeJSON(w, http.StatusOK, scenarioResponse{Scenario: sc, Stats: s.eng.Stats()})
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// adminHang stops the engine core (body {"for":"90s"}, no duration: until released) or ends a
// hang (body {"release":true}).
func (s *Server) adminHang(w http.ResponseWriter, r *http.Request) {
	var body struct {
		For     string `json:"for"`
		Release bool   `json:"release"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	if body.Release {
		s.eng.Release()
		s.log.Info().Msg("engine core hang released")
		writeJSON(w, http.StatusOK, s.eng.Stats())
		return
	}
	d, ok := parseDuration(w, "for", body.For)
	if !ok {
		return
	}
	s.eng.Hang(time.Now(), d)
	s.log.Info().Dur("hang_for", d).Msg("engine core hung")
	writeJSON(w, http.StatusOK, s.eng.Stats())
}

// adminRestart crashes the server process and starts it again: body {"down":"10s"} (how long
// nothing listens; default 0) and {"new_pod":true} (the new process is a new pod: a new name).
func (s *Server) adminRestart(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Down   string `json:"down"`
		NewPod bool   `json:"new_pod"`
	}
	if !decodeBody(w, r, &body) {
		return
	}
	d, ok := parseDuration(w, "down", body.Down)
	if !ok {
		return
	}
	s.eng.Restart(time.Now(), d, body.NewPod)
	s.log.Info().Dur("down_for", d).Bool("new_pod", body.NewPod).Msg("server restarted")
	writeJSON(w, http.StatusOK, s.eng.Stats())
}

func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if r.ContentLength == 0 {
		return true
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(v); err != nil && err != io.EOF {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid JSON body: " + err.Error()})
		return false
	}
	return true
}

func parseDuration(w http.ResponseWriter, field, v string) (time.Duration, bool) {
	if v == "" {
		return 0, true
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": field + " must be a duration like 90s"})
		return 0, false
	}
	return d, true
}

// devSleep is vLLM's POST /sleep?level=1&mode=abort: it answers when the engine sleeps.
func (s *Server) devSleep(w http.ResponseWriter, r *http.Request) {
	level, mode := 1, r.URL.Query().Get("mode")
	if v := r.URL.Query().Get("level"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 2 {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"detail": "level must be 0, 1 or 2"})
			return
		}
		level = n
	}
	switch mode {
	case "":
		mode = "abort"
	case "abort", "wait", "keep":
	default:
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"detail": "mode must be abort, wait or keep"})
		return
	}
	if !s.await(r.Context(), s.eng.Sleep(time.Now(), level, mode)) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "sleeping", "level": level})
}

// devWakeUp is vLLM's POST /wake_up: it answers when the engine is awake.
func (s *Server) devWakeUp(w http.ResponseWriter, r *http.Request) {
	if !s.await(r.Context(), s.eng.WakeUp(time.Now())) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "awake", "tags": nil})
}

// devPause is vLLM's POST /pause?mode=abort|wait|keep.
func (s *Server) devPause(w http.ResponseWriter, r *http.Request) {
	if err := s.eng.Pause(time.Now(), r.URL.Query().Get("mode")); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "paused"})
}
