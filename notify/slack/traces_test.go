package slack

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/internal/golden"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/traces"
)

// slowestReport is a realistic trace report: long prompts among short ones.
func slowestReport() *traces.Report {
	ms := time.Millisecond
	rq := func(id string, pre, dec time.Duration, prompt, out int) traces.Request {
		return traces.Request{TraceID: id, RequestID: "cmpl-" + id[:4], Duration: 12*ms + pre + dec, Queue: 12 * ms, Prefill: pre, Decode: dec,
			PromptTokens: prompt, CompletionTokens: out, Link: "https://jaeger.example/trace/" + id}
	}
	r := &traces.Report{Service: "vllm-llama", Operation: traces.Operation, MinDuration: time.Second, Searched: 48,
		Start: t0.Add(-5 * time.Minute), End: t0,
		SearchLink: "https://jaeger.example/search?service=vllm-llama&operation=llm_request&minDuration=1s",
		Requests: []traces.Request{
			rq("4bf92f3577b34da6a3ce929d0e0e4736", 4100*ms, 2*time.Second, 23000, 140),
			rq("00f067aa0ba902b74bf92f3577b34da6", 3900*ms, 2100*ms, 22000, 160),
			rq("a3ce929d0e0e47364bf92f3577b34da6", 3700*ms, 1900*ms, 21000, 150),
		}}
	r.Summary = traces.Summarize(r, r.Requests)
	return r
}

func TestTheSlowestRequestsGoIntoTheThreadWithClickableTraceLinks(t *testing.T) {
	h := newHarness(t, nil, nil, "chat.postMessage")
	it := item(playbooks.VerdictPrefillBound, "vllm-0")
	it.Diagnosis.SlowestRequests = slowestReport()
	notifyOK(t, h.n, firingNotification(`{}:{alertname="VLLMTimeToFirstTokenP99High"}`, it))
	posts := h.slack.Calls("chat.postMessage")
	if len(posts) != 2 {
		t.Fatalf("want the parent and one thread reply, got %d posts", len(posts))
	}
	if !strings.Contains(posts[0].Form.Get("blocks"), ":mag_right: *Traces:* The 3 slowest requests") {
		t.Errorf("the parent does not carry the one-line trace summary: %s", posts[0].Form.Get("blocks"))
	}
	reply := posts[1]
	if reply.Form.Get("thread_ts") != "1700000000.000001" {
		t.Fatalf("slowest requests not posted in the parent's thread: %+v", reply.Form)
	}
	blocks := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(reply.Form.Get("blocks"))
	for _, want := range []string{"<https://jaeger.example/trace/4bf92f3577b34da6a3ce929d0e0e4736|6.1s>", "prompt 23k", "never traced by vLLM"} {
		if !strings.Contains(blocks, want) {
			t.Errorf("thread reply lacks %q: %s", want, blocks)
		}
	}
}

func TestSlowestRequestsRenderAsTheirGoldenBlocks(t *testing.T) {
	down := &traces.Report{Service: "vllm-llama", Operation: traces.Operation, MinDuration: time.Second,
		Error: "Jaeger lookup failed: Get \"http://jaeger:16686/api/traces\": dial tcp: connection refused"}
	none := &traces.Report{Service: "vllm-llama", Operation: traces.Operation, MinDuration: time.Second}
	none.Summary = traces.Summarize(none, nil)
	untraced := slowestReport()
	untraced.MarkUntraced(37) // requests of the window that ended without a span (vllm#32162)
	for name, r := range map[string]*traces.Report{"slowest-requests": slowestReport(), "slowest-requests-jaeger-down": down, "slowest-requests-none": none,
		"slowest-requests-untraced": untraced} {
		t.Run(name, func(t *testing.T) {
			blocks := slowestBlocks(r)
			checkLimits(t, blocks)
			out, err := json.MarshalIndent(blocks, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "golden/"+name+".json", append(out, '\n'))
		})
	}
}
