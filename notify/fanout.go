package notify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/vllm-responder/vllm-responder/store"
)

// Target is one destination of a Fanout: a notifier (already wrapped in its own Retrying, with
// its own policy) and the name it is known by in logs, metrics and delivery records.
type Target struct {
	Name     string
	Notifier Notifier
}

// Outcomes of one target's delivery, the label values of the deliveries metric.
const (
	DeliveryOK               = "ok"
	DeliveryFailed           = "failed"
	DeliveryAlreadyDelivered = "already_delivered" // a re-send of a state this target already has
)

// FanoutMetrics counts each target's deliveries by outcome.
type FanoutMetrics struct {
	Deliveries *prometheus.CounterVec
}

// NewFanoutMetrics creates the series of the targets named (at zero) and registers them with
// reg (nil: not registered).
func NewFanoutMetrics(reg prometheus.Registerer, targets ...string) *FanoutMetrics {
	m := &FanoutMetrics{Deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vllm_responder_notifier_deliveries_total",
		Help: "Deliveries of a notification to each notifier (retries included), by notifier and outcome: ok, failed, already_delivered.",
	}, []string{"notifier", "outcome"})}
	for _, t := range targets {
		for _, o := range []string{DeliveryOK, DeliveryFailed, DeliveryAlreadyDelivered} {
			m.Deliveries.WithLabelValues(t, o)
		}
	}
	if reg != nil {
		reg.MustRegister(m.Deliveries)
	}
	return m
}

// deliveredKeyPrefix is the store record of a group state that a target has posted.
const deliveredKeyPrefix = "delivered:"

// Fanout delivers every notification to several notifiers (Slack, Teams, the signed webhooks)
// at once, and keeps dispatch's promise of one post per group state for each of them.
//
// The targets run concurrently within the one deadline of the context, so a slow or failing
// target neither delays nor loses the others' posts. When one fails, Notify fails (dispatch then
// drops its claims, and Alertmanager's next re-send is diagnosed again): a target that had
// delivered that state is not posted to again, because each success is recorded in the store,
// under the state's alerts (group key, status, fingerprint, startsAt), for Remember.
type Fanout struct {
	Targets []Target
	// Store keeps the delivery records (shared between replicas through Redis). When it fails
	// the target is posted to anyway: a duplicate post beats a lost one.
	Store store.Store
	// Remember is how long a delivery is remembered (dispatch.dedup_window).
	Remember time.Duration
	Logger   zerolog.Logger
	Metrics  *FanoutMetrics
}

// Notify implements Notifier. It returns retry=false: each target retries in its own wrapper.
func (f *Fanout) Notify(ctx context.Context, n *Notification) (bool, error) {
	if len(f.Targets) == 1 {
		// One target: dispatch's claims alone make each state one post.
		err := f.deliver(ctx, f.Targets[0], n, "")
		return false, err
	}
	state := ""
	if n.GroupKey != "" && f.Store != nil {
		state = StateHash(n)
	}
	errs := make([]error, len(f.Targets))
	var wg sync.WaitGroup
	for i, t := range f.Targets {
		wg.Go(func() { errs[i] = f.deliver(ctx, t, n, state) })
	}
	wg.Wait()
	return false, errors.Join(errs...)
}

func (f *Fanout) deliver(ctx context.Context, t Target, n *Notification, state string) error {
	log := f.Logger.With().Str("notifier", t.Name).Str("group_key", n.GroupKey).Logger()
	key := ""
	if state != "" {
		key = deliveredKeyPrefix + t.Name + ":" + state
		switch _, ok, err := f.Store.Get(ctx, key); {
		case err != nil:
			log.Warn().Err(err).Msg("delivery record unavailable; posting (it may be a duplicate)")
		case ok:
			log.Info().Msg("this group state was already delivered to this notifier; not posting it again")
			f.count(t.Name, DeliveryAlreadyDelivered)
			return nil
		}
	}
	if _, err := t.Notifier.Notify(ctx, n); err != nil {
		f.count(t.Name, DeliveryFailed)
		log.Error().Err(err).Msg("notifier failed")
		return fmt.Errorf("%s: %w", t.Name, err)
	}
	f.count(t.Name, DeliveryOK)
	if key != "" {
		rec, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if err := f.Store.Set(rec, key, []byte{1}, f.Remember); err != nil {
			log.Warn().Err(err).Msg("delivery not recorded; a re-send after another notifier's failure may post it again")
		}
	}
	return nil
}

func (f *Fanout) count(target, outcome string) {
	if f.Metrics != nil {
		f.Metrics.Deliveries.WithLabelValues(target, outcome).Inc()
	}
}

// StateHash identifies what a notification delivers: its group and each of its alerts' status,
// fingerprint (or labels) and startsAt, in any order. A re-send of the same state has the same
// hash whatever its diagnosis says.
func StateHash(n *Notification) string {
	parts := make([]string, 0, len(n.Items))
	for _, it := range n.Items {
		a := it.Alert
		id := a.Fingerprint
		if id == "" {
			keys := make([]string, 0, len(a.Labels))
			for k := range a.Labels {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				id += k + "\xff" + a.Labels[k] + "\xff"
			}
		}
		status := a.Status
		if status == "" {
			status = n.Status
		}
		parts = append(parts, status+"\x00"+id+"\x00"+strconv.FormatInt(a.StartsAt.UnixMilli(), 10))
	}
	slices.Sort(parts)
	h := sha256.New()
	h.Write([]byte(n.GroupKey))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
