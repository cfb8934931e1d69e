// Package bench holds Go benchmarks of the webhook path that `make bench` reports next to its
// end-to-end figures: the cost of one webhook answer (decode, dedup, queue) and of the background
// diagnosis each new alert causes. The end-to-end harness is bench/cmd/benchrun.
package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/dispatch"
	"github.com/vllm-responder/vllm-responder/evidence"
	"github.com/vllm-responder/vllm-responder/facts/sources"
	"github.com/vllm-responder/vllm-responder/handlers"
	"github.com/vllm-responder/vllm-responder/metrics"
	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/notify/console"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/store"
)

var pods = []string{"vllm-capacity", "vllm-kv", "vllm-prefill", "vllm-decode", "vllm-aborts"}

func payload(seq int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"version":"4","groupKey":"{}:{alertname=\"VLLMTimeToFirstTokenP99High\", model_name=\"llama\"}","truncatedAlerts":0,"status":"firing","receiver":"r",` +
		`"groupLabels":{"alertname":"VLLMTimeToFirstTokenP99High","model_name":"llama"},"commonLabels":{"alertname":"VLLMTimeToFirstTokenP99High","model_name":"llama","namespace":"llm"},` +
		`"commonAnnotations":{},"externalURL":"http://am","alerts":[`)
	for i, pod := range pods {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"status":"firing","labels":{"alertname":"VLLMTimeToFirstTokenP99High","model_name":"llama","namespace":"llm","pod":%q,"severity":"critical"},`+
			`"annotations":{"summary":"TTFT p99 high"},"startsAt":"2026-11-29T10:00:00Z","endsAt":"0001-01-01T00:00:00Z","generatorURL":"http://prom","fingerprint":"%d-%d"}`, pod, seq, i)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

func playbookSet(b *testing.B) *playbooks.Set {
	builtin, err := playbooks.Builtin(sources.Catalog())
	if err != nil {
		b.Fatal(err)
	}
	set, err := playbooks.NewSet(builtin, nil, playbooks.SetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return set
}

// BenchmarkWebhookResend is one answer to a re-sent group of 5 alerts (all duplicates): read,
// decode, dedup claims, metrics, logs (to io.Discard at info level), response.
func BenchmarkWebhookResend(b *testing.B) {
	serve := webhookServer(b)
	body := payload(0)
	serve(body)
	b.ReportAllocs()
	for b.Loop() {
		if c := serve(body); c != 200 {
			b.Fatalf("status %d", c)
		}
	}
}

// BenchmarkWebhookNewState is one answer to a group of 5 alerts in new states (new fingerprints and
// startsAt, claimed as new) while the group's job waits for a worker: read, decode, dedup claims,
// the merge into the waiting job, metrics, response. Workers are not started, so the job keeps
// waiting, as it does under a backlog.
func BenchmarkWebhookNewState(b *testing.B) {
	serve := webhookServer(b)
	bodies := make([][]byte, 1<<14)
	for i := range bodies {
		bodies[i] = payload(i)
	}
	seq := 0
	next := func() int {
		body := bodies[seq%len(bodies)]
		seq++
		return serve(body)
	}
	next()
	b.ReportAllocs()
	for b.Loop() {
		if seq%len(bodies) == 0 {
			b.StopTimer()
			for i := range bodies { // a new round of states: new fingerprints again
				bodies[i] = payload(seq + i)
			}
			b.StartTimer()
		}
		if c := next(); c != 200 {
			b.Fatalf("status %d", c)
		}
	}
}

// webhookServer returns a function that answers one webhook body through the webhook handler,
// its logging middleware (to io.Discard at info level) and a dispatcher on the memory store whose
// workers are not started, and returns the status code.
func webhookServer(b *testing.B) func(body []byte) int {
	m := metrics.New(prometheus.NewRegistry())
	log := zerolog.New(io.Discard).Level(zerolog.InfoLevel)
	d := dispatch.New(playbookSet(b), nil, notify.NotifierFunc(func(context.Context, *notify.Notification) (bool, error) { return false, nil }),
		store.NewMemory(), dispatch.Options{QueueSize: 1 << 20, Logger: log, Metrics: m})
	h := handlers.Logging(log, &handlers.Webhook{Acceptor: d, Metrics: m, Logger: log})
	return func(body []byte) int {
		r := httptest.NewRequest(http.MethodPost, "/alertmanager", bytes.NewReader(body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
}

type staticQuerier struct{}

func (staticQuerier) Query(context.Context, string, time.Time) (model.Value, error) {
	return model.Vector{&model.Sample{Value: 1}}, nil
}

// BenchmarkDiagnoseNewGroup is the background work one webhook of 5 new TTFT alerts causes:
// 5 playbook runs (13 queries each, answered at once, cache off) and the console notification.
func BenchmarkDiagnoseNewGroup(b *testing.B) {
	set := playbookSet(b)
	engine := evidence.NewEngine(staticQuerier{}, evidence.EngineOptions{CacheTTL: -1, Facts: sources.List(sources.Config{}), Logger: zerolog.Nop()})
	out := console.New(io.Discard, notify.ViewOptions{StormThreshold: 5})
	msg, err := handlers.DecodeMessage(payload(0))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		n := &notify.Notification{GroupKey: msg.GroupKey, Status: msg.Status, CommonLabels: msg.CommonLabels, ReceivedAt: time.Now()}
		for _, a := range msg.Alerts {
			pb, _ := set.Match(a.Labels)
			diag, _ := engine.Run(context.Background(), pb, a.Labels)
			n.Items = append(n.Items, notify.Item{Alert: a, Diagnosis: diag})
		}
		if _, err := out.Notify(context.Background(), n); err != nil {
			b.Fatal(err)
		}
	}
}
