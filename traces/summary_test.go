package traces

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func req(id string, queue, prefill, decode time.Duration, prompt, output int) Request {
	return Request{TraceID: id, RequestID: "cmpl-" + id, Duration: queue + prefill + decode,
		Queue: queue, Prefill: prefill, Decode: decode, PromptTokens: prompt, CompletionTokens: output}
}

// report builds a report of the n slowest of all, as Client.Slowest does.
func report(n int, all ...Request) (*Report, []Request) {
	rep := &Report{Service: "vllm-m", Operation: Operation, MinDuration: time.Second}
	sorted := append([]Request(nil), all...)
	for i := range sorted {
		for j := i + 1; j < len(sorted); j++ {
			if sorted[j].Duration > sorted[i].Duration {
				sorted[i], sorted[j] = sorted[j], sorted[i]
			}
		}
	}
	rep.Requests = sorted[:min(n, len(sorted))]
	return rep, all
}

func TestSummarize(t *testing.T) {
	s, ms := time.Second, time.Millisecond
	var queued []Request
	for i := range 8 {
		queued = append(queued, req(fmt.Sprint(i), time.Duration(20+i)*s, 100*ms, 2*s, 300, 150))
	}
	var longPrompts []Request
	for i := range 10 {
		longPrompts = append(longPrompts, req(fmt.Sprint("s", i), 5*ms, 300*ms, 1500*ms, 320, 150))
	}
	for i := range 3 {
		longPrompts = append(longPrompts, req(fmt.Sprint("l", i), 5*ms, time.Duration(4+i)*s, 2*s, 21000+1000*i, 150))
	}
	var longOutputs []Request
	for i := range 10 {
		longOutputs = append(longOutputs, req(fmt.Sprint("s", i), 5*ms, 50*ms, 2*s, 300, 100))
	}
	for i := range 3 {
		longOutputs = append(longOutputs, req(fmt.Sprint("l", i), 5*ms, 50*ms, time.Duration(20+i)*s, 300, 1200+i))
	}
	similar := []Request{req("a", 5*ms, 900*ms, 3*s, 5100, 140), req("b", 5*ms, 800*ms, 2800*ms, 4900, 160),
		req("c", 5*ms, 700*ms, 2*s, 5000, 150), req("d", 5*ms, 700*ms, 1900*ms, 4800, 150)}
	tests := []struct {
		name string
		n    int
		all  []Request
		want string
	}{
		{"a deep queue is named as where the time went", 5, queued,
			"The 5 slowest requests (25s-29s) spent 92% of their time queued (decode 7%, prefill 0%); prompts 300, outputs 150 tokens."},
		{"long prompts among short ones are named with their size", 3, longPrompts,
			"The 3 slowest requests (6s-8s) spent 71% of their time in prefill (decode 29%, queue 0%); they all had prompts over 21k tokens, against a median of 320 in the other 10 traced requests."},
		{"long outputs among short ones are named with their length", 3, longOutputs,
			"The 3 slowest requests (20s-22s) spent 100% of their time decoding (prefill 0%, queue 0%); their time to first token was 91% prefill, 9% queue; they all generated over 1.2k tokens, against a median of 100 in the other 10 traced requests."},
		{"prompts like every other request's are given as a range, not as the cause", 2, similar,
			"The 2 slowest requests (3.6s-3.9s) spent 77% of their time decoding (prefill 23%, queue 0%); their time to first token was 99% prefill, 1% queue; prompts 4.9k-5.1k, outputs 140-160 tokens."},
		{"one request speaks of its own time", 1, similar[:1],
			"The slowest request (3.9s) spent 77% of its time decoding (prefill 23%, queue 0%); its time to first token was 99% prefill, 1% queue; prompts 5.1k, outputs 140 tokens."},
		{"no requests says how vLLM must be started", 5, nil,
			`No traced requests of service "vllm-m" slower than 1s in the window: check that vLLM runs with --otlp-traces-endpoint and OTEL_SERVICE_NAME=vllm-m (vLLM sets no service name of its own).`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, all := report(tt.n, tt.all...)
			if got := Summarize(rep, all); got != tt.want {
				t.Errorf("summary\n got: %s\nwant: %s", got, tt.want)
			}
		})
	}
}

func TestRoundDownKeepsOverTrue(t *testing.T) {
	for n, want := range map[int]string{4873: "4.8k", 21000: "21k", 999: "990", 56: "56", 123456: "120k"} {
		if got := roundDown(n); got != want {
			t.Errorf("roundDown(%d) = %s, want %s", n, got, want)
		}
	}
}

func TestLineAndHeading(t *testing.T) {
	r := req("x", 12*time.Millisecond, 900*time.Millisecond, 3200*time.Millisecond, 5234, 150)
	if got, want := r.Line(), "4.1s  queue 12ms  prefill 900ms  decode 3.2s  prompt 5.2k  output 150 tokens"; got != want {
		t.Errorf("Line() = %q, want %q", got, want)
	}
	rep := &Report{Service: "vllm-m", Operation: Operation, MinDuration: time.Second, Searched: 500, Capped: true,
		Tags: map[string]string{"k8s.pod.name": "p-0"}}
	if got, want := rep.Heading(), `Jaeger service "vllm-m", llm_request over 1s, k8s.pod.name="p-0", 500 traced in the window (the most recent; more exist)`; got != want {
		t.Errorf("Heading() = %q, want %q", got, want)
	}
}

// Requests the counters saw end without a span (vllm-project/vllm#32162) make the list one of the
// slowest traced requests: its summary, its title and its note say so, and how many are missing.
func TestAListMissingUntracedRequestsSaysHowManyAndWhy(t *testing.T) {
	r := &Report{Summary: "The 3 slowest requests (6s-8s) spent 71% of their time in prefill (decode 29%, queue 0%)."}
	if r.Title() != "Slowest requests" || r.MissingNote() != AbortedNote {
		t.Fatalf("with nothing counted missing: %q, %q", r.Title(), r.MissingNote())
	}
	r.MarkUntraced(0)
	if r.Untraced != 0 || strings.Contains(r.Summary, "traced") {
		t.Fatalf("none missing changed the report: %+v", r)
	}
	r.MarkUntraced(37)
	if want := "The 3 slowest traced requests (6s-8s) spent 71%"; !strings.HasPrefix(r.Summary, want) {
		t.Errorf("summary %q, want it to begin %q", r.Summary, want)
	}
	if r.Title() != "Slowest traced requests" {
		t.Errorf("title %q", r.Title())
	}
	for _, want := range []string{"37 requests of the window got a first token and never finished", "vllm-project/vllm#32162", "this list is of the slowest traced ones"} {
		if !strings.Contains(r.MissingNote(), want) {
			t.Errorf("note %q lacks %q", r.MissingNote(), want)
		}
	}
	one := &Report{Summary: "The slowest request (8s) spent 71% of its time in prefill."}
	one.MarkUntraced(2)
	if !strings.HasPrefix(one.Summary, "The slowest traced request (8s)") {
		t.Errorf("summary %q", one.Summary)
	}
}

func TestTheSummaryLineCountsTheUntracedRequests(t *testing.T) {
	r := &Report{Summary: "The slowest request (8s) spent 71% of its time in prefill."}
	if r.SummaryLine() != r.Summary {
		t.Fatalf("%q", r.SummaryLine())
	}
	r.MarkUntraced(5)
	if want := "The slowest traced request (8s) spent 71% of its time in prefill. 5 requests of the window that never finished are not traced (vllm-project/vllm#32162)."; r.SummaryLine() != want {
		t.Errorf("%q\nwant %q", r.SummaryLine(), want)
	}
}
