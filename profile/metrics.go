package profile

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Results of a capture: the label values of vllm_responder_profile_captures_total and
// Report.Result.
const (
	ResultOK               = "ok"
	ResultBusy             = "busy"
	ResultCooldown         = "cooldown"
	ResultUnknownPod       = "unknown_pod"
	ResultDisabled         = "disabled"
	ResultStoreUnavailable = "store_unavailable"
	ResultStopTimeout      = "stop_timeout"
	ResultSilenceFailed    = "silence_failed"
	ResultError            = "error"
)

var allResults = []string{ResultOK, ResultBusy, ResultCooldown, ResultUnknownPod, ResultDisabled, ResultStoreUnavailable, ResultStopTimeout, ResultSilenceFailed, ResultError}

// Metrics are the profile package's own series.
type Metrics struct {
	captures     *prometheus.CounterVec
	contention   prometheus.Counter
	stopDuration prometheus.Histogram
	janitorStops *prometheus.CounterVec
	running      prometheus.Gauge
	silences     *prometheus.CounterVec
}

// Silence operations (label op of vllm_responder_profile_silence_ops_total).
const (
	silenceCreate = "create"
	silenceExtend = "extend"
	silenceEnd    = "end"
)

// NewMetrics creates the series (at 0) and registers them with reg; a nil reg registers nothing.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		captures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vllm_responder_profile_captures_total",
			Help: "Profile capture requests by result (refusals included).",
		}, []string{"result"}),
		contention: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vllm_responder_profile_lock_contention_total",
			Help: "Capture requests refused because another capture held the pod's lock.",
		}),
		stopDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "vllm_responder_profile_stop_duration_seconds",
			Help:    "Time POST /stop_profile took (the trace flush), timeouts included.",
			Buckets: []float64{0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 600, 900, 1800},
		}),
		janitorStops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vllm_responder_profile_janitor_stops_total",
			Help: "Profilers stopped by the janitor for captures past their deadline, by result.",
		}, []string{"result"}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vllm_responder_profile_captures_running",
			Help: "Captures this replica is running now.",
		}),
		silences: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vllm_responder_profile_silence_ops_total",
			Help: "Alertmanager calls on the silences held during captures, by operation (create, extend, end) and result (ok, error).",
		}, []string{"op", "result"}),
	}
	for _, op := range []string{silenceCreate, silenceExtend, silenceEnd} {
		m.silences.WithLabelValues(op, "ok")
		m.silences.WithLabelValues(op, "error")
	}
	for _, r := range allResults {
		m.captures.WithLabelValues(r)
	}
	m.janitorStops.WithLabelValues("ok")
	m.janitorStops.WithLabelValues("error")
	if reg != nil {
		reg.MustRegister(m.captures, m.contention, m.stopDuration, m.janitorStops, m.running, m.silences)
	}
	return m
}

func (m *Metrics) silenceOp(op string, err error) {
	r := "ok"
	if err != nil {
		r = "error"
	}
	m.silences.WithLabelValues(op, r).Inc()
}
