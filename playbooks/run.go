package playbooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/expr-lang/expr"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"
	"golang.org/x/sync/singleflight"

	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
	"github.com/vllm-responder/vllm-responder/traces"
)

// Querier runs one instant query. *PrometheusQuerier adapts the Prometheus v1 API; tests and
// `playbooks test` use recorded results.
type Querier interface {
	Query(ctx context.Context, query string, ts time.Time) (model.Value, error)
}

// WarningQuerier is a Querier that also returns the warnings of an answer. Prometheus' API
// puts them beside the data; Thanos reports a partial response (a store that did not answer,
// partial_response) and Mimir or Cortex a partial query this way. The engine marks such evidence
// instead of trusting it silently.
type WarningQuerier interface {
	Querier
	QueryWithWarnings(ctx context.Context, query string, ts time.Time) (model.Value, []string, error)
}

// PrometheusQuerier runs queries through client_golang's v1 API.
type PrometheusQuerier struct{ API v1.API }

// Query implements Querier, without the warnings.
func (p PrometheusQuerier) Query(ctx context.Context, q string, ts time.Time) (model.Value, error) {
	v, _, err := p.QueryWithWarnings(ctx, q, ts)
	return v, err
}

// QueryWithWarnings implements WarningQuerier.
func (p PrometheusQuerier) QueryWithWarnings(ctx context.Context, q string, ts time.Time) (model.Value, []string, error) {
	v, warnings, _, err := p.API.Query(ctx, q, ts)
	return v, warnings, err
}

// ErrPrometheusUnavailable is what Run's error matches (errors.Is) when no query could reach
// Prometheus. The diagnosis is still returned, degraded.
var ErrPrometheusUnavailable = errors.New("prometheus unavailable")

// UnavailableError is Run's error when no query could reach Prometheus: Reason is the last
// query's failure ("dial tcp 127.0.0.1:9090: connect: connection refused"), for callers that
// say it in their own words. It matches ErrPrometheusUnavailable.
type UnavailableError struct{ Reason string }

func (e *UnavailableError) Error() string { return ErrPrometheusUnavailable.Error() + ": " + e.Reason }

// Unwrap makes errors.Is(err, ErrPrometheusUnavailable) hold.
func (e *UnavailableError) Unwrap() error { return ErrPrometheusUnavailable }

// Observer receives one observation per query sent to Prometheus (for the service's metrics).
type Observer interface {
	ObserveQuery(d time.Duration, result string)
}

// Query results for metrics: a small fixed set.
const (
	QueryOK          = "ok"
	QueryEmpty       = "empty"
	QueryError       = "error"
	QueryTimeout     = "timeout"
	QueryUnreachable = "unreachable"
)

// EngineOptions tunes an Engine.
type EngineOptions struct {
	// QueryTimeout bounds each query (default 10s).
	QueryTimeout time.Duration
	// CacheTTL keeps a result for identical queries arriving shortly after (default 10s; 0 uses
	// the default, negative disables). In-flight identical queries are always shared.
	CacheTTL time.Duration
	// MaxConcurrent bounds requests in flight to Prometheus across all runs (default 16).
	MaxConcurrent int
	// QueriesPerRequest is how many of a run's queries one request to Prometheus carries at most
	// (default 10; 1 sends each query alone). See batch.go.
	QueriesPerRequest int
	Observer          Observer
	// PodScope names the series label a playbook's pod scope selects on (vllm.pod_label).
	PodScope PodScope
	// MetricPrefix is the prefix the queries were renamed to (vllm.metric_prefix), named in the
	// notes of a no-data diagnosis; empty: vLLM's own.
	MetricPrefix string
	// Traces, when set, looks up the slowest traced requests of every run, beside the queries.
	Traces TraceFinder
	Logger zerolog.Logger
	Now    func() time.Time
}

// TraceFinder finds the slowest traced requests of an alert's scope (*traces.Client). Slowest
// always returns a report; its Error says why it holds no requests when the lookup failed.
type TraceFinder interface {
	Slowest(ctx context.Context, labels map[string]string, start, end time.Time) (*traces.Report, error)
	// Timeout is the lookup's own deadline, within the run's.
	Timeout() time.Duration
}

// Trace lookup results for metrics: a small fixed set.
const (
	TracesFound   = "found"   // slowest requests listed
	TracesNone    = "none"    // Jaeger answered, no traced request matched
	TracesFailed  = "failed"  // Jaeger unreachable or refused, or the service could not be named
	TracesTimeout = "timeout" // the run's deadline passed first
)

// TraceObserver, when the Observer implements it too, receives one observation per trace lookup.
type TraceObserver interface {
	ObserveTraceLookup(result string)
}

// defaultMaxConcurrent is EngineOptions.MaxConcurrent's default.
const defaultMaxConcurrent = 16

// Engine runs playbooks against Prometheus.
type Engine struct {
	q           Querier
	deadlineErr error
	opt         EngineOptions
	sf          singleflight.Group
	sem         chan struct{}
	mu          sync.Mutex
	cache       map[string]cached
}

type cached struct {
	res     result
	fetched time.Time
}

// NewEngine returns an Engine that queries q.
func NewEngine(q Querier, opt EngineOptions) *Engine {
	if opt.QueryTimeout <= 0 {
		opt.QueryTimeout = 10 * time.Second
	}
	if opt.CacheTTL == 0 {
		opt.CacheTTL = 10 * time.Second
	}
	if opt.MaxConcurrent <= 0 {
		opt.MaxConcurrent = defaultMaxConcurrent
	}
	switch {
	case opt.QueriesPerRequest == 0:
		opt.QueriesPerRequest = defaultQueriesPerRequest
	case opt.QueriesPerRequest < 0:
		opt.QueriesPerRequest = 1
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return &Engine{q: q, opt: opt, sem: make(chan struct{}, opt.MaxConcurrent), cache: map[string]cached{},
		deadlineErr: fmt.Errorf("query deadline of %s exceeded", opt.QueryTimeout)}
}

// result is one query's outcome.
type result struct {
	value   *float64
	problem string
	status  string // one of the Query* results
	series  int
	fleet   FleetValues // a fleet request's values by query and series (shared read-only between runs)
	parts   []result    // a request carrying several queries: each one's result (queryBatch)
	// transport: the request failed before Prometheus (or a proxy) answered: refused, reset,
	// DNS, TLS. Sending its queries again alone would fail alike.
	transport bool
	warnings  []string // the answer's warnings: it may be partial
}

// Run runs playbook p for an alert (or on-demand request) with these labels, evaluating at the
// current time. It always returns a diagnosis; the error is non-nil (an *UnavailableError,
// matching ErrPrometheusUnavailable) only when no evidence could be gathered at all.
func (e *Engine) Run(ctx context.Context, p *Playbook, labels map[string]string) (*Diagnosis, error) {
	return e.RunAt(ctx, p, labels, time.Time{})
}

// RunAt is Run as of time at: every query is evaluated at at (so `offset 1d` baselines are a day
// before it) and the diagnosis' EvaluatedAt is at. A zero at is the current time.
func (e *Engine) RunAt(ctx context.Context, p *Playbook, labels map[string]string, at time.Time) (*Diagnosis, error) {
	start := e.opt.Now()
	evalAt, cacheSuffix := start, ""
	if !at.IsZero() {
		// Results at a fixed past time are cached apart from the "now" results of the same query.
		evalAt, cacheSuffix = at, "\x00@"+at.UTC().Format(time.RFC3339Nano)
	}
	scope, used, missingScope := e.opt.PodScope.Matchers(p.Scope, labels)
	d := &Diagnosis{Playbook: p.Name, Scope: used, EvaluatedAt: evalAt}
	if slices.Contains(p.Scope, "pod") {
		if lbl, v, ok := e.opt.PodScope.Resolve(labels); ok && used[lbl] == v {
			d.PodLabel = lbl
			if lbl != "pod" {
				why := "vllm.pod_label"
				if lbl != e.opt.PodScope.label() {
					why = "the alert has no " + e.opt.PodScope.label() + " label"
				}
				d.Notes = append(d.Notes, fmt.Sprintf("pod selected by the %s label (%s=%q; %s)", lbl, lbl, v, why))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(used)) {
		if v := used[name]; hasReplacement(v) {
			d.Notes = append(d.Notes, fmt.Sprintf("label %s carries invalid UTF-8 (shown as \uFFFD): matched as a pattern, any characters in its place", name))
		}
	}
	if len(missingScope) > 0 && len(p.Scope) > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("scope labels missing from the alert: %s; the evidence covers every value of them",
			strings.Join(missingScope, ", ")))
	}

	tracesDone := e.lookupTraces(ctx, p, labels, evalAt)
	exprs := make([]string, len(p.Queries))
	var wg sync.WaitGroup
	var fleetExprs, fleetNotes []string
	var fleetVals FleetValues
	if p.Fleet != nil {
		fleetExprs = p.fleetExprs(labels, e.opt.PodScope.label())
		wg.Add(1)
		go func() {
			defer wg.Done()
			fleetVals, fleetNotes = e.queryFleet(ctx, p, fleetExprs, cacheSuffix, evalAt)
		}()
	}
	for i, q := range p.Queries {
		exprs[i] = expand(q.segs, scope, p.Window, p.Params)
	}
	results := e.queryAll(ctx, p, exprs, cacheSuffix, evalAt)
	for i, q := range p.Queries {
		if r := results[i]; r.value != nil && q.Quantile && atTopBucket(*r.value, q.SaturatesAt) {
			results[i].problem = fmt.Sprintf("pinned at the histogram's top bucket bound (%s): the real value is at least this high "+
				"(vLLM before #15202, April 2025, had lower top buckets); do not trust it as a measurement", FormatValue(r.value, q.Unit))
		}
		if r := results[i]; r.value != nil && math.IsInf(*r.value, 1) {
			problem := "value is +Inf"
			if q.Quantile {
				problem = "above the histogram's highest bucket: the quantile is saturated (older vLLM versions had lower top buckets), so the real value is higher than any bucket can show"
			}
			results[i] = result{status: QueryOK, problem: problem, warnings: r.warnings}
		}
	}
	wg.Wait()
	d.SlowestRequests = e.waitTraces(ctx, tracesDone, d)

	values := make(map[string]*float64, len(p.Queries))
	unreachable, reached, partial := 0, 0, 0
	var lastErr string
	for i, q := range p.Queries {
		r := results[i]
		values[q.Name] = r.value
		if r.status == QueryUnreachable {
			unreachable++
			lastErr = r.problem
		} else {
			reached++
		}
		if r.value == nil {
			d.Missing = append(d.Missing, q.Name)
		}
		if len(r.warnings) > 0 {
			partial++
		}
	}
	if partial > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("%d of %d queries came back with warnings: the answer may be partial "+
			"(a Thanos store or a Mimir/Cortex querier that did not answer); the verdict rests on what did", partial, len(p.Queries)))
	}
	for i, q := range p.Queries {
		if q.Hidden {
			continue
		}
		r := results[i]
		ev := Evidence{Name: q.Name, Title: q.Title, Value: r.value, Unit: q.Unit,
			Text: FormatValue(r.value, q.Unit), Query: exprs[i], Problem: r.problem, Warnings: r.warnings}
		if len(r.warnings) > 0 {
			warn := "partial answer, Prometheus warned: " + strings.Join(r.warnings, "; ")
			if ev.Problem == "" {
				ev.Problem = warn
			} else {
				ev.Problem += "; " + warn
			}
		}
		if q.Baseline != "" {
			ev.Baseline = values[q.Baseline]
			ev.BaselineText = FormatValue(ev.Baseline, q.Unit)
			if ev.Baseline == nil {
				ev.BaselineText = "no history for a baseline"
			}
		}
		d.Evidence = append(d.Evidence, ev)
	}

	// Fleet results do not decide whether Prometheus was reachable: they may come from the cache
	// of a sibling's diagnosis, and without the pod's own evidence there is no diagnosis.
	d.Notes = append(d.Notes, fleetNotes...)
	if p.Fleet != nil && fleetVals == nil {
		fleetVals = FleetValues{}
	}

	var runErr error
	if reached == 0 && unreachable > 0 {
		d.Error = "Prometheus could not be reached: " + lastErr
		runErr = &UnavailableError{Reason: lastErr}
		d.Verdict = VerdictInconclusive
		d.Title = "Prometheus unreachable: no evidence gathered"
		d.Summary = "The alert is real, but the responder could not query Prometheus, so it cannot say why. Check Prometheus, then re-run triage."
		d.Actions = []string{"Check that Prometheus is up and reachable from the responder", "Re-run triage once it is back"}
	} else {
		e.decide(p, d, values, fleetVals, fleetExprs, labels)
		d.record(values, fleetVals, labels)
		if d.Verdict == VerdictNoData {
			prefix := e.opt.MetricPrefix
			if prefix == "" {
				prefix = vllmnames.DefaultPrefix
			}
			d.Notes = append(d.Notes, fmt.Sprintf("queried vLLM metrics named %s* (vllm.metric_prefix; KServe and OpenShift AI rename them to kserve_vllm:*) "+
				"with pods by the %s label", prefix, e.opt.PodScope.label()))
		}
		if unreachable > 0 {
			d.Notes = append(d.Notes, fmt.Sprintf("%d of %d queries could not reach Prometheus: %s", unreachable, len(p.Queries), lastErr))
		}
	}
	for _, c := range p.Charts {
		spec := ChartSpec{Title: c.Title, Range: c.Range}
		for _, qn := range c.Queries {
			q := p.byName[qn]
			spec.Series = append(spec.Series, ChartSeries{Name: q.Name, Title: q.Title, Unit: q.Unit, Query: exprs[p.index[qn]]})
		}
		d.Charts = append(d.Charts, spec)
	}
	d.Duration = e.opt.Now().Sub(start)
	d.DurationMS = float64(d.Duration.Microseconds()) / 1000
	return d, runErr
}

// Decide evaluates the verdicts of p over already-known values (used by `playbooks test`).
func (p *Playbook) Decide(values map[string]*float64, labels map[string]string) *Diagnosis {
	return p.decideWith(values, nil, labels, nil)
}

// DecideFleet is Decide with recorded fleet values (query -> pod -> value).
func (p *Playbook) DecideFleet(values map[string]*float64, fleet FleetValues, labels map[string]string) *Diagnosis {
	return p.decideWith(values, fleet, labels, nil)
}

// decideWith is DecideFleet with what the traces showed (nil: no traces).
func (p *Playbook) decideWith(values map[string]*float64, fleet FleetValues, labels map[string]string, tr *traces.Report) *Diagnosis {
	d := &Diagnosis{Playbook: p.Name, Scope: labels, SlowestRequests: tr}
	for _, q := range p.Queries {
		if values[q.Name] == nil {
			d.Missing = append(d.Missing, q.Name)
		}
	}
	var exprs []string
	if p.Fleet != nil {
		exprs = p.fleetExprs(labels, "")
	}
	(&Engine{}).decide(p, d, values, fleet, exprs, labels)
	d.record(values, fleet, labels)
	return d
}

// lookupTraces starts the trace lookup of a run, concurrently with its queries, under its own
// deadline (and the run's). The channel yields the report, nil when traces are off.
func (e *Engine) lookupTraces(ctx context.Context, p *Playbook, labels map[string]string, at time.Time) <-chan *traces.Report {
	ch := make(chan *traces.Report, 1)
	if e.opt.Traces == nil {
		ch <- nil
		return ch
	}
	go func() {
		tctx, cancel := context.WithTimeoutCause(ctx, e.opt.Traces.Timeout(), errors.New("traces lookup deadline exceeded"))
		defer cancel()
		rep, err := e.opt.Traces.Slowest(tctx, labels, at.Add(-p.Window), at)
		if err != nil {
			e.opt.Logger.Warn().Err(err).Str("playbook", p.Name).Msg("slowest requests from traces not available")
		}
		ch <- rep
	}()
	return ch
}

// waitTraces waits for the lookup, never past the run's deadline, and notes why the diagnosis
// has no slowest requests when it has none.
func (e *Engine) waitTraces(ctx context.Context, ch <-chan *traces.Report, d *Diagnosis) *traces.Report {
	var rep *traces.Report
	result := TracesFound
	select {
	case rep = <-ch:
	case <-ctx.Done():
		d.Notes = append(d.Notes, "slowest requests from traces: not available, the diagnosis deadline passed first")
		rep = &traces.Report{Operation: traces.Operation, Requests: []traces.Request{}, Error: "the diagnosis deadline passed before Jaeger answered"}
		result = TracesTimeout
	}
	switch {
	case rep == nil:
		return nil
	case result == TracesTimeout:
	case rep.Error != "":
		d.Notes = append(d.Notes, "slowest requests from traces: not available, "+rep.Error)
		result = TracesFailed
	case len(rep.Requests) == 0:
		d.Notes = append(d.Notes, "slowest requests from traces: none found; "+rep.Summary)
		result = TracesNone
	}
	if o, ok := e.opt.Observer.(TraceObserver); ok {
		o.ObserveTraceLookup(result)
	}
	return rep
}

// decide runs the ordered verdicts: the first whose condition holds wins. A condition that needs
// a missing value is false (unless it tests for nil or uses ??), and the diagnosis says which
// rules could not be checked.
func (e *Engine) decide(p *Playbook, d *Diagnosis, values map[string]*float64, fleet FleetValues, fleetExprs []string, labels map[string]string) {
	env := exprEnv(p)
	for _, q := range p.Queries {
		if v := values[q.Name]; v != nil {
			env[q.Name] = *v
		} else {
			env[q.Name] = nil
		}
	}
	missing := map[string]bool{}
	for _, m := range d.Missing {
		missing[m] = true
	}
	if p.Fleet != nil {
		fd := evalFleet(p, fleet, labels, fleetExprs, e.opt.PodScope)
		d.Fleet = fd.view
		d.Notes = append(d.Notes, fd.notes...)
		merged := make(map[string]*float64, len(values)+len(fd.values))
		for k, v := range values {
			merged[k] = v
		}
		for k, v := range fd.values {
			merged[k] = v
			if v != nil {
				env[k] = *v
			} else {
				env[k] = nil
			}
		}
		for _, m := range fd.missing {
			missing[m] = true
		}
		values = merged
	}
	var chosen *Verdict
	for _, v := range p.Verdicts {
		ok, err := expr.Run(v.program, env)
		if err == nil && ok == true {
			chosen = v
			break
		}
		if err == nil {
			continue // decided false (a rule that handles nil itself is decided, not skipped)
		}
		var needs []string
		for _, n := range v.needs {
			if missing[n] {
				needs = append(needs, n)
			}
		}
		if len(needs) > 0 {
			d.Notes = append(d.Notes, fmt.Sprintf("rule %s not decidable: %s missing", v.ID, strings.Join(needs, ", ")))
		}
	}
	if chosen == nil {
		d.Verdict = VerdictInconclusive
		d.Title = "Inconclusive: no rule of the playbook explains this"
		d.Summary = "None of the playbook's verdicts matched the evidence."
		if tr := d.SlowestRequests; tr != nil && len(tr.Requests) > 0 {
			d.Summary = "Traces: " + tr.Summary + " " + d.Summary
		}
		d.OfferProfile = true
		return
	}
	data := templateData(p, values, labels, d.Fleet, d.SlowestRequests)
	d.Verdict = chosen.ID
	d.OfferProfile = chosen.OfferProfile
	d.Title = render(chosen.Title, data)
	d.Summary = render(chosen.Summary, data)
	d.Actions = make([]string, 0, len(chosen.Actions))
	for _, a := range chosen.Actions {
		d.Actions = append(d.Actions, render(a, data))
	}
}

func render(t *template.Template, data map[string]any) string {
	if t == nil {
		return ""
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return fmt.Sprintf("(template error: %v)", err)
	}
	return strings.TrimSpace(b.String())
}

// query runs one request with deduplication: an identical request in flight (at the same
// evaluation time: key is q plus keySuffix) is shared, and a result younger than CacheTTL is
// reused.
//
// kind, when set, reads the answer of a request carrying several queries (a queryBatch or a
// fleetRequest) instead of as one number.
func (e *Engine) query(ctx context.Context, q, keySuffix string, at time.Time, kind answerKind) result {
	key := q + keySuffix
	if kind != nil {
		key = kind.key() + key
	}
	if r, ok := e.cached(key); ok {
		return r
	}
	ch := e.sf.DoChan(key, func() (any, error) {
		// Detached from the first caller's cancellation: others may be waiting on it too.
		qctx, cancel := context.WithTimeoutCause(context.WithoutCancel(ctx), e.opt.QueryTimeout, e.deadlineErr)
		defer cancel()
		select {
		case e.sem <- struct{}{}:
		case <-qctx.Done():
			return result{status: QueryTimeout, problem: "timed out waiting for a query slot"}, nil
		}
		defer func() { <-e.sem }()
		t0 := time.Now()
		var v model.Value
		var warnings []string
		var err error
		if wq, ok := e.q.(WarningQuerier); ok {
			v, warnings, err = wq.QueryWithWarnings(qctx, q, at)
		} else {
			v, err = e.q.Query(qctx, q, at)
		}
		var r result
		if kind != nil && err == nil {
			r = kind.interpret(v)
		} else {
			r = interpret(v, err, qctx)
		}
		if err == nil && len(warnings) > 0 {
			r.warnings = warnings
		}
		if e.opt.Observer != nil {
			e.opt.Observer.ObserveQuery(time.Since(t0), r.status)
		}
		if (r.status == QueryOK || r.status == QueryEmpty) && len(r.warnings) == 0 {
			e.store(key, r)
		}
		e.opt.Logger.Debug().Str("query", q).Str("result", r.status).Dur("duration", time.Since(t0)).Msg("prometheus query")
		return r, nil
	})
	select {
	case res := <-ch:
		return res.Val.(result)
	case <-ctx.Done():
		return result{status: QueryTimeout, problem: "the diagnosis deadline passed before this query returned"}
	}
}

// cached is the result kept for key, when CacheTTL has not passed since it came.
func (e *Engine) cached(key string) (result, bool) {
	if e.opt.CacheTTL <= 0 {
		return result{}, false
	}
	e.mu.Lock()
	c, ok := e.cache[key]
	e.mu.Unlock()
	if !ok || e.opt.Now().Sub(c.fetched) >= e.opt.CacheTTL {
		return result{}, false
	}
	return c.res, true
}

// store keeps r for key (when the cache is on).
func (e *Engine) store(key string, r result) {
	if e.opt.CacheTTL <= 0 {
		return
	}
	e.mu.Lock()
	e.cache[key] = cached{res: r, fetched: e.opt.Now()}
	e.pruneLocked()
	e.mu.Unlock()
}

func (e *Engine) pruneLocked() {
	if len(e.cache) < 4096 {
		return
	}
	now := e.opt.Now()
	for k, c := range e.cache {
		if now.Sub(c.fetched) >= e.opt.CacheTTL {
			delete(e.cache, k)
		}
	}
}

// interpret turns a query answer into one number, or a reason there is none.
func interpret(v model.Value, err error, ctx context.Context) result {
	if err != nil {
		var apiErr *v1.Error
		switch {
		case errors.As(err, &apiErr) && (apiErr.Type == v1.ErrBadData || apiErr.Type == v1.ErrExec):
			return result{status: QueryError, problem: "query rejected by Prometheus: " + apiErr.Msg}
		case errors.As(err, &apiErr) && (apiErr.Type == v1.ErrTimeout || apiErr.Type == v1.ErrCanceled):
			return result{status: QueryTimeout, problem: "Prometheus timed out: " + apiErr.Msg}
		case ctx.Err() != nil:
			return result{status: QueryTimeout, problem: context.Cause(ctx).Error()}
		default:
			// Not even an API error: the request did not reach Prometheus (or a proxy) at all.
			return result{status: QueryUnreachable, problem: redactURL(err.Error()), transport: apiErr == nil}
		}
	}
	var samples []float64
	switch x := v.(type) {
	case model.Vector:
		for _, s := range x {
			samples = append(samples, float64(s.Value))
		}
	case *model.Scalar:
		samples = append(samples, float64(x.Value))
	case model.Matrix:
		return result{status: QueryError, problem: "query returns a range vector; a playbook query must return one number"}
	}
	if len(samples) == 0 {
		return result{status: QueryEmpty, problem: "no series"}
	}
	r := result{status: QueryOK, series: len(samples)}
	val := samples[0]
	if len(samples) > 1 {
		sort.Float64s(samples)
		val = samples[len(samples)-1]
		r.problem = fmt.Sprintf("%d series; showing the largest (aggregate the query to one series)", len(samples))
	}
	if math.IsNaN(val) {
		return result{status: QueryEmpty, problem: "no traffic in the window (0/0)"}
	}
	if math.IsInf(val, -1) {
		return result{status: QueryEmpty, problem: "value is -Inf"}
	}
	r.value = &val
	return r
}

// atTopBucket reports whether v is one of the top finite bucket bounds.
func atTopBucket(v float64, bounds []float64) bool {
	for _, b := range bounds {
		if math.Abs(v-b) <= 1e-9*math.Max(1, math.Abs(b)) {
			return true
		}
	}
	return false
}

// redactURL drops the query string from errors such as `Post "http://host/api/v1/query?...":
// dial tcp ...`, which may carry tokens or long PromQL.
func redactURL(msg string) string {
	if i := strings.Index(msg, "?"); i >= 0 {
		if j := strings.Index(msg[i:], "\""); j >= 0 {
			msg = msg[:i] + msg[i+j:]
		}
	}
	return msg
}
