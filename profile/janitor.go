package profile

import (
	"context"
	"errors"
	"time"

	"github.com/vllm-responder/vllm-responder/store"
)

// RunJanitor looks for captures past their deadline every profile.janitor_interval, at once on
// start too (a restarted replica finds its own), and stops their profilers: the responder that
// ran them died, or its stop failed. It returns nil when ctx ends. Run it on every replica; a
// claim in the store keeps two replicas from stopping the same capture at once.
func (s *Service) RunJanitor(ctx context.Context) error {
	t := time.NewTicker(s.cfg.JanitorInterval)
	defer t.Stop()
	for {
		s.sweep(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// sweep starts a reaper for each record past its deadline that nobody here works on.
func (s *Service) sweep(ctx context.Context) {
	lctx, cancel := context.WithTimeout(ctx, storeOpTimeout)
	recs, err := s.listRecords(lctx)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn().Err(err).Msg("janitor: listing captures failed")
		}
		return
	}
	now := time.Now()
	for _, r := range recs {
		if now.Before(r.Deadline) {
			continue
		}
		s.mu.Lock()
		_, mine := s.active[r.ID]
		busy := s.janitored[r.ID]
		closing := false
		select {
		case <-s.closing:
			closing = true
		default:
		}
		if mine || busy || closing {
			s.mu.Unlock()
			continue
		}
		s.janitored[r.ID] = true
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer func() {
				s.mu.Lock()
				delete(s.janitored, r.ID)
				s.mu.Unlock()
				s.wg.Done()
			}()
			s.reap(ctx, r)
		}()
	}
}

// reap stops the profiler of a capture past its deadline and clears its record.
func (s *Service) reap(ctx context.Context, r Record) {
	key := podName(r.Namespace, r.Pod)
	log := s.log.With().Str("capture_id", r.ID).Str("pod", key).Str("requested_by", r.RequestedBy).
		Str("owner_replica", r.Replica).Str("state", r.State).Logger()
	stopTimeout := s.cfg.StopTimeout

	// One replica at a time per capture.
	cctx, cancel := context.WithTimeout(ctx, storeOpTimeout)
	claimed, err := s.store.Claim(cctx, janitorPrefix+r.ID, stopTimeout+s.grace)
	cancel()
	if err != nil || !claimed {
		return
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.Background(), storeOpTimeout)
		defer cancel()
		_ = s.store.Unclaim(uctx, janitorPrefix+r.ID)
	}()

	// Take the pod's lock, so no new capture starts while we stop. When the dead owner's lock
	// has not lapsed yet, its holder is this very capture: no other capture can be running on
	// the pod, so stopping is safe without the lock.
	ttl := s.cfg.LockTTL
	lctx, cancel := context.WithTimeout(ctx, storeOpTimeout)
	lock, err := s.store.Lock(lctx, lockPrefix+key, ttl, store.LockHolder{ID: "janitor-" + r.ID, Name: "janitor on " + s.replica, Since: time.Now()})
	cancel()
	var locked *store.LockedError
	switch {
	case err == nil:
		c := &capture{lock: lock}
		stopRefresh := s.keepLock(c, log, func(error) {})
		defer func() {
			stopRefresh()
			s.releaseLock(lock, log)
		}()
		cur, ok, err := s.getRecord(ctx, key)
		if err != nil || !ok || cur.ID != r.ID || time.Now().Before(cur.Deadline) {
			return // finished, replaced or moved on meanwhile
		}
	case errors.As(err, &locked) && locked.Holder.ID == r.ID:
	case errors.As(err, &locked):
		// Another capture holds the pod; it replaced this record and will stop the profiler.
		log.Debug().Str("holder", locked.Holder.Name).Msg("janitor: pod locked by another capture; skipped")
		return
	default:
		log.Warn().Err(err).Msg("janitor: cannot lock the pod; will retry")
		return
	}

	log.Warn().Time("deadline", r.Deadline).Msg("janitor: capture past its deadline, stopping the profiler")
	start := time.Now()
	stopSilence := s.keepSilence(&r, log, func() { _ = s.putRecord(context.WithoutCancel(ctx), r) })
	sctx, cancel := context.WithTimeoutCause(ctx, stopTimeout, ErrStopTimeout)
	err = s.client.post(sctx, r.Endpoint, "/stop_profile")
	cancel()
	took := time.Since(start)
	stopSilence()
	s.metrics.stopDuration.Observe(took.Seconds())
	if err == nil || errors.Is(err, ErrProfilerDisabled) {
		// 404: the server restarted without a profiler, so nothing is on.
		s.metrics.janitorStops.WithLabelValues("ok").Inc()
		if err == nil && r.State == StateProfiling {
			s.recordFlush(key, took, log) // the profiler was on: this stop was a real flush
		}
		// The silence the dead responder held ends a margin after this flush.
		s.endSilence(&r, log, s.cfg.Silence.Margin)
		if derr := s.deleteRecord(context.WithoutCancel(ctx), key, r.ID); derr != nil {
			log.Warn().Err(derr).Msg("janitor: profiler stopped, but clearing the record failed")
		}
		log.Info().Dur("stop_duration", took).Msg("janitor: profiler stopped, capture record cleared")
		return
	}
	s.metrics.janitorStops.WithLabelValues("error").Inc()
	if ctx.Err() != nil {
		return // shutting down; another replica retries
	}
	// Retry after the lock TTL: the server may still be flushing.
	cur, ok, gerr := s.getRecord(ctx, key)
	if gerr == nil && ok && cur.ID == r.ID {
		cur.Attempts++
		cur.State, cur.LastError = StateStopFailed, err.Error()
		cur.Deadline = time.Now().Add(ttl)
		cur.SilenceID, cur.SilencedUntil = r.SilenceID, r.SilencedUntil
		s.endSilence(&cur, log, ttl+s.silenceLead()+s.cfg.Silence.Margin)
		_ = s.putRecord(ctx, cur)
	}
	log.Error().Err(err).Dur("stop_duration", took).Int("janitor_attempts", r.Attempts+1).
		Msgf("janitor: stop_profile failed; retrying in %s", ttl)
}
