package notify

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"
)

// Retrying wraps a Notifier: a failure the notifier marks as retryable is retried with backoff
// until the context's deadline. Notifiers themselves only say whether a retry can help.
type Retrying struct {
	Notifier Notifier
	// Backoff is the first wait between attempts (default 1s); it doubles up to 30s.
	Backoff time.Duration
	// Attempts bounds the tries (default 5).
	Attempts int
	Logger   zerolog.Logger
	// Observe, when set, receives one result per notification: ok, retried, failed.
	Observe func(result string)
}

// Notify implements Notifier. It returns retry=false: retries are done here.
func (r *Retrying) Notify(ctx context.Context, n *Notification) (bool, error) {
	backoff, attempts := r.Backoff, r.Attempts
	if backoff <= 0 {
		backoff = time.Second
	}
	if attempts <= 0 {
		attempts = 5
	}
	var err error
	for i := 1; ; i++ {
		var retry bool
		retry, err = r.Notifier.Notify(ctx, n)
		if err == nil {
			r.observe(map[bool]string{true: "retried", false: "ok"}[i > 1])
			return false, nil
		}
		if !retry || i >= attempts {
			break
		}
		r.Logger.Warn().Err(err).Int("attempt", i).Str("group_key", n.GroupKey).Dur("backoff", backoff).Msg("notification failed, retrying")
		select {
		case <-ctx.Done():
			r.observe("failed")
			return false, fmt.Errorf("%w (gave up: %v)", err, context.Cause(ctx))
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 30*time.Second)
	}
	r.observe("failed")
	return false, err
}

func (r *Retrying) observe(result string) {
	if r.Observe != nil {
		r.Observe(result)
	}
}
