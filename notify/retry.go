package notify

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// The one retry loop of the responder's deliveries (as alertmanager's notify/retry_stage.go):
// notifiers only classify a failure (retry or not, and how long the peer asked to wait); the
// waiting happens here, within the one deadline of the context (dispatch.notify_timeout).

// RetryAfterer is implemented by a failure whose peer said when to come back: Slack's 429 with
// Retry-After. ok is false when the failure carries no such answer.
type RetryAfterer interface {
	RetryAfter() (d time.Duration, ok bool)
}

// retryAfter returns the wait err asks for, if any error in its chain says.
func retryAfter(err error) (time.Duration, bool) {
	var ra RetryAfterer
	if errors.As(err, &ra) {
		return ra.RetryAfter()
	}
	return 0, false
}

// Outcomes of one attempt, the label values of the attempts metric.
const (
	AttemptOK          = "ok"
	AttemptRateLimited = "rate_limited" // retryable, and the peer said when (Retry-After)
	AttemptRetryable   = "retryable"    // a transient failure: 5xx, timeout, peer or store down
	AttemptFailed      = "failed"       // a failure no retry can help
)

var attemptOutcomes = []string{AttemptOK, AttemptRateLimited, AttemptRetryable, AttemptFailed}

// RetryMetrics are the retry loop's own series, created up front at zero.
type RetryMetrics struct {
	// Attempts counts every attempt by its outcome.
	Attempts *prometheus.CounterVec
}

// NewRetryMetrics creates the series and registers them with reg (nil: not registered).
func NewRetryMetrics(reg prometheus.Registerer) *RetryMetrics {
	m := &RetryMetrics{Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vllm_responder_notification_attempts_total",
		Help: "Attempts to deliver a notification (retries included), by outcome: ok, rate_limited, retryable, failed.",
	}, []string{"outcome"})}
	for _, o := range attemptOutcomes {
		m.Attempts.WithLabelValues(o)
	}
	if reg != nil {
		reg.MustRegister(m.Attempts)
	}
	return m
}

// Policy says how often and how long a failure is retried. The zero value is usable.
type Policy struct {
	// Backoff is the first wait after a transient failure (default 1s); it doubles up to
	// MaxBackoff (default 30s).
	Backoff    time.Duration
	MaxBackoff time.Duration
	// Attempts bounds the tries of transient failures (default 5). Retries after a rate limit
	// are bounded by RateLimitRetries instead.
	Attempts int
	// RateLimitRetries bounds the retries after a failure that said when to come back (default
	// 3; negative: none).
	RateLimitRetries int
	// MaxRetryAfter is the longest wait asked for that is honoured; a longer one ends the
	// retries. 0: any wait that fits before the deadline.
	MaxRetryAfter time.Duration
}

func (p Policy) withDefaults() Policy {
	if p.Backoff <= 0 {
		p.Backoff = time.Second
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = 30 * time.Second
	}
	if p.Attempts <= 0 {
		p.Attempts = 5
	}
	if p.RateLimitRetries == 0 {
		p.RateLimitRetries = 3
	}
	return p
}

// Attempt is one try of the retry loop, as reported to its observer.
type Attempt struct {
	N       int    // 1 for the first try
	Outcome string // AttemptOK, AttemptRateLimited, AttemptRetryable or AttemptFailed
	Err     error
	// Retry says another try follows, after Wait.
	Retry bool
	Wait  time.Duration
}

// Retry calls fn until it succeeds, fails for good (retry=false), runs out of tries, or the next
// try would come after ctx's deadline. It waits what a failure asks for (RetryAfterer) or the
// policy's backoff. observe, when set, is told of every attempt.
func Retry(ctx context.Context, p Policy, fn func(ctx context.Context) (retry bool, err error), observe func(Attempt)) error {
	p = p.withDefaults()
	backoff := p.Backoff
	tries, rateLimited := 0, 0
	report := func(a Attempt) {
		if observe != nil {
			observe(a)
		}
	}
	for n := 1; ; n++ {
		retry, err := fn(ctx)
		if err == nil {
			report(Attempt{N: n, Outcome: AttemptOK})
			return nil
		}
		if !retry {
			report(Attempt{N: n, Outcome: AttemptFailed, Err: err})
			return err
		}
		a := Attempt{N: n, Outcome: AttemptRetryable, Err: err}
		var giveUp string
		if ra, ok := retryAfter(err); ok {
			a.Outcome, a.Wait = AttemptRateLimited, ra
			rateLimited++
			switch {
			case rateLimited > max(p.RateLimitRetries, 0):
				giveUp = fmt.Sprintf("gave up after %d rate-limited retries", rateLimited-1)
			case p.MaxRetryAfter > 0 && ra > p.MaxRetryAfter:
				giveUp = fmt.Sprintf("gave up: asked to wait %s, longer than %s", ra, p.MaxRetryAfter)
			}
		} else {
			a.Wait = backoff
			backoff = min(2*backoff, p.MaxBackoff)
			if tries++; tries >= p.Attempts {
				giveUp = fmt.Sprintf("gave up after %d attempts", tries)
			}
		}
		if dl, ok := ctx.Deadline(); ok && giveUp == "" && time.Now().Add(a.Wait).After(dl) {
			giveUp = fmt.Sprintf("gave up: the next try, in %s, would come after the deadline", a.Wait)
		}
		if giveUp != "" {
			a.Wait = 0
			report(a)
			return fmt.Errorf("%w (%s)", err, giveUp)
		}
		a.Retry = true
		report(a)
		t := time.NewTimer(a.Wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up: %v)", err, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// Retrying wraps a Notifier in the retry loop: a failure the notifier marks as retryable is
// tried again (after the peer's Retry-After, or with backoff) until the context's deadline.
// Notifiers themselves only say whether a retry can help; they never wait.
type Retrying struct {
	Notifier Notifier
	Policy   Policy
	Logger   zerolog.Logger
	// Metrics, when set, counts every attempt by outcome.
	Metrics *RetryMetrics
	// Observe, when set, receives one result per notification: ok, retried, failed.
	Observe func(result string)
}

// Notify implements Notifier. It returns retry=false: retries are done here.
func (r *Retrying) Notify(ctx context.Context, n *Notification) (bool, error) {
	attempts := 0
	err := Retry(ctx, r.Policy, func(ctx context.Context) (bool, error) { return r.Notifier.Notify(ctx, n) }, func(a Attempt) {
		attempts = a.N
		if r.Metrics != nil {
			r.Metrics.Attempts.WithLabelValues(a.Outcome).Inc()
		}
		if a.Retry {
			r.Logger.Warn().Err(a.Err).Int("attempt", a.N).Str("group_key", n.GroupKey).Str("outcome", a.Outcome).
				Dur("backoff", a.Wait).Msg("notification failed, retrying")
		}
	})
	switch {
	case err != nil:
		r.observe("failed")
		return false, err
	case attempts > 1:
		r.observe("retried")
	default:
		r.observe("ok")
	}
	return false, nil
}

func (r *Retrying) observe(result string) {
	if r.Observe != nil {
		r.Observe(result)
	}
}
