package evidence

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/facts/sources"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/traces"
)

// valueQuerier answers every query with v.
type valueQuerier struct{ v float64 }

func (q valueQuerier) Query(context.Context, string, time.Time) (model.Value, error) {
	return model.Vector{&model.Sample{Value: model.SampleValue(q.v)}}, nil
}

// finder is a TraceFinder that answers with rep, fails with err, or (block) waits until its
// context ends, as a Jaeger that never answers.
type finder struct {
	rep        *traces.Report
	err        error
	block      bool
	timeout    time.Duration
	start, end time.Time
	labels     map[string]string
}

func (f *finder) Timeout() time.Duration { return f.timeout }

func (f *finder) Slowest(ctx context.Context, labels map[string]string, start, end time.Time) (*traces.Report, error) {
	f.start, f.end, f.labels = start, end, labels
	if f.block {
		<-ctx.Done()
		return &traces.Report{Service: "vllm-m", Error: "Jaeger lookup failed: " + context.Cause(ctx).Error()}, context.Cause(ctx)
	}
	return f.rep, f.err
}

const tracedPlaybook = `
name: traced
match: {alertname: X}
window: 5m
queries:
  waiting: sum(vllm:num_requests_waiting{$scope})
verdicts:
  - id: inconclusive
    when: "true"
    offer_profile: true
    title: Inconclusive
    summary: "{{ count .waiting }} waiting.{{ with .traces.summary }} Traces: {{ . }}{{ end }}"
    actions: ["{{ if .traces.count }}Open the {{ .traces.count }} slowest traces{{ else }}Look at traces{{ end }}"]
`

func slowReport() *traces.Report {
	r := &traces.Report{Service: "vllm-m", Operation: traces.Operation, Searched: 12, Requests: []traces.Request{
		{TraceID: "a", Duration: 10 * time.Second, Queue: 9 * time.Second, Prefill: 100 * time.Millisecond, Decode: 900 * time.Millisecond, PromptTokens: 300, CompletionTokens: 40},
	}}
	r.Summary = traces.Summarize(r, r.Requests)
	return r
}

func TestTheDiagnosisCarriesWhatTheTracesShow(t *testing.T) {
	t.Parallel()
	p, err := playbooks.Parse("traced.yaml", []byte(tracedPlaybook), sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	labels := map[string]string{"alertname": "X", "model_name": "m", "pod": "p"}
	for _, tc := range []struct {
		name        string
		f           *finder
		summary     string
		action      string
		note        string
		wantRequest bool
	}{
		{"the slowest requests are listed and the inconclusive summary says where their time went",
			&finder{rep: slowReport(), timeout: time.Minute},
			"3 waiting. Traces: The slowest request (10s) spent 90% of its time queued", "Open the 1 slowest traces", "", true},
		{"Jaeger failing leaves the diagnosis without traces, saying why",
			&finder{rep: &traces.Report{Service: "vllm-m", Error: "Jaeger lookup failed: connection refused"}, err: errors.New("refused"), timeout: time.Minute},
			"3 waiting.", "Look at traces", "slowest requests from traces: not available, Jaeger lookup failed: connection refused", false},
		{"a Jaeger that never answers is cut off by the lookup's own deadline",
			&finder{block: true, timeout: 50 * time.Millisecond},
			"3 waiting.", "Look at traces", "slowest requests from traces: not available, Jaeger lookup failed: traces lookup deadline exceeded", false},
		{"no traces says how vLLM must be started",
			&finder{rep: func() *traces.Report {
				r := &traces.Report{Service: "vllm-m", MinDuration: time.Second}
				r.Summary = traces.Summarize(r, nil)
				return r
			}(), timeout: time.Minute},
			"3 waiting.", "Look at traces", "slowest requests from traces: none found; No traced requests of service \"vllm-m\"", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEngine(valueQuerier{3}, EngineOptions{Traces: tc.f, Now: func() time.Time { return at }, CacheTTL: -1})
			d, err := e.Run(context.Background(), p, labels)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(d.Summary, tc.summary) || len(d.Actions) != 1 || d.Actions[0] != tc.action {
				t.Errorf("summary %q actions %q, want %q and %q", d.Summary, d.Actions, tc.summary, tc.action)
			}
			if got := strings.Join(d.Notes, "\n"); tc.note != "" && !strings.Contains(got, tc.note) || tc.note == "" && got != "" {
				t.Errorf("notes %q, want %q", got, tc.note)
			}
			if d.SlowestRequests == nil || (len(d.SlowestRequests.Requests) > 0) != tc.wantRequest {
				t.Errorf("slowest requests %+v", d.SlowestRequests)
			}
			if !tc.f.start.Equal(at.Add(-5*time.Minute)) || !tc.f.end.Equal(at) || tc.f.labels["pod"] != "p" {
				t.Errorf("looked up %s..%s for %v, want the playbook's window ending at the evaluation", tc.f.start, tc.f.end, tc.f.labels)
			}
		})
	}
}

func TestWithoutTracesTheDiagnosisHasNone(t *testing.T) {
	t.Parallel()
	p, err := playbooks.Parse("traced.yaml", []byte(tracedPlaybook), sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewEngine(valueQuerier{3}, EngineOptions{CacheTTL: -1}).Run(context.Background(), p, map[string]string{"alertname": "X"})
	if err != nil || d.SlowestRequests != nil || d.Summary != "3 waiting." || len(d.Notes) != 0 {
		t.Fatalf("err %v, diagnosis %+v", err, d)
	}
}

func TestTheDefaultInconclusiveSaysWhatTheTracesShow(t *testing.T) {
	t.Parallel()
	p, err := playbooks.Parse("none.yaml", []byte(`
name: none
match: {alertname: X}
queries:
  waiting: sum(vllm:num_requests_waiting{$scope})
verdicts:
  - {id: healthy, when: "waiting < 1", title: ok}
`), sources.Catalog())

	if err != nil {
		t.Fatal(err)
	}
	d, err := NewEngine(valueQuerier{3}, EngineOptions{CacheTTL: -1, Traces: &finder{rep: slowReport(), timeout: time.Minute}}).Run(context.Background(), p, map[string]string{"alertname": "X"})
	if err != nil || d.Verdict != playbooks.VerdictInconclusive || !strings.HasPrefix(d.Summary, "Traces: The slowest request (10s) spent 90% of its time queued") || !d.OfferProfile {
		t.Fatalf("err %v, verdict %s, summary %q", err, d.Verdict, d.Summary)
	}
}

func TestTracesNeverHoldADiagnosisPastItsRunDeadline(t *testing.T) {
	t.Parallel()
	p, err := playbooks.Parse("traced.yaml", []byte(tracedPlaybook), sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	// The lookup's own deadline is far away; the run's is near: the run's wins.
	f := &finder{block: true, timeout: time.Hour}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	d, _ := NewEngine(valueQuerier{3}, EngineOptions{CacheTTL: -1, Traces: f}).Run(ctx, p, map[string]string{"alertname": "X"})
	if d == nil || !strings.Contains(strings.Join(d.Notes, "\n"), "slowest requests from traces: not available") {
		t.Fatalf("diagnosis %+v", d)
	}
}

type traceObs struct{ results []string }

func (o *traceObs) ObserveQuery(time.Duration, string) {}
func (o *traceObs) ObserveTraceLookup(r string)        { o.results = append(o.results, r) }

func TestEveryTraceLookupIsCountedByResult(t *testing.T) {
	t.Parallel()
	p, err := playbooks.Parse("traced.yaml", []byte(tracedPlaybook), sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	none := &traces.Report{Service: "vllm-m"}
	for _, tc := range []struct {
		f    *finder
		want string
	}{
		{&finder{rep: slowReport(), timeout: time.Minute}, TracesFound},
		{&finder{rep: none, timeout: time.Minute}, TracesNone},
		{&finder{rep: &traces.Report{Error: "Jaeger lookup failed: x"}, err: errors.New("x"), timeout: time.Minute}, TracesFailed},
	} {
		o := &traceObs{}
		if _, err := NewEngine(valueQuerier{3}, EngineOptions{CacheTTL: -1, Traces: tc.f, Observer: o}).Run(context.Background(), p, map[string]string{}); err != nil {
			t.Fatal(err)
		}
		if len(o.results) != 1 || o.results[0] != tc.want {
			t.Errorf("observed %v, want [%s]", o.results, tc.want)
		}
	}
}

// `triage --at` reviews a past incident: the traces are those of the window ending at that time,
// not at the time of the run.
func TestTracesOfARunAtAPastTimeAreOfThatWindow(t *testing.T) {
	t.Parallel()
	p, err := playbooks.Parse("traced.yaml", []byte(tracedPlaybook), sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	at := now.Add(-26 * time.Hour)
	f := &finder{rep: slowReport(), timeout: time.Minute}
	e := NewEngine(valueQuerier{3}, EngineOptions{Traces: f, Now: func() time.Time { return now }, CacheTTL: -1})
	d, err := e.RunAt(context.Background(), p, map[string]string{"alertname": "X", "pod": "p"}, at)
	if err != nil {
		t.Fatal(err)
	}
	if !f.start.Equal(at.Add(-5*time.Minute)) || !f.end.Equal(at) {
		t.Errorf("looked up %s..%s, want the playbook's window ending at --at %s", f.start, f.end, at)
	}
	if !d.EvaluatedAt.Equal(at) || !strings.Contains(d.Summary, "Traces: ") {
		t.Errorf("evaluated at %s, summary %q", d.EvaluatedAt, d.Summary)
	}
}

// The gate's `untraced` (requests with a first token and no finish) is counted into the trace
// report the diagnosis lists (a copy: the lookup's own is not changed); nothing is counted into
// a failed lookup, or when there are none.
func TestRequestsEndedUntracedAreCountedIntoTheList(t *testing.T) {
	t.Parallel()
	rep := &traces.Report{Summary: "The 2 slowest requests (4s-5s) spent 90% of their time decoding."}
	v := func(f float64) *float64 { return &f }
	got := markUntraced(rep, v(36.6))
	if got == rep || got.Untraced != 36 || !strings.HasPrefix(got.Summary, "The 2 slowest traced requests") {
		t.Fatalf("got %+v", got)
	}
	if rep.Untraced != 0 {
		t.Error("the lookup's own report was changed")
	}
	for name, c := range map[string]struct {
		rep *traces.Report
		n   *float64
	}{"none ended untraced": {rep, v(0.4)}, "not known": {rep, nil}, "no report": {nil, v(5)}, "a failed lookup": {&traces.Report{Error: "down"}, v(5)}} {
		if got := markUntraced(c.rep, c.n); got != c.rep {
			t.Errorf("%s: the report was replaced: %+v", name, got)
		}
	}
}
