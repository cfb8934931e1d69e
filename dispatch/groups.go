package dispatch

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/notify"
)

// Alertmanager sends a group's whole current state every time it notifies. When notifications of
// one group arrive faster than they are diagnosed (a storm, a flapping alert, Alertmanager's HA
// replicas, a retry after a timeout), diagnosing and posting each would repeat the same work and
// thread replies. The coalescer keeps, per group, what stands between the webhook and the
// workers, under one lock (as alertmanager's dispatch keeps an aggrGroup per group). Its
// invariants, each tested in groups_test.go:
//
//   - A group has at most one job waiting (queued or held): a newer notification of the group is
//     merged into it (coalesced) instead of queued again, and takes no queue slot.
//   - A group's jobs run one at a time: while a worker diagnoses and posts one, the next is held
//     (merging) until it is done, so a resolution never overtakes the post it resolves, and the
//     notifier sees a group's states in order.
//   - A group a worker took up less than the cooldown ago has its next job held until the
//     cooldown has passed, so a group cannot keep workers and Prometheus busy with its own
//     follow-ups; the first notification of a group is never held.
//   - Queued and held jobs together never exceed the queue's capacity; a job refused
//     (ErrQueueFull) is recorded nowhere.
//   - flush (shutdown) queues every held job without waiting out a cooldown, a job held for its
//     group's running one as soon as that one is done, and returns once none is held.
//   - Idle groups are forgotten as the table grows; a group with a job waiting never is.
type coalescer struct {
	queue    chan *job // the workers' queue; its capacity bounds queued + held
	cooldown time.Duration
	// superseded is called once per alert of a waiting job a newer notification replaced.
	superseded func()
	// depth receives the jobs accepted and not yet taken by a worker (queued and held).
	depth func(int)

	mu        sync.Mutex
	groups    map[string]*group
	held      int  // jobs held (not in the queue yet)
	draining  bool // flush began: a job released from now on is queued without its cooldown
	releasing sync.WaitGroup
	nextSweep int
}

// group is the coalescer's state of one Alertmanager group (under coalescer.mu).
type group struct {
	waiting *job        // queued or held, not yet taken by a worker
	held    bool        // waiting is held (cooldown, or a job of the group running): not in the queue yet
	timer   *time.Timer // queues a held job when the cooldown has passed; nil while held for a running job
	taken   time.Time   // when a worker last took a job of this group
	running bool        // a worker is processing a job of this group
}

// minSweep is the size of the group table below which idle groups are not swept.
const minSweep = 1024

// retryFull is how soon a held job whose cooldown has passed tries again when the queue is full.
const retryFull = 100 * time.Millisecond

func newCoalescer(queue chan *job, cooldown time.Duration, superseded func(), depth func(int)) *coalescer {
	if superseded == nil {
		superseded = func() {}
	}
	if depth == nil {
		depth = func(int) {}
	}
	return &coalescer{queue: queue, cooldown: cooldown, superseded: superseded, depth: depth,
		groups: map[string]*group{}, nextSweep: minSweep}
}

// add queues j, merges it into its group's waiting job (coalesced), or holds it until its
// group's running job is done and its cooldown has passed. It never blocks: a full queue is
// ErrQueueFull, and j is then not recorded anywhere. The caller must not call add once the
// queue may be closed (the dispatcher's Accept holds its read lock).
func (c *coalescer) add(j *job) (coalesced bool, err error) {
	key := j.n.GroupKey
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.setDepth()
	if key == "" { // not from Alertmanager: nothing to merge with
		return false, c.send(j)
	}
	g := c.groups[key]
	if g != nil && g.waiting != nil {
		g.waiting.claims = append(g.waiting.claims, j.claims...)
		for range g.waiting.merge(j) {
			c.superseded()
		}
		return true, nil
	}
	now := time.Now()
	if g != nil && g.running {
		// Held until the running job of the group is done (finished releases it).
		if c.full() {
			return false, ErrQueueFull
		}
		g.waiting, g.held, g.timer = j, true, nil
		c.held++
		c.releasing.Add(1) // done by release once queued, or by flush
		return false, nil
	}
	if g != nil && c.cooldown > 0 {
		if wait := g.taken.Add(c.cooldown).Sub(now); wait > 0 {
			if c.full() {
				return false, ErrQueueFull
			}
			g.waiting, g.held = j, true
			c.held++
			c.releasing.Add(1) // done by release once queued, or by flush
			g.timer = time.AfterFunc(wait, func() { c.release(key, j) })
			return false, nil
		}
	}
	if err := c.send(j); err != nil {
		return false, err
	}
	if g == nil {
		g = &group{}
		c.groups[key] = g
	}
	g.waiting = j // before the sweep, which forgets groups with nothing waiting
	c.sweep(now)
	return false, nil
}

// full: counting held jobs, the queue holds at most its capacity. Called with c.mu held.
func (c *coalescer) full() bool { return c.held+len(c.queue) >= cap(c.queue) }

// send puts j in the queue without blocking. Called with c.mu held.
func (c *coalescer) send(j *job) error {
	if c.full() {
		return ErrQueueFull
	}
	select {
	case c.queue <- j:
		return nil
	default:
		return ErrQueueFull
	}
}

// release queues a held job once its group's cooldown has passed (a timer's func).
func (c *coalescer) release(key string, j *job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[key]
	if g == nil || g.waiting != j || !g.held {
		c.releasing.Done() // flush took it
		return
	}
	c.held-- // full counts held jobs against the capacity: j's own slot is free again
	select {
	case c.queue <- j:
		g.held = false
		c.releasing.Done()
		c.setDepth()
	default:
		// The queue is full of other groups' work: j stays held (and merging) a little longer.
		c.held++
		g.timer = time.AfterFunc(retryFull, func() { c.release(key, j) })
	}
}

// flush queues every held job at once (shutdown: they are accepted work) and waits until none
// is held. The caller refuses new work by now, so nothing is added anew; workers keep taking
// jobs from the queue meanwhile.
func (c *coalescer) flush(ctx context.Context) error {
	var jobs []*job
	c.mu.Lock()
	c.draining = true
	for _, g := range c.groups {
		// A job held for its group's running one is left to finished, which queues it at
		// once now (c.draining): the group's order holds on shutdown too.
		if g.held && g.timer != nil && g.timer.Stop() {
			jobs = append(jobs, g.waiting)
			g.held = false
			c.held--
			c.releasing.Done()
		}
	}
	c.mu.Unlock()
	for _, j := range jobs {
		select {
		case c.queue <- j: // workers are draining the queue meanwhile
		case <-ctx.Done():
			return fmt.Errorf("drain: %d held notification(s) not queued: %w", len(jobs), ctx.Err())
		}
	}
	done := make(chan struct{})
	go func() { c.releasing.Wait(); close(done) }()
	select {
	case <-done:
		c.mu.Lock()
		c.setDepth()
		c.mu.Unlock()
		return nil
	case <-ctx.Done():
		return fmt.Errorf("drain: held notifications not queued: %w", ctx.Err())
	}
}

// taken records that a worker took j: from now on a newer notification of its group waits anew.
func (c *coalescer) taken(j *job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setDepth()
	if g := c.groups[j.n.GroupKey]; g != nil {
		if g.waiting == j {
			g.waiting = nil
		}
		g.taken = time.Now()
		g.running = true
	}
}

// finished records that a worker is done with j: a job of its group held meanwhile is queued
// once the group's cooldown (counted from when j was taken) has passed.
func (c *coalescer) finished(j *job) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[j.n.GroupKey]
	if g == nil {
		return
	}
	g.running = false
	if !g.held || g.timer != nil {
		return
	}
	next, key := g.waiting, j.n.GroupKey
	wait := max(g.taken.Add(c.cooldown).Sub(time.Now()), 0)
	if c.draining {
		wait = 0 // shutdown: accepted work is queued at once (flush waits for it)
	}
	g.timer = time.AfterFunc(wait, func() { c.release(key, next) })
}

// sweep forgets idle groups (nothing waiting, nothing running, cooldown over) once the table has
// doubled since the last sweep, so it costs O(1) per new group. Called with c.mu held.
func (c *coalescer) sweep(now time.Time) {
	if len(c.groups) < c.nextSweep {
		return
	}
	for k, g := range c.groups {
		if g.waiting == nil && !g.running && now.Sub(g.taken) > c.cooldown {
			delete(c.groups, k)
		}
	}
	c.nextSweep = max(minSweep, 2*len(c.groups))
}

// setDepth publishes the jobs accepted and not yet taken by a worker (queued and held).
// Called with c.mu held.
func (c *coalescer) setDepth() { c.depth(len(c.queue) + c.held) }

// alertKey identifies an alert within its group: its label set (Alertmanager's fingerprint is a
// hash of it too).
func alertKey(a *notify.Item) uint64 {
	return model.LabelsToSignature(a.Alert.Labels)
}

// alertKeys returns the alertKey of each of the job's items, computed once: Accept computes a
// new job's before the coalescer's lock, so that a merge under the lock, which every webhook of
// the group waits on, only looks them up.
func (j *job) alertKeys() []uint64 {
	if j.keys == nil {
		j.keys = make([]uint64, len(j.n.Items))
		for i := range j.n.Items {
			j.keys[i] = alertKey(&j.n.Items[i])
		}
	}
	return j.keys
}

// merge folds newer, a later notification of the same group, into the waiting job's: the
// envelope (status, common labels and annotations, truncation) is the newer one's, as is each
// alert both carry (the same label set is the same alert to Alertmanager); alerts only the
// queued one carries stay. The time received stays the first, so time to diagnosis counts the
// wait. Status is firing while any alert in it still is. It returns how many of the queued
// alerts a newer state superseded.
func (j *job) merge(newerJob *job) (superseded int) {
	queued, newer := j.n, newerJob.n
	if j.items == nil { // the first merge: index the job's own alerts once
		inheritStatus(queued)
		j.items = make(map[uint64]int, len(queued.Items))
		for i, k := range j.alertKeys() {
			j.items[k] = i
		}
	}
	inheritStatus(newer)
	for i, k := range newerJob.alertKeys() {
		if idx, ok := j.items[k]; ok {
			queued.Items[idx] = newer.Items[i]
			superseded++
			continue
		}
		j.items[k] = len(queued.Items)
		queued.Items = append(queued.Items, newer.Items[i])
		j.keys = append(j.keys, k)
	}
	queued.Receiver, queued.ExternalURL = newer.Receiver, newer.ExternalURL
	queued.GroupLabels, queued.CommonLabels, queued.CommonAnnotations = newer.GroupLabels, newer.CommonLabels, newer.CommonAnnotations
	queued.TruncatedAlerts = newer.TruncatedAlerts
	queued.Status = notify.StatusResolved
	for _, it := range queued.Items {
		if it.Alert.Status != notify.StatusResolved {
			queued.Status = notify.StatusFiring
			break
		}
	}
	return superseded
}

// inheritStatus gives alerts without a status their notification's (older webhooks), so that
// each keeps its own once merged with a notification of another status.
func inheritStatus(n *notify.Notification) {
	for i := range n.Items {
		if n.Items[i].Alert.Status == "" {
			n.Items[i].Alert.Status = n.Status
		}
	}
}
