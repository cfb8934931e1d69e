package evidence

import (
	"context"
	"errors"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
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
