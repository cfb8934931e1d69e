package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
)

// Lock implements Locker on Redis with github.com/bsm/redislock: SET NX PX with a random token,
// and Lua scripts that refresh or delete the key only while it still holds that token. The
// holder's description rides in the value after the token (redislock's metadata), so a refused
// caller can read who holds the lock and since when.
func (r *Redis) Lock(ctx context.Context, key string, ttl time.Duration, holder LockHolder) (Lock, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("lock %s: ttl must be positive, got %s", key, ttl)
	}
	if holder.Since.IsZero() {
		holder.Since = time.Now()
	}
	meta, err := json.Marshal(holder)
	if err != nil {
		return nil, err
	}
	rkey := r.Key(key)
	client := redislock.New(r.client)
	// Two attempts: when the first is refused and the holder's key expires before we read it,
	// the second attempt usually gets the lock.
	for attempt := 0; attempt < 2; attempt++ {
		token, err := newToken()
		if err != nil {
			return nil, err
		}
		l, err := client.Obtain(ctx, rkey, ttl, &redislock.Options{Token: token, Metadata: string(meta)})
		if err == nil {
			return &redisLock{r: r, l: l, key: key, holder: holder}, nil
		}
		if !errors.Is(err, redislock.ErrNotObtained) {
			return nil, r.lockErr(ctx, err)
		}
		val, err := r.client.Get(ctx, rkey).Result()
		if errors.Is(err, redis.Nil) {
			continue // released in between: try again
		}
		if err != nil {
			return nil, r.lockErr(ctx, err)
		}
		return nil, &LockedError{Key: key, Holder: parseHolder(val)}
	}
	return nil, &LockedError{Key: key}
}

// parseHolder reads the holder from a lock's value: token, then the holder as JSON.
func parseHolder(val string) LockHolder {
	var h LockHolder
	if len(val) > tokenLen {
		_ = json.Unmarshal([]byte(val[tokenLen:]), &h)
	}
	return h
}

// lockErr classifies an error of a lock operation: the caller's own cancellation stays what it
// is, everything else means Redis could not answer.
func (r *Redis) lockErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return unavailable(err)
}

type redisLock struct {
	r      *Redis
	l      *redislock.Lock
	key    string
	holder LockHolder
}

func (l *redisLock) Key() string        { return l.key }
func (l *redisLock) Holder() LockHolder { return l.holder }

func (l *redisLock) Refresh(ctx context.Context, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("lock %s: ttl must be positive, got %s", l.key, ttl)
	}
	err := l.l.Refresh(ctx, ttl, nil)
	if errors.Is(err, redislock.ErrNotObtained) {
		return ErrNotHeld
	}
	if err != nil {
		return l.r.lockErr(ctx, err)
	}
	return nil
}

func (l *redisLock) Release(ctx context.Context) error {
	err := l.l.Release(ctx)
	if errors.Is(err, redislock.ErrLockNotHeld) {
		return ErrNotHeld
	}
	if err != nil {
		return l.r.lockErr(ctx, err)
	}
	return nil
}
