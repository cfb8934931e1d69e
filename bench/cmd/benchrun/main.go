// Command benchrun is `make bench`: it measures the responder on loopback against real peers
// (Prometheus with recorded vLLM series, the recording fake Slack) and prints one table, also
// written to BENCHMARKS.md. Each comparison is measured side by side in the same run, so that
// the ratio holds on a noisy machine. Targets are informative: it exits 0 when it ran.
package main

import (
	"flag"
	"fmt"
	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"os"
	"runtime"
	"strings"
	"time"
)

type options struct {
	repo, responderBin, out string
	conns, rate, rounds     int
	ingestQueue             int
	closedRound, openRound  time.Duration
	ttdReps                 int
	benchtime               string
	only                    map[string]bool // empty: every section
	// promURL, when set, is a Prometheus already holding the recorded series (the cost and ttd
	// sections, for iterating on queries), whose data ends at promAt.
	promURL string
	promAt  time.Time
	// timeout bounds the whole run; each phase has its own cap within it (phaseCaps).
	timeout time.Duration
}

// phaseCaps bound each phase of a run; a phase that would end past the run's timeout is given
// what is left, and one that has less than its floor left is not run (the table says so).
var phaseCaps = map[string]struct{ cap, floor time.Duration }{
	"go":         {4 * time.Minute, 30 * time.Second},
	"prometheus": {3 * time.Minute, time.Minute},
	"cost":       {90 * time.Second, 10 * time.Second},
	"ttd":        {40 * time.Second, 5 * time.Second},
	"ttd-raw":    {30 * time.Second, 5 * time.Second},
	"ingest":     {3 * time.Minute, 40 * time.Second},
	"storm":      {2 * time.Minute, 30 * time.Second},
	"big":        {90 * time.Second, 20 * time.Second},
	"hostile":    {3 * time.Minute, 45 * time.Second},
}

// runs reports whether section s is to run (-only).
func (o options) runs(s string) bool { return len(o.only) == 0 || o.only[s] }

func main() {
	if len(os.Args) == 3 && os.Args[1] == "bare" {
		if err := runBare(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	var o options
	flag.StringVar(&o.repo, "repo", ".", "repository root (for the Go benchmarks)")
	flag.StringVar(&o.responderBin, "responder", "bin/responder", "responder binary (go build ./cmd/responder)")
	flag.StringVar(&o.out, "out", "BENCHMARKS.md", "where to write the table")
	flag.IntVar(&o.conns, "conns", 32, "closed-loop concurrent connections")
	flag.IntVar(&o.rate, "rate", 1000, "open-loop requests/s")
	flag.IntVar(&o.rounds, "rounds", 3, "alternating rounds per ingest measurement")
	flag.IntVar(&o.ingestQueue, "ingest-queue", 50000, "dispatch.queue_size of the ingest responder")
	flag.DurationVar(&o.closedRound, "closed-round", 3*time.Second, "length of one closed-loop round")
	flag.DurationVar(&o.openRound, "open-round", 4*time.Second, "length of one open-loop round")
	flag.IntVar(&o.ttdReps, "ttd-reps", 30, "time-to-diagnosis repetitions")
	flag.StringVar(&o.benchtime, "benchtime", "1s", "-benchtime of the Go benchmarks")
	only := flag.String("only", "", "comma-separated sections to run (go,cost,ttd,ingest,storm,big,hostile); BENCHMARKS.md is written only by a full run")
	flag.StringVar(&o.promURL, "prometheus", "", "a Prometheus already holding the recorded series (with -at, for -only cost)")
	flag.DurationVar(&o.timeout, "timeout", 18*time.Minute, "bound of the whole run (each phase has its own cap within it)")
	at := flag.Int64("at", 0, "Unix time at which -prometheus's recorded series end")
	flag.Parse()
	if *only != "" {
		o.only = map[string]bool{}
		for _, s := range strings.Split(*only, ",") {
			switch s = strings.TrimSpace(s); s {
			case "go", "cost", "ttd", "ingest", "storm", "big", "hostile":
				o.only[s] = true
			default:
				fmt.Fprintf(os.Stderr, "-only: unknown section %q (known: go, cost, ttd, ingest, storm, big, hostile)\n", s)
				os.Exit(2)
			}
		}
	}

	if *at != 0 {
		o.promAt = time.Unix(*at, 0)
	}
	if o.promURL != "" {
		if len(o.only) != 1 || !o.only["cost"] {
			fmt.Fprintln(os.Stderr, "-prometheus: only with -only cost")
			os.Exit(2)
		}
		printCost(runCost(o.promURL, o.promAt))
		return
	}
	loadBefore := loadavg()
	t := &benchTB{}
	defer t.runCleanups()
	began := time.Now()
	step := func(s string) { fmt.Fprintf(os.Stderr, "[%5.1fs] %s\n", time.Since(began).Seconds(), s) }
	var skipped []string
	// phase starts phase name: its deadline, or false (and the table says so) when the run has
	// less than the phase's floor left.
	phase := func(name, what string) (time.Time, bool) {
		c := phaseCaps[name]
		left := o.timeout - time.Since(began) - 15*time.Second // the table and the cleanups
		if left < c.floor {
			skipped = append(skipped, fmt.Sprintf("%s (%s left of the %s timeout)", what, left.Round(time.Second), o.timeout))
			step("skipped: " + what)
			return time.Time{}, false
		}
		step(what)
		return time.Now().Add(min(c.cap, left)), true
	}

	var (
		gb       []goBench
		gbErr    error
		cost     costReport
		ttd      ttdReport
		fleet    ttdReport
		fleetRaw ttdReport
		ing      ingestReport
		st       stormReport
		big      bigReport
		hs       hostileReport
	)
	if o.runs("go") {
		if deadline, ok := phase("go", "Go benchmarks"); ok {
			gb, gbErr = runGoBenchmarks(o.repo, o.benchtime, deadline)
		}
	}
	if o.runs("cost") || o.runs("ttd") || o.runs("ingest") || o.runs("storm") || o.runs("big") {
		if _, ok := phase("prometheus", "starting Prometheus with recorded vLLM series and the shipped recording rules"); !ok {
			t.Fatalf("no time left to start Prometheus")
		}
		prom, at := startRecordedPrometheus(t, o.repo)
		proxy := startCountingProxy(t, prom.URL)
		if o.runs("cost") {
			if deadline, ok := phase("cost", "where a diagnosis' time goes (each query alone, stats=all)"); ok {
				cost = runCostUntil(prom.URL, at, deadline)
			}
		}
		if o.runs("ttd") {
			one := map[string]string{"alertname": "VLLMTimeToFirstTokenP99High", "namespace": "llm", "pod": "vllm-capacity", "model_name": "llama", "severity": "critical"}
			fifty := map[string]string{"alertname": "VLLMTimeToFirstTokenP99High", "namespace": "llm", "pod": "fleet-0", "model_name": testenv.FleetModel, "severity": "critical"}
			if deadline, ok := phase("ttd", "time to diagnosis"); ok {
				ttd = benchTimeToDiagnosis(t, prom.URL, o.ttdReps, "ttft-p99-high", one, 1, true, true, deadline)
			}
			if deadline, ok := phase("ttd", "time to diagnosis, a model on 50 pods"); ok {
				fleet = benchTimeToDiagnosis(t, prom.URL, o.ttdReps, "ttft-p99-high on one pod of a 50-pod model", fifty, testenv.FleetPods, true, true, deadline)
			}
			if deadline, ok := phase("ttd-raw", "time to diagnosis, a model on 50 pods, without the recording rules"); ok {
				fleetRaw = benchTimeToDiagnosis(t, prom.URL, 5, "ttft-p99-high on one pod of a 50-pod model, stall history not recorded", fifty, testenv.FleetPods, false, false, deadline)
			}
		}
		if o.runs("ingest") {
			if deadline, ok := phase("ingest", "webhook ingest"); ok {
				// Straight to Prometheus: the counting proxy is for the storm, and its CPU (in
				// this process, beside the load generator) would be charged to the responder.
				ing = benchIngest(t, o.responderBin, prom.URL, prom.Proc.Pid(), o, deadline)
			}
		}
		if o.runs("storm") {
			if _, ok := phase("storm", "alert storm"); ok {
				st = benchStorm(t, o.responderBin, proxy)
			}
		}
		if o.runs("big") {
			if _, ok := phase("big", "one notification of 10,000 alerts"); ok {
				big = benchBigNotification(t, o.responderBin, proxy)
			}
		}
	}
	if o.runs("hostile") {
		if _, ok := phase("hostile", "hostile storm: what stays"); ok {
			hs = benchHostileStorm(t, o.responderBin)
		}
	}
	step("done")

	table := render(o, ing, cost, []ttdReport{ttd, fleet, fleetRaw}, skipped, st, big, hs, gb, gbErr, time.Since(began), loadBefore+" at start, "+loadavg()+" at end")
	fmt.Print(table)
	if len(o.only) > 0 {
		return // a partial run does not replace the full table
	}
	if err := os.WriteFile(o.out, []byte(table), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func render(o options, ing ingestReport, cost costReport, ttds []ttdReport, skipped []string, st stormReport, big bigReport, hs hostileReport, gb []goBench, gbErr error, took time.Duration, load string) string {
	cpu, cores := machine()
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# Benchmarks\n\n")
	w("Produced by `make bench` (scripts/bench.sh, bench/cmd/benchrun). Every figure below is from one run on one machine, on loopback;\n")
	w("comparisons are measured side by side in alternating rounds of the same run. Targets are informative (the bench exits 0).\n\n")
	w("| machine | |\n|---|---|\n")
	w("| CPU | %s |\n| cores | %d |\n| Go | %s |\n| date | %s |\n| run took | %s |\n| load average (1/5/15 min; the machine is shared) | %s |\n\n",
		cpu, cores, runtime.Version(), time.Now().UTC().Format("2006-01-02 15:04 MST"), took.Round(time.Second), load)

	w("| measurement | responder | reference | ratio / target | result |\n|---|---|---|---|---|\n")
	for _, m := range ing.modes {
		ratio := 0.0
		if m.bareTP.rps() > 0 {
			ratio = m.respTP.rps() / m.bareTP.rps()
		}
		w("| webhook ingest throughput, %s (closed loop, %d conns, %d×%s) | %.0f req/s (p50 %s, p99 %s); %d 503, %d errors | bare decode handler %.0f req/s (p50 %s, p99 %s) | %.2fx, target ≥ 0.80x | %s |\n",
			m.name, ing.conns, ing.rounds, ing.closedRound, m.respTP.rps(), ms(percentile(m.respTP.lat, .5)), ms(percentile(m.respTP.lat, .99)),
			m.respTP.unavailable, m.respTP.other,
			m.bareTP.rps(), ms(percentile(m.bareTP.lat, .5)), ms(percentile(m.bareTP.lat, .99)), ratio,
			passFail(ratio >= 0.8 && m.respTP.unavailable == 0 && m.respTP.other == 0))
		w("| webhook ingest, %s: what the responder did with the alerts above (warm-ups included) | %.0f diagnosed; %.0f superseded by a newer state before their diagnosis; %.0f notifications merged into a waiting one of their group | | | info |\n",
			m.name, m.diagnosed, m.superseded, m.coalesced)
		p99 := percentile(m.respLat.lat, .99)
		w("| webhook answer time at %d req/s, %s (open loop, %d×%s) | p50 %s, p99 %s, max %s (%d ok, %d 503, %d errors) | bare p50 %s, p99 %s | p99 < 5 ms | %s |\n",
			ing.rate, m.name, ing.rounds, ing.openRound, ms(percentile(m.respLat.lat, .5)), ms(p99), ms(percentile(m.respLat.lat, 1)),
			m.respLat.ok, m.respLat.unavailable, m.respLat.other,
			ms(percentile(m.bareLat.lat, .5)), ms(percentile(m.bareLat.lat, .99)),
			passFail(p99 < 5*time.Millisecond && len(m.respLat.lat) > 0 && m.respLat.unavailable == 0 && m.respLat.other == 0))
		w("| webhook answer time at %d req/s, %s: CPU during the responder's rounds (%s of wall time, 2 cores shared with the load generator) | responder %.2f s (%.0f%% of a core) | Prometheus %.2f s (%.0f%% of a core), answering the background diagnoses | | info |\n",
			ing.rate, m.name, m.latWall.Round(10*time.Millisecond), m.respCPU.Seconds(), 100*m.respCPU.Seconds()/max(m.latWall.Seconds(), 0.001),
			m.promCPU.Seconds(), 100*m.promCPU.Seconds()/max(m.latWall.Seconds(), 0.001))
	}
	if ing.cut {
		w("| webhook ingest: rounds not run | the phase's time ran out before them: the rows above hold fewer rounds | | | info |\n")
	}
	if d := ing.distinct; d != nil {
		ratio := 0.0
		if d.bareTP.rps() > 0 {
			ratio = d.respTP.rps() / d.bareTP.rps()
		}
		w("| webhook ingest throughput, %s (closed loop, %d conns, %d×%s, each round on a fresh responder) | %.0f req/s (p50 %s, p99 %s); %d 503, %d errors; %.0f alerts diagnosed during the rounds, %.0f notifications still queued after them | bare decode handler %.0f req/s (p50 %s, p99 %s) | %.2fx (no target: the diagnoses share the 2 cores) | info |\n",
			d.name, ing.conns, ing.rounds, ing.closedRound, d.respTP.rps(), ms(percentile(d.respTP.lat, .5)), ms(percentile(d.respTP.lat, .99)),
			d.respTP.unavailable, d.respTP.other, d.diagnosed, d.backlog,
			d.bareTP.rps(), ms(percentile(d.bareTP.lat, .5)), ms(percentile(d.bareTP.lat, .99)), ratio)
	}
	if o.runs("ttd") {
		for _, r := range ttds {
			if r.name == "" {
				continue
			}
			t50 := percentile(r.ttd, .5)
			how := "stall history from the recording rules"
			if !r.recorded {
				how = "stall history computed by each diagnosis (no recording rules)"
			}
			runs := fmt.Sprintf("%d runs", len(r.ttd))
			if r.cut {
				runs += fmt.Sprintf(" of %d (the phase's time ran out)", r.reps)
			}
			result := passFail(r.pass())
			target := fmt.Sprintf("p50 ≤ min(%d×the same requests of plain rates, %s) = %s", plainFactor, ms(maxP50), ms(r.target()))
			if !r.recorded {
				result, target = "info", "none (the rules are the fix)"
			}
			fallbacks := ""
			if r.fallbackRequests > 0 {
				fallbacks = fmt.Sprintf(" (%d of them baselines' fallbacks, in a second round of %d)", r.fallbackQueries, r.fallbackRequests)
			}
			if r.factRequests > 0 {
				fallbacks += fmt.Sprintf(", the fleet's %d in %d, and %d fact lookup(s) after a judgement", r.fleetQueries, r.fleetRequests, r.factRequests)
			} else {
				fallbacks += fmt.Sprintf(", the fleet's %d in %d", r.fleetQueries, r.fleetRequests)
			}
			w("| time to diagnosis, %s (%s; %d requests: its %d queries in %d%s; cache off, %s, verdict %s) | p50 %s, p90 %s | the same requests in the same rounds, every query a plain rate over the pods it reads (the alert's pod: `%s`; the fleet's: the model's pods), p50 %s; the model's plain rate alone p50 %s | %s; %.1fx the same requests of plain rates (%.1fx one plain rate) | %s |\n",
				r.name, how, r.queries, r.playbookQueries, r.queries-r.fleetRequests-r.factRequests, fallbacks, runs, r.verdict,
				ms(t50), ms(percentile(r.ttd, .9)), r.podQuery, ms(percentile(r.equiv, .5)), ms(percentile(r.plain, .5)), target,
				float64(t50)/float64(max(percentile(r.equiv, .5), 1)), float64(t50)/float64(max(percentile(r.plain, .5), 1)), result)
			if !r.refs {
				continue
			}
			w("| time to diagnosis, %s: references | | slowest request alone (%s) p50 %s; all %d requests alone one after the other p50 %s; all at once from bare goroutines p50 %s; the fleet's %d request(s) alone p50 %s, its %d queries alone one after the other p50 %s | responder / bare concurrent = %.2fx; responder / slowest = %.2fx | info |\n",
				r.name, r.slowestName, ms(percentile(r.slowest, .5)), r.queries, ms(percentile(r.sum, .5)), ms(percentile(r.concurrent, .5)),
				r.fleetRequests, ms(percentile(r.fleetReq, .5)), r.fleetQueries, ms(percentile(r.fleetSep, .5)),
				float64(t50)/float64(max(percentile(r.concurrent, .5), 1)), float64(t50)/float64(max(percentile(r.slowest, .5), 1)))
		}
	}
	if o.runs("storm") {
		w("| storm: alerts accepted / refused | %d / %d of %d in %d groups, %d posts in %s | | all accepted | %s |\n",
			st.accepted, st.refused, st.alerts, st.groups, st.posts, st.sendSpan.Round(10*time.Millisecond), passFail(st.accepted == st.alerts))
		w("| storm: Prometheus queries issued | %d at the proxy (%d distinct), %d in the responder's metric | %d distinct requests (%d without any sharing) | ≤ distinct pairs (cache_ttl %s) | %s |\n",
			st.queries, st.distinctSent, st.queriesMetric, st.distinctPairs, st.unshared, st.cacheTTL, passFail(st.queries <= st.distinctPairs && st.queries > 0))
		w("| storm: Slack parent posts | %d parents, %d thread replies, %d edits | %d groups of %d models: %d incidents | exactly %d (one per incident) | %s |\n",
			st.parents, st.replies, st.edits, st.groups, stormModels, stormModels, stormModels, passFail(st.parents == stormModels))
		w("| storm: peak RSS (VmHWM) | %.1f MB | | < 100 MB | %s |\n", float64(st.peakRSS)/1e6, passFail(st.peakRSS > 0 && st.peakRSS < 100e6))
		w("| storm: goroutines after the drain | %.0f (%.0f before peers closed idle connections) | %.0f idle before the storm | back to idle | %s |\n",
			st.afterG, st.beforeG, st.idleG, passFail(st.goroutinesBack))
		lost := fmt.Sprintf("%d not shown", st.lost)
		if st.lostExample != "" {
			lost += " (e.g. " + st.lostExample + ")"
		}
		drained := "drained in " + st.drainTime.Round(10*time.Millisecond).String()
		if !st.drained {
			drained = "not drained after " + st.drainTime.Round(10*time.Millisecond).String()
		}
		w("| storm: accepted alerts shown in their incident's thread (its parent as last edited, its replies) | %s; %s | | every one; drained | %s |\n",
			lost, drained, passFail(st.lost == 0 && st.drained))
	}

	if o.runs("big") {
		w("| one notification of %d alerts on distinct pods (%d KB body): peak RSS (VmHWM) | %.1f MB; HTTP %d, %d accepted; peak %.0f goroutines | | < 100 MB | %s |\n",
			big.alerts, big.bodyBytes/1000, float64(big.peakRSS)/1e6, big.status, big.accepted, big.peakG,
			passFail(big.peakRSS > 0 && big.peakRSS < 100e6 && big.status == 200 && big.accepted == big.alerts))
		w("| one notification of %d alerts: work | %d Prometheus queries (group-wide storm summary), %d parent post, %d replies; posted in %s | | one summary, bounded queries | %s |\n",
			big.alerts, big.queries, big.parents, big.replies, big.took.Round(10*time.Millisecond), passFail(big.drained && big.parents == 1 && big.queries < 100))
	}

	if o.runs("hostile") {
		renderHostile(w, hs)
	}

	for _, sk := range skipped {
		w("| not run: %s | | | | skipped |\n", sk)
	}
	if o.runs("cost") {
		w("%s", renderCost(cost))
	}
	w("\n| Go benchmark (-benchmem, -benchtime %s) | ns/op | B/op | allocs/op |\n|---|---:|---:|---:|\n", o.benchtime)
	if gbErr != nil {
		w("| failed: %s | | | |\n", strings.ReplaceAll(gbErr.Error(), "\n", " "))
	}
	for _, g := range gb {
		w("| %s %s | %s | %s | %s |\n", g.pkg, g.name, g.nsOp, g.bytesOp, g.allocsOp)
	}
	w("\nHow each figure is made:\n\n")
	w("- Ingest: `responder serve` (built by `go build ./cmd/responder`) as a subprocess with the console notifier to /dev/null, log level info,\n")
	w("  `dispatch.queue_size: %d` (sized for the bench: a 503 is counted apart, never as a success) and the real Prometheus (no proxy).\n", ing.queueSize)
	w("  Each request is the same 5-alert TTFT group (5 pods of one model) with new fingerprints and startsAt, so every alert is claimed\n")
	w("  as a new state and queued for diagnosis in the background. Alertmanager sends a group's whole state each time: while the group's\n")
	w("  job waits for a worker, a newer notification is merged into it, and a follow-up within `dispatch.group_cooldown` (1 s) of the\n")
	w("  group's last diagnosis waits for it. The 5 label sets repeat, so to the responder each request re-fires the same 5 alerts and\n")
	w("  nearly all are superseded by a newer state before a worker gets to them (the info row): these rows measure the answer path\n")
	w("  (auth, decode, dedup claims, merge) under a backlog. Distinct alerts, each its own diagnosis, are what the storm rows measure;\n")
	w("  the distinct-alerts row (information) sends each request as a group of its own on 5 pods of its own, so that every alert is\n")
	w("  diagnosed (13 queries to the real Prometheus, which has no series for these pods) while the answers are measured.\n")
	w("  The reference is a bare net/http handler in its own process that reads and decodes the same JSON into `dispatch.Message`.\n")
	w("  Same Go load generator for both; rounds alternate, and the responder's queue is drained between rounds. Each measurement starts\n")
	w("  on a fresh responder, so the open loop does not inherit the closed loop's 300,000+ in-memory dedup claims.\n")
	w("  The open-loop latency is measured from when each request was due, so a stall counts against every request it delays.\n")
	w("- Prometheus holds the recorded series (20 minutes of every pod, and a day-ago baseline) and the shipped recording rules'\n")
	w("  series over them (`deploy/prometheus/vllm-alerts.rules.yml`, backfilled with `promtool tsdb create-blocks-from rules`): the\n")
	w("  stall history (`engine:vllm_tokens_moved:timestamp`, `engine:vllm_stall_held:1m`) and the process start times with the model's\n")
	w("  labels (`target:process_start_time_seconds:vllm`), as a Prometheus that ran them holds them.\n")
	w("- Time to diagnosis: webhook received (the handler's timestamp) to notifier called, with `handlers.Webhook` → `dispatch` →\n")
	w("  `evidence.Engine` wired in-process as serve.go wires them, cache_ttl negative, against the real Prometheus with recorded series.\n")
	w("  The reference of query cost, timed in every run of the same rounds: the diagnosis' requests as the engine sends them (as many,\n")
	w("  as many queries in each, the playbook's and the fleet's at once, then the fallbacks, then the fact lookups), every query a\n")
	w("  plain rate over the pods it reads (the alert's pod for the playbook's requests, the model's pods for the fleet's): what a\n")
	w("  diagnosis would cost if each of its queries cost what a plain rate does (the model's plain rate\n")
	w("  alone is shown too; a diagnosis of dozens of queries cannot come within 5x of a single query's round trip). Targets: p50\n")
	w("  within %dx of that reference and under %s. Every request the diagnosis sends is also timed alone, one after the other (the slowest, and their\n", plainFactor, ms(maxP50))
	w("  sum), and all at once from bare goroutines (the references rows): the requests a run sent, as the engine sent them. The\n")
	w("  baselines' fallbacks (the model a day ago, the recent past) travel in a second round, only for a baseline whose first variant\n")
	w("  (the pod a day ago) has no value. The fleet's queries (one vector by pod and engine each)\n")
	w("  travel in two requests sent at once (Prometheus evaluates a request on one core), the stall history every playbook\n")
	w("  shares in one of its own where it is recorded (the same PromQL\n")
	w("  for every playbook of a model). The 50-pod rows diagnose fleet-0 of a model recorded on 50 pods (fleet-0 past the knee, its\n")
	w("  siblings quiet): the same number of requests as for a model on one pod; the last row computes the stall history in the\n")
	w("  query (no recording rules), as the responder does where the rules do not run. Each phase stops its repetitions at its cap.\n")
	w("- Where a diagnosis' time goes: each query of ttft-p99-high (and its fleet) sent alone with `stats=all`, raw and with the stall\n")
	w("  history recorded (`benchrun -only cost`; `-prometheus URL -at UNIX` measures a Prometheus of your own holding the series).\n")
	w("- Storm: 50 groups (5 alertnames × 10 models) of 20 pods; each group is posted twice as Alertmanager would as it grows (10 alerts,\n")
	w("  then all 20), 100 posts evenly within 10 s. Slack is the recording fake (`fakeslack`) with `post_interval: 10ms` and charts off.\n")
	w("  Queries are counted by a reverse proxy in front of Prometheus; distinct pairs are the expanded queries of every alert's playbook.\n")
	w("  Goroutines are read from the responder's /metrics; the peers close their idle keep-alive connections first (as the 90 s idle\n")
	w("  timeout would), since each idle pooled connection holds two goroutines. The responder opens one incident per model (issue 34,\n")
	w("  `incidents` at its defaults): one parent each, the other alerts of the model as lines of it (chat.update) or replies. An alert\n")
	w("  is shown when a line of its incident's thread (the parent as its last edit left it, then the replies) names it and its pod.\n")
	w("  Drained: every accepted notification diagnosed and every accepted alert shown (polled every 100 ms, at most 90 s), then\n")
	w("  the counts are read again 0.5 s later, so a late post (a second parent) still counts.\n")
	w("- One notification of 10,000 alerts: one `VLLMQueueDepthHigh` group of 10,000 pods of one model in a single webhook\n")
	w("  (`webhook.max_body_bytes` raised to 4 MiB for it), Slack the recording fake. Peak RSS is the responder's VmHWM over its whole\n")
	w("  life; goroutines are sampled from its /metrics every 50 ms until the summary is posted.\n")
	w("- Hostile storm: webhooks of distinct groups with 16 KiB label values, 32 at once, to a responder whose Prometheus is unreachable\n")
	w("  (quick diagnoses: what stays is measured, not query cost). The store's figures are its gauges\n")
	w("  (`vllm_responder_store_memory_bytes`, `_entries`, `_max_bytes`); RSS is VmRSS, the heap `go_memstats_heap_inuse_bytes`.\n")
	return b.String()
}
