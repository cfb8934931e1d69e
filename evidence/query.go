package evidence

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/playbooks"
)

// result is one query's outcome.
type result struct {
	value   *float64
	problem string
	status  string // one of the Query* results
	series  int
	fleet   playbooks.FleetValues   // a fleet request's values by query and series (shared read-only between runs)
	vectors map[string]model.Vector // a vectorBatch's series by query (shared read-only between runs)
	parts   []result                // a request carrying several queries: each one's result (queryBatch)
	// transport: the request failed before Prometheus (or a proxy) answered: refused, reset,
	// DNS, TLS. Sending its queries again alone would fail alike.
	transport bool
	warnings  []string // the answer's warnings: it may be partial
	// refused: the backend refused the query (or it was too long to send): its evidence is
	// unknown, not absent.
	refused bool
	// notSent: a baseline's fallback the run did not need (playbooks.Playbook.Fallbacks): no
	// value, and no answer either way.
	notSent bool
}

// query runs one request with deduplication: an identical request in flight (at the same
// evaluation time: key is q plus keySuffix) is shared, and a result younger than CacheTTL is
// reused.
//
// kind, when set, reads the answer of a request carrying several queries (a queryBatch or a
// fleetRequest) instead of as one number.
func (e *Engine) query(ctx context.Context, q, keySuffix string, at time.Time, kind answerKind) result {
	if len(q) > e.opt.MaxQueryBytes {
		return tooLong(len(q), e.opt.MaxQueryBytes)
	}
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
	defer e.mu.Unlock()
	return e.cache.get(key, e.opt.Now())
}

// store keeps r for key (when the cache is on).
func (e *Engine) store(key string, r result) {
	if e.opt.CacheTTL <= 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cache.put(key, r, e.opt.Now())
}

// tooLong is the result of a query that is not sent: n bytes of PromQL, more than the max the
// backends accept.
func tooLong(n, maxBytes int) result {
	return result{status: QueryError, refused: true, problem: fmt.Sprintf("not sent: the query is %d bytes long, more than the %d bytes "+
		"a backend may accept (VictoriaMetrics' -search.maxQueryLen); the scope's label values make it this long", n, maxBytes)}
}

// refusedPrefix is how a query's problem begins when the backend refused it (Prometheus' 400 or 422
// with an error, VictoriaMetrics' 422 "too long query", a 4xx from a proxy): the query was
// answered, with a refusal, which is not the absence of its evidence.
const refusedPrefix = "the backend refused the query: "

// refusal reports whether apiErr is the backend refusing the query, rather than failing to
// answer it: Prometheus' bad_data and execution errors (its 400 and 422), the error types
// Prometheus does not define in an API answer (VictoriaMetrics puts its HTTP status there:
// "422" for a query longer than -search.maxQueryLen), and a proxy's 413, 414 or 431 (a request
// too large for it). Another 4xx without an API body (401, 403, 404, 429) is about the way to
// the backend, not the query.
func refusal(apiErr *v1.Error) bool {
	switch apiErr.Type {
	case v1.ErrBadData, v1.ErrExec:
		return true
	case v1.ErrClient:
		switch apiErr.Msg {
		case "client error: 413", "client error: 414", "client error: 431":
			return true
		}
		return false
	case v1.ErrTimeout, v1.ErrCanceled, v1.ErrServer, v1.ErrBadResponse:
		return false
	}
	return true
}

// interpret turns a query answer into one number, or a reason there is none.
func interpret(v model.Value, err error, ctx context.Context) result {
	if err != nil {
		var apiErr *v1.Error
		switch {
		case errors.As(err, &apiErr) && (apiErr.Type == v1.ErrTimeout || apiErr.Type == v1.ErrCanceled):
			return result{status: QueryTimeout, problem: "Prometheus timed out: " + apiErr.Msg}
		case errors.As(err, &apiErr) && refusal(apiErr):
			msg := apiErr.Msg
			if detail := strings.TrimSpace(apiErr.Detail); apiErr.Type == v1.ErrClient && detail != "" {
				if len(detail) > 200 {
					detail = strings.ToValidUTF8(detail[:200], "") + "…"
				}
				msg += ": " + detail
			}
			return result{status: QueryError, refused: true, problem: refusedPrefix + msg}
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
