package teams

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/internal/secret"
	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/store"
)

// workflow is a local stand-in for a Teams Workflows trigger: it records every POST to its one
// path and answers each with the next scripted status (then 202, as Workflows does); any other
// request fails the test.
type workflow struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	answers []answer
	got     [][]byte
}

type answer struct {
	status     int
	retryAfter string
}

const triggerPath = "/workflows/abc/triggers/manual/paths/invoke"

func newWorkflow(t *testing.T, answers ...answer) *workflow {
	w := &workflow{t: t, answers: answers}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != triggerPath || r.URL.Query().Get("sig") != "s3cr3t-sig" {
			t.Errorf("unexpected request %s %s", r.Method, r.URL)
			http.Error(rw, "unexpected", http.StatusNotFound)
			return
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
		body, _ := io.ReadAll(r.Body)
		w.mu.Lock()
		w.got = append(w.got, body)
		a := answer{status: http.StatusAccepted}
		if len(w.answers) > 0 {
			a, w.answers = w.answers[0], w.answers[1:]
		}
		w.mu.Unlock()
		if a.retryAfter != "" {
			rw.Header().Set("Retry-After", a.retryAfter)
		}
		rw.WriteHeader(a.status)
		_, _ = io.WriteString(rw, `{"error":{"code":"x","message":"scripted"}}`)
	}))
	t.Cleanup(w.srv.Close)
	return w
}

func (w *workflow) url() string { return w.srv.URL + triggerPath + "?api-version=1&sig=s3cr3t-sig" }

func (w *workflow) posts() [][]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([][]byte(nil), w.got...)
}

func newNotifier(t *testing.T, w *workflow) (notify.Notifier, *[]notify.Attempt) {
	t.Helper()
	cfg := &Config{}
	cfg.SetDefaults()
	cfg.WebhookURL = secret.Secret(w.url())
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	n, err := New(Options{Config: cfg, Store: store.NewMemory(), StormThreshold: 5, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var attempts []notify.Attempt
	return observed{n, func(a notify.Attempt) { mu.Lock(); attempts = append(attempts, a); mu.Unlock() }}, &attempts
}

// observed runs notify.Retry itself so the test sees each attempt's outcome.
type observed struct {
	n       *Notifier
	observe func(notify.Attempt)
}

func (o observed) Notify(ctx context.Context, nt *notify.Notification) (bool, error) {
	p := o.n.cfg.RetryPolicy()
	p.Backoff = time.Millisecond
	return false, notify.Retry(ctx, p, func(ctx context.Context) (bool, error) { return o.n.Notify(ctx, nt) }, o.observe)
}

func outcomes(as []notify.Attempt) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.Outcome
	}
	return out
}

func TestTheNotifierPostsTheRenderedCardToTheWorkflow(t *testing.T) {
	w := newWorkflow(t)
	r, _ := newNotifier(t, w)
	n := cases()["firing-one"]
	if _, err := r.Notify(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	posts := w.posts()
	if len(posts) != 1 {
		t.Fatalf("%d posts, want 1", len(posts))
	}
	want, _ := json.Marshal(Render(n, testView, false))
	if string(posts[0]) != string(want) {
		t.Errorf("posted body is not Render(n):\n%s", posts[0])
	}
}

func TestRateLimitsAndServerErrorsAreRetriedAndClientErrorsAreNot(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answers  []answer
		posts    int
		outcomes []string
		fails    bool
	}{
		{"a 429 with Retry-After is retried after it", []answer{{429, "0"}, {429, "1"}}, 3, []string{notify.AttemptRetryable, notify.AttemptRateLimited, notify.AttemptOK}, false},
		{"a 502 is retried with backoff", []answer{{502, ""}}, 2, []string{notify.AttemptRetryable, notify.AttemptOK}, false},
		{"a 400 (a card Workflows refuses) is not retried", []answer{{400, ""}}, 1, []string{notify.AttemptFailed}, true},
		{"a 404 (the flow was deleted) is not retried", []answer{{404, ""}}, 1, []string{notify.AttemptFailed}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorkflow(t, tc.answers...)
			r, attempts := newNotifier(t, w)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := r.Notify(ctx, notification(notify.StatusFiring, item(playbooks.VerdictKVPreemption, "vllm-0")))
			if (err != nil) != tc.fails {
				t.Fatalf("err = %v, want failure %v", err, tc.fails)
			}
			if err != nil && strings.Contains(err.Error(), "s3cr3t-sig") {
				t.Errorf("the error shows the webhook URL's signature: %v", err)
			}
			if got := len(w.posts()); got != tc.posts {
				t.Errorf("%d posts, want %d", got, tc.posts)
			}
			if got := outcomes(*attempts); strings.Join(got, ",") != strings.Join(tc.outcomes, ",") {
				t.Errorf("attempts %v, want %v", got, tc.outcomes)
			}
		})
	}
}

func TestAnUnreachableWorkflowIsRetryableAndItsURLIsNotInTheError(t *testing.T) {
	w := newWorkflow(t)
	url := w.url()
	w.srv.Close()
	cfg := &Config{}
	cfg.SetDefaults()
	cfg.WebhookURL = secret.Secret(url)
	n, err := New(Options{Config: cfg, Store: store.NewMemory(), Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	retry, err := n.Notify(context.Background(), notification(notify.StatusFiring, item(playbooks.VerdictKVPreemption, "vllm-0")))
	if err == nil || !retry {
		t.Fatalf("retry=%v err=%v, want a retryable error", retry, err)
	}
	if strings.Contains(err.Error(), "s3cr3t-sig") || strings.Contains(err.Error(), triggerPath) {
		t.Errorf("the error shows the webhook URL: %v", err)
	}
}

func TestConfigChecksTheURLWithoutShowingIt(t *testing.T) {
	cfg := &Config{}
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil || cfg.Enabled() {
		t.Fatalf("an empty section: err=%v enabled=%v, want valid and off", err, cfg.Enabled())
	}
	cfg.WebhookURL = "ftp://host/x?sig=s3cr3t-sig"
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "webhook_url: must be an http(s) URL") || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("err = %v", err)
	}
}

// downStore is a store that cannot be reached.
type downStore struct{ store.Store }

var errDown = fmt.Errorf("store: %w", store.ErrUnavailable)

func (downStore) Get(context.Context, string) ([]byte, bool, error)        { return nil, false, errDown }
func (downStore) Set(context.Context, string, []byte, time.Duration) error { return errDown }
func (downStore) Delete(context.Context, string) error                     { return errDown }

// A resolution closes a firing card, so it is posted only for a group whose firing card this
// responder posted (issue 33.11: a responder down or started after the firing posted "RESOLVED
// ... Closes the card FIRING: ..." for a card that never existed). It posts nothing then, as
// Slack posts nothing for a thread it never started; a resolution of part of a firing group
// keeps the record for the rest; with the store down it posts, saying it could not check.
func TestAResolutionIsPostedOnlyForAFiringCardThisResponderPosted(t *testing.T) {
	w := newWorkflow(t)
	cfg := &Config{}
	cfg.SetDefaults()
	cfg.WebhookURL = secret.Secret(w.url())
	newN := func(st store.Store) *Notifier {
		n, err := New(Options{Config: cfg, Store: st, StormThreshold: 5, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	ctx := context.Background()
	resolved := func(status string, pods ...string) *notify.Notification {
		var items []notify.Item
		for _, p := range pods {
			items = append(items, notify.Item{Alert: alert(p, notify.StatusResolved)})
		}
		return notification(status, items...)
	}
	posts := func(want int, why string) {
		t.Helper()
		if got := len(w.posts()); got != want {
			t.Fatalf("%s: %d posts in all, want %d", why, got, want)
		}
	}

	n := newN(store.NewMemory())
	if _, err := n.Notify(ctx, resolved(notify.StatusResolved, "vllm-0")); err != nil {
		t.Fatal(err)
	}
	posts(0, "a resolution of a group whose firing card was never posted")

	if _, err := n.Notify(ctx, notification(notify.StatusFiring, item(playbooks.VerdictKVPreemption, "vllm-0"), item(playbooks.VerdictKVPreemption, "vllm-1"))); err != nil {
		t.Fatal(err)
	}
	posts(1, "the firing card")
	if _, err := n.Notify(ctx, resolved(notify.StatusFiring, "vllm-1")); err != nil {
		t.Fatal(err)
	}
	posts(2, "one alert of the still firing group resolved")
	if _, err := n.Notify(ctx, resolved(notify.StatusResolved, "vllm-0")); err != nil {
		t.Fatal(err)
	}
	posts(3, "the group resolved")
	if !strings.Contains(string(w.posts()[2]), "Closes the card") {
		t.Errorf("the resolution does not name the card it closes: %s", w.posts()[2])
	}
	if _, err := n.Notify(ctx, resolved(notify.StatusResolved, "vllm-0")); err != nil {
		t.Fatal(err)
	}
	posts(3, "a second resolution of the group (its new firing was not seen)")

	if _, err := newN(downStore{}).Notify(ctx, resolved(notify.StatusResolved, "vllm-2")); err != nil {
		t.Fatal(err)
	}
	posts(4, "a resolution with the store down")
	if last := string(w.posts()[3]); !strings.Contains(last, "could not be checked") || strings.Contains(last, "Closes the card") {
		t.Errorf("with the store down the resolution should say it could not check: %s", last)
	}
}
