package notify

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"
)

// step is one scripted answer of a notifier.
type step struct {
	retry bool
	err   error
}

var errBusy = errors.New("503 upstream busy")

// rateLimited is a failure whose peer asked to come back after wait.
type rateLimited struct{ wait time.Duration }

func (e rateLimited) Error() string                     { return "429 rate limited" }
func (e rateLimited) RetryAfter() (time.Duration, bool) { return e.wait, true }

// script answers each Notify with the next step, then with success.
type script struct {
	mu    sync.Mutex
	steps []step
	calls int
}

func (s *script) Notify(context.Context, *Notification) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if len(s.steps) == 0 {
		return false, nil
	}
	st := s.steps[0]
	s.steps = s.steps[1:]
	return st.retry, st.err
}

func transient(n int) []step {
	out := make([]step, n)
	for i := range out {
		out[i] = step{true, errBusy}
	}
	return out
}

func limited(n int, wait time.Duration) []step {
	out := make([]step, n)
	for i := range out {
		out[i] = step{true, rateLimited{wait}}
	}
	return out
}

func TestTheRetryLoop(t *testing.T) {
	quick := Policy{Backoff: time.Millisecond}
	cases := []struct {
		name     string
		policy   Policy
		steps    []step
		calls    int
		result   string // what Observe receives
		attempts map[string]float64
		errHas   string // "" = no error
	}{
		{name: "a success at once is one ok attempt", policy: quick,
			calls: 1, result: "ok", attempts: map[string]float64{AttemptOK: 1}},
		{name: "transient failures are retried until one lands", policy: quick, steps: transient(2),
			calls: 3, result: "retried", attempts: map[string]float64{AttemptRetryable: 2, AttemptOK: 1}},
		{name: "a failure no retry can help is tried once", policy: quick, steps: []step{{false, errors.New("channel_not_found")}},
			calls: 1, result: "failed", attempts: map[string]float64{AttemptFailed: 1}, errHas: "channel_not_found"},
		{name: "transient failures stop after the attempts", policy: Policy{Backoff: time.Millisecond, Attempts: 3}, steps: transient(10),
			calls: 3, result: "failed", attempts: map[string]float64{AttemptRetryable: 3}, errHas: "gave up after 3 attempts"},
		{name: "a rate limit is retried after the wait it asks for, not the backoff", policy: Policy{Backoff: time.Hour},
			steps: limited(2, time.Millisecond), calls: 3, result: "retried", attempts: map[string]float64{AttemptRateLimited: 2, AttemptOK: 1}},
		{name: "rate-limited retries are bounded on their own", policy: Policy{RateLimitRetries: 2}, steps: limited(10, 0),
			calls: 3, result: "failed", attempts: map[string]float64{AttemptRateLimited: 3}, errHas: "gave up after 2 rate-limited retries"},
		{name: "a negative rate-limit bound retries no rate limit", policy: Policy{RateLimitRetries: -1}, steps: limited(1, 0),
			calls: 1, result: "failed", attempts: map[string]float64{AttemptRateLimited: 1}, errHas: "gave up after 0 rate-limited retries"},
		{name: "rate-limited retries do not use up the attempts of transient failures", policy: Policy{Backoff: time.Millisecond, Attempts: 2},
			steps: append(limited(3, 0), step{true, errBusy}), calls: 5, result: "retried",
			attempts: map[string]float64{AttemptRateLimited: 3, AttemptRetryable: 1, AttemptOK: 1}},
		{name: "a wait longer than max_retry_after ends the retries", policy: Policy{MaxRetryAfter: time.Minute}, steps: limited(1, time.Hour),
			calls: 1, result: "failed", attempts: map[string]float64{AttemptRateLimited: 1}, errHas: "asked to wait 1h0m0s, longer than 1m0s"},
		{name: "a wait that would end after the deadline ends the retries at once", policy: Policy{}, steps: limited(1, 24*time.Hour),
			calls: 1, result: "failed", attempts: map[string]float64{AttemptRateLimited: 1}, errHas: "would come after the deadline"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := &script{steps: c.steps}
			m := NewRetryMetrics(nil)
			var results []string
			r := &Retrying{Notifier: n, Policy: c.policy, Logger: zerolog.New(zerolog.NewTestWriter(t)), Metrics: m,
				Observe: func(s string) { results = append(results, s) }}
			// The deadline is far: a case that waited it out would stand out, not pass.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			retry, err := r.Notify(ctx, &Notification{GroupKey: "g"})
			if retry {
				t.Error("the wrapper returned retry=true: it does the retries itself")
			}
			switch {
			case c.errHas == "" && err != nil:
				t.Fatalf("err = %v, want none", err)
			case c.errHas != "" && (err == nil || !strings.Contains(err.Error(), c.errHas)):
				t.Fatalf("err = %v, want one saying %q", err, c.errHas)
			}
			if n.calls != c.calls {
				t.Errorf("%d attempts, want %d", n.calls, c.calls)
			}
			if len(results) != 1 || results[0] != c.result {
				t.Errorf("observed %v, want [%s]", results, c.result)
			}
			for _, o := range attemptOutcomes {
				if got := counterValue(m.Attempts.WithLabelValues(o)); got != c.attempts[o] {
					t.Errorf("attempts{outcome=%q} = %v, want %v", o, got, c.attempts[o])
				}
			}
		})
	}
}

func TestAFailedAttemptsErrorIsKeptForTheCaller(t *testing.T) {
	err := Retry(context.Background(), Policy{Backoff: time.Millisecond, Attempts: 2},
		func(context.Context) (bool, error) { return true, errBusy }, nil)
	if !errors.Is(err, errBusy) {
		t.Fatalf("err = %v, want it to wrap the notifier's error", err)
	}
}

func TestEachWaitIsTheBackoffDoublingOrTheAskedWait(t *testing.T) {
	steps := append(transient(3), limited(1, 7*time.Millisecond)...)
	steps = append(steps, step{true, errBusy})
	n := &script{steps: steps}
	var waits []time.Duration
	err := Retry(context.Background(), Policy{Backoff: time.Millisecond, MaxBackoff: 3 * time.Millisecond},
		func(ctx context.Context) (bool, error) { return n.Notify(ctx, nil) },
		func(a Attempt) {
			if a.Retry {
				waits = append(waits, a.Wait)
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond, 7 * time.Millisecond, 3 * time.Millisecond}
	if len(waits) != len(want) {
		t.Fatalf("waits %v, want %v", waits, want)
	}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits %v, want %v", waits, want)
		}
	}
}

func TestACancelledNotificationStopsWaiting(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("shutting down")
	err := Retry(ctx, Policy{Backoff: time.Hour}, func(context.Context) (bool, error) {
		cancel(cause) // ends the budget while the loop would wait an hour
		return true, errBusy
	}, nil)
	if !errors.Is(err, errBusy) || !strings.Contains(err.Error(), "shutting down") {
		t.Fatalf("err = %v, want the failure and the cause it gave up on", err)
	}
}

func TestTheAttemptSeriesExistFromTheStart(t *testing.T) {
	reg := prometheus.NewRegistry()
	NewRetryMetrics(reg)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != 1 || mfs[0].GetName() != "vllm_responder_notification_attempts_total" || len(mfs[0].GetMetric()) != len(attemptOutcomes) {
		t.Fatalf("gathered %v, want vllm_responder_notification_attempts_total with one series per outcome (%d)", mfs, len(attemptOutcomes))
	}
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}
