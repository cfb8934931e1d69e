package dispatch

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/alertmanager/template"

	"github.com/vllm-responder/vllm-responder/internal/testenv"
	"github.com/vllm-responder/vllm-responder/notify"
)

// The coalescer's own invariants, without workers or a notifier: the test takes jobs from the
// queue itself and says when it has taken and finished them, as a worker does.

// testJob is a job of group key with one firing alert per pod, claiming "claim-<pod>".
func testJob(key string, pods ...string) *job {
	n := &notify.Notification{GroupKey: key, Status: notify.StatusFiring}
	var claims []string
	for _, p := range pods {
		n.Items = append(n.Items, notify.Item{Alert: template.Alert{Status: notify.StatusFiring,
			Labels: template.KV{"alertname": "VLLMTimeToFirstTokenP99High", "pod": p}}})
		claims = append(claims, "claim-"+p)
	}
	return &job{n: n, claims: claims}
}

func pods(j *job) (out []string) {
	for _, it := range j.n.Items {
		out = append(out, it.Alert.Labels["pod"])
	}
	return out
}

// testCoalescer is a coalescer on a queue of size capacity that records what it reports.
type testCoalescer struct {
	*coalescer
	superseded int
	depth      int
}

func newTestCoalescer(capacity int, cooldown time.Duration) *testCoalescer {
	tc := &testCoalescer{}
	// Both callbacks run under the coalescer's lock: the test reads them under it too.
	tc.coalescer = newCoalescer(make(chan *job, capacity), cooldown, func() { tc.superseded++ }, func(n int) { tc.depth = n })
	return tc
}

func (tc *testCoalescer) reported() (superseded, depth int) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.superseded, tc.depth
}

func (tc *testCoalescer) mustAdd(t *testing.T, j *job, wantCoalesced bool) {
	t.Helper()
	coalesced, err := tc.add(j)
	if err != nil || coalesced != wantCoalesced {
		t.Fatalf("add %s %v: coalesced %v, err %v; want coalesced %v", j.n.GroupKey, pods(j), coalesced, err, wantCoalesced)
	}
}

// take receives the next queued job as a worker does (waiting for a timer to queue it).
func (tc *testCoalescer) take(t *testing.T) *job {
	t.Helper()
	var j *job
	testenv.WaitFor(t, 10*time.Second, "a queued job", func() bool {
		select {
		case j = <-tc.queue:
			return true
		default:
			return false
		}
	})
	tc.taken(j)
	return j
}

func (tc *testCoalescer) queued() int { return len(tc.queue) }

func TestAGroupsFirstJobIsQueuedAtOnceWhateverTheCooldown(t *testing.T) {
	tc := newTestCoalescer(4, time.Hour)
	tc.mustAdd(t, testJob("g1", "a"), false)
	tc.mustAdd(t, testJob("g2", "b"), false)
	if tc.queued() != 2 {
		t.Fatalf("%d jobs queued, want the first of each group (2)", tc.queued())
	}
	if _, depth := tc.reported(); depth != 2 {
		t.Fatalf("depth %d, want 2", depth)
	}
}

func TestANewerJobOfAWaitingGroupIsMergedIntoItAndTakesNoSlot(t *testing.T) {
	tc := newTestCoalescer(1, 0)
	first := testJob("g1", "a", "b")
	tc.mustAdd(t, first, false)
	newer := testJob("g1", "b", "c")
	newer.n.Items[0].Alert.Status = notify.StatusResolved
	tc.mustAdd(t, newer, true)
	if _, err := tc.add(testJob("g2", "d")); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("another group needs a slot of the full queue: got %v, want ErrQueueFull", err)
	}
	j := tc.take(t)
	if j != first || fmt.Sprint(pods(j)) != "[a b c]" || j.n.Items[1].Alert.Status != notify.StatusResolved || j.n.Status != notify.StatusFiring {
		t.Fatalf("the waiting job after the merge: %v, b %s, status %s; want [a b c], b resolved, firing", pods(j), j.n.Items[1].Alert.Status, j.n.Status)
	}
	if fmt.Sprint(j.claims) != "[claim-a claim-b claim-b claim-c]" {
		t.Fatalf("claims %v: every claim of both notifications must be kept", j.claims)
	}
	if superseded, _ := tc.reported(); superseded != 1 {
		t.Fatalf("%d alerts reported superseded, want 1 (b)", superseded)
	}
}

func TestJobsWithoutAGroupKeyAreNeverMerged(t *testing.T) {
	tc := newTestCoalescer(4, time.Hour)
	tc.mustAdd(t, testJob("", "a"), false)
	tc.mustAdd(t, testJob("", "a"), false)
	if tc.queued() != 2 {
		t.Fatalf("%d queued, want 2", tc.queued())
	}
}

// A group's jobs run one at a time: the next is held while one runs, however idle the
// workers, and queued once it is done (the order of a firing post and its resolution).
func TestAJobOfARunningGroupIsHeldMergingUntilTheRunningOneIsDone(t *testing.T) {
	tc := newTestCoalescer(4, 0)
	tc.mustAdd(t, testJob("g1", "a"), false)
	running := tc.take(t)
	next := testJob("g1", "a")
	next.n.Items[0].Alert.Status = notify.StatusResolved
	tc.mustAdd(t, next, false)
	tc.mustAdd(t, testJob("g1", "b"), true)
	tc.mustAdd(t, testJob("g2", "c"), false) // another group is not held behind g1
	if other := tc.take(t); other.n.GroupKey != "g2" {
		t.Fatalf("took %s, want g2's job while g1's next is held", other.n.GroupKey)
	}
	if _, depth := tc.reported(); tc.queued() != 0 || depth != 1 {
		t.Fatalf("%d queued and depth %d while g1 runs; want 0 queued, depth 1 (the held job)", tc.queued(), depth)
	}
	tc.finished(running)
	if j := tc.take(t); j != next || fmt.Sprint(pods(j)) != "[a b]" {
		t.Fatalf("after g1's running job: took %v, want the held job with a (resolved) and b", pods(j))
	}
}

func TestAGroupTakenWithinItsCooldownHasItsNextJobHeldUntilItPasses(t *testing.T) {
	tc := newTestCoalescer(4, 50*time.Millisecond)
	tc.mustAdd(t, testJob("g1", "a"), false)
	tc.finished(tc.take(t))
	tc.mustAdd(t, testJob("g1", "b"), false)
	tc.mustAdd(t, testJob("g1", "c"), true)
	// Queued by the cooldown's timer (take waits for it), merged.
	if j := tc.take(t); fmt.Sprint(pods(j)) != "[b c]" {
		t.Fatalf("took %v after the cooldown, want [b c]", pods(j))
	}
}

func TestQueuedAndHeldJobsNeverExceedTheCapacityAndARefusedJobLeavesNoTrace(t *testing.T) {
	tc := newTestCoalescer(2, time.Hour)
	tc.mustAdd(t, testJob("g1", "a"), false)
	tc.finished(tc.take(t))
	tc.mustAdd(t, testJob("g1", "b"), false) // held by the cooldown
	tc.mustAdd(t, testJob("g2", "c"), false) // queued
	for _, j := range []*job{testJob("g3", "d"), testJob("g2", "e")} {
		// g2's waiting job is queued: e merges into it without a slot; g3 needs one.
		_, err := tc.add(j)
		if j.n.GroupKey == "g3" && !errors.Is(err, ErrQueueFull) {
			t.Fatalf("one held and one queued fill a queue of 2: got %v, want ErrQueueFull", err)
		}
		if j.n.GroupKey == "g2" && err != nil {
			t.Fatalf("a merge needs no slot: %v", err)
		}
	}
	running := tc.take(t) // g2's
	if _, err := tc.add(testJob("g2", "f")); err != nil {
		t.Fatalf("held for g2's running job, with a slot free: %v", err)
	}
	if _, err := tc.add(testJob("g4", "g")); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("two held fill a queue of 2: got %v, want ErrQueueFull", err)
	}
	tc.finished(running)
	// g2's held job waits out its cooldown; g3's refused job was recorded nowhere: its next
	// notification is a first one, queued at once, once there is room.
	if err := tc.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for tc.queued() > 0 {
		j := <-tc.queue
		got[fmt.Sprint(j.n.GroupKey, pods(j))] = true
	}
	if len(got) != 2 || !got["g1[b]"] || !got["g2[f]"] {
		t.Fatalf("flushed %v, want g1[b] and g2[f]", got)
	}
	tc.mustAdd(t, testJob("g3", "h"), false)
	if j := <-tc.queue; fmt.Sprint(pods(j)) != "[h]" {
		t.Fatalf("g3's next job %v, want [h] alone", pods(j))
	}
}

// flush queues every held job without waiting out a cooldown, and one held for its group's
// running job once that is done; it returns only when none is held.
func TestFlushQueuesEveryHeldJobAndReturnsOnceNoneIsHeld(t *testing.T) {
	tc := newTestCoalescer(4, time.Hour)
	tc.mustAdd(t, testJob("g1", "a"), false)
	running := tc.take(t)
	tc.mustAdd(t, testJob("g1", "b"), false) // held for the running job
	tc.mustAdd(t, testJob("g2", "c"), false)
	tc.finished(tc.take(t))
	tc.mustAdd(t, testJob("g2", "d"), false) // held for the cooldown
	done := make(chan error, 1)
	go func() { done <- tc.flush(context.Background()) }()
	if j := tc.take(t); fmt.Sprint(j.n.GroupKey, pods(j)) != "g2[d]" {
		t.Fatalf("flush queued %s %v first, want g2's held job", j.n.GroupKey, pods(j))
	}
	select {
	case err := <-done:
		t.Fatalf("flush returned (%v) while g1's job is still held for its running one", err)
	default:
	}
	tc.finished(running)
	if j := tc.take(t); fmt.Sprint(j.n.GroupKey, pods(j)) != "g1[b]" {
		t.Fatalf("after g1's running job: %s %v, want g1[b]", j.n.GroupKey, pods(j))
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, depth := tc.reported(); depth != 0 {
		t.Fatalf("depth %d once all was taken, want 0", depth)
	}
}

func TestFlushGivesUpWithTheContext(t *testing.T) {
	tc := newTestCoalescer(4, time.Hour)
	tc.mustAdd(t, testJob("g1", "a"), false)
	tc.take(t) // never finished
	tc.mustAdd(t, testJob("g1", "b"), false)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := tc.flush(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("flush with a job held for one that never ends: %v, want context.Canceled", err)
	}
}

func TestIdleGroupsAreForgottenAsTheTableGrowsAndWaitingOnesKept(t *testing.T) {
	tc := newTestCoalescer(4, 0)
	tc.mustAdd(t, testJob("busy", "a"), false)
	running := tc.take(t)
	tc.mustAdd(t, testJob("busy", "b"), false) // held for the running job
	// Idle groups (taken and finished, no cooldown) until the table reaches minSweep.
	for i := range minSweep - 1 {
		tc.mustAdd(t, testJob(fmt.Sprintf("idle%d", i), "x"), false)
		tc.finished(tc.take(t))
	}
	tc.mu.Lock()
	n := len(tc.groups)
	tc.mu.Unlock()
	if n != 2 {
		t.Fatalf("%d groups after the sweep, want 2: the busy one and the last idle one (queued when the sweep ran)", n)
	}
	tc.mustAdd(t, testJob("busy", "c"), true)
	tc.finished(running)
	if j := tc.take(t); fmt.Sprint(j.n.GroupKey, pods(j)) != "busy[b c]" {
		t.Fatalf("took %s %v, want busy[b c]", j.n.GroupKey, pods(j))
	}
}
