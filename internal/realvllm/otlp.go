//go:build realvllm

package realvllm

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"sync"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
)

// Span is one span received by the Collector, flattened: attributes by key, the resource's
// service.name beside it.
type Span struct {
	Name         string
	Kind         tracepb.Span_SpanKind
	Service      string
	TraceID      string
	SpanID       string
	ParentSpanID string
	Attrs        map[string]any
	StartNanos   uint64
	EndNanos     uint64
}

// Collector is a minimal OTLP/gRPC trace receiver on a loopback port: what vLLM exports to
// --otlp-traces-endpoint (gRPC by default) lands in Spans.
type Collector struct {
	coltrace.UnimplementedTraceServiceServer
	Addr  string
	mu    sync.Mutex
	spans []Span
}

// StartCollector listens on 127.0.0.1 until stop is called.
func StartCollector() (c *Collector, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, fmt.Errorf("otlp collector: %w", err)
	}
	c = &Collector{Addr: l.Addr().String()}
	s := grpc.NewServer()
	coltrace.RegisterTraceServiceServer(s, c)
	go func() { _ = s.Serve(l) }()
	return c, s.Stop, nil
}

// Export implements the OTLP trace service.
func (c *Collector) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	var got []Span
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				s := Span{
					Name: sp.GetName(), Kind: sp.GetKind(), Service: service,
					TraceID: hex.EncodeToString(sp.GetTraceId()), SpanID: hex.EncodeToString(sp.GetSpanId()),
					ParentSpanID: hex.EncodeToString(sp.GetParentSpanId()),
					Attrs:        map[string]any{}, StartNanos: sp.GetStartTimeUnixNano(), EndNanos: sp.GetEndTimeUnixNano(),
				}
				for _, kv := range sp.GetAttributes() {
					s.Attrs[kv.GetKey()] = anyValue(kv.GetValue())
				}
				got = append(got, s)
			}
		}
	}
	c.mu.Lock()
	c.spans = append(c.spans, got...)
	c.mu.Unlock()
	return &coltrace.ExportTraceServiceResponse{}, nil
}

// Spans returns a copy of every span received so far.
func (c *Collector) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Span(nil), c.spans...)
}

func anyValue(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	default:
		return v.String()
	}
}
