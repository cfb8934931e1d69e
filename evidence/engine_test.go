package evidence

import (
	"context"
	"errors"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	promparser "github.com/prometheus/prometheus/promql/parser"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/facts/sources"
	"github.com/vllm-responder/vllm-responder/internal/promql"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

// answer is what the fake Prometheus gives for one query: the data, its warnings, or an error.
// block makes it wait until the query's context ends, as a Prometheus that never answers.
type answer struct {
	value    model.Value
	warnings []string
	err      error
	block    bool
}

// fakePrometheus is a WarningQuerier that answers each query by the metric it selects (the
// first name followed by "{"), as pint's tests mock Prometheus per query. A query it has no
// answer for fails the test.
//
// A request carrying several queries (foldQueries: label_replace(q, signal, name) or ...) is
// answered as Prometheus would: each query's samples labelled with its name; the first error
// of any of them fails the whole request, a scalar or matrix answer inside it is rejected (as
// label_replace rejects them), and the warnings are the request's.
type fakePrometheus struct {
	t       *testing.T
	answers map[string]answer
}

var selectedMetricRE = regexp.MustCompile(`([a-z_:]+)\{`)

func (f *fakePrometheus) Query(ctx context.Context, q string, ts time.Time) (model.Value, error) {
	v, _, err := f.QueryWithWarnings(ctx, q, ts)
	return v, err
}

func (f *fakePrometheus) QueryWithWarnings(ctx context.Context, q string, _ time.Time) (model.Value, []string, error) {
	legs := foldedLegs(f.t, q)
	if legs == nil {
		a := f.answer(q)
		if a.block {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		}
		return a.value, a.warnings, a.err
	}
	var out model.Vector
	var warnings []string
	for _, l := range legs {
		a := f.answer(l.expr)
		if a.block {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		}
		if a.err != nil {
			return nil, nil, a.err
		}
		x, ok := a.value.(model.Vector)
		if !ok {
			return nil, nil, &v1.Error{Type: v1.ErrBadData, Msg: "expected type instant vector in call to function \"label_replace\""}
		}
		for _, s := range x {
			m := s.Metric.Clone()
			m[signalLabel] = model.LabelValue(l.name)
			out = append(out, &model.Sample{Metric: m, Value: s.Value, Timestamp: s.Timestamp})
		}
		warnings = append(warnings, a.warnings...)
	}
	return out, warnings, nil
}

func (f *fakePrometheus) answer(q string) answer {
	m := selectedMetricRE.FindStringSubmatch(q)
	if m == nil {
		f.t.Errorf("query selects no metric: %s", q)
		return answer{err: errors.New("unexpected query")}
	}
	a, ok := f.answers[m[1]]
	if !ok {
		f.t.Errorf("nobody expected the query %s", q)
		return answer{err: errors.New("unexpected query")}
	}
	return a
}

// foldedLeg is one query of a request that carries several.
type foldedLeg struct{ name, expr string }

// foldedLegs parses a request of foldQueries back into its queries; nil for a lone query.
func foldedLegs(t testing.TB, q string) []foldedLeg {
	e, err := promparser.NewParser(promparser.Options{}).ParseExpr(q)
	if err != nil {
		if t != nil {
			t.Errorf("unparsable request %s: %v", q, err)
		}
		return nil
	}
	var legs []foldedLeg
	var walk func(e promparser.Expr) bool
	walk = func(e promparser.Expr) bool {
		switch x := e.(type) {
		case *promparser.BinaryExpr:
			return x.Op == promparser.LOR && walk(x.LHS) && walk(x.RHS)
		case *promparser.Call:
			if x.Func.Name != "label_replace" || x.Args[1].(*promparser.StringLiteral).Val != signalLabel {
				return false
			}
			legs = append(legs, foldedLeg{name: x.Args[2].(*promparser.StringLiteral).Val, expr: x.Args[0].String()})
			return true
		}
		return false
	}
	if !walk(e) || len(legs) < 2 {
		return nil
	}
	return legs
}

// statuses records the result of every query the engine observed.
type statuses struct {
	mu  sync.Mutex
	got []string
}

func (s *statuses) ObserveQuery(_ time.Duration, result string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, result)
}

func sample(v float64) *model.Sample {
	return &model.Sample{Metric: model.Metric{}, Value: model.SampleValue(v)}
}

func one(v float64) answer { return answer{value: model.Vector{sample(v)}} }

// fakePlaybook diagnoses from `a`; `b` and the quantile `p99` are further evidence.
const fakePlaybook = `
name: fake
match: {alertname: X}
scope: [pod]
queries:
  a: {expr: 'sum(a{$scope})', unit: count, title: A}
  b: {expr: 'sum(b{$scope})', unit: count}
  p99:
    expr: histogram_quantile(0.99, sum by (le) (rate(ttft_bucket{$scope}[$window])))
    unit: s
    quantile: true
    saturates_at: [2560]
verdicts:
  - {id: capacity-past-knee, when: a > 1, title: a is high, summary: "a is {{ count .a }}"}
  - {id: healthy, when: a != nil && a <= 1, title: a is low}
  - {id: inconclusive, when: "true", title: fallback}
`

func evidence(d *playbooks.Diagnosis, name string) playbooks.Evidence {
	for _, e := range d.Evidence {
		if e.Name == name {
			return e
		}
	}
	return playbooks.Evidence{}
}

// Each kind of answer Prometheus' API can give, for one query or for all of them, becomes
// what the diagnosis says: a value, or a missing value with its reason named, and a verdict
// that degrades (inconclusive, with notes) rather than a crash or a made-up number.
func TestEngineRunTurnsEveryKindOfAnswerIntoWhatTheDiagnosisSays(t *testing.T) {
	t.Parallel()
	p, err := playbooks.Parse("fake.yaml", []byte(fakePlaybook), sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	rejected := &v1.Error{Type: v1.ErrBadData, Msg: `invalid parameter "query": 1:6: parse error: unexpected "}"`}
	server := &v1.Error{Type: v1.ErrServer, Msg: "server error: 503", Detail: "query queue full"}
	refused := &url.Error{Op: "Post", URL: "http://127.0.0.1:9/api/v1/query?query=sum(a)&token=s3cret", Err: errors.New("dial tcp 127.0.0.1:9: connect: connection refused")}
	cases := []struct {
		name string
		// answers replace the default (every query answers 1) for the metrics they name.
		answers map[string]answer
		// query is the evidence checked; value its expected value (nil: missing).
		query   string
		value   *float64
		problem string // the evidence's problem, exactly
		verdict string
		notes   []string      // each must be one of the diagnosis' notes, exactly
		status  string        // what the checked query is counted as (the Query* results)
		timeout time.Duration // EngineOptions.QueryTimeout; 0: a minute
		// unavailable: Run returns an *UnavailableError with this reason, and the diagnosis says so.
		unavailable string
		// batchedNotes replace notes when the queries share a request (they share its warnings).
		batchedNotes []string
		// refused: the backend refused the query: not missing; the diagnosis' error (errMsg) names it
		refused bool
		errMsg  string
		// unneeded: no rule reads the query, so its missing value is not missing evidence
		// (playbooks.Diagnosis.Missing): shown as n/a with its problem, the diagnosis whole.
		unneeded bool
	}{
		{
			name: "one sample is the value", answers: map[string]answer{"a": one(5)},
			query: "a", value: ptr(5), verdict: playbooks.VerdictCapacityPastKnee, status: QueryOK,
		},
		{
			name: "a scalar answer is the value", answers: map[string]answer{"a": {value: &model.Scalar{Value: 0.5}}},
			query: "a", value: ptr(0.5), verdict: playbooks.VerdictHealthy, status: QueryOK,
		},
		{
			name:    "NaN (0/0 over a window without traffic) is missing, and so is the rule that needs it",
			answers: map[string]answer{"a": one(math.NaN())},
			query:   "a", problem: "no traffic in the window (0/0)", verdict: playbooks.VerdictInconclusive, status: QueryEmpty,
			notes: []string{"rule capacity-past-knee not decidable: a missing"},
		},
		{
			name: "+Inf is missing, not a huge number", answers: map[string]answer{"a": one(math.Inf(1))},
			query: "a", problem: "value is +Inf", verdict: playbooks.VerdictInconclusive, status: QueryOK,
			notes: []string{"rule capacity-past-knee not decidable: a missing"},
		},
		{
			name: "-Inf is missing", answers: map[string]answer{"a": one(math.Inf(-1))},
			query: "a", problem: "value is -Inf", verdict: playbooks.VerdictInconclusive, status: QueryEmpty,
			notes: []string{"rule capacity-past-knee not decidable: a missing"},
		},
		{
			name: "a quantile at +Inf is saturated: above the top bucket, missing", answers: map[string]answer{"ttft_bucket": one(math.Inf(1))},
			query: "p99", problem: "above the histogram's highest bucket: the quantile is saturated (older vLLM versions had lower top buckets), " +
				"so the real value is higher than any bucket can show",
			verdict: playbooks.VerdictHealthy, status: QueryOK, unneeded: true,
		},
		{
			name: "a quantile pinned at a top bucket bound is kept but not trusted", answers: map[string]answer{"ttft_bucket": one(2560)},
			query: "p99", value: ptr(2560), problem: "pinned at the histogram's top bucket bound (42m40s): the real value is at least this high " +
				"(vLLM before #15202, April 2025, had lower top buckets); do not trust it as a measurement",
			verdict: playbooks.VerdictHealthy, status: QueryOK,
		},
		{
			name:    "several series where one is expected: the largest, and the query named as not aggregated",
			answers: map[string]answer{"a": {value: model.Vector{sample(2), sample(7), sample(0.5)}}},
			query:   "a", value: ptr(7), problem: "3 series; showing the largest (aggregate the query to one series)",
			verdict: playbooks.VerdictCapacityPastKnee, status: QueryOK,
		},
		{
			name: "several series, one of them NaN: the largest number", answers: map[string]answer{"a": {value: model.Vector{sample(math.NaN()), sample(2)}}},
			query: "a", value: ptr(2), problem: "2 series; showing the largest (aggregate the query to one series)",
			verdict: playbooks.VerdictCapacityPastKnee, status: QueryOK,
		},
		{
			name: "a matrix answer is a query error, missing",
			answers: map[string]answer{"a": {value: model.Matrix{&model.SampleStream{Metric: model.Metric{},
				Values: []model.SamplePair{{Timestamp: 0, Value: 5}}}}}},
			query: "a", problem: "query returns a range vector; a playbook query must return one number",
			verdict: playbooks.VerdictInconclusive, status: QueryError,
			notes: []string{"rule capacity-past-knee not decidable: a missing"},
		},
		{
			name: "an empty answer (no series) is missing", answers: map[string]answer{"a": {value: model.Vector{}}},
			query: "a", problem: "no series", verdict: playbooks.VerdictInconclusive, status: QueryEmpty,
			notes: []string{"rule capacity-past-knee not decidable: a missing"},
		},
		{
			name: "a query Prometheus rejects (bad_data) is missing with Prometheus' reason", answers: map[string]answer{"a": {err: rejected}},
			query: "a", problem: `the backend refused the query: invalid parameter "query": 1:6: parse error: unexpected "}"`,
			verdict: playbooks.VerdictInconclusive, status: QueryError, refused: true,
			notes: []string{"rule capacity-past-knee not decidable: a missing"},
			errMsg: `1 of 3 queries (a) were refused by the backend or too long to send, so what they show is unknown, ` +
				`not absent: the backend refused the query: invalid parameter "query": 1:6: parse error: unexpected "}"`,
		},
		{
			name: "a query that fails to execute (execution) is rejected too", answers: map[string]answer{"a": {err: &v1.Error{Type: v1.ErrExec, Msg: "expanding series: too many samples"}}},
			query: "a", problem: "the backend refused the query: expanding series: too many samples",
			verdict: playbooks.VerdictInconclusive, status: QueryError, refused: true,
			notes: []string{"rule capacity-past-knee not decidable: a missing"},
			errMsg: "1 of 3 queries (a) were refused by the backend or too long to send, so what they show is unknown, " +
				"not absent: the backend refused the query: expanding series: too many samples",
		},
		{
			name:    "VictoriaMetrics refusing a query longer than -search.maxQueryLen (its 422) is a refusal, not Prometheus unreachable",
			answers: map[string]answer{"a": {err: &v1.Error{Type: "422", Msg: "too long query; got 17500 bytes; mustn't exceed `-search.maxQueryLen=16384` bytes"}}},
			query:   "a", problem: "the backend refused the query: too long query; got 17500 bytes; mustn't exceed `-search.maxQueryLen=16384` bytes",
			verdict: playbooks.VerdictInconclusive, status: QueryError, refused: true,
			notes: []string{"rule capacity-past-knee not decidable: a missing"},
			errMsg: "1 of 3 queries (a) were refused by the backend or too long to send, so what they show is unknown, " +
				"not absent: the backend refused the query: too long query; got 17500 bytes; mustn't exceed `-search.maxQueryLen=16384` bytes",
		},
		{
			name:    "a proxy refusing a request too large for it (413) is a refusal",
			answers: map[string]answer{"a": {err: &v1.Error{Type: v1.ErrClient, Msg: "client error: 413", Detail: "<html>413 Request Entity Too Large</html>"}}},
			query:   "a", problem: "the backend refused the query: client error: 413: <html>413 Request Entity Too Large</html>",
			verdict: playbooks.VerdictInconclusive, status: QueryError, refused: true,
			notes: []string{"rule capacity-past-knee not decidable: a missing"},
			errMsg: "1 of 3 queries (a) were refused by the backend or too long to send, so what they show is unknown, " +
				"not absent: the backend refused the query: client error: 413: <html>413 Request Entity Too Large</html>",
		},
		{
			name: "Prometheus' own timeout (timeout) is a timeout", answers: map[string]answer{"a": {err: &v1.Error{Type: v1.ErrTimeout, Msg: "query timed out in expression evaluation"}}},
			query: "a", problem: "Prometheus timed out: query timed out in expression evaluation",
			verdict: playbooks.VerdictInconclusive, status: QueryTimeout,
			notes: []string{"rule capacity-past-knee not decidable: a missing"},
		},
		{
			name: "a query Prometheus cancelled (canceled) is a timeout", answers: map[string]answer{"a": {err: &v1.Error{Type: v1.ErrCanceled, Msg: "context canceled"}}},
			query: "a", problem: "Prometheus timed out: context canceled",
			verdict: playbooks.VerdictInconclusive, status: QueryTimeout,
			notes: []string{"rule capacity-past-knee not decidable: a missing"},
		},
		{
			name: "a query past the engine's deadline is a timeout naming the deadline", answers: map[string]answer{"a": {block: true}},
			timeout: 20 * time.Millisecond, query: "a", problem: "query deadline of 20ms exceeded",
			verdict: playbooks.VerdictInconclusive, status: QueryTimeout,
			notes: []string{"rule capacity-past-knee not decidable: a missing"},
		},
		{
			name: "a 5xx (server_error) on one query: that query could not reach Prometheus, the rest decide", answers: map[string]answer{"a": {err: server}},
			query: "a", problem: "server_error: server error: 503", verdict: playbooks.VerdictInconclusive, status: QueryUnreachable,
			notes: []string{"rule capacity-past-knee not decidable: a missing", "1 of 3 queries could not reach Prometheus: server_error: server error: 503"},
		},
		{
			name:    "a 4xx other than a rejected query (client_error) could not reach Prometheus either",
			answers: map[string]answer{"a": {err: &v1.Error{Type: v1.ErrClient, Msg: "client error: 403"}}},
			query:   "a", problem: "client_error: client error: 403", verdict: playbooks.VerdictInconclusive, status: QueryUnreachable,
			notes: []string{"rule capacity-past-knee not decidable: a missing", "1 of 3 queries could not reach Prometheus: client_error: client error: 403"},
		},
		{
			name:    "an answer that is not the API's JSON (bad_response, a proxy's error page) could not reach Prometheus",
			answers: map[string]answer{"a": {err: &v1.Error{Type: v1.ErrBadResponse, Msg: "readObjectStart: expect { or n, but found <"}}},
			query:   "a", problem: "bad_response: readObjectStart: expect { or n, but found <", verdict: playbooks.VerdictInconclusive, status: QueryUnreachable,
			notes: []string{"1 of 3 queries could not reach Prometheus: bad_response: readObjectStart: expect { or n, but found <"},
		},
		{
			name:    "warnings keep the value but mark the evidence as a partial answer",
			answers: map[string]answer{"a": {value: model.Vector{sample(5)}, warnings: []string{"store 10.0.0.7:10901 did not answer"}}},
			query:   "a", value: ptr(5), problem: "partial answer, Prometheus warned: store 10.0.0.7:10901 did not answer",
			verdict: playbooks.VerdictCapacityPastKnee, status: QueryOK,
			notes: []string{"1 of 3 queries came back with warnings: the answer may be partial (a Thanos store or a Mimir/Cortex querier " +
				"that did not answer); the verdict rests on what did"},
			batchedNotes: []string{"3 of 3 queries came back with warnings: the answer may be partial (a Thanos store or a Mimir/Cortex querier " +
				"that did not answer); the verdict rests on what did"},
		},
		{
			name:    "warnings beside several series: both problems are named",
			answers: map[string]answer{"a": {value: model.Vector{sample(5), sample(6)}, warnings: []string{"partial_response"}}},
			query:   "a", value: ptr(6), problem: "2 series; showing the largest (aggregate the query to one series); partial answer, Prometheus warned: partial_response",
			verdict: playbooks.VerdictCapacityPastKnee, status: QueryOK,
		},
		{
			name:    "a 5xx on every query: no evidence, a degraded diagnosis and an UnavailableError",
			answers: map[string]answer{"a": {err: server}, "b": {err: server}, "ttft_bucket": {err: server}},
			query:   "a", problem: "server_error: server error: 503", verdict: playbooks.VerdictInconclusive, status: QueryUnreachable,
			unavailable: "server_error: server error: 503",
		},
		{
			name:    "Prometheus refusing connections: the reason without the query string of the URL",
			answers: map[string]answer{"a": {err: refused}, "b": {err: refused}, "ttft_bucket": {err: refused}},
			query:   "a", problem: `Post "http://127.0.0.1:9/api/v1/query": dial tcp 127.0.0.1:9: connect: connection refused`,
			verdict: playbooks.VerdictInconclusive, status: QueryUnreachable,
			unavailable: `Post "http://127.0.0.1:9/api/v1/query": dial tcp 127.0.0.1:9: connect: connection refused`,
		},
	}
	// Each case twice: every query in a request of its own, and the three in one request (the
	// default), which must say the same but for the warnings they share.
	for _, tc := range cases {
		for _, perRequest := range []int{1, 0} {
			name := tc.name + " (alone)"
			if perRequest == 0 {
				name = tc.name + " (one request)"
			}
			t.Run(name, func(t *testing.T) {
				answers := map[string]answer{"a": one(1), "b": one(1), "ttft_bucket": one(0.2)}
				for k, v := range tc.answers {
					answers[k] = v
				}
				obs := &statuses{}
				timeout := tc.timeout
				if timeout == 0 {
					timeout = time.Minute // never reached: an answer that came late would be counted as a timeout
				}
				e := NewEngine(&fakePrometheus{t: t, answers: answers}, EngineOptions{CacheTTL: -1, QueryTimeout: timeout, Observer: obs, QueriesPerRequest: perRequest})
				d, err := e.Run(context.Background(), p, map[string]string{"alertname": "X", "pod": "vllm-0"})
				if d == nil {
					t.Fatalf("no diagnosis (error %v)", err)
				}
				if tc.unavailable != "" {
					ue, ok := errors.AsType[*UnavailableError](err)
					if !ok || ue.Reason != tc.unavailable || !errors.Is(err, ErrPrometheusUnavailable) {
						t.Fatalf("error %v; want an UnavailableError with reason %q", err, tc.unavailable)
					}
					if d.Error != "Prometheus could not be reached: "+tc.unavailable || d.Title != "Prometheus unreachable: no evidence gathered" {
						t.Errorf("error %q, title %q: the diagnosis must say Prometheus could not be reached", d.Error, d.Title)
					}
					if !slices.Equal(d.Missing, []string{"a", "b", "p99"}) {
						t.Errorf("missing %q; want every query", d.Missing)
					}
				} else if err != nil {
					t.Fatalf("Run: %v (only an unreachable Prometheus is an error)", err)
				}
				if d.Verdict != tc.verdict {
					t.Errorf("verdict %s; want %s (title %q, notes %q)", d.Verdict, tc.verdict, d.Title, d.Notes)
				}
				ev := evidence(d, tc.query)
				switch {
				case ev.Name == "":
					t.Fatalf("no evidence %s in %+v", tc.query, d.Evidence)
				case tc.value == nil && ev.Value != nil:
					t.Errorf("%s = %v; want missing", tc.query, *ev.Value)
				case tc.value != nil && (ev.Value == nil || *ev.Value != *tc.value):
					t.Errorf("%s = %s; want %v", tc.query, ev.Text, *tc.value)
				}
				if tc.value == nil {
					if (tc.refused || tc.unneeded) && (ev.Text != playbooks.NA || slices.Contains(d.Missing, tc.query)) {
						t.Errorf("%s shows %q, missing %q; want n/a and not named as missing (refused, or read by no rule)", tc.query, ev.Text, d.Missing)
					}
					if !tc.refused && !tc.unneeded && (ev.Text != playbooks.NA || !slices.Contains(d.Missing, tc.query)) {
						t.Errorf("%s shows %q, missing %q; want n/a and named as missing", tc.query, ev.Text, d.Missing)
					}
					if d.Degraded() == tc.unneeded {
						t.Errorf("degraded %v: a diagnosis is degraded when evidence a rule needed is missing (or refused), only then", d.Degraded())
					}
				}
				if tc.unavailable == "" && d.Error != tc.errMsg {
					t.Errorf("error %q; want %q", d.Error, tc.errMsg)
				}
				if ev.Problem != tc.problem {
					t.Errorf("%s's problem\n  %q\nwant\n  %q", tc.query, ev.Problem, tc.problem)
				}
				notes := tc.notes
				if perRequest == 0 && tc.batchedNotes != nil {
					notes = tc.batchedNotes
				}
				for _, n := range notes {
					if !slices.Contains(d.Notes, n) {
						t.Errorf("notes %q\nwant among them %q", d.Notes, n)
					}
				}
				if perRequest == 0 {
					return // requests are counted, not queries: TestARequestOfSeveralQueries... count them
				}
				// The checked query is counted as tc.status, the others (answering 1) as ok.
				want := []string{tc.status, QueryOK, QueryOK}
				if len(tc.answers) == 3 {
					want = []string{tc.status, tc.status, tc.status}
				}
				obs.mu.Lock()
				got := slices.Sorted(slices.Values(obs.got))
				obs.mu.Unlock()
				if slices.Sort(want); !slices.Equal(got, want) {
					t.Errorf("queries counted as %q; want %q", got, want)
				}
			})
		}
	}
}

// An optional query (a feature's series) that returned nothing is the feature off: not shown,
// not missing. One whose request failed is unknown, as any query's: shown with its problem,
// and missing where a rule needs it.
func TestAnOptionalQueryThatFailedIsMissingWhereARuleNeedsIt(t *testing.T) {
	t.Parallel()
	p, err := playbooks.Parse("opt.yaml", []byte(`name: opt
match: {alertname: X}
scope: [pod]
queries:
  a: {expr: 'sum(a{$scope})', unit: count, title: A}
  acc: {expr: 'sum(acc{$scope})', unit: count, title: Accepted, optional: true}
verdicts:
  - {id: spec-decode-regression, when: acc < 1, title: speculation}
  - {id: healthy, when: a != nil, title: a is there}
  - {id: inconclusive, when: "true", title: fallback}
`), sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	server := &v1.Error{Type: v1.ErrServer, Msg: "server error: 503"}
	for _, tc := range []struct {
		name    string
		acc     answer
		missing []string
		shown   bool
	}{
		{"no series: the feature is off", answer{value: model.Vector{}}, nil, false},
		{"a failed request: unknown", answer{err: server}, []string{"acc"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEngine(&fakePrometheus{t: t, answers: map[string]answer{"a": one(1), "acc": tc.acc}}, EngineOptions{CacheTTL: -1})
			d, err := e.Run(context.Background(), p, map[string]string{"alertname": "X", "pod": "vllm-0"})
			if err != nil {
				t.Fatal(err)
			}
			if d.Verdict != playbooks.VerdictHealthy || !slices.Equal(d.Missing, tc.missing) {
				t.Errorf("verdict %s, missing %q; want healthy, missing %q", d.Verdict, d.Missing, tc.missing)
			}
			if ev := evidence(d, "acc"); (ev.Name != "") != tc.shown || (tc.shown && ev.Problem == "") {
				t.Errorf("acc's evidence %+v; shown: %v, with its problem", ev, tc.shown)
			}
		})
	}
}

// The chosen verdict's templates render with the values the answers gave, and evidence keeps the
// query as sent, with the alert's label quoted in it.
func TestEngineRunRendersTheVerdictFromTheAnswers(t *testing.T) {
	t.Parallel()
	p, err := playbooks.Parse("fake.yaml", []byte(fakePlaybook), sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	answers := map[string]answer{"a": one(140), "b": one(1), "ttft_bucket": one(0.2)}
	d, err := NewEngine(&fakePrometheus{t: t, answers: answers}, EngineOptions{CacheTTL: -1}).
		Run(context.Background(), p, map[string]string{"alertname": "X", "pod": `vllm-0"} or vector(1)`})
	if err != nil {
		t.Fatal(err)
	}
	if d.Verdict != playbooks.VerdictCapacityPastKnee || d.Title != "a is high" || d.Summary != "a is 140" {
		t.Fatalf("verdict %s, title %q, summary %q", d.Verdict, d.Title, d.Summary)
	}
	if q := evidence(d, "a").Query; q != `sum(a{pod="vllm-0\"} or vector(1)"})` {
		t.Fatalf("query sent %s; want the label value quoted", q)
	}
	if len(d.Missing) != 0 || len(d.Notes) != 0 || d.Degraded() {
		t.Fatalf("missing %q, notes %q: nothing should be", d.Missing, d.Notes)
	}
}

// An alert whose label that reaches a query is longer than promql.MaxLabelValue (a pod label of
// 16 KiB on the webhook path) is diagnosed without a query: inconclusive, saying which label is
// too long, so that the alert is still posted. The hard negative: a value of the bound is queried.
func TestALabelValueLongerThanTheBoundSendsNoQueryAndSaysSo(t *testing.T) {
	t.Parallel()
	p, err := playbooks.Parse("fake.yaml", []byte(fakePlaybook), sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("p", 16<<10)
	d, err := NewEngine(&fakePrometheus{t: t}, EngineOptions{CacheTTL: -1}).
		Run(context.Background(), p, map[string]string{"alertname": "X", "pod": long})
	if err != nil {
		t.Fatal(err)
	}
	if d.Verdict != playbooks.VerdictInconclusive || d.Title != "Label value too long: no query sent" ||
		d.Error != `label "pod": value too long (16384 bytes, at most 253)` || !strings.Contains(d.Summary, "The pod label is 16384 bytes long") {
		t.Fatalf("verdict %s, title %q, error %q, summary %q", d.Verdict, d.Title, d.Error, d.Summary)
	}
	// A label no query reads (not in the scope, naming no pod) is not bounded here.
	answers := map[string]answer{"a": one(1), "b": one(1), "ttft_bucket": one(0.2)}
	d, err = NewEngine(&fakePrometheus{t: t, answers: answers}, EngineOptions{CacheTTL: -1}).
		Run(context.Background(), p, map[string]string{"alertname": "X", "pod": strings.Repeat("p", promql.MaxLabelValue), "description": long})
	if err != nil || d.Verdict != playbooks.VerdictHealthy {
		t.Fatalf("a value of the bound: verdict %s, %v; want it queried (healthy)", d.Verdict, err)
	}
}

func ptr(v float64) *float64 { return &v }

// legQuerier answers each query, alone or folded with others (foldQueries), with answer(expr),
// and keeps each one it answered.
type legQuerier struct {
	mu     sync.Mutex
	asked  []string
	answer func(expr string) model.Vector
}

func (l *legQuerier) Query(_ context.Context, q string, _ time.Time) (model.Value, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	legs := foldedLegs(nil, q)
	if legs == nil {
		l.asked = append(l.asked, q)
		return l.answer(q), nil
	}
	var out model.Vector
	for _, leg := range legs {
		l.asked = append(l.asked, leg.expr)
		for _, s := range l.answer(leg.expr) {
			m := s.Metric.Clone()
			m[signalLabel] = model.LabelValue(leg.name)
			out = append(out, &model.Sample{Metric: m, Value: s.Value})
		}
	}
	return out, nil
}

// A baseline's fallbacks (the model a day ago, the recent past) are sent only where its first
// variant (the scope a day ago) has no value, after the others answered: a pod with a day of
// history costs none of them, and the verdict and the baseline shown are what they were when
// every variant was sent. Without a pod in the scope, the model a day ago is the first variant's
// own scope, and is not sent.
func TestABaselinesFallbacksAreSentOnlyWhereItsFirstVariantHasNoValue(t *testing.T) {
	t.Parallel()
	p, err := playbooks.Parse("fake.yaml", []byte(`
name: fake
match: {alertname: X}
scope: [model_name, pod]
queries:
  a: {expr: 'sum(a{$scope})', unit: count, title: A, baseline: a_base}
  a_base: {baseline_of: a, unit: count}
  b: {expr: 'sum(b{$scope})', unit: count}
verdicts:
  - {id: capacity-past-knee, when: a >= 2 * a_base, title: a is up}
  - {id: healthy, when: a < 2 * a_base, title: a is steady}
  - {id: inconclusive, when: "true", title: no baseline}
`), sources.Catalog())
	if err != nil {
		t.Fatal(err)
	}
	variant := func(e string) string {
		switch {
		case strings.Contains(e, "avg(") && strings.Contains(e, "offset 1d"):
			return "model a day ago"
		case strings.Contains(e, "offset 1d"):
			return "pod a day ago"
		case strings.Contains(e, "offset"):
			return "recent past"
		}
		return "now"
	}
	cases := []struct {
		name    string
		labels  map[string]string
		has     map[string]float64 // what Prometheus holds of a, by variant
		sent    []string           // the variants of a sent, in order
		verdict string
		from    string
	}{
		{"a pod with a day of history", map[string]string{"alertname": "X", "model_name": "m", "pod": "p"},
			map[string]float64{"now": 3, "pod a day ago": 1, "model a day ago": 5, "recent past": 5},
			[]string{"now", "pod a day ago"}, "capacity-past-knee", playbooks.BaselineFromPodDay},
		{"a new pod of a model with a day of history", map[string]string{"alertname": "X", "model_name": "m", "pod": "p"},
			map[string]float64{"now": 3, "model a day ago": 1, "recent past": 5},
			[]string{"now", "pod a day ago", "model a day ago", "recent past"}, "capacity-past-knee", playbooks.BaselineFromModelDay},
		{"a new model", map[string]string{"alertname": "X", "model_name": "m", "pod": "p"},
			map[string]float64{"now": 3, "recent past": 2},
			[]string{"now", "pod a day ago", "model a day ago", "recent past"}, "healthy", p.RecentFrom()},
		{"a model without a day of history, no pod named", map[string]string{"alertname": "X", "model_name": "m"},
			map[string]float64{"now": 3, "model a day ago": 5, "recent past": 1},
			[]string{"now", "pod a day ago", "recent past"}, "capacity-past-knee", p.RecentFrom()},
		{"no history at all", map[string]string{"alertname": "X", "model_name": "m", "pod": "p"},
			map[string]float64{"now": 3},
			[]string{"now", "pod a day ago", "model a day ago", "recent past"}, "inconclusive", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q := &legQuerier{answer: func(e string) model.Vector {
				if !strings.Contains(e, "a{") {
					return model.Vector{sample(1)}
				}
				if v, ok := tc.has[variant(e)]; ok {
					return model.Vector{sample(v)}
				}
				return nil
			}}
			d, err := NewEngine(q, EngineOptions{CacheTTL: -1, Logger: zerolog.Nop()}).Run(context.Background(), p, tc.labels)
			if err != nil {
				t.Fatal(err)
			}
			var sent []string
			for _, e := range q.asked {
				if strings.Contains(e, "a{") {
					sent = append(sent, variant(e))
				}
			}
			if !slices.Equal(sent, tc.sent) {
				t.Errorf("sent %q; want %q", sent, tc.sent)
			}
			if ev := evidence(d, "a"); d.Verdict != tc.verdict || ev.BaselineFrom != tc.from {
				t.Errorf("verdict %s, baseline %s from %q; want %s from %q", d.Verdict, ev.BaselineText, ev.BaselineFrom, tc.verdict, tc.from)
			}
		})
	}
}
