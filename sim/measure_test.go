package sim

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// epoch is the virtual clock's origin in tests.
var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// vclock runs an engine in virtual time.
type vclock struct {
	t   *testing.T
	e   *Engine
	now time.Time

	// time integrals of the gauges since the last resetIntegrals, for Little's law
	waitingArea, runningArea, area float64
}

func (v *vclock) resetIntegrals() { v.waitingArea, v.runningArea, v.area = 0, 0, 0 }

func newVirtual(t *testing.T, cfg Config, scenario string) *vclock {
	t.Helper()
	if cfg.Start.IsZero() {
		cfg.Start = epoch
	}
	e, err := NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v := &vclock{t: t, e: e, now: epoch}
	if scenario != "" {
		v.switchTo(scenario)
	}
	return v
}

func (v *vclock) switchTo(name string) {
	v.t.Helper()
	sc, err := LookupScenario(name)
	if err != nil {
		v.t.Fatal(err)
	}
	v.e.SetScenario(sc, true, v.now)
}

// run advances virtual time by d, stepping the engine as the real driver would.
func (v *vclock) run(d time.Duration) {
	end := v.now.Add(d)
	for v.now.Before(end) {
		res := v.e.Step(v.now)
		st := v.e.Stats()
		d := res.Duration.Seconds()
		v.waitingArea += float64(st.Waiting) * d
		v.runningArea += float64(st.Running) * d
		v.area += d
		v.now = v.now.Add(res.Duration)
	}
}

// snapshot is the registry's state at one instant: plain values by series key
// (name plus sorted labels) and histograms by the same key.
type snapshot struct {
	at     time.Time
	values map[string]float64
	hists  map[string]*dto.Histogram
	types  map[string]dto.MetricType
	// preemptions the scheduler made (the counter only counts those that resumed)
	schedPreemptions int64
}

func seriesKey(name string, m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() {
		if l.GetName() == "model_name" || l.GetName() == "engine" {
			continue
		}
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return name
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

func (v *vclock) snap() snapshot {
	v.t.Helper()
	s := gatherSnapshot(v.t, v.e.Registry(), v.now)
	s.schedPreemptions = v.e.Stats().Preemptions
	return s
}

// gatherSnapshot reads a registry at at (an engine's or a gateway's) as a scrape would.
func gatherSnapshot(t *testing.T, g prometheus.Gatherer, at time.Time) snapshot {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	s := snapshot{at: at, values: map[string]float64{}, hists: map[string]*dto.Histogram{}, types: map[string]dto.MetricType{}}
	for _, mf := range mfs {
		s.types[mf.GetName()] = mf.GetType()
		for _, m := range mf.GetMetric() {
			k := seriesKey(mf.GetName(), m)
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				s.values[k] += m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				s.values[k] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				s.hists[k] = m.GetHistogram()
			}
		}
	}
	return s
}

// window holds what a Prometheus query over [a, b] would compute.
type window struct{ a, b snapshot }

func (w window) secs() float64 { return w.b.at.Sub(w.a.at).Seconds() }

func (w window) rate(name string) float64 { return (w.b.values[name] - w.a.values[name]) / w.secs() }

func (w window) count(name string) float64 {
	return float64(w.b.hists[name].GetSampleCount() - w.a.hists[name].GetSampleCount())
}

// mean is rate(_sum)/rate(_count); NaN without samples.
func (w window) mean(name string) float64 {
	n := w.count(name)
	if n == 0 {
		return math.NaN()
	}
	return (w.b.hists[name].GetSampleSum() - w.a.hists[name].GetSampleSum()) / n
}

// quantile is histogram_quantile over the window's bucket increases.
func (w window) quantile(q float64, name string) float64 {
	hb, ha := w.b.hists[name], w.a.hists[name]
	if hb == nil {
		return math.NaN()
	}
	total := float64(hb.GetSampleCount() - ha.GetSampleCount())
	if total == 0 {
		return math.NaN()
	}
	rank := q * total
	prevUpper, prevCount := 0.0, 0.0
	for i, b := range hb.GetBucket() {
		c := float64(b.GetCumulativeCount())
		if ha != nil {
			c -= float64(ha.GetBucket()[i].GetCumulativeCount())
		}
		if c >= rank {
			if c == prevCount {
				return b.GetUpperBound()
			}
			return prevUpper + (b.GetUpperBound()-prevUpper)*(rank-prevCount)/(c-prevCount)
		}
		prevUpper, prevCount = b.GetUpperBound(), c
	}
	return math.Inf(1) // in the +Inf bucket: histogram_quantile returns the top finite bound
}

// signature is a scenario's fingerprint over a window, as an SRE would read it.
type signature struct {
	Waiting, Running, KV        float64
	PreemptPerSec               float64 // counted (vllm:num_preemptions_total)
	SchedPreemptPerSec          float64 // made by the scheduler, counted or not yet
	QueueMean, PrefillMean      float64
	DecodeMean, E2EMean         float64
	TTFTp99, ITLMean, ITLp99    float64
	AbortShare, GenTokensPerSec float64 // AbortShare: first tokens without a finish, of first tokens
	FinishedPerSec              float64
}

func (s signature) String() string {
	return fmt.Sprintf("waiting=%.0f running=%.0f kv=%.3f preempt/s=%.2f (scheduler %.2f) queue=%.3fs prefill=%.3fs decode=%.2fs e2e=%.2fs ttft_p99=%.2fs itl_mean=%.1fms itl_p99=%.1fms abort_share=%.2f gen_tok/s=%.0f fin/s=%.2f",
		s.Waiting, s.Running, s.KV, s.PreemptPerSec, s.SchedPreemptPerSec, s.QueueMean, s.PrefillMean, s.DecodeMean, s.E2EMean,
		s.TTFTp99, s.ITLMean*1000, s.ITLp99*1000, s.AbortShare, s.GenTokensPerSec, s.FinishedPerSec)
}

func (w window) signature() signature {
	fin := 0.0
	for _, r := range []string{"stop", "length", "abort", "error", "repetition"} {
		fin += w.b.values["vllm:request_success_total{finished_reason="+r+"}"] - w.a.values["vllm:request_success_total{finished_reason="+r+"}"]
	}
	// Client aborts are never counted as finished (as in vLLM): the share is measured as the
	// requests that got a first token and never finished, corrected for those still running.
	started := w.count("vllm:time_to_first_token_seconds")
	unfinished := started - w.count("vllm:e2e_request_latency_seconds") - (w.b.values["vllm:num_requests_running"] - w.a.values["vllm:num_requests_running"])
	share := 0.0
	if started > 0 {
		share = min(1, max(0, unfinished)/started)
	}
	return signature{
		Waiting: w.b.values["vllm:num_requests_waiting"], Running: w.b.values["vllm:num_requests_running"],
		KV:                 w.b.values["vllm:kv_cache_usage_perc"],
		PreemptPerSec:      w.rate("vllm:num_preemptions_total"),
		SchedPreemptPerSec: float64(w.b.schedPreemptions-w.a.schedPreemptions) / w.secs(),
		QueueMean:          w.mean("vllm:request_queue_time_seconds"), PrefillMean: w.mean("vllm:request_prefill_time_seconds"),
		DecodeMean: w.mean("vllm:request_decode_time_seconds"), E2EMean: w.mean("vllm:e2e_request_latency_seconds"),
		TTFTp99: w.quantile(0.99, "vllm:time_to_first_token_seconds"),
		ITLMean: w.mean("vllm:inter_token_latency_seconds"), ITLp99: w.quantile(0.99, "vllm:inter_token_latency_seconds"),
		AbortShare: share, GenTokensPerSec: w.rate("vllm:generation_tokens_total"), FinishedPerSec: fin / w.secs(),
	}
}

// measure switches to scenario (from healthy steady state), runs settle, then
// measures over span; it returns the window's signature.
func measure(t *testing.T, cfg Config, scenario string, settle, span time.Duration) (signature, *vclock) {
	t.Helper()
	v := newVirtual(t, cfg, "healthy")
	v.run(30 * time.Second)
	v.switchTo(scenario)
	v.run(settle)
	a := v.snap()
	v.run(span)
	return window{a, v.snap()}.signature(), v
}
