// Package metrics holds the responder's own Prometheus metrics. The registry is injected, every
// series is created up front (so it exists at 0), and label values come from small fixed sets.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vllm-responder/vllm-responder/evidence"
	"github.com/vllm-responder/vllm-responder/playbooks"
)

// Fixed label values.
var (
	WebhookResults      = []string{"accepted", "duplicate", "bad_request", "unauthorized", "too_large", "queue_full", "shutting_down", "internal_error"}
	NotificationResults = []string{"ok", "retried", "failed"}
	AlertOutcomes       = []string{"diagnosed", "duplicate", "unmatched", "resolved", "superseded", "invalid"}
	QueryResults        = []string{evidence.QueryOK, evidence.QueryEmpty, evidence.QueryError, evidence.QueryTimeout, evidence.QueryUnreachable}
	TraceResults        = []string{evidence.TracesFound, evidence.TracesNone, evidence.TracesFailed, evidence.TracesTimeout}
)

// Responder is the set of metrics of the webhook, the dispatcher and the playbook engine.
type Responder struct {
	WebhookRequests *prometheus.CounterVec
	AlertsReceived  *prometheus.CounterVec
	PlaybookRuns    *prometheus.CounterVec
	RunDuration     prometheus.Histogram
	QueryDuration   *prometheus.HistogramVec
	QueueDepth      prometheus.Gauge
	QueueCapacity   prometheus.Gauge
	Notifications   *prometheus.CounterVec
	TimeToDiagnosis prometheus.Histogram
	Coalesced       prometheus.Counter
	TraceLookups    *prometheus.CounterVec

	// webhookResults and alertOutcomes are the counters of the fixed label values, looked up
	// once: the webhook's answer path counts without hashing label values per request.
	webhookResults, alertOutcomes map[string]prometheus.Counter
}

// New registers the metrics on reg.
func New(reg prometheus.Registerer) *Responder {
	m := &Responder{
		WebhookRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vllm_responder_webhook_requests_total", Help: "Alertmanager webhook requests by result.",
		}, []string{"result"}),
		AlertsReceived: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vllm_responder_alerts_received_total", Help: "Alerts received from Alertmanager, by what became of them.",
		}, []string{"outcome"}),
		PlaybookRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vllm_responder_playbook_runs_total", Help: "Playbook runs by verdict.",
		}, []string{"verdict"}),
		RunDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "vllm_responder_playbook_run_duration_seconds", Help: "Time to run one playbook (all its queries).",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
		}),
		QueryDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "vllm_responder_prometheus_query_duration_seconds", Help: "Prometheus request latency by result (a request carries up to 10 of a playbook's queries, or all of its fleet queries).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}, []string{"result"}),
		QueueDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vllm_responder_queue_depth", Help: "Notifications accepted and waiting for a worker.",
		}),
		QueueCapacity: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vllm_responder_queue_capacity", Help: "Size of the work queue.",
		}),
		Notifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vllm_responder_notifications_total", Help: "Notifications sent, by result.",
		}, []string{"result"}),
		TimeToDiagnosis: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "vllm_responder_time_to_diagnosis_seconds", Help: "From webhook received to notifier called.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
		Coalesced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vllm_responder_notifications_coalesced_total",
			Help: "Alertmanager notifications merged into a queued one of the same group instead of queued again.",
		}),
	}
	m.TraceLookups = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vllm_responder_trace_lookups_total", Help: "Slowest-request lookups in Jaeger (traces:), by result.",
	}, []string{"result"})
	reg.MustRegister(m.WebhookRequests, m.AlertsReceived, m.PlaybookRuns, m.RunDuration, m.QueryDuration,
		m.QueueDepth, m.QueueCapacity, m.Notifications, m.TimeToDiagnosis, m.Coalesced, m.TraceLookups)
	for _, r := range TraceResults {
		m.TraceLookups.WithLabelValues(r)
	}
	m.webhookResults = make(map[string]prometheus.Counter, len(WebhookResults))
	for _, r := range WebhookResults {
		m.webhookResults[r] = m.WebhookRequests.WithLabelValues(r)
	}
	m.alertOutcomes = make(map[string]prometheus.Counter, len(AlertOutcomes))
	for _, o := range AlertOutcomes {
		m.alertOutcomes[o] = m.AlertsReceived.WithLabelValues(o)
	}
	for _, v := range playbooks.KnownVerdicts {
		m.PlaybookRuns.WithLabelValues(v)
	}
	for _, r := range QueryResults {
		m.QueryDuration.WithLabelValues(r)
	}
	for _, r := range NotificationResults {
		m.Notifications.WithLabelValues(r)
	}
	return m
}

// WebhookResult is the counter of webhook requests with result r (one of WebhookResults).
func (m *Responder) WebhookResult(r string) prometheus.Counter {
	if c, ok := m.webhookResults[r]; ok {
		return c
	}
	return m.WebhookRequests.WithLabelValues(r)
}

// AlertOutcome is the counter of alerts received with outcome o (one of AlertOutcomes).
func (m *Responder) AlertOutcome(o string) prometheus.Counter {
	if c, ok := m.alertOutcomes[o]; ok {
		return c
	}
	return m.AlertsReceived.WithLabelValues(o)
}

// ObserveTraceLookup implements evidence.TraceObserver.
func (m *Responder) ObserveTraceLookup(result string) { m.TraceLookups.WithLabelValues(result).Inc() }

// ObserveQuery implements evidence.Observer.
func (m *Responder) ObserveQuery(d time.Duration, result string) {
	m.QueryDuration.WithLabelValues(result).Observe(d.Seconds())
}

// MemoryStore is the in-memory store as its gauges read it (store.Memory).
type MemoryStore interface {
	Size() (bytes, entries int)
}

// RegisterMemoryStore registers the gauges of the in-memory store (used without redis.url): the
// bytes of keys and values it holds against its bound (store.MemoryMaxBytes), and how many.
func RegisterMemoryStore(reg prometheus.Registerer, s MemoryStore, maxBytes int) {
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "vllm_responder_store_memory_bytes", Help: "Bytes of keys and values the in-memory store holds (no redis.url).",
		}, func() float64 { b, _ := s.Size(); return float64(b) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "vllm_responder_store_memory_max_bytes", Help: "The in-memory store's bound: past it, the records written longest ago are dropped first.",
		}, func() float64 { return float64(maxBytes) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "vllm_responder_store_memory_entries", Help: "Records (thread state, dedup claims, delivery records) the in-memory store holds.",
		}, func() float64 { _, n := s.Size(); return float64(n) }),
	)
}
