package slack

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/store"
)

// pacer spaces calls to one channel by interval: within this process by reserving slots, or,
// once shared (sharePacing with a store.Pacer, Redis), across every replica that shares the
// store. While the store cannot be reached the replica paces on its own again.
type pacer struct {
	interval time.Duration
	log      zerolog.Logger

	mu   sync.Mutex
	next map[string]time.Time

	shared    store.Pacer
	localTill atomic.Int64 // Unix nanoseconds: after a failure of the shared store, pace locally until then
}

// After a failed shared wait, the replica paces on its own for sharedRetry before asking the store
// again, and each ask is bounded by sharedTimeout: a store that is down or unreachable must not
// slow every Slack call by a dial timeout.
const (
	sharedRetry   = 10 * time.Second
	sharedTimeout = 500 * time.Millisecond
)

func newPacer(interval time.Duration, log zerolog.Logger) *pacer {
	return &pacer{interval: interval, log: log, next: map[string]time.Time{}}
}

// sharePacing makes post_interval hold across every replica that shares the store p: N replicas
// then post to a channel no faster than one, instead of N times as fast.
func (a *webAPI) sharePacing(p store.Pacer) { a.pace.shared = p }

// paceKeyPrefix names a channel's pace in the shared store.
const paceKeyPrefix = "slack:pace:"

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
			Msg("shared Slack pacing unavailable (the store); pacing within this replica")
	}
	return p.waitLocal(ctx, channel)
}

func (p *pacer) waitShared(ctx context.Context, channel string) error {
	for {
		actx, cancel := context.WithTimeout(ctx, sharedTimeout)
		wait, err := p.shared.Pace(actx, paceKeyPrefix+channel, p.interval)
		cancel()
		if err != nil || wait <= 0 {
			return err
		}
		if err := sleep(ctx, wait); err != nil {
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
