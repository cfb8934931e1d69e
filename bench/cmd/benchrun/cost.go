package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vllm-responder/vllm-responder/evidence"
	"github.com/vllm-responder/vllm-responder/facts/sources"
	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

// Where a diagnosis' time goes: every query of a playbook (and of its fleet) sent alone to the
// real Prometheus with stats=all, so that its own cost is read from Prometheus' timings and the
// samples it touched, not guessed from the whole diagnosis.

// queryCost is one query's cost, alone.
type queryCost struct {
	name string // "ttft_p99", "fleet stall"
	// fallback: a baseline's fallback, sent only where its first variant has no value
	// (playbooks.Playbook.Fallbacks).
	fallback bool
	chars    int // length of the PromQL as sent
	wall     time.Duration
	eval     time.Duration // Prometheus' execTotalTime (its own evaluation, queueing included)
	samples  int64         // totalQueryableSamples: samples the evaluation read
	peak     int64         // peakSamples: samples held at once
}

// promStats is the stats=all part of an answer.
type promStats struct {
	Timings struct {
		ExecTotalTime float64 `json:"execTotalTime"`
	} `json:"timings"`
	Samples struct {
		TotalQueryableSamples int64 `json:"totalQueryableSamples"`
		PeakSamples           int64 `json:"peakSamples"`
	} `json:"samples"`
}

// queryWithStats sends one instant query with stats=all at ts.
func queryWithStats(ctx context.Context, c *http.Client, promURL, q string, ts time.Time) (promStats, time.Duration, error) {
	form := url.Values{"query": {q}, "time": {strconv.FormatFloat(float64(ts.UnixMilli())/1000, 'f', 3, 64)}, "stats": {"all"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, promURL+"/api/v1/query", strings.NewReader(form.Encode()))
	if err != nil {
		return promStats{}, 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	t0 := time.Now()
	r, err := c.Do(req)
	if err != nil {
		return promStats{}, 0, err
	}
	defer r.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Stats promStats `json:"stats"`
		} `json:"data"`
	}
	err = json.NewDecoder(r.Body).Decode(&body)
	took := time.Since(t0)
	if err != nil {
		return promStats{}, took, err
	}
	if body.Status != "success" {
		return promStats{}, took, fmt.Errorf("%s", body.Error)
	}
	return body.Data.Stats, took, nil
}

// costOf measures each query of p (and of its fleet) for an alert with these labels, reps times
// alone one after the other (the median wall time; Prometheus' own timing of that run), at ts.
// Most costly first.
//
// With alts, the queries that have a recorded alternative are measured in their recorded form,
// and the alternatives' checks beside them.
func costOf(promURL string, p *playbooks.Playbook, labels map[string]string, ts time.Time, reps int, alts evidence.AlternativesFunc, deadline time.Time) ([]queryCost, error) {
	x := p.ExpandAll(labels, playbooks.PodScope{})
	var a evidence.Alternatives
	if alts != nil {
		a = alts(p, labels, playbooks.PodScope{})
	}
	type named struct {
		name, expr string
		fallback   bool
	}
	var qs []named
	checks := map[string]bool{}
	for i, q := range p.Queries {
		e := x.Queries[i]
		if i < len(a.Queries) && a.Queries[i].Expr != "" {
			e, checks[a.Queries[i].Present] = a.Queries[i].Expr, true
		}
		qs = append(qs, named{q.Name, e, q.Variant()})
	}
	if p.Fleet != nil {
		for i, q := range p.Fleet.Queries {
			name, e := "fleet "+q.Name, x.Fleet[i]
			if i < len(a.Fleet) && a.Fleet[i].Expr != "" {
				name, e, checks[a.Fleet[i].Present] = name+" (recorded)", a.Fleet[i].Expr, true
			}
			qs = append(qs, named{name, e, false})
		}
	}
	for c := range checks {
		qs = append(qs, named{"check of the recorded forms", c, false})
	}
	c := &http.Client{Timeout: 60 * time.Second}
	var out []queryCost
	for _, q := range qs {
		type run struct {
			wall time.Duration
			st   promStats
		}
		var runs []run
		for k := range reps {
			if k > 0 && time.Now().After(deadline) {
				break
			}
			st, took, err := queryWithStats(context.Background(), c, promURL, q.expr, ts)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", q.name, err)
			}
			runs = append(runs, run{took, st})
		}
		slices.SortFunc(runs, func(a, b run) int { return int(a.wall - b.wall) })
		m := runs[len(runs)/2]
		out = append(out, queryCost{name: q.name, fallback: q.fallback, chars: len(q.expr), wall: m.wall,
			eval:    time.Duration(m.st.Timings.ExecTotalTime * float64(time.Second)),
			samples: m.st.Samples.TotalQueryableSamples, peak: m.st.Samples.PeakSamples})
	}
	slices.SortStableFunc(out, func(a, b queryCost) int { return int(b.eval - a.eval) })
	return out, nil
}

// costReport is the cost of ttft-p99-high's queries on one pod and on one pod of a 50-pod model,
// raw and with the stall history recorded.
type costReport struct {
	onePod, fleet       []queryCost
	onePodRec, fleetRec []queryCost
	err                 error
}

func runCost(promURL string, at time.Time) costReport {
	return runCostUntil(promURL, at, time.Now().Add(10*time.Minute))
}

// runCostUntil is runCost with each query measured fewer times once deadline has passed.
func runCostUntil(promURL string, at time.Time, deadline time.Time) costReport {
	builtin, err := playbooks.Builtin(sources.Catalog())
	if err != nil {
		return costReport{err: err}
	}
	set, err := playbooks.NewSet(builtin, nil, playbooks.SetOptions{})
	if err != nil {
		return costReport{err: err}
	}
	pb, _ := set.Get("ttft-p99-high")
	var r costReport
	one := map[string]string{"alertname": "VLLMTimeToFirstTokenP99High", "namespace": "llm", "pod": "vllm-capacity", "model_name": "llama"}
	fifty := map[string]string{"alertname": "VLLMTimeToFirstTokenP99High", "namespace": "llm", "pod": "fleet-0", "model_name": testenv.FleetModel}
	alts := evidence.AlternativesFunc(evidence.Recorded)
	for _, c := range []struct {
		to     *[]queryCost
		labels map[string]string
		alts   evidence.AlternativesFunc
	}{{&r.onePod, one, nil}, {&r.fleet, fifty, nil}, {&r.onePodRec, one, alts}, {&r.fleetRec, fifty, alts}} {
		if *c.to, err = costOf(promURL, pb, c.labels, at, 3, c.alts, deadline); err != nil {
			return costReport{err: err}
		}
	}
	return r
}

func printCost(r costReport) {
	if r.err != nil {
		fmt.Println("cost:", r.err)
		return
	}
	for _, s := range []struct {
		name string
		qs   []queryCost
	}{{"one pod", r.onePod}, {"one pod of a 50-pod model", r.fleet},
		{"one pod, stall history recorded", r.onePodRec}, {"one pod of a 50-pod model, stall history recorded", r.fleetRec}} {
		var wall, eval time.Duration
		var samples int64
		for _, q := range s.qs {
			wall += q.wall
			eval += q.eval
			samples += q.samples
		}
		fmt.Printf("%s: %d queries, alone one after the other %s wall, %s evaluation, %d samples\n", s.name, len(s.qs), ms(wall), ms(eval), samples)
		for _, q := range s.qs {
			if q.fallback {
				q.name += " (fallback)"
			}
			fmt.Printf("  %-28s %6d chars  wall %9s  eval %9s  samples %9d  peak %7d\n", q.name, q.chars, ms(q.wall), ms(q.eval), q.samples, q.peak)
		}
	}
}

// renderCost is the cost table of BENCHMARKS.md: for each scope, raw and recorded, the queries
// one after the other in all, and the costliest of them.
func renderCost(r costReport) string {
	var b strings.Builder
	if r.err != nil {
		fmt.Fprintf(&b, "\nWhere a diagnosis' time goes: not measured (%s)\n", r.err)
		return b.String()
	}
	b.WriteString("\nWhere a diagnosis' time goes: ttft-p99-high's queries, each sent alone to the same Prometheus with `stats=all` (median of 3; " +
		"Prometheus' own evaluation time and the samples it read), the costliest five of each and all of them one after the other: " +
		"those every run sends, then the baselines' fallbacks (the model a day ago, the recent past), sent only for a baseline whose " +
		"first variant (the pod a day ago) has no value.\n\n")
	b.WriteString("| scope | stall history | the queries every run sends, one after the other (wall / Prometheus' evaluation; samples read) | the baselines' fallbacks | costliest queries (evaluation, length of the PromQL) |\n|---|---|---|---|---|\n")
	for _, s := range []struct {
		scope, how string
		qs         []queryCost
	}{{"one pod (a model of 10)", "computed by the query", r.onePod}, {"one pod of a model of 50", "computed by the query", r.fleet},
		{"one pod (a model of 10)", "recorded (shipped rules)", r.onePodRec}, {"one pod of a model of 50", "recorded (shipped rules)", r.fleetRec}} {
		var sum [2]struct {
			n          int
			wall, eval time.Duration
			samples    int64
		}
		var top []string
		for _, q := range s.qs {
			k := 0
			if q.fallback {
				k = 1
			}
			sum[k].n++
			sum[k].wall += q.wall
			sum[k].eval += q.eval
			sum[k].samples += q.samples
			if len(top) < 5 {
				name := q.name
				if q.fallback {
					name += " (fallback)"
				}
				top = append(top, fmt.Sprintf("%s %s (%d B)", name, ms(q.eval), q.chars))
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %d queries: %s / %s; %d samples | %d queries: %s / %s; %d samples | %s |\n", s.scope, s.how,
			sum[0].n, ms(sum[0].wall), ms(sum[0].eval), sum[0].samples, sum[1].n, ms(sum[1].wall), ms(sum[1].eval), sum[1].samples, strings.Join(top, "; "))
	}
	return b.String()
}
