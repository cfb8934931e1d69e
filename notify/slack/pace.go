package slack

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
)

// pacer spaces calls to one channel by interval: within this process by reserving slots, or,
// once shared (SharePacing), across every replica with a GCRA limiter in Redis
// (go-redis/redis_rate). While Redis cannot be reached the replica paces on its own again.
type pacer struct {
	interval time.Duration
	log      zerolog.Logger

	mu   sync.Mutex
	next map[string]time.Time

	shared    *redis_rate.Limiter
	prefix    string
	localTill atomic.Int64 // Unix nanoseconds: after a Redis failure, pace locally until then
}

// After a failed shared wait, the replica paces on its own for sharedRetry before asking Redis
// again, and each ask is bounded by sharedTimeout: a Redis that is down or unreachable must not
// slow every Slack call by a dial timeout.
const (
	sharedRetry   = 10 * time.Second
	sharedTimeout = 500 * time.Millisecond
)

func newPacer(interval time.Duration, log zerolog.Logger) *pacer {
	return &pacer{interval: interval, log: log, next: map[string]time.Time{}}
}

// SharePacing makes post_interval hold across every replica that shares rdb: N replicas then post
// to a channel no faster than one, instead of N times as fast. keyPrefix is the store's
// (redis.key_prefix).
func (a *API) SharePacing(rdb redis.UniversalClient, keyPrefix string) {
	a.pace.shared = redis_rate.NewLimiter(rdb)
	a.pace.prefix = keyPrefix + "slack:pace:"
}

// wait returns when a call to channel may go.
func (p *pacer) wait(ctx context.Context, channel string) error {
	if p.interval <= 0 {
		return nil
	}
	if p.shared != nil && time.Now().UnixNano() >= p.localTill.Load() {
		err := p.waitShared(ctx, channel)
		if err == nil || ctx.Err() != nil {
			return err
		}
		p.localTill.Store(time.Now().Add(sharedRetry).UnixNano())
		p.log.Warn().Err(err).Str("channel", channel).Dur("for", sharedRetry).
			Msg("shared Slack pacing unavailable (Redis); pacing within this replica")
	}
	return p.waitLocal(ctx, channel)
}

func (p *pacer) waitShared(ctx context.Context, channel string) error {
	limit := redis_rate.Limit{Rate: 1, Burst: 1, Period: p.interval}
	for {
		actx, cancel := context.WithTimeout(ctx, sharedTimeout)
		res, err := p.shared.Allow(actx, p.prefix+channel, limit)
		cancel()
		if err != nil {
			return err
		}
		if res.Allowed > 0 {
			return nil
		}
		if err := sleep(ctx, res.RetryAfter); err != nil {
			return err
		}
	}
}

func (p *pacer) waitLocal(ctx context.Context, channel string) error {
	p.mu.Lock()
	now := time.Now()
	at := p.next[channel]
	if at.Before(now) {
		at = now
	}
	p.next[channel] = at.Add(p.interval)
	p.mu.Unlock()
	return sleep(ctx, time.Until(at))
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
