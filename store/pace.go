package store

import (
	"context"
	"time"

	"github.com/go-redis/redis_rate/v10"
)

// Pacer is a store that paces events across everyone who shares it: events of one key go at most
// one per interval, however many replicas send them (N replicas posting to one Slack channel
// post no faster than one). Redis implements it (a GCRA limiter, go-redis/redis_rate); a store
// nobody shares (Memory) does not, and its one process paces its own events.
type Pacer interface {
	// Pace takes key's turn and returns 0 when an event of key may go now; otherwise it returns
	// how long to wait before asking again. When the store cannot be reached the error wraps
	// ErrUnavailable.
	Pace(ctx context.Context, key string, interval time.Duration) (wait time.Duration, err error)
}

// Pace implements Pacer.
func (r *Redis) Pace(ctx context.Context, key string, interval time.Duration) (time.Duration, error) {
	res, err := r.limiter.Allow(ctx, r.Key(key), redis_rate.Limit{Rate: 1, Burst: 1, Period: interval})
	if err != nil {
		return 0, unavailable(err)
	}
	if res.Allowed > 0 {
		return 0, nil
	}
	return max(res.RetryAfter, time.Millisecond), nil
}
