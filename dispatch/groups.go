package dispatch

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/common/model"

	"github.com/vllm-responder/vllm-responder/notify"
)

// Alertmanager sends a group's whole current state every time it notifies. When notifications of
// one group arrive faster than they are diagnosed (a storm, a flapping alert, Alertmanager's HA
// replicas, a retry after a timeout), diagnosing and posting each would repeat the same work and
// thread replies. So each group has at most one job waiting: a newer notification of the group is
// merged into it (coalesced) instead of queued again, and takes no queue slot. And a group a
// worker took up less than GroupCooldown ago has its next job held until the cooldown has passed,
// so a group cannot keep workers and Prometheus busy with its own follow-ups; the first
// notification of a group is never held.

// And a group's jobs run one at a time: while a worker diagnoses and posts one, the next is held
// (merging) until it is done, so a resolution never overtakes the post it resolves, and the
// notifier sees a group's states in order.

// group is the dispatcher's state of one Alertmanager group (under Dispatcher.gmu).
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

// enqueue queues j, merges it into its group's waiting job (coalesced), or holds it until its
// group's cooldown has passed. It never blocks: a full queue is ErrQueueFull, and j is then not
// recorded anywhere. Called with d.mu read-locked and not closed.
func (d *Dispatcher) enqueue(j *job) (coalesced bool, err error) {
	key := j.n.GroupKey
	d.gmu.Lock()
	defer d.gmu.Unlock()
	defer d.setDepth()
	if key == "" { // not from Alertmanager: nothing to merge with
		return false, d.send(j)
	}
	g := d.groups[key]
	if g != nil && g.waiting != nil {
		g.waiting.claims = append(g.waiting.claims, j.claims...)
		for range g.waiting.merge(j.n) {
			d.count("superseded")
		}
		return true, nil
	}
	now := time.Now()
	if g != nil && g.running {
		// Held until the running job of the group is done (finished releases it).
		if d.held+len(d.queue) >= cap(d.queue) {
			return false, ErrQueueFull
		}
		g.waiting, g.held, g.timer = j, true, nil
		d.held++
		d.releasing.Add(1) // done by release once queued, or by flushHeld
		return false, nil
	}
	if g != nil && d.opt.GroupCooldown > 0 {
		if wait := g.taken.Add(d.opt.GroupCooldown).Sub(now); wait > 0 {
			if d.held+len(d.queue) >= cap(d.queue) {
				return false, ErrQueueFull
			}
			g.waiting, g.held = j, true
			d.held++
			d.releasing.Add(1) // done by release once queued, or by flushHeld
			g.timer = time.AfterFunc(wait, func() { d.release(key, j) })
			return false, nil
		}
	}
	if err := d.send(j); err != nil {
		return false, err
	}
	if g == nil {
		g = &group{}
		d.groups[key] = g
	}
	g.waiting = j // before the sweep, which forgets groups with nothing waiting
	d.sweep(now)
	return false, nil
}

// send puts j in the queue without blocking; counting held jobs, the queue holds at most its
// capacity. Called with d.gmu held.
func (d *Dispatcher) send(j *job) error {
	if d.held+len(d.queue) >= cap(d.queue) {
		return ErrQueueFull
	}
	select {
	case d.queue <- j:
		return nil
	default:
		return ErrQueueFull
	}
}

// release queues a held job once its group's cooldown has passed (a timer's func).
func (d *Dispatcher) release(key string, j *job) {
	d.gmu.Lock()
	defer d.gmu.Unlock()
	g := d.groups[key]
	if g == nil || g.waiting != j || !g.held {
		d.releasing.Done() // flushHeld took it
		return
	}
	d.held-- // send counts held jobs against the capacity: j's own slot is free again
	select {
	case d.queue <- j:
		g.held = false
		d.releasing.Done()
		d.setDepth()
	default:
		// The queue is full of other groups' work: j stays held (and merging) a little longer.
		d.held++
		g.timer = time.AfterFunc(retryFull, func() { d.release(key, j) })
	}
}

// flushHeld queues every held job at once (shutdown: they are accepted work) and waits for timers
// already firing. Accept refuses by now, so nothing is held anew.
func (d *Dispatcher) flushHeld(ctx context.Context) error {
	var jobs []*job
	d.gmu.Lock()
	for _, g := range d.groups {
		// A job held for its group's running one is left to finished, which queues it at
		// once now (d.draining): the group's order holds on shutdown too.
		if g.held && g.timer != nil && g.timer.Stop() {
			jobs = append(jobs, g.waiting)
			g.held = false
			d.held--
			d.releasing.Done()
		}
	}
	d.gmu.Unlock()
	for _, j := range jobs {
		select {
		case d.queue <- j: // workers are draining the queue meanwhile
		case <-ctx.Done():
			return fmt.Errorf("drain: %d held notification(s) not queued: %w", len(jobs), ctx.Err())
		}
	}
	done := make(chan struct{})
	go func() { d.releasing.Wait(); close(done) }()
	select {
	case <-done:
		d.gmu.Lock()
		d.setDepth()
		d.gmu.Unlock()
		return nil
	case <-ctx.Done():
		return fmt.Errorf("drain: held notifications not queued: %w", ctx.Err())
	}
}

// taken records that a worker took j: from now on a newer notification of its group waits anew.
func (d *Dispatcher) taken(j *job) {
	d.gmu.Lock()
	defer d.gmu.Unlock()
	d.setDepth()
	if g := d.groups[j.n.GroupKey]; g != nil {
		if g.waiting == j {
			g.waiting = nil
		}
		g.taken = time.Now()
		g.running = true
	}
}

// finished records that a worker is done with j: a job of its group held meanwhile is queued
// once the group's cooldown (counted from when j was taken) has passed.
func (d *Dispatcher) finished(j *job) {
	d.gmu.Lock()
	defer d.gmu.Unlock()
	g := d.groups[j.n.GroupKey]
	if g == nil {
		return
	}
	g.running = false
	if !g.held || g.timer != nil {
		return
	}
	next, key := g.waiting, j.n.GroupKey
	wait := max(g.taken.Add(d.opt.GroupCooldown).Sub(time.Now()), 0)
	if d.draining.Load() {
		wait = 0 // shutdown: accepted work is queued at once (flushHeld waits for it)
	}
	g.timer = time.AfterFunc(wait, func() { d.release(key, next) })
}

// sweep forgets idle groups (nothing waiting, cooldown over) once the table has doubled since the
// last sweep, so it costs O(1) per new group. Called with d.gmu held.
func (d *Dispatcher) sweep(now time.Time) {
	if len(d.groups) < d.nextSweep {
		return
	}
	for k, g := range d.groups {
		if g.waiting == nil && !g.running && now.Sub(g.taken) > d.opt.GroupCooldown {
			delete(d.groups, k)
		}
	}
	d.nextSweep = max(minSweep, 2*len(d.groups))
}

// setDepth publishes the notifications accepted and not yet taken by a worker (queued and held).
// Called with d.gmu held.
func (d *Dispatcher) setDepth() {
	if d.m != nil {
		d.m.QueueDepth.Set(float64(len(d.queue) + d.held))
	}
}

// alertKey identifies an alert within its group: its label set (Alertmanager's fingerprint is a
// hash of it too).
func alertKey(a *notify.Item) uint64 {
	return model.LabelsToSignature(a.Alert.Labels)
}

// merge folds newer, a later notification of the same group, into the waiting job's: the
// envelope (status, common labels and annotations, truncation) is the newer one's, as is each
// alert both carry (the same label set is the same alert to Alertmanager); alerts only the
// queued one carries stay. The time received stays the first, so time to diagnosis counts the
// wait. Status is firing while any alert in it still is. It returns how many of the queued
// alerts a newer state superseded.
func (j *job) merge(newer *notify.Notification) (superseded int) {
	queued := j.n
	if j.items == nil { // the first merge: index the job's own alerts once
		inheritStatus(queued)
		j.items = make(map[uint64]int, len(queued.Items))
		for i := range queued.Items {
			j.items[alertKey(&queued.Items[i])] = i
		}
	}
	inheritStatus(newer)
	for i := range newer.Items {
		k := alertKey(&newer.Items[i])
		if idx, ok := j.items[k]; ok {
			queued.Items[idx] = newer.Items[i]
			superseded++
			continue
		}
		j.items[k] = len(queued.Items)
		queued.Items = append(queued.Items, newer.Items[i])
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
