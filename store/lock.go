package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrLocked is matched (errors.Is) by the *LockedError a Locker returns when someone else holds
// the lock.
var ErrLocked = errors.New("locked")

// ErrNotHeld is returned by Refresh and Release when the lock expired or was taken by another
// holder in the meantime.
var ErrNotHeld = errors.New("lock not held")

// Locker hands out exclusive, expiring locks. A lock is never waited for: either it is taken at
// once or the caller learns who holds it. Every lock has a TTL, so a holder that dies cannot keep
// it forever; a holder that needs longer refreshes it.
type Locker interface {
	// Lock takes key for ttl on behalf of holder. When another holder has it, the error is a
	// *LockedError (errors.Is(err, ErrLocked)) naming that holder; when the store cannot be
	// reached, the error wraps ErrUnavailable, and the caller must treat the lock as not taken.
	Lock(ctx context.Context, key string, ttl time.Duration, holder LockHolder) (Lock, error)
}

// Lock is a held lock. Refresh and Release check that it is still this holder's (a token only
// the holder knows), so a holder whose lock expired cannot extend or release a successor's.
type Lock interface {
	Key() string
	Holder() LockHolder
	// Refresh resets the lock's TTL. ErrNotHeld: the lock expired or is someone else's now.
	Refresh(ctx context.Context, ttl time.Duration) error
	// Release frees the lock. ErrNotHeld: it had expired already.
	Release(ctx context.Context) error
}

// LockHolder says who holds a lock, for the people who are refused it.
type LockHolder struct {
	// ID identifies the holding operation (a capture id), for programs.
	ID string `json:"id,omitempty"`
	// Name is the human who asked, or the component acting ("janitor on replica-2").
	Name string `json:"name"`
	// Since is when the lock was taken.
	Since time.Time `json:"since"`
}

// LockedError is the refusal to take a lock held by someone else. Holder is zero when the holder
// could not be read (the lock changed hands in between).
type LockedError struct {
	Key    string
	Holder LockHolder
}

func (e *LockedError) Error() string {
	if e.Holder.Name == "" {
		return fmt.Sprintf("%s is locked", e.Key)
	}
	return fmt.Sprintf("%s is locked by %s since %s", e.Key, e.Holder.Name, e.Holder.Since.UTC().Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }
