package slack

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	slackgo "github.com/slack-go/slack"

	"github.com/vllm-responder/vllm-responder/notify"
	"github.com/vllm-responder/vllm-responder/silence"
)

// click is one button press with where it happened.
type click struct {
	action   string
	labels   map[string]string // a signed button's, checked
	value    string            // an unsigned one's (the select's option)
	userID   string
	userName string
	channel  string
	threadTS string
}

// HandleInteraction starts the work behind a button click (the buttonTable's entry for its
// action); the click itself is acknowledged by the caller at once.
func (a *app) HandleInteraction(cb slackgo.InteractionCallback) {
	if cb.Type != slackgo.InteractionTypeBlockActions || len(cb.ActionCallback.BlockActions) == 0 {
		a.metrics.Interactions.WithLabelValues("unknown").Inc()
		return
	}
	act := cb.ActionCallback.BlockActions[0]
	c := click{
		action: act.ActionID, userID: cb.User.ID, userName: cmp.Or(cb.User.Name, cb.User.Username),
		channel: cmp.Or(cb.Channel.ID, cb.Container.ChannelID),
		// Reply in the thread the button is in: the message's own thread, or the message as parent.
		threadTS: cmp.Or(cb.Message.ThreadTimestamp, cb.Message.Timestamp, cb.Container.MessageTs),
	}
	log := a.log.With().Str("action", c.action).Str("user_id", c.userID).Str("channel_id", c.channel).Logger()
	b, ok := findButton(c.action)
	if !ok {
		a.metrics.Interactions.WithLabelValues("unknown").Inc()
		log.Warn().Msg("unknown button")
		return
	}
	if b.signed {
		v, err := decodeButtonValue(a.cfg.buttonKey(), act.ActionID, act.Value)
		if err != nil {
			a.metrics.Interactions.WithLabelValues("unknown").Inc()
			log.Warn().Err(err).Msg("unreadable button value")
			return
		}
		c.labels = v.Labels
	} else {
		c.value = act.SelectedOption.Value
	}
	a.metrics.Interactions.WithLabelValues(b.metric).Inc()
	a.goWork(b.metric, func(ctx context.Context) { b.click(a, ctx, log, c) })
}

// inThread posts a reply in the button's thread.
func (a *app) inThread(ctx context.Context, log zerolog.Logger, c click, opts ...slackgo.MsgOption) {
	opts = append(opts, slackgo.MsgOptionDisableLinkUnfurl())
	if c.threadTS != "" {
		opts = append(opts, slackgo.MsgOptionTS(c.threadTS))
	}
	if err := rateLimitRetried(ctx, a.cfg, func(ctx context.Context) error {
		_, _, err := a.api.Post(ctx, c.channel, opts...)
		return err
	}); err != nil {
		log.Error().Err(err).Msg("replying in the thread")
	}
}

// tell shows a message to the clicking user only.
func (a *app) tell(ctx context.Context, log zerolog.Logger, c click, text string) {
	opts := []slackgo.MsgOption{slackgo.MsgOptionText(text, false)}
	if c.threadTS != "" {
		opts = append(opts, slackgo.MsgOptionTS(c.threadTS))
	}
	if err := rateLimitRetried(ctx, a.cfg, func(ctx context.Context) error { return a.api.Ephemeral(ctx, c.channel, c.userID, opts...) }); err != nil {
		log.Error().Err(err).Msg("telling the user")
	}
}

func (a *app) rerun(ctx context.Context, log zerolog.Logger, c click) {
	res, err := a.triager.Triage(ctx, c.labels)
	if err != nil {
		log.Error().Err(err).Msg("re-run triage failed")
		a.tell(ctx, log, c, ":x: Re-run failed: "+oneLine(err))
		return
	}
	d := res.Diagnosis
	blocks := answerBlocks(fmt.Sprintf(":arrows_counterclockwise: Triage re-run by <@%s>", c.userID), d, a.diagnosisButtons(ctx, d))
	a.inThread(ctx, log, c, slackgo.MsgOptionBlocks(blocks...), slackgo.MsgOptionText("Re-run: "+cmp.Or(d.Title, d.Verdict), false))
}

func (a *app) silenceAlert(ctx context.Context, log zerolog.Logger, c click) {
	if a.silence == nil {
		a.tell(ctx, log, c, ":no_entry: Silencing is not configured on this responder (alertmanager.url).")
		return
	}
	if ok, why := a.auth.allowed(ctx, c.userID, c.channel); !ok {
		a.metrics.Refusals.WithLabelValues("silence").Inc()
		a.tell(ctx, log, c, ":no_entry: You may not silence alerts: "+why)
		return
	}
	d := a.cfg.SilenceDuration
	by := requestedBy(c.userID, c.userName)
	id, err := a.silence.Create(ctx, silence.ForLabels(c.labels, a.now(), d, by,
		fmt.Sprintf("Silenced from Slack by %s for %s", by, d)))
	if err != nil {
		log.Error().Err(err).Msg("creating silence")
		a.tell(ctx, log, c, ":x: Could not create the silence: "+oneLine(err))
		return
	}
	log.Info().Str("silence_id", id).Msg("silence created from slack")
	a.inThread(ctx, log, c, slackgo.MsgOptionText(fmt.Sprintf(":mute: <@%s> silenced `%s` for %s (<%s|silence %s>).",
		c.userID, escapeCode(notify.Printable(c.labels["alertname"])), d, a.silence.URL(id), id), false))
}

func (a *app) captureFromButton(ctx context.Context, log zerolog.Logger, c click) {
	if a.capture == nil {
		a.tell(ctx, log, c, ":no_entry: Profile capture is not configured on this responder.")
		return
	}
	pod := c.labels["pod"]
	if !validPod(pod) {
		a.tell(ctx, log, c, ":no_entry: This diagnosis names no pod to profile; use `/vllm profile <pod>`.")
		return
	}
	if ok, why := a.auth.allowed(ctx, c.userID, c.channel); !ok {
		a.metrics.Refusals.WithLabelValues("capture").Inc()
		a.tell(ctx, log, c, ":no_entry: You may not capture profiles: "+why)
		return
	}
	cost, err := a.capture.StartCapture(ctx, pod, 0, requestedBy(c.userID, c.userName), func(report string, err error) {
		// Called when the capture ends, long after this click's context.
		ctx, cancel := context.WithTimeoutCause(a.ctx, time.Minute, fmt.Errorf("posting the capture report timed out"))
		defer cancel()
		if err != nil {
			a.inThread(ctx, log, c, slackgo.MsgOptionText(fmt.Sprintf(":x: Profile of pod `%s` failed: %s", pod, oneLine(err)), false))
			return
		}
		a.inThread(ctx, log, c, slackgo.MsgOptionText(fmt.Sprintf(":white_check_mark: Profile of pod `%s` requested by <@%s>:\n%s", pod, c.userID, report), false))
	})
	if err != nil {
		a.tell(ctx, log, c, ":no_entry: Capture refused: "+oneLine(err))
		return
	}
	a.inThread(ctx, log, c, slackgo.MsgOptionText(fmt.Sprintf(":hourglass_flowing_sand: <@%s> started a profile capture of pod `%s`; the report follows in this thread.\n%s", c.userID, pod, cost), false))
}
