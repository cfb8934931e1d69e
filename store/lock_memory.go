package store

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
)

// memLockValue is what the in-memory store keeps at a lock's key.
type memLockValue struct {
	Token  string     `json:"token"`
	Holder LockHolder `json:"holder"`
}

// Lock implements Locker for a single replica. The lock lives among the records under key, as it
// does in Redis, and expires with the same rules.
func (m *Memory) Lock(_ context.Context, key string, ttl time.Duration, holder LockHolder) (Lock, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("lock %s: ttl must be positive, got %s", key, ttl)
	}
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if it, ok := m.live(key, now); ok {
		var cur memLockValue
		_ = json.Unmarshal(it.val, &cur)
		return nil, &LockedError{Key: key, Holder: cur.Holder}
	}
	if holder.Since.IsZero() {
		holder.Since = now
	}
	val, err := json.Marshal(memLockValue{Token: token, Holder: holder})
	if err != nil {
		return nil, err
	}
	m.items[key] = memItem{val: val, expires: now.Add(ttl).UnixNano()}
	return &memLock{m: m, key: key, token: token, holder: holder}, nil
}

type memLock struct {
	m      *Memory
	key    string
	token  string
	holder LockHolder
}

func (l *memLock) Key() string        { return l.key }
func (l *memLock) Holder() LockHolder { return l.holder }

// held reports whether the lock is still this one's; the caller holds m.mu.
func (l *memLock) held(now time.Time) (memItem, bool) {
	it, ok := l.m.live(l.key, now)
	if !ok {
		return memItem{}, false
	}
	var cur memLockValue
	if json.Unmarshal(it.val, &cur) != nil || cur.Token != l.token {
		return memItem{}, false
	}
	return it, true
}

func (l *memLock) Refresh(_ context.Context, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("lock %s: ttl must be positive, got %s", l.key, ttl)
	}
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	now := l.m.now()
	it, ok := l.held(now)
	if !ok {
		return ErrNotHeld
	}
	it.expires = now.Add(ttl).UnixNano()
	l.m.items[l.key] = it
	return nil
}

func (l *memLock) Release(context.Context) error {
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	if _, ok := l.held(l.m.now()); !ok {
		return ErrNotHeld
	}
	delete(l.m.items, l.key)
	return nil
}

// tokenLen is the length of every lock token (16 random bytes, base64url without padding).
const tokenLen = 22

func newToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("lock token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}
