package sim

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// FinishedRequest is a request that finished with an output (stop or length): what vLLM's
// output processor reads when it records the request's span. Aborted requests never make one.
type FinishedRequest struct {
	ID               string
	PromptTokens     int
	CompletionTokens int
	Arrival          time.Time // the API server received it
	Queued           time.Time // the engine core queued it
	Scheduled        time.Time // first scheduled (re-queueing after preemption does not move it)
	FirstToken       time.Time // the engine's timestamp of the first token
	FirstTokenSeen   time.Time // the API server processed it (time_to_first_token ends here)
	LastToken        time.Time
	Finished         time.Time // the iteration that produced the final output
}

// SetFinishObserver installs a function called (under the engine lock, so it must not block)
// for every request that finishes with an output. Aborted requests are not passed to it: vLLM
// records no span for them.
func (e *Engine) SetFinishObserver(f func(FinishedRequest)) {
	e.mu.Lock()
	e.onFinish = f
	e.mu.Unlock()
}

// observeFinish passes r to the finish observer unless it was aborted or never produced a token.
func (e *Engine) observeFinish(r *request, reason string, at time.Time) {
	if e.onFinish == nil || reason == reasonAbort || r.firstTokenAt.IsZero() {
		return
	}
	e.onFinish(FinishedRequest{
		ID: r.id, PromptTokens: r.promptLen, CompletionTokens: r.output,
		Arrival: r.arrival, Queued: r.queuedAt, Scheduled: r.scheduledAt, FirstToken: r.firstTokenAt,
		FirstTokenSeen: r.firstSeenAt, LastToken: r.lastTokenAt,
		Finished: at,
	})
}

// Tracer exports one OTLP span per finished request, as vLLM does when started with
// --otlp-traces-endpoint (vllm/tracing/, vllm/v1/engine/output_processor.py): span name
// llm_request, kind SERVER, from arrival to the final output, with the gen_ai.latency.*,
// gen_ai.usage.* and gen_ai.request.id attributes; no model attribute, no pod, no status.
// The service name comes from OTEL_SERVICE_NAME (resource), else unknown_service; no sampler
// is set (OTEL_TRACES_SAMPLER still applies). Timestamps are the engine's, so spans are right
// in virtual time too.
type Tracer struct {
	tp *sdktrace.TracerProvider
	tr trace.Tracer
}

// TracesProtocol returns the OTLP protocol vLLM would use: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
// grpc by default, or http/protobuf.
func TracesProtocol() (string, error) {
	p := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	switch p {
	case "", "grpc":
		return "grpc", nil
	case "http/protobuf":
		return p, nil
	default:
		return "", fmt.Errorf("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=%q is not supported (grpc or http/protobuf)", p)
	}
}

// NewTracer exports to endpoint over protocol (grpc or http/protobuf). The endpoint is a URL
// (http:// is plain text, https:// TLS) or, for grpc, host:port (plain text). For
// http/protobuf a URL without a path gets /v1/traces.
func NewTracer(ctx context.Context, endpoint, protocol string) (*Tracer, error) {
	raw := endpoint
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "grpc") {
		return nil, fmt.Errorf("--otlp-traces-endpoint %q: want host:port or an http(s):// URL", endpoint)
	}
	if u.Scheme == "grpc" {
		u.Scheme = "http"
	}
	var exp *otlptrace.Exporter
	switch protocol {
	case "grpc":
		opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(u.Host)}
		if u.Scheme == "http" {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
	case "http/protobuf":
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces"
		}
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(u.String()))
	default:
		return nil, fmt.Errorf("OTLP protocol %q is not supported (grpc or http/protobuf)", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "unknown_service")), // Python's default
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
		resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("OTel resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracer{tp: tp, tr: tp.Tracer("vllm.llm_engine")}, nil
}

// Record exports f's span. It never blocks: the batch processor drops spans when its queue is
// full, as the Python SDK does.
func (t *Tracer) Record(f FinishedRequest) {
	_, span := t.tr.Start(context.Background(), "llm_request",
		trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(f.Arrival))
	secs := func(d time.Duration) float64 { return d.Seconds() }
	span.SetAttributes(
		attribute.Float64("gen_ai.latency.time_to_first_token", secs(f.FirstTokenSeen.Sub(f.Arrival))),
		attribute.Float64("gen_ai.latency.e2e", secs(f.Finished.Sub(f.Arrival))),
		attribute.Float64("gen_ai.latency.time_in_queue", secs(f.Scheduled.Sub(f.Queued))),
		attribute.Int("gen_ai.usage.prompt_tokens", f.PromptTokens),
		attribute.Int("gen_ai.usage.completion_tokens", f.CompletionTokens),
		attribute.Float64("gen_ai.latency.time_in_model_prefill", secs(f.FirstToken.Sub(f.Scheduled))),
		attribute.Float64("gen_ai.latency.time_in_model_decode", secs(f.LastToken.Sub(f.FirstToken))),
		attribute.Float64("gen_ai.latency.time_in_model_inference", secs(f.LastToken.Sub(f.Scheduled))),
		attribute.String("gen_ai.request.id", f.ID),
	)
	span.End(trace.WithTimestamp(f.Finished))
}

// Shutdown flushes the spans still queued and stops the exporter.
func (t *Tracer) Shutdown(ctx context.Context) error { return t.tp.Shutdown(ctx) }
