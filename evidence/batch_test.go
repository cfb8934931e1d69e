package evidence

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/facts/sources"
	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

// countingQuerier counts the requests that reach q.
type countingQuerier struct {
	WarningQuerier
	asked chan string
}

func (c countingQuerier) QueryWithWarnings(ctx context.Context, q string, ts time.Time) (model.Value, []string, error) {
	c.asked <- q
	return c.WarningQuerier.QueryWithWarnings(ctx, q, ts)
}

func (c countingQuerier) drain() []string {
	var out []string
	for {
		select {
		case q := <-c.asked:
			out = append(out, q)
		default:
			return out
		}
	}
}

// A run sends its queries a few to a request, and splits the answer back into each query's own;
// a scalar query travels alone; a request Prometheus answers with an error is sent again query
// by query, a request that cannot reach Prometheus is not.
func TestARunSendsItsQueriesAFewToARequest(t *testing.T) {
	t.Parallel()
	p, err := playbooks.Parse("fake.yaml", []byte(strings.Replace(fakePlaybook, "queries:\n", "queries:\n  s: {expr: 'scalar(sum(s{$scope}))', unit: count}\n", 1)), sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	base := map[string]answer{"a": one(5), "b": {value: model.Vector{sample(1), sample(2)}}, "ttft_bucket": one(0.2), "s": {value: &model.Scalar{Value: 3}}}
	cases := []struct {
		name       string
		perRequest int
		answers    map[string]answer
		requests   int      // requests sent
		observed   []string // their results, sorted
	}{
		{name: "three vector queries in one request, the scalar alone", requests: 2, observed: []string{QueryOK, QueryOK}},
		{name: "two to a request", perRequest: 2, requests: 3, observed: []string{QueryOK, QueryOK, QueryOK}},
		{name: "each alone", perRequest: 1, requests: 4, observed: []string{QueryOK, QueryOK, QueryOK, QueryOK}},
		{name: "a rejected request is sent again query by query", answers: map[string]answer{"b": {err: &v1.Error{Type: v1.ErrBadData, Msg: "bad"}}},
			requests: 5, observed: []string{QueryError, QueryError, QueryOK, QueryOK, QueryOK}},
		{name: "a 5xx request is sent again query by query", answers: map[string]answer{"b": {err: &v1.Error{Type: v1.ErrServer, Msg: "503"}}},
			requests: 5, observed: []string{QueryOK, QueryOK, QueryOK, QueryUnreachable, QueryUnreachable}},
		{name: "a request that never reached Prometheus is not sent again", answers: map[string]answer{"a": {err: context.DeadlineExceeded}, "b": {err: context.DeadlineExceeded}, "ttft_bucket": {err: context.DeadlineExceeded}},
			requests: 2, observed: []string{QueryOK, QueryUnreachable}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			answers := maps.Clone(base)
			maps.Copy(answers, tc.answers)
			q := countingQuerier{WarningQuerier: &fakePrometheus{t: t, answers: answers}, asked: make(chan string, 100)}
			obs := &statuses{}
			d, err := NewEngine(q, EngineOptions{CacheTTL: -1, Observer: obs, QueriesPerRequest: tc.perRequest}).
				Run(context.Background(), p, map[string]string{"alertname": "X", "pod": "vllm-0"})
			if d == nil {
				t.Fatal(err)
			}
			asked := q.drain()
			if len(asked) != tc.requests {
				t.Errorf("%d requests; want %d:\n%s", len(asked), tc.requests, strings.Join(asked, "\n"))
			}
			if got := slices.Sorted(slices.Values(obs.got)); !slices.Equal(got, tc.observed) {
				t.Errorf("requests counted as %q; want %q", got, tc.observed)
			}
			for _, s := range asked {
				if strings.Contains(s, "scalar(") && strings.Contains(s, signalLabel) {
					t.Errorf("a scalar query shares a request: %s", s)
				}
			}
			// Whatever the requests, each query says what it says alone.
			if _, bad := tc.answers["b"]; !bad {
				if ev := evidence(d, "b"); ev.Value == nil || *ev.Value != 2 || ev.Problem != "2 series; showing the largest (aggregate the query to one series)" {
					t.Errorf("b = %s (%q); want 2, with its 2 series named", ev.Text, ev.Problem)
				}
			}
			if tc.answers == nil {
				if ev := evidence(d, "a"); ev.Value == nil || *ev.Value != 5 {
					t.Errorf("a = %s; want 5", ev.Text)
				}
				if ev := evidence(d, "s"); ev.Value == nil || *ev.Value != 3 {
					t.Errorf("s = %s; want 3", ev.Text)
				}
			}
		})
	}
}

// On a real Prometheus holding the recorded vLLM pods, every builtin playbook says exactly the
// same of every pod whether its queries travel a few to a request or each alone: the same
// values, problems, missing queries, notes, fleet view and verdict, in fewer requests.
func TestQueriesAFewToARequestSayWhatEachAloneSays(t *testing.T) {
	t.Parallel()
	at := time.Now().Truncate(time.Second)
	loads := append(testenv.ScenarioLoads(), testenv.FleetLoads()...)
	// With the shipped recording rules: the stall history, computed by the query, costs seconds a
	// request for the model of 50 pods (the recorded form says the same:
	// TestTheRecordedFormsSayWhatTheRawFormsSay).
	prom := testenv.RecordedPrometheusWithRules(t, loads, shippedRules(t))
	client, err := api.NewClient(api.Config{Address: prom.URL, RoundTripper: PrometheusTransport(16)})
	if err != nil {
		t.Fatal(err)
	}
	pq := PrometheusQuerier{API: v1.NewAPI(client)}
	alts := AlternativesFunc(Recorded)
	alone := NewEngine(pq, EngineOptions{CacheTTL: -1, QueriesPerRequest: 1, Logger: zerolog.Nop(), Alternatives: alts})
	q := countingQuerier{WarningQuerier: pq, asked: make(chan string, 1000)}
	folded := NewEngine(q, EngineOptions{CacheTTL: -1, Logger: zerolog.Nop(), Alternatives: alts})
	pods := []string{"fleet-0"}
	for _, l := range testenv.ScenarioLoads() {
		pods = append(pods, l.Pod)
	}
	checked := 0
	for _, p := range builtinSet(t).All() {
		for _, pod := range pods {
			labels := map[string]string{"namespace": "llm", "pod": pod, "model_name": "llama"}
			if pod == "fleet-0" {
				labels["model_name"] = testenv.FleetModel
			}
			for _, m := range p.Matchers {
				if m.Type == playbooks.MatchEqual {
					labels[m.Name] = m.Value
				}
			}
			want, err1 := alone.RunAt(context.Background(), p, labels, at)
			got, err2 := folded.RunAt(context.Background(), p, labels, at)
			if err1 != nil || err2 != nil {
				t.Fatalf("%s on %s: %v / %v", p.Name, pod, err1, err2)
			}
			// the playbook's requests; a LoRA lookup (one query, when the LoRA rule is on the way)
			// is the lookup's own, and the checks of the recorded forms are the scope's; then the
			// baselines' fallbacks, where a baseline's first variant had no value
			checks := map[string]bool{}
			a := alts(p, labels, playbooks.PodScope{})
			for _, f := range append(a.Queries, a.Fleet...) {
				checks[f.Present] = f.Present != ""
			}
			asked := slices.DeleteFunc(q.drain(), func(a string) bool {
				return strings.Contains(a, "lora_requests_info") || checks[a]
			})
			x := p.ExpandAll(labels, playbooks.PodScope{})
			fallbacks := len(slices.DeleteFunc(slices.Clone(asked), func(a string) bool {
				for i, q := range p.Queries {
					if q.Variant() && strings.Contains(a, x.Queries[i]) {
						return false
					}
				}
				return true
			}))
			first := len(RecordedRequests(p, labels, 0, alts))
			if most := len(FallbackRequests(p, labels, 0)); len(asked) != first+fallbacks || fallbacks > most || len(asked) >= len(p.Queries) {
				t.Errorf("%s: %d requests for %d queries, %d of them the fallbacks' (at most %d); want %d and the fallbacks'", p.Name, len(asked), len(p.Queries), fallbacks, most, first)
			}
			for _, d := range []*playbooks.Diagnosis{want, got} {
				d.Duration, d.DurationMS = 0, 0
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s on %s: a few to a request says\n%+v\neach alone\n%+v", p.Name, pod, got, want)
			}
			if want.Verdict != playbooks.VerdictNoData {
				checked++
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d diagnoses had data: the recorded pods did not match the playbooks", checked)
	}
}
