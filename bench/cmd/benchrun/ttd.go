package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/config"
	"github.com/vllm-responder/vllm-responder/dispatch"
	"github.com/vllm-responder/vllm-responder/evidence"
	"github.com/vllm-responder/vllm-responder/facts/sources"
	"github.com/vllm-responder/vllm-responder/handlers"
	"github.com/vllm-responder/vllm-responder/metrics"
	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/store"
)

type ttdReport struct {
	name            string // what was diagnosed
	pods            int    // pods of the model
	reps            int
	queries         int // requests to Prometheus per diagnosis
	playbookQueries int // the playbook's own queries, carried by all but the fleet's
	fleetQueries    int // fleet queries, carried by the last fleetRequests
	fleetRequests   int
	// fallbackRequests carry the baselines' fallbacks a run sent (fallbackQueries of them): a
	// second round, where a baseline's first variant had no value.
	fallbackRequests, fallbackQueries int
	// factRequests look up the facts a rule on the way to the verdict reads (the LoRA adapters,
	// kube-state-metrics), after a judgement.
	factRequests int
	ttd, slowest []time.Duration // sorted
	// sum: all queries alone one after the other; concurrent: all at once from bare goroutines.
	sum, concurrent []time.Duration
	// fleetReq: the fleet request alone; fleetSep: its queries alone one after the other.
	fleetReq, fleetSep []time.Duration
	// plain: a plain rate over the same pods (plainQuery), alone.
	plain      []time.Duration
	plainQuery string
	// equiv: the reference of query cost, the diagnosis' requests as the engine sends them (as
	// many, as many queries in each, in the same rounds) with every query a plain rate over the
	// pods it reads (podQuery over the alert's pod for the playbook's own requests, plainQuery
	// over the model's pods for the fleet's): what the diagnosis would cost if each of its
	// queries cost what a plain rate over the same pods does.
	equiv       []time.Duration
	podQuery    string
	recorded    bool // the stall history read from the recording rules
	slowestName string
	verdict     string
	errors      int
	cut         bool // the phase's deadline ended the repetitions early
	refs        bool // the references were timed
}

// Targets of time to diagnosis (issue 37): within plainFactor of the reference of query cost (its
// requests, each query a plain rate over the same pods), and under maxP50 at the median.
const (
	plainFactor = 5
	maxP50      = 50 * time.Millisecond
)

// target is the p50 a diagnosis must stay under: plainFactor times the reference's p50, and
// maxP50.
func (r ttdReport) target() time.Duration {
	return min(time.Duration(plainFactor*float64(percentile(r.equiv, .5))), maxP50)
}

func (r ttdReport) pass() bool {
	return len(r.ttd) > 0 && r.errors == 0 && percentile(r.ttd, .5) <= r.target()
}

// benchTimeToDiagnosis times webhook received -> notifier called for the TTFT playbook against
// the real Prometheus, with the result cache off, and in each repetition times every query of the
// playbook alone (one after the other) to find the slowest. The responder's own packages are
// wired as serve.go wires them (handlers.Webhook -> dispatch -> evidence.Engine on client_golang),
// in this process, with a notifier that records the moment it is called.
//
// labels are the alert's; pods is how many pods its model has in the recorded data (the fleet
// queries return one sample per pod). recorded reads the stall history from the recording rules
// (as serve does where they run); without, its raw form. The repetitions stop at reps or at
// deadline, whichever comes first.
//
// refs times every request alone, the fleet's requests against their queries and all at once
// from bare goroutines, in every repetition (the references rows); without, only the diagnosis
// and the plain rate (a raw stall history costs seconds a request).
func benchTimeToDiagnosis(t *benchTB, promURL string, reps int, name string, labels map[string]string, pods int, recorded, refs bool, deadline time.Time) ttdReport {
	// The same transport as serve's (an idle pool as large as the queries in flight), for the
	// engine and for the bare references alike.
	client, err := api.NewClient(api.Config{Address: promURL, RoundTripper: evidence.PrometheusTransport(16)})
	if err != nil {
		t.Fatalf("%v", err)
	}
	promAPI := v1.NewAPI(client)
	builtin, err := playbooks.Builtin(sources.Catalog())
	if err != nil {
		t.Fatalf("%v", err)
	}
	set, err := playbooks.NewSet(builtin, nil, playbooks.SetOptions{})
	if err != nil {
		t.Fatalf("%v", err)
	}
	pb, _ := set.Get("ttft-p99-high")
	m := metrics.New(prometheus.NewRegistry())
	opt := evidence.EngineOptions{QueryTimeout: 10 * time.Second, CacheTTL: -1, MaxConcurrent: 16, Observer: m, Facts: sources.List(sources.Config{}), Logger: zerolog.Nop()}
	var alts evidence.AlternativesFunc
	if recorded {
		alts = evidence.Recorded
		opt.Alternatives = alts
	}
	sent := &sentQueries{WarningQuerier: evidence.PrometheusQuerier{API: promAPI}}
	engine := evidence.NewEngine(sent, opt)

	type called struct {
		took    time.Duration
		verdict string
	}
	got := make(chan called, 1)
	notifier := notify.NotifierFunc(func(ctx context.Context, n *notify.Notification) (bool, error) {
		took := time.Since(n.ReceivedAt)
		v := ""
		if len(n.Items) > 0 && n.Items[0].Diagnosis != nil {
			v = n.Items[0].Diagnosis.Verdict
		}
		got <- called{took, v}
		return false, nil
	})
	def := config.Default().Dispatch
	d := dispatch.New(set, engine, notifier, store.NewMemory(), dispatch.Options{Workers: def.Workers, QueueSize: def.QueueSize,
		GroupCooldown: def.GroupCooldown, Logger: zerolog.Nop(), Metrics: m})
	d.Start()
	defer func() { _ = d.Shutdown(context.Background()) }()
	srv := httptest.NewServer(&handlers.Webhook{Acceptor: d, Metrics: m, Logger: zerolog.Nop()})
	defer srv.Close()

	rep := ttdReport{name: name, pods: pods, reps: reps, recorded: recorded,
		plainQuery: fmt.Sprintf(`sum by (pod) (rate(vllm:generation_tokens_total{namespace=%q,model_name=%q}[5m]))`, labels["namespace"], labels["model_name"]),
		podQuery:   fmt.Sprintf(`sum by (pod) (rate(vllm:generation_tokens_total{namespace=%q,model_name=%q,pod=%q}[5m]))`, labels["namespace"], labels["model_name"], labels["pod"])}
	labelJSON, err := json.Marshal(labels)
	if err != nil {
		t.Fatalf("%v", err)
	}
	c := newLoadClient(4)
	defer c.CloseIdleConnections()
	// diagnose posts the alert as run r's incident (its own group: a group's follow-ups within
	// the cooldown of its last diagnosis wait for it by design, which is not what this measures)
	// and waits for the notification.
	diagnose := func(r int) called {
		body := fmt.Sprintf(`{"version":"4","groupKey":"ttd-%s-%d","status":"firing","receiver":"r","groupLabels":{},"commonLabels":{},"commonAnnotations":{},"externalURL":"",
"alerts":[{"status":"firing","labels":%s,
"annotations":{},"startsAt":"2026-11-29T10:00:%02d.%03dZ","endsAt":"0001-01-01T00:00:00Z","generatorURL":"","fingerprint":"ttd%d"}]}`, labels["pod"], r, labelJSON, r%60, r, r)
		code, err := post(c, srv.URL, []byte(body))
		if err != nil || code != 200 {
			t.Fatalf("time to diagnosis: webhook answered %d, %v", code, err)
		}
		select {
		case res := <-got:
			return res
		case <-time.After(30 * time.Second):
			t.Fatalf("time to diagnosis: no notification within 30s")
		}
		return called{}
	}
	// The requests the engine sends, as it sent them in a run whose check of the recorded forms
	// was answered (it is kept for minutes): its queries a few to a request, then the
	// baselines' fallbacks where a baseline's first variant has no value, beside the fleet's (the
	// stall history, which every playbook shares, in a request of its own where it is recorded).
	diagnose(reps + 100) // runs of their own numbers: every run is a new group
	sent.take()
	diagnose(reps + 101)
	exprs := sent.take()
	first := evidence.RecordedRequests(withoutFleet(pb), labels, 0, alts)
	var fleetReqs []string
	if pb.Fleet != nil {
		fleetReqs = evidence.RecordedRequests(pb, labels, 0, alts)[len(first):]
	}
	x := pb.ExpandAll(labels, playbooks.PodScope{})
	fallback := func(e string) bool {
		for i, q := range pb.Queries {
			if q.Variant() && strings.Contains(e, x.Queries[i]) {
				return true
			}
		}
		return false
	}
	names := make([]string, len(exprs))
	var eq plainEquivalent // the reference of query cost: the same requests, of plain rates
	for i, e := range exprs {
		n := max(1, strings.Count(e, `"vllm_responder_signal"`))
		switch {
		case slices.Contains(first, e):
			names[i] = fmt.Sprintf("request %d of the playbook's queries", slices.Index(first, e)+1)
			eq.first = append(eq.first, n)
		case slices.Contains(fleetReqs, e):
			names[i] = fmt.Sprintf("fleet request %d of %d", slices.Index(fleetReqs, e)+1, len(fleetReqs))
			eq.fleet = append(eq.fleet, n)
		case fallback(e):
			names[i] = "the baselines' fallbacks"
			rep.fallbackRequests++
			rep.fallbackQueries += n
			eq.second = append(eq.second, n)
		default:
			names[i] = "a fact lookup"
			rep.factRequests++
			eq.after = append(eq.after, n)
		}
	}
	nFleet := len(fleetReqs)
	rep.playbookQueries = rep.fallbackQueries
	for _, q := range pb.Queries {
		if !q.Variant() {
			rep.playbookQueries++
		}
	}
	var fleetParts []string // the fleet's queries one by one: what the fleet requests replaced
	if pb.Fleet != nil {
		rep.fleetQueries = len(pb.Fleet.Queries)
		var a evidence.Alternatives
		if alts != nil {
			a = alts(pb, labels, playbooks.PodScope{})
		}
		for i, q := range pb.Fleet.Queries {
			e := pb.ExpandFleet(q, labels)
			if i < len(a.Fleet) && a.Fleet[i].Expr != "" {
				e = a.Fleet[i].Expr
			}
			fleetParts = append(fleetParts, e)
		}
	}
	rep.fleetRequests = nFleet
	rep.queries = len(exprs)
	slowestBy := map[string]int{}
	var mu sync.Mutex
	warm := 2 // warm-up repetitions
	if !refs {
		warm = 1
	}
	rep.refs = refs
	for r := range reps + warm {
		if r >= warm && time.Now().After(deadline) {
			rep.cut = true
			break
		}
		// Every query alone, one after the other: the slowest is the floor of a concurrent run.
		var slowest, sum, fleetReq, fleetSep, conc time.Duration
		name := ""
		for i, e := range exprs {
			if !refs {
				break
			}
			t0 := time.Now()
			_, _, _, err := promAPI.Query(context.Background(), e, time.Now())
			took := time.Since(t0)
			sum += took
			if took > slowest {
				slowest, name = took, names[i]
			}
			if err != nil {
				rep.errors++
			}
		}
		// The reference of query cost: a plain rate over the same pods.
		t0 := time.Now()
		if _, _, _, err := promAPI.Query(context.Background(), rep.plainQuery, time.Now()); err != nil {
			rep.errors++
		}
		plain := time.Since(t0)
		// The reference of query cost: the diagnosis' requests of plain rates, in its rounds.
		t0 = time.Now()
		rep.errors += eq.send(promAPI, rep.podQuery, rep.plainQuery)
		equiv := time.Since(t0)
		// The fleet requests against their queries sent one after the other.
		if refs && len(fleetParts) > 0 {
			t0 := time.Now()
			for _, e := range fleetReqs {
				_, _, _, _ = promAPI.Query(context.Background(), e, time.Now())
			}
			fleetReq = time.Since(t0)
			t0 = time.Now()
			for _, e := range fleetParts {
				_, _, _, _ = promAPI.Query(context.Background(), e, time.Now())
			}
			fleetSep = time.Since(t0)
		}
		// The same queries all at once from bare goroutines: the floor of concurrency on this machine.
		if refs {
			var wg sync.WaitGroup
			c0 := time.Now()
			for _, e := range exprs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, _, _, _ = promAPI.Query(context.Background(), e, time.Now())
				}()
			}
			wg.Wait()
			conc = time.Since(c0)
		}
		res := diagnose(r)
		if n := len(sent.take()); n != len(exprs) {
			t.Fatalf("time to diagnosis: run %d sent %d requests, the first %d", r, n, len(exprs))
		}
		if r < warm {
			continue
		}
		mu.Lock()
		rep.ttd = append(rep.ttd, res.took)
		rep.slowest = append(rep.slowest, slowest)
		rep.sum = append(rep.sum, sum)
		rep.concurrent = append(rep.concurrent, conc)
		rep.fleetReq = append(rep.fleetReq, fleetReq)
		rep.fleetSep = append(rep.fleetSep, fleetSep)
		rep.plain = append(rep.plain, plain)
		rep.equiv = append(rep.equiv, equiv)
		rep.verdict = res.verdict
		slowestBy[name]++
		mu.Unlock()
	}
	sortDurations(rep.ttd)
	sortDurations(rep.slowest)
	sortDurations(rep.sum)
	sortDurations(rep.concurrent)
	sortDurations(rep.fleetReq)
	sortDurations(rep.fleetSep)
	sortDurations(rep.plain)
	sortDurations(rep.equiv)
	best := 0
	for n, k := range slowestBy {
		if k > best {
			best, rep.slowestName = k, n
		}
	}
	rep.slowestName = strings.TrimSpace(rep.slowestName)
	return rep
}

// plainEquivalent is the shape of a diagnosis' requests, by round, each request the number of
// queries it carries: the playbook's first requests and the fleet's, sent at once; the baselines'
// fallbacks, sent when the first requests answered (while the fleet's are still in flight); the
// fact lookups after every answer.
type plainEquivalent struct {
	first, fleet, second, after []int
}

// send sends the shape's requests in its rounds, every query of each a copy of pod (the fleet's:
// of fleet), labelled apart as the engine labels the queries of a request, so that Prometheus
// evaluates each, and returns how many requests failed.
func (eq plainEquivalent) send(promAPI v1.API, pod, fleet string) int {
	var failed atomic.Int32
	request := func(n int, q string) {
		names, exprs := make([]string, n), make([]string, n)
		for i := range n {
			names[i], exprs[i] = fmt.Sprintf("q%d", i), q
		}
		if _, _, _, err := promAPI.Query(context.Background(), evidence.FoldQueries(names, exprs), time.Now()); err != nil {
			failed.Add(1)
		}
	}
	all := func(wg *sync.WaitGroup, reqs []int, q string) {
		for _, n := range reqs {
			wg.Go(func() { request(n, q) })
		}
	}
	var fleetWG, playbook sync.WaitGroup
	all(&fleetWG, eq.fleet, fleet)
	all(&playbook, eq.first, pod)
	playbook.Wait()
	all(&playbook, eq.second, pod)
	playbook.Wait()
	fleetWG.Wait()
	for _, n := range eq.after {
		request(n, pod)
	}
	return int(failed.Load())
}

// sentQueries is a querier that keeps the PromQL of every request it sends, until taken.
type sentQueries struct {
	evidence.WarningQuerier
	mu   sync.Mutex
	sent []string
}

func (s *sentQueries) Query(ctx context.Context, q string, ts time.Time) (model.Value, error) {
	v, _, err := s.QueryWithWarnings(ctx, q, ts)
	return v, err
}

func (s *sentQueries) QueryWithWarnings(ctx context.Context, q string, ts time.Time) (model.Value, []string, error) {
	s.mu.Lock()
	s.sent = append(s.sent, q)
	s.mu.Unlock()
	return s.WarningQuerier.QueryWithWarnings(ctx, q, ts)
}

// take is what was sent since the last take.
func (s *sentQueries) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.sent
	s.sent = nil
	return out
}

// withoutFleet is p without its fleet section: the requests of its own queries alone.
func withoutFleet(p *playbooks.Playbook) *playbooks.Playbook {
	q := *p
	q.Fleet = nil
	return &q
}
