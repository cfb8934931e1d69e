// Package dispatch turns accepted Alertmanager notifications into diagnoses: it deduplicates
// re-sent alerts through the store, queues work in a bounded queue, runs playbooks in workers and
// hands the result to the notifier. Work outlives the HTTP request that brought it.
package dispatch

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/alertmanager/template"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/evidence"
	"github.com/vllm-responder/vllm-responder/metrics"
	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/store"
)

// Errors Accept returns; the webhook turns them into 503 with Retry-After.
var (
	ErrQueueFull    = errors.New("work queue full")
	ErrShuttingDown = errors.New("shutting down")
)

// Options configures a Dispatcher.
type Options struct {
	Workers     int
	QueueSize   int
	DedupWindow time.Duration
	// GroupCooldown: a notification of a group that a worker took up less than this long ago is
	// held (merged with any newer ones) until this long has passed; 0 queues it at once.
	GroupCooldown time.Duration
	RunTimeout    time.Duration
	NotifyTimeout time.Duration
	// RunConcurrency bounds the diagnoses one job runs at once (default 4): the work of a
	// notification does not grow with its alerts.
	RunConcurrency int
	// StormThreshold: a job with more firing alerts to diagnose than this is a storm, summarised
	// by one run per playbook over the labels its alerts share (group-wide queries) instead of
	// one run per alert; 0 never summarises.
	StormThreshold int
	Logger         zerolog.Logger
	Metrics        *metrics.Responder
}

// Dispatcher is the queue and workers between the webhook and the notifier.
type Dispatcher struct {
	set      *playbooks.Set
	engine   *evidence.Engine
	notifier notify.Notifier
	store    store.Store
	opt      Options
	log      zerolog.Logger
	m        *metrics.Responder

	mu      sync.RWMutex
	closed  bool
	queue   chan *job
	wg      sync.WaitGroup
	started bool

	// groups coalesces each Alertmanager group's notifications (groups.go): its one waiting
	// job, which newer notifications of the group merge into, held while one of the group runs
	// or its cooldown lasts.
	groups *coalescer
}

type job struct {
	n      *notify.Notification
	claims []string
	keys   []uint64       // alertKey of each of n.Items (alertKeys)
	items  map[uint64]int // n.Items by alertKey, once something was merged into the job
}

// New returns a Dispatcher; call Start to run its workers.
func New(set *playbooks.Set, engine *evidence.Engine, n notify.Notifier, st store.Store, o Options) *Dispatcher {
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 256
	}
	if o.RunTimeout <= 0 {
		o.RunTimeout = 30 * time.Second
	}
	if o.NotifyTimeout <= 0 {
		o.NotifyTimeout = time.Minute
	}
	if o.RunConcurrency <= 0 {
		o.RunConcurrency = 4
	}
	d := &Dispatcher{set: set, engine: engine, notifier: n, store: st, opt: o, log: o.Logger, m: o.Metrics,
		queue: make(chan *job, o.QueueSize)}
	var depth func(int)
	if d.m != nil {
		d.m.QueueCapacity.Set(float64(o.QueueSize))
		depth = func(n int) { d.m.QueueDepth.Set(float64(n)) }
	}
	d.groups = newCoalescer(d.queue, o.GroupCooldown, func() { d.count("superseded") }, depth)
	return d
}

// Start runs the workers. They stop once Shutdown has drained the queue.
func (d *Dispatcher) Start() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started {
		return
	}
	d.started = true
	for i := 0; i < d.opt.Workers; i++ {
		d.wg.Add(1)
		go d.worker()
	}
}

// Shutdown stops accepting work and waits for accepted work to finish, or for ctx.
func (d *Dispatcher) Shutdown(ctx context.Context) error {
	d.mu.Lock()
	wasClosed := d.closed
	d.closed = true // Accept refuses from here on
	d.mu.Unlock()
	if !wasClosed {
		// Jobs held by a group's cooldown are accepted work: queue them now.
		if err := d.groups.flush(ctx); err != nil {
			return err
		}
		d.mu.Lock()
		close(d.queue)
		d.mu.Unlock()
	}
	done := make(chan struct{})
	go func() { d.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("drain: %d notification(s) still queued: %w", len(d.queue), ctx.Err())
	}
}

// Message is Alertmanager's webhook payload (version 4): template.Data plus the envelope.
type Message struct {
	*template.Data
	Version         string `json:"version"`
	GroupKey        string `json:"groupKey"`
	TruncatedAlerts uint64 `json:"truncatedAlerts"`
}

// Accepted says what Accept did with a message.
type Accepted struct {
	New        int // alerts queued for diagnosis or resolution
	Duplicates int // alerts already handled within the dedup window
}

// Accept deduplicates a webhook message and queues what is new. It never blocks: a full queue
// returns ErrQueueFull (and drops its claims so Alertmanager's retry is accepted). ctx is only
// used for the store.
func (d *Dispatcher) Accept(ctx context.Context, msg *Message, receivedAt time.Time) (Accepted, error) {
	var acc Accepted
	n := &notify.Notification{
		GroupKey: msg.GroupKey, Status: msg.Status, Receiver: msg.Receiver, ExternalURL: msg.ExternalURL,
		GroupLabels: msg.GroupLabels, CommonLabels: msg.CommonLabels, CommonAnnotations: msg.CommonAnnotations,
		TruncatedAlerts: msg.TruncatedAlerts, Source: notify.SourceAlertmanager, ReceivedAt: receivedAt,
	}
	var claims []string
	group := groupHash(msg.GroupKey)
	// One claim for the group's whole state first: replicas handed the same notification at
	// once do not split its alerts between them (exactly one handles it), and a re-send costs
	// one store call. The winner then claims each alert, so what an earlier state of the group
	// already handled is not diagnosed again.
	keys := make([]string, len(msg.Alerts))
	for i, a := range msg.Alerts {
		keys[i] = dedupKey(group, a)
	}
	state := stateKey(group, keys)
	switch ok, err := d.store.Claim(ctx, state, d.lease()); {
	case err != nil:
		d.log.Warn().Err(err).Str("group_key", msg.GroupKey).Msg("dedup store unavailable; accepting without deduplication")
	case !ok:
		acc.Duplicates = len(msg.Alerts)
		d.countN("duplicate", acc.Duplicates)
		return acc, nil
	default:
		claims = append(claims, state)
	}
	won := d.claimAll(ctx, keys)
	for i, a := range msg.Alerts {
		key := keys[i]
		ok, err := won(i, key)
		if err != nil {
			// The store is down: diagnose anyway (a duplicate post beats a lost alert).
			d.log.Warn().Err(err).Str("group_key", msg.GroupKey).Msg("dedup store unavailable; accepting without deduplication")
			ok = true
			key = ""
		}
		if !ok {
			acc.Duplicates++
			d.count("duplicate")
			continue
		}
		if key != "" {
			claims = append(claims, key)
		}
		n.Items = append(n.Items, notify.Item{Alert: a})
	}
	acc.New = len(n.Items)
	if acc.New == 0 {
		// Every alert was handled in an earlier state (the group shrank): the state claim stays
		// a lease, so this state's re-sends are one store call each.
		return acc, nil
	}
	j := &job{n: n, claims: claims}
	j.alertKeys() // before the coalescer's lock
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		d.unclaim(claims)
		return Accepted{}, ErrShuttingDown
	}
	coalesced, err := d.groups.add(j)
	if err != nil {
		d.unclaim(claims)
		return Accepted{}, err
	}
	if coalesced && d.m != nil {
		d.m.Coalesced.Inc()
	}
	return acc, nil
}

// claimAll claims the alerts' keys in one round trip when the store can (a notification of
// thousands of alerts is then one pipeline, not thousands of calls), and returns each result by
// index; otherwise each key is claimed when asked for.
func (d *Dispatcher) claimAll(ctx context.Context, keys []string) func(i int, key string) (bool, error) {
	one := func(_ int, key string) (bool, error) { return d.store.Claim(ctx, key, d.lease()) }
	bc, ok := d.store.(store.BatchClaimer)
	if !ok || len(keys) < 2 {
		return one
	}
	res, err := bc.ClaimAll(ctx, keys, d.lease())
	if err != nil || len(res) != len(keys) {
		return func(int, string) (bool, error) { return false, cmp.Or(err, store.ErrUnavailable) }
	}
	return func(i int, _ string) (bool, error) { return res[i], nil }
}

// lease is how long a claim lives while its alert is queued or being diagnosed: long enough for
// one diagnosis and its notification, short enough that if this replica dies the alert is handled
// again on one of Alertmanager's next re-sends. Once notified, the claim lasts the dedup window.
func (d *Dispatcher) lease() time.Duration {
	l := d.opt.RunTimeout + d.opt.NotifyTimeout + time.Minute
	if d.opt.DedupWindow > 0 && l > d.opt.DedupWindow {
		return d.opt.DedupWindow
	}
	return l
}

// confirm extends the claims of notified alerts to the full dedup window.
func (d *Dispatcher) confirm(keys []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, k := range keys {
		if err := d.store.Set(ctx, k, []byte{1}, d.opt.DedupWindow); err != nil {
			d.log.Warn().Err(err).Msg("could not extend dedup claim; a re-send may be diagnosed again")
		}
	}
}

func (d *Dispatcher) unclaim(keys []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, k := range keys {
		if err := d.store.Unclaim(ctx, k); err != nil {
			d.log.Warn().Err(err).Msg("could not drop dedup claim")
		}
	}
}

// dedupKey identifies one state of one alert in one group: a firing alert is diagnosed once per
// startsAt, a resolution passed on once.
func dedupKey(group [16]byte, a template.Alert) string {
	fp := a.Fingerprint
	if fp == "" {
		fp = labelsHash(a.Labels)
	}
	status := a.Status
	if status == "" {
		status = notify.StatusFiring
	}
	b := make([]byte, 0, len("dedup:")+len(group)+len(status)+len(fp)+24)
	b = append(b, "dedup:"...)
	b = append(b, group[:]...)
	b = append(b, ':')
	b = append(b, status...)
	b = append(b, ':')
	b = append(b, fp...)
	b = append(b, ':')
	b = strconv.AppendInt(b, a.StartsAt.UnixMilli(), 10)
	return string(b)
}

// stateKey identifies a group's whole state: the set of its alerts' dedup keys.
func stateKey(group [16]byte, alertKeys []string) string {
	keys := slices.Clone(alertKeys)
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{0})
	}
	return "dedup:" + string(group[:]) + ":state:" + hex.EncodeToString(h.Sum(nil)[:16])
}

// groupHash is the group part of a dedup key: 8 bytes of the group key's SHA-256, in hex.
func groupHash(groupKey string) (h [16]byte) {
	sum := sha256.Sum256([]byte(groupKey))
	hex.Encode(h[:], sum[:8])
	return h
}

func labelsHash(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s\xff%s\xff", k, m[k])
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

func (d *Dispatcher) count(outcome string) { d.countN(outcome, 1) }

func (d *Dispatcher) countN(outcome string, n int) {
	if d.m != nil {
		d.m.AlertOutcome(outcome).Add(float64(n))
	}
}

func (d *Dispatcher) worker() {
	defer d.wg.Done()
	for j := range d.queue {
		// From here on a newer notification of the group is queued on its own: this one's
		// diagnosis is under way and will be posted as it is.
		d.groups.taken(j)
		d.process(j)
		d.groups.finished(j)
	}
}

// process diagnoses every firing item of a job and notifies. It runs detached from any request.
func (d *Dispatcher) process(j *job) {
	n := j.n
	// The firing alerts a playbook knows, by playbook, in order of first appearance.
	var pbs []*playbooks.Playbook
	byPB := map[*playbooks.Playbook][]*notify.Item{}
	total := 0
	for i := range n.Items {
		it := &n.Items[i]
		resolved := it.Alert.Status == notify.StatusResolved || (it.Alert.Status == "" && n.Status == notify.StatusResolved)
		// Matching is by labels only, so a resolution no playbook matches had no firing post:
		// it is not posted either.
		pb, ok := d.set.Match(it.Alert.Labels)
		if !ok {
			it.Unmatched = true
			d.count("unmatched")
			d.log.Info().Str("alertname", it.Alert.Labels["alertname"]).Str("group_key", n.GroupKey).Bool("resolved", resolved).Msg("no playbook matches alert")
			continue
		}
		if resolved {
			d.count("resolved")
			continue
		}
		d.count("diagnosed")
		if _, seen := byPB[pb]; !seen {
			pbs = append(pbs, pb)
		}
		byPB[pb] = append(byPB[pb], it)
		total++
	}
	if d.opt.StormThreshold > 0 && total > d.opt.StormThreshold {
		// A storm: one run per playbook over what its alerts share, each alert pointing at it.
		d.forEach(len(pbs), func(i int) {
			items := byPB[pbs[i]]
			diag := d.run(pbs[i], commonLabels(items))
			diag.Notes = append(diag.Notes, fmt.Sprintf("alert storm: %d alerts summarised by one diagnosis from group-wide queries; "+
				"per-alert detail with /vllm triage or responder triage", len(items)))
			for _, it := range items {
				it.Diagnosis = diag
			}
		})
	} else {
		var todo []*notify.Item
		var runs []*playbooks.Playbook
		for _, pb := range pbs {
			for _, it := range byPB[pb] {
				todo, runs = append(todo, it), append(runs, pb)
			}
		}
		d.forEach(len(todo), func(i int) { todo[i].Diagnosis = d.run(runs[i], todo[i].Alert.Labels) })
	}

	if !worthNotifying(n) {
		d.confirm(j.claims)
		return
	}
	ctx, cancel := context.WithTimeoutCause(context.Background(), d.opt.NotifyTimeout, errors.New("notify deadline exceeded"))
	defer cancel()
	if d.m != nil {
		d.m.TimeToDiagnosis.Observe(time.Since(n.ReceivedAt).Seconds())
	}
	if _, err := d.notifier.Notify(ctx, n); err != nil {
		// Drop the claims: Alertmanager re-sends the group (repeat_interval), and that re-send
		// must be diagnosed and posted again rather than discarded as a duplicate.
		d.log.Error().Err(err).Str("group_key", n.GroupKey).Int("alerts", len(n.Items)).
			Msg("notification failed; the alerts will be handled again when Alertmanager re-sends them")
		d.unclaim(j.claims)
		return
	}
	d.confirm(j.claims)
}

// forEach calls f(0..n-1) on at most RunConcurrency goroutines.
func (d *Dispatcher) forEach(n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, d.opt.RunConcurrency) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				f(i)
			}
		})
	}
	wg.Wait()
}

// commonLabels are the labels every item carries with the same value: the scope of a
// group-wide diagnosis (a label that differs, such as pod, is left out, and the queries cover
// every value of it).
func commonLabels(items []*notify.Item) map[string]string {
	out := map[string]string{}
	if len(items) == 0 {
		return out
	}
	for k, v := range items[0].Alert.Labels {
		out[k] = v
	}
	for _, it := range items[1:] {
		for k, v := range out {
			if it.Alert.Labels[k] != v {
				delete(out, k)
			}
		}
	}
	return out
}

// worthNotifying: a notification whose alerts no playbook knows (firing or resolved) is logged,
// not posted.
func worthNotifying(n *notify.Notification) bool {
	for _, it := range n.Items {
		if !it.Unmatched {
			return true
		}
	}
	return false
}

func (d *Dispatcher) run(pb *playbooks.Playbook, labels map[string]string) *playbooks.Diagnosis {
	ctx, cancel := context.WithTimeoutCause(context.Background(), d.opt.RunTimeout, errors.New("diagnosis deadline exceeded"))
	defer cancel()
	diag, err := d.engine.Run(ctx, pb, labels)
	if err != nil {
		d.log.Warn().Err(err).Str("playbook", pb.Name).Msg("diagnosis degraded")
	}
	if d.m != nil {
		d.m.PlaybookRuns.WithLabelValues(diag.Verdict).Inc()
		d.m.RunDuration.Observe(diag.Duration.Seconds())
	}
	d.log.Info().Str("playbook", pb.Name).Str("verdict", diag.Verdict).Strs("missing", diag.Missing).
		Dur("duration", diag.Duration).Str("scope", scopeString(diag.Scope)).Msg("diagnosis")
	return diag
}

func scopeString(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}
