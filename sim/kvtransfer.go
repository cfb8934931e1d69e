package sim

import (
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// A KV consumer: the decode side of disaggregated prefill/decode serving (vLLM's
// --kv-transfer-config with kv_role kv_consumer and the NixlConnector). Its requests arrive from
// the P/D proxy after the prefill side computed their prompt; the scheduler allocates their
// blocks and loads the prompt's KV asynchronously (NIXL reads from the prefill pod), skipping the
// request (deferred) until the load is done (vllm/v1/core/sched/scheduler.py, the
// WAITING_FOR_REMOTE_KVS status; vllm/distributed/kv_transfer/kv_connector/v1/nixl/).

// fetchStage is where a waiting request's async KV load is (KV_FETCH_STAGES).
type fetchStage int

const (
	fetchNone fetchStage = iota
	// fetchWaiting (waiting_to_start): needs a KV load that has not started (counted from arrival)
	fetchWaiting
	// fetchInProgress (in_progress): blocks allocated, the transfer posted, not reported done
	fetchInProgress
	// fetchDone (completed_waiting): loaded, not running yet
	fetchDone
)

// kvFetchStages are vllm:num_requests_kv_fetch_by_stage's stage labels, by fetchStage.
var kvFetchStages = [...]string{fetchWaiting: "waiting_to_start", fetchInProgress: "in_progress", fetchDone: "completed_waiting"}

// NIXL's bucket boundaries (vllm/distributed/kv_transfer/kv_connector/v1/nixl/stats.py).
var (
	nixlPostBuckets  = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 5.0}
	nixlXferBuckets  = nixlPostBuckets[1:]
	nixlBytesBuckets = func() []float64 {
		var out []float64
		for i := 1; i < 25; i += 2 {
			out = append(out, math.Pow(2, float64(10+i)))
		}
		return out
	}()
	nixlDescBuckets = []float64{10, 20, 30, 50, 75, 100, 200, 400, 1000, 2000, 4000, 10000, 20000, 50000}
)

// kvLayers is the model's attention layers (Llama-3.1-8B): a transfer reads one descriptor per
// block, layer and K/V.
const kvLayers = 32

// nixlMetrics are NixlPromMetrics: the transfer histograms and failure counters, on every pod
// with the NIXL connector (either role).
type nixlMetrics struct {
	xferTime, postTime, bytes, descriptors prometheus.Observer
	failedTransfers, failedNotifications   prometheus.Counter
	expired, notificationsAfterExpiry      prometheus.Counter
}

func newNixlMetrics(reg *prometheus.Registry, lv prometheus.Labels) *nixlMetrics {
	labels := []string{"model_name", "engine"}
	hist := func(name, help string, buckets []float64) prometheus.Observer {
		v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
		reg.MustRegister(v)
		return v.With(lv)
	}
	counter := func(name, help string) prometheus.Counter {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		reg.MustRegister(v)
		return v.With(lv)
	}
	return &nixlMetrics{
		xferTime:    hist("vllm:nixl_xfer_time_seconds", "Histogram of transfer duration for NIXL KV Cache transfers.", nixlXferBuckets),
		postTime:    hist("vllm:nixl_post_time_seconds", "Histogram of transfer post time for NIXL KV Cache transfers.", nixlPostBuckets),
		bytes:       hist("vllm:nixl_bytes_transferred", "Histogram of bytes transferred per NIXL KV Cache transfers.", nixlBytesBuckets),
		descriptors: hist("vllm:nixl_num_descriptors", "Histogram of number of descriptors per NIXL  KV Cache transfers.", nixlDescBuckets),
		failedTransfers: counter("vllm:nixl_num_failed_transfers_total",
			"Number of failed NIXL KV Cache transfers, including handshake and notification failures. NOTE: KV expiry is tracked separately in vllm:nixl_num_kv_expired_reqs."),
		failedNotifications: counter("vllm:nixl_num_failed_notifications_total",
			"Number of failed NIXL KV Cache notifications. Retained for compatibility; these failures are also included in vllm:nixl_num_failed_transfers."),
		expired: counter("vllm:nixl_num_kv_expired_reqs_total",
			"Number of requests that had their KV expire. NOTE: This metric is tracked on the P instance."),
		notificationsAfterExpiry: counter("vllm:nixl_num_notifications_after_expiry_total",
			"Number of completion notifications for requests that were no longer tracked, usually because their KV lease expired. The KV blocks may have been reused before the transfer finished. Counted per notification (one per remote rank), not per request."),
	}
}

// kvStuck reports whether the prefill side (or the network to it) has stopped answering at now.
func (e *Engine) kvStuck(now time.Time) bool {
	s := e.scenario
	return s.KVStuck && !now.Before(e.scenarioAt.Add(s.KVStuckAfter))
}

// startFetch posts r's KV load at now: a NIXL read of the prompt's blocks from the prefill pod.
// Healthy, it completes after the post time plus the bytes over the link; while the prefill
// side does not answer, it never completes, or fails (a transport error) after KVFailAfter.
func (e *Engine) startFetch(r *request, now time.Time) {
	r.fetch, r.fetchStart = fetchInProgress, now
	r.fetchDoneAt, r.fetchFailAt = time.Time{}, time.Time{}
	if e.kvStuck(now) {
		if e.rng.Float64() < e.scenario.KVFailShare {
			r.fetchFailAt = now.Add(e.scenario.KVFailAfter)
		}
		return
	}
	bytes := float64(r.external * e.cfg.KVBytesPerToken)
	post := time.Duration((300 + 0.02*float64(e.descriptors(r))) * float64(time.Microsecond))
	xfer := time.Duration(bytes / e.cfg.KVTransferBandwidth * float64(time.Second) * math.Max(0.5, 1+0.1*e.rng.NormFloat64()))
	r.fetchPost, r.fetchXfer = post, xfer
	r.fetchDoneAt = now.Add(post + xfer)
}

func (e *Engine) descriptors(r *request) int { return e.blocksFor(r.external) * kvLayers * 2 }

// kvProgress takes in the transfers that completed or failed by now, as the worker's connector
// reports them with the next step: a completed load moves to completed_waiting; a failed one
// (kv_load_failure_policy "fail", vLLM's default) finishes its request with an error.
func (e *Engine) kvProgress(now time.Time) {
	if e.cfg.KVRole == "" {
		return
	}
	kept := e.waiting[:0]
	for _, r := range e.waiting {
		if r.fetch == fetchInProgress {
			switch {
			case !r.fetchDoneAt.IsZero() && !r.fetchDoneAt.After(now):
				r.fetch, r.numComputed = fetchDone, r.promptLen
				e.m.nixl.xferTime.Observe(r.fetchXfer.Seconds())
				e.m.nixl.postTime.Observe(r.fetchPost.Seconds())
				e.m.nixl.bytes.Observe(float64(r.external * e.cfg.KVBytesPerToken))
				e.m.nixl.descriptors.Observe(float64(e.descriptors(r)))
			case !r.fetchFailAt.IsZero() && !r.fetchFailAt.After(now):
				e.m.nixl.failedTransfers.Inc()
				e.freeBlocks(r)
				e.finishUnstarted(r, reasonError, now, true)
				continue
			}
		}
		kept = append(kept, r)
	}
	clear(e.waiting[len(kept):])
	e.waiting = kept
}

// nextTransferEvent is the earliest transfer completion or failure to come, or the next planned
// lifecycle event.
func (e *Engine) nextTransferEvent() time.Time {
	next := e.life.nextEvent
	for _, r := range e.waiting {
		for _, t := range []time.Time{r.fetchDoneAt, r.fetchFailAt} {
			if r.fetch == fetchInProgress && !t.IsZero() && (next.IsZero() || t.Before(next)) {
				next = t
			}
		}
	}
	return next
}
