package slack

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/alertmanager/template"
	"github.com/rs/zerolog"
	slackgo "github.com/slack-go/slack"

	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/store"
)

// Store key prefixes.
const (
	threadKeyPrefix = "slack:thread:"
	parentKeyPrefix = "slack:parent:"
	// unansweredKeyPrefix marks a group whose parent post timed out without an answer: it may
	// be in the channel, so the retry looks for it before posting again.
	unansweredKeyPrefix = "slack:unanswered:"
	// parentEventType is the message metadata that marks a parent message, with its group.
	parentEventType = "vllm_responder_parent"
)

// errParentPending is returned when another worker or replica holds the right to create a
// group's parent message and its thread is not there yet: the notification is retried.
var errParentPending = errors.New("another replica is creating this group's Slack message")

// notifierOptions are what newNotifier needs. Config, Store and API are required.
type notifierOptions struct {
	Config *Config
	Store  store.Store
	API    *webAPI
	Logger zerolog.Logger
	// Prometheus answers the charts' range queries; nil means no charts.
	Prometheus RangeQuerier
	// Silence shows the Silence button (an Alertmanager URL is configured).
	Silence bool
	// Capture shows the Capture profile button (a capturer is configured).
	Capture bool
	// StormThreshold: more firing alerts than this are one storm summary (dispatch.storm_threshold).
	StormThreshold int
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// notifier posts diagnoses to Slack. It implements notify.Notifier.
type notifier struct {
	cfg   *Config
	store store.Store
	api   *webAPI
	log   zerolog.Logger
	prom  RangeQuerier
	// render is what its messages show besides the diagnoses (render.go).
	render renderOptions
	now    func() time.Time
	// channel is the configured channel, resolved to its id at the first post.
	channel *channelRef
}

var _ notify.Notifier = (*notifier)(nil)

// newNotifier returns a notifier. cfg must have had SetDefaults and Validate.
func newNotifier(o notifierOptions) (*notifier, error) {
	switch {
	case o.Config == nil:
		return nil, errors.New("slack notifier: no config")
	case o.Store == nil:
		return nil, errors.New("slack notifier: no store")
	case o.API == nil:
		return nil, errors.New("slack notifier: no API")
	case !o.Config.BotToken.IsSet():
		return nil, errors.New("slack notifier: bot_token is not set")
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	log := o.Logger
	return &notifier{
		channel: newChannelRef(o.Config, o.API, o.Store, log, now),
		cfg:     o.Config,
		store:   o.Store,
		api:     o.API,
		log:     o.Logger,
		prom:    o.Prometheus,
		now:     now,
		render:  newRenderOptions(o.Config, o.Silence, o.Capture, o.StormThreshold),
	}, nil
}

// thread is what the store remembers of a group's Slack message.
type thread struct {
	GroupKey  string `json:"group_key"`
	Channel   string `json:"channel"`
	TS        string `json:"ts"`
	Alertname string `json:"alertname"`
	Status    string `json:"status"`
	// Verdicts maps the fingerprint of every alert shown in the thread to its last verdict, so
	// that only news is posted.
	Verdicts map[string]string `json:"verdicts"`
	// Starts maps the same fingerprints to the alert's startsAt (Unix ms): an alert that fires
	// again (a new startsAt) is a new incident and is posted, whatever its verdict.
	Starts     map[string]int64 `json:"starts,omitempty"`
	StartedAt  time.Time        `json:"started_at"`
	ResolvedAt time.Time        `json:"resolved_at,omitzero"`
	UpdatedAt  time.Time        `json:"updated_at"`
	// Blocks and Text are the parent message, kept for the edit that marks it resolved.
	Blocks json.RawMessage `json:"blocks,omitempty"`
	Text   string          `json:"text,omitempty"`
	// Incident is the id of the incident whose thread this is (incident.go; "" for a group's);
	// IncidentSeq the change of it the parent shows; Body the diagnosis below the incident.
	Incident    string          `json:"incident,omitempty"`
	IncidentSeq int64           `json:"incident_seq,omitempty"`
	Body        json.RawMessage `json:"body,omitempty"`
}

func hashKey(groupKey string) string { return notify.GroupHash(groupKey) }

// threadKey is the store key of a group's thread.
func threadKey(groupKey string) string { return threadKeyPrefix + hashKey(groupKey) }

// parentKey is the store claim that lets one replica create a group's parent message.
func parentKey(groupKey string) string { return parentKeyPrefix + hashKey(groupKey) }

func (n *notifier) loadThread(ctx context.Context, groupKey string) (*thread, error) {
	b, ok, err := n.store.Get(ctx, threadKey(groupKey))
	if err != nil || !ok {
		return nil, err
	}
	var t thread
	if err := json.Unmarshal(b, &t); err != nil {
		n.log.Warn().Err(err).Str("group_key", groupKey).Msg("unreadable slack thread record; starting a new thread")
		return nil, nil
	}
	return &t, nil
}

func (n *notifier) saveThread(ctx context.Context, t *thread) error {
	t.UpdatedAt = n.now()
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if err := n.store.Set(ctx, threadKey(t.GroupKey), b, n.cfg.ThreadTTL); err != nil {
		return err
	}
	n.index(ctx, t)
	return nil
}

// recentKey is the index of the most recent threads, which `/vllm status` reads instead of
// every thread record in the store.
const recentKey = "slack:recent"

// maxRecent bounds the index.
const maxRecent = 100

type recentEntry struct {
	Group string `json:"group"` // hashKey of the group key
	incident
	UpdatedAt time.Time `json:"updated_at"`
}

// index records t in the index of recent threads (newest started first, one entry per group,
// at most maxRecent): one atomic put (store.Recents), so replicas lose nothing to each other.
func (n *notifier) index(ctx context.Context, t *thread) {
	e := recentEntry{Group: hashKey(t.GroupKey), UpdatedAt: t.UpdatedAt, incident: incident{Alertname: t.Alertname, Status: t.Status,
		Channel: t.Channel, TS: t.TS, StartedAt: t.StartedAt, ResolvedAt: t.ResolvedAt, Alerts: len(t.Verdicts)}}
	b, err := json.Marshal(e)
	if err == nil {
		err = n.store.PutRecent(ctx, recentKey, []store.RecentEntry{{ID: e.Group, At: e.StartedAt, Val: b}}, maxRecent, n.cfg.ThreadTTL)
	}
	if err != nil {
		n.log.Warn().Err(err).Msg("updating the index of recent slack threads")
	}
}

// Notify posts a group notification: a parent message the first time, a thread reply when
// something changed, an edit of the parent and a reply when the group resolves.
func (n *notifier) Notify(ctx context.Context, nt *notify.Notification) (bool, error) {
	log := n.log.With().Str("group_key", nt.GroupKey).Str("status", nt.Status).Int("items", len(nt.Items)).Logger()
	if n.render.Buttons {
		n.keepRecords(ctx, nt)
	}
	if nt.Incident != nil && nt.GroupKey != "" {
		// The alerts of an incident: its thread is kept, claimed and found again under the
		// incident's key, whatever their group (incident.go).
		sub := *nt
		sub.GroupKey = incidentThreadKey(nt.Incident.ID)
		nt = &sub
		log = log.With().Str("incident", nt.Incident.ID).Logger()
	}
	if nt.GroupKey == "" {
		// An on-demand diagnosis: one message, no thread to remember.
		if len(firing(nt.Items)) == 0 {
			return false, nil
		}
		v := n.parentView(nt, firing(nt.Items))
		th, err := n.postParent(ctx, nt, v)
		if err == nil {
			n.postSlowest(ctx, log, th, v)
		}
		return retry(err)
	}
	th, err := n.loadThread(ctx, nt.GroupKey)
	storeDown := false
	if err != nil {
		if !errors.Is(err, store.ErrUnavailable) || len(firing(nt.Items)) == 0 {
			return true, fmt.Errorf("slack thread for group: %w", err)
		}
		// The store is down: post a new message rather than lose the diagnosis (a duplicate
		// message beats a lost alert, as in dispatch's deduplication).
		log.Warn().Err(err).Msg("slack thread state unavailable; posting a new message for this group")
		th, storeDown = nil, true
	}
	if th == nil && !storeDown {
		// The group's last parent post may have timed out and landed all the same.
		adopted, err := n.adoptUnanswered(ctx, log, nt)
		if err != nil {
			return retry(err)
		}
		if adopted != nil {
			// What the post that landed did not show (a newer state of the group, its
			// resolution) follows in its thread; the charts it never got are posted.
			if err := n.followUp(ctx, log, nt, adopted); err != nil {
				return retry(err)
			}
			if items := firing(nt.Items); !nt.Resolved() && len(items) > 0 {
				v := n.parentView(nt, items)
				n.postCharts(ctx, log, adopted, v)
				n.postSlowest(ctx, log, adopted, v)
			}
			return false, nil
		}
	}
	if th != nil && th.Status == notify.StatusResolved && th.Incident != "" && nt.Incident != nil && nt.Incident.Open() {
		// An alert of the incident fired again within the quiet time: the same thread.
		th.Status, th.ResolvedAt = notify.StatusFiring, time.Time{}
	}
	if th != nil && th.Status != notify.StatusResolved {
		return retry(n.followUp(ctx, log, nt, th))
	}
	items := firing(nt.Items)
	if nt.Resolved() || len(items) == 0 {
		// A parent of this group may be on its way (a slow Slack, another worker or replica
		// holds the claim to create it): the resolution is retried until it is there, not lost.
		if !storeDown && n.parentPending(ctx, nt.GroupKey) {
			return parentInFlight(log)
		}
		// Nothing open to resolve or reply to, and nothing new firing.
		log.Debug().Msg("no open slack thread for this group and nothing firing; nothing to post")
		n.api.metrics.Messages.WithLabelValues("skipped").Inc()
		return false, nil
	}
	claimTTL := max(2*n.cfg.ParentWait, time.Minute)
	won := true
	if !storeDown {
		won, err = n.store.Claim(ctx, parentKey(nt.GroupKey), claimTTL)
		switch {
		case errors.Is(err, store.ErrUnavailable):
			log.Warn().Err(err).Msg("slack parent claim unavailable; posting a new message for this group")
			won, storeDown = true, true
		case err != nil:
			return true, fmt.Errorf("claiming the group's parent message: %w", err)
		}
	}
	if !won {
		return parentInFlight(log)
	}
	v := n.parentView(nt, items)
	start := n.now()
	th, err = n.postParent(ctx, nt, v)
	if unanswered(err) {
		n.markUnanswered(ctx, log, nt, v, start)
	}
	if err != nil {
		// Let a retry (here or on another replica) create the parent.
		if storeDown {
			return retry(err)
		}
		if uerr := n.store.Unclaim(context.WithoutCancel(ctx), parentKey(nt.GroupKey)); uerr != nil {
			log.Warn().Err(uerr).Msg("releasing the parent message claim")
		}
		return retry(err)
	}
	if err := n.saveThread(ctx, th); err != nil {
		// The message is out; a lost thread only means later news starts a new message.
		log.Error().Err(err).Msg("saving slack thread state")
	}
	n.postCharts(ctx, log, th, v)
	n.postSlowest(ctx, log, th, v)
	return false, nil
}

// retry turns an error into Notify's (retry, err).
func retry(err error) (bool, error) {
	if err == nil {
		return false, nil
	}
	return isRetryable(err) || errors.Is(err, store.ErrUnavailable), err
}

// firing are the items that fire: items itself when none resolved (a notification of 10,000
// alerts is not copied for nothing).
func firing(items []notify.Item) []notify.Item {
	i := slices.IndexFunc(items, func(it notify.Item) bool { return it.Alert.Status == notify.StatusResolved })
	if i < 0 {
		return items
	}
	out := items[:i:i] // appending copies: items is left as it is
	for _, it := range items[i+1:] {
		if it.Alert.Status != notify.StatusResolved {
			out = append(out, it)
		}
	}
	return out
}

// parentPending reports whether someone holds the claim to create the group's parent message
// (it is held from before the post until the group resolves).
func (n *notifier) parentPending(ctx context.Context, groupKey string) bool {
	_, ok, err := n.store.Get(ctx, parentKey(groupKey))
	return err == nil && ok
}

// parentInFlight hands the notification back to the retry loop while another worker or replica
// creates the group's parent message (it holds the claim): the retry finds the thread and
// replies in it, or resolves it.
func parentInFlight(log zerolog.Logger) (bool, error) {
	log.Debug().Msg("the group's parent message is being created elsewhere; retrying to reply in its thread")
	return true, &retryableError{Err: errParentPending}
}

type unansweredPost struct {
	At      time.Time `json:"at"`
	Channel string    `json:"channel"` // the channel's id, when known
	// Thread is the record of the post that timed out (what it showed), adopted if it landed.
	Thread *thread `json:"thread,omitempty"`
}

// unansweredWait is how long, in request timeouts from its start, a parent post that timed out
// may still land in the channel: until then a retry that does not find it in the history waits
// (is retried) instead of posting a second parent. Slack may carry a post out only as it answers,
// after the responder gave up on it (the post that timed out at 10 s and was answered at 12 s).
const unansweredWait = 2

// errUnansweredPending is returned while the group's last parent post timed out, is not in the
// channel's history yet, and may still land there.
var errUnansweredPending = errors.New("the group's last parent post timed out and may still land in the channel; not posting a second one yet")

// markUnanswered records that a parent post of the group, showing v, timed out without an
// answer.
func (n *notifier) markUnanswered(ctx context.Context, log zerolog.Logger, nt *notify.Notification, v *notify.View, at time.Time) {
	blocks, text := parentBlocks(v, n.render)
	rec := unansweredPost{At: at, Channel: n.channel.ID(ctx), Thread: n.newThread(nt, v, blocks, text, "", "")}
	b, _ := json.Marshal(rec)
	if err := n.store.Set(context.WithoutCancel(ctx), unansweredKeyPrefix+hashKey(nt.GroupKey), b, time.Hour); err != nil {
		log.Warn().Err(err).Msg("recording an unanswered parent post")
	}
}

// adoptUnanswered looks, after a parent post of the group timed out, for that post in the
// channel's history (by its metadata): Slack may have carried it out and answered too late. It
// returns the thread record of the post found (saved, as the post showed it); nil when there is
// nothing to wait for (no post timed out, it cannot be looked up, or it did not land within
// unansweredWait: the parent is posted again); errUnansweredPending while it may still land.
func (n *notifier) adoptUnanswered(ctx context.Context, log zerolog.Logger, nt *notify.Notification) (*thread, error) {
	key := unansweredKeyPrefix + hashKey(nt.GroupKey)
	b, ok, err := n.store.Get(ctx, key)
	if err != nil || !ok {
		return nil, nil
	}
	var rec unansweredPost
	if json.Unmarshal(b, &rec) != nil {
		_ = n.store.Delete(ctx, key)
		return nil, nil
	}
	ch := cmp.Or(rec.Channel, n.channel.ID(ctx))
	if ch == "" {
		log.Warn().Msg("the last parent post timed out and the channel's id is unknown: posting again (it may duplicate)")
		return nil, nil
	}
	oldest := fmt.Sprintf("%d.000000", rec.At.Add(-time.Minute).Unix())
	msgs, err := n.api.History(ctx, ch, oldest)
	if err != nil {
		log.Warn().Err(err).Msg("could not read the channel's history for the last parent post: posting again (it may duplicate)")
		return nil, nil
	}
	for _, m := range msgs {
		if m.Metadata.EventType != parentEventType || m.Metadata.EventPayload["group"] != hashKey(nt.GroupKey) || m.ThreadTimestamp != "" && m.ThreadTimestamp != m.Timestamp {
			continue
		}
		th := rec.Thread
		if th == nil { // a record written before it kept the post's thread
			v := n.parentView(nt, firing(nt.Items))
			blocks, text := parentBlocks(v, n.render)
			th = n.newThread(nt, v, blocks, text, "", "")
		}
		th.Channel, th.TS = ch, m.Timestamp
		if err := n.saveThread(ctx, th); err != nil {
			log.Error().Err(err).Msg("saving slack thread state")
		}
		_ = n.store.Delete(ctx, key)
		log.Info().Str("thread_ts", th.TS).Msg("the parent post that timed out is in the channel; not posting it again")
		return th, nil
	}
	if wait := unansweredWait * n.cfg.RequestTimeout; n.now().Before(rec.At.Add(wait)) {
		return nil, &retryableError{Err: errUnansweredPending}
	}
	log.Warn().Dur("waited", unansweredWait*n.cfg.RequestTimeout).Msg("the parent post that timed out is not in the channel: posting it again")
	_ = n.store.Delete(ctx, key)
	return nil, nil
}

// parentView is the view of a group's first message: its firing items.
func (n *notifier) parentView(nt *notify.Notification, items []notify.Item) *notify.View {
	sub := *nt
	sub.Items = items
	sub.Status = notify.StatusFiring
	return notify.NewView(&sub, n.render.View)
}

// postParent posts the group's first message (the view of its firing items) and returns its
// thread record.
func (n *notifier) postParent(ctx context.Context, nt *notify.Notification, v *notify.View) (*thread, error) {
	blocks, text := parentBlocks(v, n.render)
	opts := []slackgo.MsgOption{slackgo.MsgOptionBlocks(blocks...), slackgo.MsgOptionText(text, false), slackgo.MsgOptionDisableLinkUnfurl()}
	if nt.GroupKey != "" {
		// Marks the parent with its group, so a retry after a timeout can find it.
		opts = append(opts, slackgo.MsgOptionMetadata(slackgo.SlackMetadata{EventType: parentEventType,
			EventPayload: map[string]any{"group": hashKey(nt.GroupKey)}}))
	}
	target := n.channel.target(ctx)
	ch, ts, err := n.api.Post(ctx, target, opts...)
	if err != nil {
		return nil, err
	}
	n.channel.posted(ctx, target, ch)
	kind := "parent"
	if v.Summarised {
		kind = "storm"
	}
	n.api.metrics.Messages.WithLabelValues(kind).Inc()
	return n.newThread(nt, v, blocks, text, ch, ts), nil
}

// newThread is the thread record of a group's (or an incident's) parent message (the view of
// its firing alerts).
func (n *notifier) newThread(nt *notify.Notification, v *notify.View, blocks []slackgo.Block, text, ch, ts string) *thread {
	raw, _ := json.Marshal(blocks)
	th := &thread{
		GroupKey: nt.GroupKey, Channel: ch, TS: ts, Alertname: v.Alertname,
		Status: notify.StatusFiring, Verdicts: map[string]string{}, Starts: map[string]int64{},
		Blocks: raw, Text: text,
	}
	if inc := nt.Incident; inc != nil && v.Incident != nil {
		th.Incident, th.IncidentSeq, th.Alertname = inc.ID, inc.Seq, "incident "+v.Incident.Name()
		th.Body, _ = json.Marshal(bodyBlocks(v, n.render))
	}
	for _, av := range v.Firing {
		fp := fingerprint(av.Alert)
		th.Verdicts[fp] = verdictOf(av)
		th.Starts[fp] = av.StartsAt.UnixMilli()
		if s := av.StartsAt; !s.IsZero() && (th.StartedAt.IsZero() || s.Before(th.StartedAt)) {
			th.StartedAt = s // the earliest start
		}
	}
	th.StartedAt = cmp.Or(th.StartedAt, nt.ReceivedAt)
	return th
}

// verdictOf is the verdict a thread remembers of an alert: its diagnosis', or "unmatched".
func verdictOf(av notify.AlertView) string {
	if av.Diagnosis == nil {
		return "unmatched"
	}
	return av.Diagnosis.Verdict
}

// fingerprint identifies an alert in its thread: Alertmanager's fingerprint, or (not from
// Alertmanager) its sorted labels.
func fingerprint(a template.Alert) string {
	if a.Fingerprint != "" {
		return a.Fingerprint
	}
	return strings.Join(a.Labels.SortedPairs().Names(), ",") + "=" + strings.Join(a.Labels.SortedPairs().Values(), ",")
}

// followUp replies in an open thread when something changed, and marks the parent resolved when
// the group resolved.
func (n *notifier) followUp(ctx context.Context, log zerolog.Logger, nt *notify.Notification, th *thread) error {
	if nt.Incident != nil && th.Incident == nt.Incident.ID {
		return n.followIncident(ctx, log, nt, th)
	}
	if nt.Resolved() {
		return n.resolve(ctx, log, nt, th)
	}
	news, resolved := th.news(nt)
	if len(news) == 0 && len(resolved) == 0 {
		log.Debug().Msg("nothing changed in the group; no thread reply")
		n.api.metrics.Messages.WithLabelValues("skipped").Inc()
		return nil
	}
	blocks, text := replyBlocks(nt, news, resolved, th.Alertname, n.render)
	return n.reply(ctx, log, th, blocks, text)
}

// news is what nt brings to the thread: alerts new to it, fired again or with another verdict,
// and alerts of it that resolved; the thread's record of its alerts is updated.
func (th *thread) news(nt *notify.Notification) (news []change, resolved []notify.Item) {
	if th.Verdicts == nil {
		th.Verdicts = map[string]string{}
	}
	if th.Starts == nil {
		th.Starts = map[string]int64{}
	}
	for _, it := range nt.Items {
		fp := fingerprint(it.Alert)
		if it.Alert.Status == notify.StatusResolved {
			if _, ok := th.Verdicts[fp]; ok {
				resolved = append(resolved, it)
				delete(th.Verdicts, fp)
				if th.Incident == "" {
					delete(th.Starts, fp)
				} // an incident's member that fires again (a new start) is told so
			}
			continue
		}
		v := it.Verdict()
		old, known := th.Verdicts[fp]
		start := it.Alert.StartsAt.UnixMilli()
		prevStart, seen := th.Starts[fp]
		th.Starts[fp] = start
		c := change{item: it}
		switch {
		case seen && prevStart != start:
			// It resolved and fired again (its resolution may never have reached this thread):
			// a new incident, posted whatever its verdict.
			c.kind = changeFiredAgain
		case !known:
			c.kind = changeNew
		case old != v:
			c.kind, c.was = changeVerdict, old
		default:
			continue
		}
		th.Verdicts[fp] = v
		news = append(news, c)
	}
	return news, resolved
}

// resolve edits the parent to show the group resolved and for how long, and replies in the thread.
func (n *notifier) resolve(ctx context.Context, log zerolog.Logger, nt *notify.Notification, th *thread) error {
	end := nt.ReceivedAt
	for _, it := range nt.Items {
		if e := it.Alert.EndsAt; !e.IsZero() && e.After(th.StartedAt) && (end.IsZero() || e.After(end) || end.Equal(nt.ReceivedAt)) {
			end = e
		}
	}
	if end.IsZero() {
		end = n.now()
	}
	blocks, text, reply := resolvedMessage(th, end)
	return n.closeThread(ctx, log, th, blocks, text, reply, end)
}

// closeThread edits the thread's parent to its resolved blocks and text, records the thread
// resolved at end, frees the claim on its parent (the next firing is a new message) and replies
// in it.
func (n *notifier) closeThread(ctx context.Context, log zerolog.Logger, th *thread, blocks []slackgo.Block, text, reply string, end time.Time) error {
	if err := n.api.Update(ctx, th.Channel, th.TS, slackgo.MsgOptionBlocks(blocks...), slackgo.MsgOptionText(text, false)); err != nil {
		return err
	}
	th.Status = notify.StatusResolved
	th.ResolvedAt = end
	if err := n.saveThread(ctx, th); err != nil {
		log.Error().Err(err).Msg("saving slack thread state")
	}
	if err := n.store.Unclaim(ctx, parentKey(th.GroupKey)); err != nil {
		log.Warn().Err(err).Msg("releasing the parent message claim")
	}
	// The parent already says resolved: the reply is retried only when Slack asks to come back
	// (a retry of the whole notification would edit the parent again).
	if err := rateLimitRetried(ctx, n.cfg, func(ctx context.Context) error {
		_, _, err := n.api.Post(ctx, th.Channel, slackgo.MsgOptionTS(th.TS), slackgo.MsgOptionText(reply, false))
		return err
	}); err != nil {
		log.Warn().Err(err).Msg("posting the resolution reply")
	}
	n.api.metrics.Messages.WithLabelValues("resolved").Inc()
	return nil
}

// reply posts blocks (and their fallback text) in the thread, and saves the thread's record.
func (n *notifier) reply(ctx context.Context, log zerolog.Logger, th *thread, blocks []slackgo.Block, text string) error {
	if _, _, err := n.api.Post(ctx, th.Channel, slackgo.MsgOptionTS(th.TS), slackgo.MsgOptionBlocks(blocks...),
		slackgo.MsgOptionText(text, false), slackgo.MsgOptionDisableLinkUnfurl()); err != nil {
		return err
	}
	n.api.metrics.Messages.WithLabelValues("reply").Inc()
	if err := n.saveThread(ctx, th); err != nil {
		log.Error().Err(err).Msg("saving slack thread state")
	}
	return nil
}

// IncidentThread is the channel and timestamp of an incident's parent message.
func (n *notifier) IncidentThread(ctx context.Context, id string) (channel, ts string, ok bool) {
	th, err := n.loadThread(ctx, incidentThreadKey(id))
	if err != nil || th == nil || th.TS == "" {
		return "", "", false
	}
	return th.Channel, th.TS, true
}

// incident is a group the Slack app posted recently (for `/vllm status`).
type incident struct {
	Alertname  string
	Status     string
	Channel    string
	TS         string
	StartedAt  time.Time
	ResolvedAt time.Time
	Alerts     int
}

// RecentIncidents lists the most recent threads, newest first, from their index (one record,
// however many threads the store holds).
func (n *notifier) RecentIncidents(ctx context.Context, limit int) ([]incident, error) {
	es, err := n.store.Recent(ctx, recentKey, 0)
	if err != nil {
		return nil, err
	}
	// Threads not saved for thread_ttl have expired from the store: leave them out here too.
	cutoff := n.now().Add(-n.cfg.ThreadTTL)
	var out []incident
	for _, e := range es {
		var r recentEntry
		if err := json.Unmarshal(e.Val, &r); err != nil {
			return nil, fmt.Errorf("unreadable index of recent threads: %w", err)
		}
		if !r.UpdatedAt.Before(cutoff) {
			out = append(out, r.incident)
		}
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
