package traces

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	promconfig "github.com/prometheus/common/config"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

// span is one request as vLLM would trace it.
type span struct {
	service, name   string
	start           time.Time
	queue, pre, dec time.Duration
	prompt, output  int
	id              string
}

// export sends spans to Jaeger over OTLP/gRPC the way vLLM's exporter does: one resource per
// service, no model attribute.
func export(t *testing.T, endpoint string, spans []span) {
	t.Helper()
	ctx := context.Background()
	byService := map[string][]span{}
	for _, s := range spans {
		byService[s.service] = append(byService[s.service], s)
	}
	for svc, ss := range byService {
		exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(endpoint), otlptracegrpc.WithInsecure())
		if err != nil {
			t.Fatal(err)
		}
		res := resource.NewSchemaless(attribute.String("service.name", svc))
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(res))
		tr := tp.Tracer("vllm.llm_engine")
		for _, s := range ss {
			_, sp := tr.Start(ctx, s.name, trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(s.start))
			sp.SetAttributes(
				attribute.Float64("gen_ai.latency.time_in_queue", s.queue.Seconds()),
				attribute.Float64("gen_ai.latency.time_in_model_prefill", s.pre.Seconds()),
				attribute.Float64("gen_ai.latency.time_in_model_decode", s.dec.Seconds()),
				attribute.Float64("gen_ai.latency.time_to_first_token", (s.queue+s.pre).Seconds()),
				attribute.Int("gen_ai.usage.prompt_tokens", s.prompt),
				attribute.Int("gen_ai.usage.completion_tokens", s.output),
				attribute.String("gen_ai.request.id", s.id))
			sp.End(trace.WithTimestamp(s.start.Add(s.queue + s.pre + s.dec)))
		}
		if err := tp.Shutdown(ctx); err != nil {
			t.Fatalf("export to jaeger: %v", err)
		}
	}
}

func newClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := NewClient(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func config(url string) Config {
	var c Config
	c.SetDefaults()
	c.URL = url
	return c
}

func TestSlowestFromARealJaeger(t *testing.T) {
	j := testenv.Jaeger(t)
	now := time.Now()
	ms := time.Millisecond
	spans := []span{
		// Outside the window, slower than everything: must not be listed.
		{service: "vllm-llama", name: Operation, start: now.Add(-20 * time.Minute), queue: ms, pre: 100 * ms, dec: 30 * time.Second, prompt: 10, output: 2000, id: "cmpl-old"},
		// Another model's service and another operation of the same service: not ours.
		{service: "vllm-mistral", name: Operation, start: now.Add(-time.Minute), queue: ms, pre: ms, dec: 20 * time.Second, prompt: 10, output: 10, id: "cmpl-other"},
		{service: "vllm-llama", name: "POST /v1/completions", start: now.Add(-time.Minute), dec: 25 * time.Second, id: "gateway"},
		// Started before the window, queued for minutes, ended in it: the slowest of all.
		{service: "vllm-llama", name: Operation, start: now.Add(-12 * time.Minute), queue: 3 * time.Minute, pre: 100 * ms, dec: 2 * time.Second, prompt: 300, output: 100, id: "cmpl-straddle"},
		// Started in the lookback and ended before the window: not in flight in it.
		{service: "vllm-llama", name: Operation, start: now.Add(-15 * time.Minute), queue: ms, pre: 100 * ms, dec: 20 * time.Second, prompt: 300, output: 100, id: "cmpl-before"},
		// Faster than min_duration (1s).
		{service: "vllm-llama", name: Operation, start: now.Add(-2 * time.Minute), queue: ms, pre: 100 * ms, dec: 500 * ms, prompt: 300, output: 20, id: "cmpl-fast"},
	}
	for i := range 6 {
		spans = append(spans, span{service: "vllm-llama", name: Operation, start: now.Add(-time.Duration(60+i) * time.Second),
			queue: 5 * ms, pre: 200 * ms, dec: time.Duration(1500+100*i) * ms, prompt: 300, output: 150, id: "cmpl-short-" + string(rune('a'+i))})
	}
	for i := range 3 {
		spans = append(spans, span{service: "vllm-llama", name: Operation, start: now.Add(-time.Duration(90+i) * time.Second),
			queue: 10 * ms, pre: time.Duration(4+i) * time.Second, dec: 2 * time.Second, prompt: 21000 + 1000*i, output: 140, id: "cmpl-long-" + string(rune('a'+i))})
	}
	export(t, j.OTLPGRPC, spans)

	cfg := config(j.URL)
	cfg.Limit = 3
	c := newClient(t, cfg)
	labels := map[string]string{"model_name": "llama", "pod": "p-0"}
	var rep *Report
	testenv.WaitFor(t, 60*time.Second, "jaeger to return the 10 slow llama requests in flight in the window", func() bool {
		var err error
		rep, err = c.Slowest(context.Background(), labels, now.Add(-10*time.Minute), now)
		return err == nil && rep.Searched == 10
	})
	if rep.Service != "vllm-llama" || rep.Operation != "llm_request" {
		t.Errorf("searched service %q operation %q, want vllm-llama llm_request", rep.Service, rep.Operation)
	}
	var ids []string
	for _, r := range rep.Requests {
		ids = append(ids, r.RequestID)
	}
	if got, want := strings.Join(ids, ","), "cmpl-straddle,cmpl-long-c,cmpl-long-b"; got != want {
		t.Fatalf("slowest requests %s, want %s", got, want)
	}
	r := rep.Requests[1]
	if r.PromptTokens != 23000 || r.CompletionTokens != 140 || r.Queue != 10*ms || r.Prefill != 6*time.Second || r.Decode != 2*time.Second {
		t.Errorf("slowest request read as %+v", r)
	}
	if r.Duration < 8*time.Second || r.Duration > 8100*ms {
		t.Errorf("duration %s, want the span's 8.01s", r.Duration)
	}
	if !strings.HasPrefix(r.Link, j.URL+"/trace/") || len(r.TraceID) != 32 {
		t.Errorf("link %q, trace id %q", r.Link, r.TraceID)
	}
	if resp, err := http.Get(j.URL + "/api/traces/" + r.TraceID); err != nil || resp.StatusCode != 200 {
		t.Errorf("the trace link's id is not a trace Jaeger knows: %v %v", err, resp)
	}
	want := "The 3 slowest requests (7s-3m2s) spent 91% of their time queued (prefill 6%, decode 3%); prompts 300-23k, outputs 100-140 tokens."
	if rep.Summary != want {
		t.Errorf("summary\n got: %s\nwant: %s", rep.Summary, want)
	}
	if !strings.Contains(rep.SearchLink, "operation=llm_request") || !strings.Contains(rep.SearchLink, "service=vllm-llama") ||
		!strings.Contains(rep.SearchLink, "minDuration=1s") {
		t.Errorf("search link %s", rep.SearchLink)
	}

	t.Run("a model without traces finds none and says how to get them", func(t *testing.T) {
		rep, err := c.Slowest(context.Background(), map[string]string{"model_name": "qwen"}, now.Add(-10*time.Minute), now)
		if err != nil || len(rep.Requests) != 0 || !strings.Contains(rep.Summary, "OTEL_SERVICE_NAME=vllm-qwen") {
			t.Errorf("err %v, report %+v", err, rep)
		}
	})
	t.Run("the services map wins over the template", func(t *testing.T) {
		cfg := config(j.URL)
		cfg.Services = map[string]string{"meta-llama/Llama-3.1-8B-Instruct": "vllm-llama"}
		c := newClient(t, cfg)
		rep, err := c.Slowest(context.Background(), map[string]string{"model_name": "meta-llama/Llama-3.1-8B-Instruct"}, now.Add(-10*time.Minute), now)
		if err != nil || rep.Service != "vllm-llama" || rep.Searched != 10 {
			t.Errorf("err %v, service %q, searched %d", err, rep.Service, rep.Searched)
		}
	})
}

func TestSlowestWhenJaegerIsDown(t *testing.T) {
	c := newClient(t, config("http://127.0.0.1:"+strconv.Itoa(testenv.FreePort(t))))
	rep, err := c.Slowest(context.Background(), map[string]string{"model_name": "m"}, time.Now().Add(-time.Minute), time.Now())
	if err == nil || !strings.HasPrefix(rep.Error, "Jaeger lookup failed: ") || strings.Contains(rep.Error, "?") {
		t.Errorf("err %v, report error %q", err, rep.Error)
	}
	if rep.Service != "vllm-m" {
		t.Errorf("service %q", rep.Service)
	}
}

func TestSlowestWithoutTheLabelTheServiceNeeds(t *testing.T) {
	c := newClient(t, config("http://127.0.0.1:1"))
	rep, err := c.Slowest(context.Background(), map[string]string{"pod": "p"}, time.Now().Add(-time.Minute), time.Now())
	want := `cannot name the traced service: "vllm-{{ .model_name }}" needs a label the alert does not have (key "model_name")`
	if err == nil || rep.Error != want {
		t.Errorf("error %q, want %q", rep.Error, want)
	}
}

func TestSlowestSendsTheConfiguredCredentials(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"), r.URL.Path, r.URL.Query().Get("tags"))
		w.Write([]byte(`{"data":[],"total":0,"limit":0,"offset":0,"errors":null}`))
	}))
	defer srv.Close()
	cfg := config(srv.URL + "/jaeger/")
	cfg.HTTPClientConfig.Authorization = &promconfig.Authorization{Type: "Bearer", Credentials: "s3cret"}
	cfg.Tags = map[string]string{"k8s.pod.name": "{{ .pod }}"}
	c := newClient(t, cfg)
	if _, err := c.Slowest(context.Background(), map[string]string{"model_name": "m", "pod": "p-1"}, time.Now().Add(-time.Minute), time.Now()); err != nil {
		t.Fatal(err)
	}
	if want := []string{"Bearer s3cret", "/jaeger/api/traces", `{"k8s.pod.name":"p-1"}`}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("request %q, want %q", got, want)
	}
}

// TestSlowestKeepsOnlyTheSearchedServicesSpansOfASharedTrace: Jaeger returns whole traces, so a
// trace of an agent that called two models (two vLLM services) or that reached two pods of one
// model holds llm_request spans that are not the search's. They are neither listed nor counted.
func TestSlowestKeepsOnlyTheSearchedServicesSpansOfASharedTrace(t *testing.T) {
	j := testenv.Jaeger(t)
	ctx := context.Background()
	now := time.Now()
	// One agent trace: a slow request to pod a-0 and a fast one to pod a-1 of vllm-alpha, and a
	// slower still request to vllm-beta (another model).
	agent := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{0xa9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
		SpanID:  trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8}, TraceFlags: trace.FlagsSampled, Remote: true})
	parent := trace.ContextWithRemoteSpanContext(ctx, agent)
	type call struct {
		service, pod string
		dur          time.Duration
		id           string
	}
	for _, c := range []call{
		{"vllm-alpha", "a-0", 3 * time.Second, "alpha-slow"},
		{"vllm-alpha", "a-1", 2 * time.Second, "alpha-sibling"},
		{"vllm-beta", "b-0", 9 * time.Second, "beta-slowest"},
	} {
		exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(j.OTLPGRPC), otlptracegrpc.WithInsecure())
		if err != nil {
			t.Fatal(err)
		}
		res := resource.NewSchemaless(attribute.String("service.name", c.service), attribute.String("k8s.pod.name", c.pod))
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(res))
		start := now.Add(-time.Minute)
		_, sp := tp.Tracer("vllm.llm_engine").Start(parent, Operation, trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(start))
		sp.SetAttributes(attribute.Float64("gen_ai.latency.time_in_model_decode", c.dur.Seconds()), attribute.String("gen_ai.request.id", c.id))
		sp.End(trace.WithTimestamp(start.Add(c.dur)))
		if err := tp.Shutdown(ctx); err != nil {
			t.Fatalf("export to jaeger: %v", err)
		}
	}
	ids := func(rep *Report) string {
		var out []string
		for _, r := range rep.Requests {
			out = append(out, r.RequestID)
		}
		return strings.Join(out, ",")
	}
	labels := map[string]string{"model_name": "alpha", "pod": "a-0"}

	cfg := config(j.URL)
	c := newClient(t, cfg)
	var rep *Report
	testenv.WaitFor(t, 60*time.Second, "jaeger to return the shared trace with alpha's spans", func() bool {
		var err error
		rep, err = c.Slowest(ctx, labels, now.Add(-10*time.Minute), now)
		return err == nil && len(rep.Requests) > 0
	})
	if got := ids(rep); got != "alpha-slow,alpha-sibling" || rep.Searched != 2 {
		t.Errorf("model alpha: requests %s (searched %d), want alpha-slow,alpha-sibling (2): vllm-beta's span is another model's", got, rep.Searched)
	}

	cfg.Tags = map[string]string{"k8s.pod.name": "{{ .pod }}"}
	c = newClient(t, cfg)
	rep, err := c.Slowest(ctx, labels, now.Add(-10*time.Minute), now)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(rep); got != "alpha-slow" || rep.Searched != 1 {
		t.Errorf("pod a-0: requests %s (searched %d), want alpha-slow (1): a-1's span in the same trace is a sibling pod's", got, rep.Searched)
	}
}
