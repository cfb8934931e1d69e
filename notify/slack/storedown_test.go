package slack

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/store"
)

// downStore is a store whose backing Redis cannot be reached.
type downStore struct{ store.Store }

var errDown = fmt.Errorf("%w: dial tcp 127.0.0.1:6379: connect: connection refused", store.ErrUnavailable)

func (downStore) Claim(context.Context, string, time.Duration) (bool, error) { return false, errDown }
func (downStore) Unclaim(context.Context, string) error                      { return errDown }
func (downStore) Get(context.Context, string) ([]byte, bool, error)          { return nil, false, errDown }
func (downStore) Set(context.Context, string, []byte, time.Duration) error   { return errDown }

// With the store down a firing group is still posted (as a new message: there is no thread state
// to find), rather than retried until the notification gives up and the diagnosis is lost. A
// resolution, which needs the parent message from the store, asks for a retry.
func TestWithTheStoreDownAFiringGroupIsStillPosted(t *testing.T) {
	h := newHarness(t, downStore{store.NewMemory()}, nil, "chat.postMessage")
	h.cfg.Charts = new(bool)

	retry, err := h.n.Notify(context.Background(), firingNotification("g1", item("capacity-past-knee", "vllm-0")))
	if err != nil || retry {
		t.Fatalf("firing with the store down: retry=%v err=%v, want posted", retry, err)
	}
	if n := len(h.slack.Calls("chat.postMessage")); n != 1 {
		t.Fatalf("%d posts, want 1", n)
	}

	before := len(h.slack.Calls(""))
	res := firingNotification("g1", notify.Item{Alert: alert("vllm-0", notify.StatusResolved)})
	res.Status = notify.StatusResolved
	retry, err = h.n.Notify(context.Background(), res)
	if err == nil || !retry {
		t.Fatalf("resolution with the store down: retry=%v err=%v, want a retryable error", retry, err)
	}
	if n := len(h.slack.Calls("")); n != before {
		t.Fatalf("the resolution called Slack: %v", h.slack.Methods())
	}
}
