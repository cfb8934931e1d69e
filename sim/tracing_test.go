package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
)

// jaegerTrace is the part of Jaeger's /api/traces answer the test reads (decoded here, not with
// the responder's client: the sim shares no code with it).
type jaegerTrace struct {
	Spans []struct {
		OperationName string `json:"operationName"`
		StartTime     int64  `json:"startTime"`
		Duration      int64  `json:"duration"`
		ProcessID     string `json:"processID"`
		Tags          []struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		} `json:"tags"`
	} `json:"spans"`
	Processes map[string]struct {
		ServiceName string `json:"serviceName"`
	} `json:"processes"`
}

func findTraces(t *testing.T, base, service string, from, to time.Time) []jaegerTrace {
	t.Helper()
	q := url.Values{"service": {service}, "start": {fmt.Sprint(from.UnixMicro())}, "end": {fmt.Sprint(to.UnixMicro())}, "limit": {"100"}}
	resp, err := http.Get(base + "/api/traces?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Data []jaegerTrace }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.Data
}

func TestFinishedRequestsAreTracedAsVLLMDoesAndAbortedOnesAreNot(t *testing.T) {
	j := testenv.Jaeger(t)
	for _, tc := range []struct{ protocol, endpoint string }{
		{"grpc", j.OTLPGRPC},
		{"http/protobuf", j.OTLPHTTP},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			service := "vllm-sim-" + strings.ReplaceAll(tc.protocol, "/", "-")
			t.Setenv("OTEL_SERVICE_NAME", service)
			tr, err := NewTracer(context.Background(), tc.endpoint, tc.protocol)
			if err != nil {
				t.Fatal(err)
			}
			e := newTiny(t, nil)
			e.SetFinishObserver(tr.Record)
			finished := submit(t, e, epoch, 8, 20, 0)
			aborted := submit(t, e, epoch.Add(time.Millisecond), 8, 40, 0)
			now := epoch
			for i := 0; i < 3; i++ {
				now = now.Add(e.Step(now).Duration)
			}
			e.Abort(aborted, now)
			var res Result
			for done := false; !done; {
				select {
				case res = <-finished.Done:
					done = true
				default:
					if now.Sub(epoch) > time.Minute {
						t.Fatal("the request did not finish within a virtual minute")
					}
					now = now.Add(e.Step(now).Duration)
				}
			}
			if err := tr.Shutdown(context.Background()); err != nil {
				t.Fatalf("flushing spans: %v", err)
			}
			var got []jaegerTrace
			testenv.WaitFor(t, 30*time.Second, "jaeger to store the span", func() bool {
				got = findTraces(t, j.URL, service, epoch.Add(-time.Minute), epoch.Add(time.Hour))
				return len(got) > 0
			})
			if len(got) != 1 || len(got[0].Spans) != 1 {
				t.Fatalf("want one trace of one span (none for the aborted request), got %+v", got)
			}
			sp := got[0].Spans[0]
			if sp.OperationName != "llm_request" {
				t.Errorf("span name %q, want llm_request", sp.OperationName)
			}
			if svc := got[0].Processes[sp.ProcessID].ServiceName; svc != service {
				t.Errorf("service %q, want OTEL_SERVICE_NAME's %q", svc, service)
			}
			if sp.StartTime != epoch.UnixMicro() {
				t.Errorf("span starts at %d, want the arrival %d (virtual time)", sp.StartTime, epoch.UnixMicro())
			}
			tags := map[string]any{}
			var keys []string
			for _, tag := range sp.Tags {
				tags[tag.Key] = tag.Value
				if strings.HasPrefix(tag.Key, "gen_ai.") {
					keys = append(keys, tag.Key)
				}
			}
			sort.Strings(keys)
			want := "gen_ai.latency.e2e gen_ai.latency.time_in_model_decode gen_ai.latency.time_in_model_inference " +
				"gen_ai.latency.time_in_model_prefill gen_ai.latency.time_in_queue gen_ai.latency.time_to_first_token " +
				"gen_ai.request.id gen_ai.usage.completion_tokens gen_ai.usage.prompt_tokens"
			if got := strings.Join(keys, " "); got != want {
				t.Errorf("attributes\n got: %s\nwant: %s", got, want)
			}
			if tags["span.kind"] != "server" {
				t.Errorf("span.kind %v, want server", tags["span.kind"])
			}
			for k := range tags {
				if strings.Contains(k, "model") && !strings.Contains(k, "time_in_model") {
					t.Errorf("vLLM sets no model attribute, the span has %s", k)
				}
			}
			if tags["gen_ai.usage.prompt_tokens"] != 8.0 || tags["gen_ai.request.id"] != "cmpl-1" {
				t.Errorf("prompt tokens %v, request id %v", tags["gen_ai.usage.prompt_tokens"], tags["gen_ai.request.id"])
			}
			if c := tags["gen_ai.usage.completion_tokens"]; c != float64(res.CompletionTokens) {
				t.Errorf("completion tokens %v, the request generated %d", c, res.CompletionTokens)
			}
			e2e := tags["gen_ai.latency.e2e"].(float64)
			if d := time.Duration(sp.Duration) * time.Microsecond; d != res.Finished.Sub(epoch).Truncate(time.Microsecond) ||
				mathAbs(e2e-res.Finished.Sub(epoch).Seconds()) > 1e-6 {
				t.Errorf("span lasts %s and e2e %v s, want arrival to final output %s", d, e2e, res.Finished.Sub(epoch))
			}
			sum := tags["gen_ai.latency.time_in_queue"].(float64) + tags["gen_ai.latency.time_in_model_prefill"].(float64) +
				tags["gen_ai.latency.time_in_model_decode"].(float64)
			// The rest of e2e is the API server's: tokenization before the engine queued the
			// request, processing the final output after the engine produced it.
			if gap := e2e - sum; gap <= 0 || gap > 0.01 {
				t.Errorf("queue + prefill + decode = %v s, e2e %v s: want e2e a few milliseconds longer (the API server's share)", sum, e2e)
			}
		})
	}
}

func mathAbs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
