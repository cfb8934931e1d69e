package evidence

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/singleflight"

	"github.com/vllm-responder/vllm-responder/facts"
	"github.com/vllm-responder/vllm-responder/internal/promql"
	"github.com/vllm-responder/vllm-responder/internal/vllmnames"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/traces"
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
	// MaxQueryBytes bounds the PromQL of one request (default DefaultMaxQueryBytes, 16 KiB):
	// queries travel in more requests rather than in a longer one, and a query longer than this
	// alone is not sent (its evidence says so). See batch.go.
	MaxQueryBytes int
	// Alternatives, when set, gives the recorded alternatives of a playbook's queries: cheap
	// forms over the shipped recording rules' series, sent instead of the raw form where the
	// rules record the scope (recorded.go). RecordedCheckTTL is how long the answer of a check
	// whether they do is kept (default 5m).
	Alternatives     AlternativesFunc
	RecordedCheckTTL time.Duration
	Observer         Observer
	// Naming is how vLLM's series are named and labelled (the vllm section): its pod label is
	// what a playbook's pod scope selects on, its prefix, the one the queries were renamed to, is
	// named in the notes of a no-data diagnosis. The zero value is vLLM's own names.
	Naming vllmnames.Naming
	// Traces, when set, looks up the slowest traced requests of every run, beside the queries.
	Traces TraceFinder
	// Facts are the sources of the facts a playbook reads beyond its queries (the list:
	// facts/sources.List), each looked up for the diagnosed pod when a rule on the way to the
	// verdict reads one of its facts (playbooks.Diagnosis.FactSources), and the playbook judged
	// again with them (facts.go). None: no fact is looked up, and every fact is unknown.
	Facts []facts.Source
	// Probe, when set, sends one 1-token request to the pod of an engine-stalled diagnosis and
	// shows what it found in the evidence (probe.enabled).
	Probe  StallProber
	Logger zerolog.Logger
	Now    func() time.Time
}

// defaultMaxConcurrent is EngineOptions.MaxConcurrent's default.
const defaultMaxConcurrent = 16

// Engine runs playbooks against Prometheus.
type Engine struct {
	q           Querier
	pods        playbooks.PodScope
	deadlineErr error
	opt         EngineOptions
	sf          singleflight.Group
	sem         chan struct{}
	mu          sync.Mutex
	cache       *expiring[result] // answers kept CacheTTL, for identical queries arriving shortly after
	presence    *expiring[bool]   // the recorded forms' checks, kept RecordedCheckTTL (recorded.go)
}

// maxKept bounds the answers (and the recorded forms' checks) an engine keeps: the oldest go
// first past it, whatever their age.
const maxKept = 4096

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
	if opt.RecordedCheckTTL <= 0 {
		opt.RecordedCheckTTL = defaultRecordedCheckTTL
	}
	if opt.MaxQueryBytes <= 0 {
		opt.MaxQueryBytes = DefaultMaxQueryBytes
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return &Engine{q: q, opt: opt, pods: playbooks.PodScope{Label: opt.Naming.PodLabel, Role: opt.Naming.RoleLabel}, sem: make(chan struct{}, opt.MaxConcurrent), cache: newExpiring[result](opt.CacheTTL, maxKept), presence: newExpiring[bool](opt.RecordedCheckTTL, maxKept),
		deadlineErr: fmt.Errorf("query deadline of %s exceeded", opt.QueryTimeout)}
}

// Run runs playbook p for an alert (or on-demand request) with these labels, evaluating at the
// current time. It always returns a diagnosis; the error is non-nil (an *UnavailableError,
// matching ErrPrometheusUnavailable) only when no evidence could be gathered at all.
func (e *Engine) Run(ctx context.Context, p *playbooks.Playbook, labels map[string]string) (*playbooks.Diagnosis, error) {
	return e.RunAt(ctx, p, labels, time.Time{})
}

// RunAt is Run as of time at: every query is evaluated at at (so `offset 1d` baselines are a day
// before it) and the diagnosis' EvaluatedAt is at. A zero at is the current time.
func (e *Engine) RunAt(ctx context.Context, p *playbooks.Playbook, labels map[string]string, at time.Time) (*playbooks.Diagnosis, error) {
	start := e.opt.Now()
	if d := e.labelTooLong(p, labels, cmp.Or(at, start)); d != nil {
		return d, nil
	}
	pl := e.plan(p, labels, start, at)
	e.useRecorded(ctx, &pl)
	g := e.gather(ctx, pl)
	d, err := e.judge(pl, g)
	// A rule on the way to the verdict reads facts not looked up yet (kube-state-metrics', the
	// LoRA series'): look up the first such source, and judge again with it, until the rules on
	// the way read none but those looked up (each source once).
	for err == nil && d.NeedsFacts() && e.lookupFacts(ctx, pl, &g, d.FactSources()) {
		d, err = e.judge(pl, g)
	}
	if err == nil && e.opt.Probe != nil && d.Verdict == playbooks.VerdictEngineStalled && at.IsZero() {
		e.probeStall(ctx, pl, d)
	}
	d.Duration = e.opt.Now().Sub(start)
	d.DurationMS = float64(d.Duration.Microseconds()) / 1000
	return d, err
}

// labelTooLong is the diagnosis of a run whose labels hold a value longer than
// promql.MaxLabelValue among those that reach a query (the playbook's scope, the labels that
// name a pod, the namespace), nil otherwise. No query is sent, and the diagnosis says why, so
// that the alert is still posted with it.
func (e *Engine) labelTooLong(p *playbooks.Playbook, labels map[string]string, at time.Time) *playbooks.Diagnosis {
	names := append(slices.Clone(p.Scope), e.pods.Name(), vllmnames.DefaultPodLabel, vllmnames.FallbackPodLabel, "namespace")
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		err := promql.CheckLabelValue(name, labels[name])
		if err == nil {
			continue
		}
		return &playbooks.Diagnosis{Playbook: p.Name, EvaluatedAt: at, Verdict: playbooks.VerdictInconclusive,
			Error: err.Error(),
			Title: "Label value too long: no query sent",
			Summary: fmt.Sprintf("The %s label is %d bytes long, more than the %d bytes the responder puts into a query "+
				"(no Kubernetes name is longer), so Prometheus was not queried and nothing is known of the cause.",
				name, len(labels[name]), promql.MaxLabelValue),
			Actions: []string{fmt.Sprintf("Check the alerting rule and the scrape config that set the %s label", name),
				"Run responder triage with the model or pod named"}}
	}
	return nil
}

// plan is what one run asks of Prometheus: p's queries expanded for the labels, evaluated at at.
type plan struct {
	p      *playbooks.Playbook
	labels map[string]string
	x      playbooks.Expansion
	at     time.Time
	// cacheSuffix keeps the answers at a fixed past time apart from the "now" answers of the
	// same query.
	cacheSuffix string
	// sharedFleet marks the fleet queries every playbook shares (those with a recorded
	// alternative: the stall history), which travel in a request of their own (recorded.go).
	sharedFleet []bool
}

func (e *Engine) plan(p *playbooks.Playbook, labels map[string]string, now, at time.Time) plan {
	pl := plan{p: p, labels: labels, x: p.ExpandAll(labels, e.pods), at: now}
	if !at.IsZero() {
		pl.at, pl.cacheSuffix = at, "\x00@"+at.UTC().Format(time.RFC3339Nano)
	}
	return pl
}

// gathered is what Prometheus and the traces answered a plan.
type gathered struct {
	results    []result // by p.Queries
	fleet      playbooks.FleetValues
	fleetNotes []string
	traces     *traces.Report
	tracesNote string
	looked     []string                 // the fact sources looked up (by name), made or not
	found      map[string]*facts.Result // what the lookups that were made found, by source
}

// gather sends the plan's queries, its fleet request and its trace lookup at once and waits for
// them (the lookup never past ctx's deadline).
func (e *Engine) gather(ctx context.Context, pl plan) gathered {
	tracesDone := e.lookupTraces(ctx, pl.p, pl.labels, pl.at)
	var g gathered
	var wg sync.WaitGroup
	if pl.p.Fleet != nil {
		wg.Go(func() {
			g.fleet, g.fleetNotes = e.queryFleet(ctx, pl.p, pl.x.Fleet, pl.sharedFleet, pl.cacheSuffix, pl.at)
		})
	}
	// First every query but the baselines' fallbacks, then those of them a baseline without its
	// first variant reads (the fleet request in flight meanwhile); none when nothing answered.
	g.results = e.queryAll(ctx, pl.p, pl.x.Queries, pl.cacheSuffix, pl.at, firstRound(pl.p))
	markSaturated(pl.p, g.results)
	if t := tallyOf(pl.p, g.results); t.reached > 0 {
		need := pl.p.Fallbacks(t.values, pl.p.PodScoped(pl.labels, e.pods))
		if slices.Contains(need, true) {
			second := e.queryAll(ctx, pl.p, pl.x.Queries, pl.cacheSuffix, pl.at, need)
			for i, yes := range need {
				if yes {
					g.results[i] = second[i]
				}
			}
			markSaturated(pl.p, g.results)
		}
	}
	wg.Wait()
	g.traces, g.tracesNote = e.waitTraces(ctx, tracesDone)
	if pl.p.Fleet != nil && g.fleet == nil {
		g.fleet = playbooks.FleetValues{}
	}
	return g
}

// firstRound marks the queries every run of p sends at once: all but the baselines' fallbacks
// (playbooks.Playbook.Fallbacks).
func firstRound(p *playbooks.Playbook) []bool {
	send := p.Fallbacks(nil, true)
	for i := range send {
		send[i] = !send[i]
	}
	return send
}

// markSaturated marks a quantile that histogram_quantile could only bound: pinned at a top
// bucket bound (kept, not trusted) or +Inf (missing).
func markSaturated(p *playbooks.Playbook, results []result) {
	for i, q := range p.Queries {
		if r := results[i]; r.value != nil && q.Quantile && atTopBucket(*r.value, q.SaturatesAt) {
			results[i].problem = fmt.Sprintf("pinned at the histogram's top bucket bound (%s): the real value is at least this high "+
				"(vLLM before #15202, April 2025, had lower top buckets); do not trust it as a measurement", playbooks.FormatValue(r.value, q.Unit))
		}
		if r := results[i]; r.value != nil && math.IsInf(*r.value, 1) {
			problem := "value is +Inf"
			if q.Quantile {
				problem = "above the histogram's highest bucket: the quantile is saturated (older vLLM versions had lower top buckets), so the real value is higher than any bucket can show"
			}
			results[i] = result{status: QueryOK, problem: problem, warnings: r.warnings}
		}
	}
}

// tally counts how the queries of a run fared.
type tally struct {
	values                        map[string]*float64
	failed                        map[string]bool // the queries whose request failed (Observation.Failed)
	unreachable, reached, partial int
	lastErr                       string // the last unreachable query's reason
}

func tallyOf(p *playbooks.Playbook, results []result) tally {
	t := tally{values: make(map[string]*float64, len(p.Queries))}
	for i, q := range p.Queries {
		r := results[i]
		t.values[q.Name] = r.value
		if r.notSent {
			continue // a baseline's fallback not needed: its first variant had a value
		}
		if r.value == nil && r.status != QueryEmpty {
			if t.failed == nil {
				t.failed = map[string]bool{}
			}
			t.failed[q.Name] = true
		}
		switch {
		case r.status == QueryUnreachable:
			t.unreachable++
			t.lastErr = r.problem
		default:
			t.reached++
		}
		if len(r.warnings) > 0 {
			t.partial++
		}
	}
	return t
}

// judge turns what was gathered into the diagnosis: the playbook's judgement over the values
// (playbooks.Playbook.Judge), or, when no query reached Prometheus, a degraded diagnosis and an
// *UnavailableError. Either way with the evidence, the notes on how it was gathered and the
// charts.
func (e *Engine) judge(pl plan, g gathered) (*playbooks.Diagnosis, error) {
	p, t := pl.p, tallyOf(pl.p, g.results)
	notes := slices.Clone(pl.x.Notes)
	if g.tracesNote != "" {
		notes = append(notes, g.tracesNote)
	}
	if t.partial > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d queries came back with warnings: the answer may be partial "+
			"(a Thanos store or a Mimir/Cortex querier that did not answer); the verdict rests on what did", t.partial, t.unreachable+t.reached))
	}
	// Fleet results do not decide whether Prometheus was reachable: they may come from the cache
	// of a sibling's diagnosis, and without the pod's own evidence there is no diagnosis.
	notes = append(notes, g.fleetNotes...)

	var d *playbooks.Diagnosis
	var err error
	if t.reached == 0 && t.unreachable > 0 {
		d, err = unreachable(p, t, pl.at), &UnavailableError{Reason: t.lastErr}
		d.Notes = notes
	} else {
		kf, factNotes := e.factsOf(g)
		notes = append(notes, factNotes...)
		g.traces = markUntraced(g.traces, t.values["untraced"])
		d = p.Judge(playbooks.Observation{Values: t.values, Failed: t.failed, Fleet: g.fleet, Labels: pl.labels, Traces: g.traces,
			PodScope: e.pods, At: pl.at, Facts: kf})
		d.Notes = append(notes, d.Notes...)
		if d.Verdict == playbooks.VerdictNoData {
			prefix := cmp.Or(e.opt.Naming.Prefix, vllmnames.DefaultPrefix)
			d.Notes = append(d.Notes, fmt.Sprintf("queried vLLM metrics named %s* (vllm.metric_prefix; KServe and OpenShift AI rename them to kserve_vllm:*) "+
				"with pods by the %s label", prefix, e.pods.Name()))
		}
		if t.unreachable > 0 {
			d.Notes = append(d.Notes, fmt.Sprintf("%d of %d queries could not reach Prometheus: %s", t.unreachable, t.unreachable+t.reached, t.lastErr))
		}
		sayRefused(d, p, g.results)
	}
	d.Scope, d.PodLabel, d.SlowestRequests = pl.x.Scope, pl.x.PodLabel, g.traces
	d.Evidence = evidenceOf(p, pl.x.Queries, g.results, t.values, p.PodScoped(pl.labels, e.pods))
	if d.Record != nil {
		d.Evidence = append(d.Evidence, e.factEvidence(g, d.Record.Facts)...)
	}
	d.Charts = charts(p, pl.x.Queries)
	return d, err
}

// sayRefused says which of p's queries the backend refused (results, by p.Queries): not missing
// evidence, whose absence a rule may read, but evidence the backend would not give. They leave
// d.Missing for d.Error (the diagnosis is degraded), which names them and the backend's reason.
func sayRefused(d *playbooks.Diagnosis, p *playbooks.Playbook, results []result) {
	var names []string
	why := ""
	for i, q := range p.Queries {
		if r := results[i]; r.refused {
			names = append(names, q.Name)
			why = cmp.Or(why, r.problem)
		}
	}
	if len(names) == 0 {
		return
	}
	d.Missing = slices.DeleteFunc(d.Missing, func(n string) bool { return slices.Contains(names, n) })
	d.Error = cmp.Or(d.Error, fmt.Sprintf("%d of %d queries (%s) were refused by the backend or too long to send, so what they show is unknown, not absent: %s",
		len(names), len(p.Queries), strings.Join(names, ", "), why))
}

// unreachable is the diagnosis when no query reached Prometheus: inconclusive, and saying so.
func unreachable(p *playbooks.Playbook, t tally, at time.Time) *playbooks.Diagnosis {
	d := &playbooks.Diagnosis{Playbook: p.Name, EvaluatedAt: at, Verdict: playbooks.VerdictInconclusive,
		Error:   "Prometheus could not be reached: " + t.lastErr,
		Title:   "Prometheus unreachable: no evidence gathered",
		Summary: "The alert is real, but the responder could not query Prometheus, so it cannot say why. Check Prometheus, then re-run triage.",
		Actions: []string{"Check that Prometheus is up and reachable from the responder", "Re-run triage once it is back"}}
	for _, q := range p.Queries {
		if t.values[q.Name] == nil && !q.Optional {
			d.Missing = append(d.Missing, q.Name)
		}
	}
	return d
}

// evidenceOf lists the number behind each shown query (exprs as sent, results as answered),
// with its baseline (and where it came from: playbooks.Playbook.Baseline) and why it is missing
// or not trusted.
func evidenceOf(p *playbooks.Playbook, exprs []string, results []result, values map[string]*float64, podScoped bool) []playbooks.Evidence {
	var out []playbooks.Evidence
	for i, q := range p.Queries {
		r := results[i]
		if q.Hidden || (q.Optional && r.value == nil && r.status == QueryEmpty) {
			continue
		}
		ev := playbooks.Evidence{Name: q.Name, Title: q.Title, Value: r.value, Unit: q.Unit,
			Text: playbooks.FormatValue(r.value, q.Unit), Query: exprs[i], Problem: r.problem, Warnings: r.warnings}
		if len(r.warnings) > 0 {
			warn := "partial answer, Prometheus warned: " + strings.Join(r.warnings, "; ")
			if ev.Problem == "" {
				ev.Problem = warn
			} else {
				ev.Problem += "; " + warn
			}
		}
		if q.Baseline != "" {
			b := p.Baseline(q.Baseline, values, podScoped)
			ev.Baseline, ev.BaselineFrom = b.Value, b.From
			ev.BaselineText = playbooks.FormatValue(ev.Baseline, q.Unit)
			switch {
			case ev.Baseline == nil:
				ev.BaselineText = "no history for a baseline"
			case b.From != "":
				ev.BaselineText += ", " + b.From
			}
		}
		out = append(out, ev)
	}
	return out
}

// charts are p's charts with their queries as sent (exprs, by p.Queries).
func charts(p *playbooks.Playbook, exprs []string) []playbooks.ChartSpec {
	byName := make(map[string]int, len(p.Queries))
	for i, q := range p.Queries {
		byName[q.Name] = i
	}
	var out []playbooks.ChartSpec
	for _, c := range p.Charts {
		spec := playbooks.ChartSpec{Title: c.Title, Range: c.Range}
		for _, qn := range c.Queries {
			i := byName[qn]
			q := p.Queries[i]
			spec.Series = append(spec.Series, playbooks.ChartSeries{Name: q.Name, Title: q.Title, Unit: q.Unit, Query: exprs[i]})
		}
		out = append(out, spec)
	}
	return out
}
