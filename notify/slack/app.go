package slack

// The Slack app: the /vllm slash command (POST /slack/commands) and the diagnosis buttons
// (POST /slack/interactions), over HTTP with signed requests or over Socket Mode. Every HTTP
// request's signature is verified before anything else; commands are acknowledged at once and
// their result follows through response_url.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"
	"github.com/rs/zerolog"
	slackgo "github.com/slack-go/slack"

	"github.com/vllm-responder/vllm-responder/playbooks"
	"github.com/vllm-responder/vllm-responder/silence"
	"github.com/vllm-responder/vllm-responder/triage"
)

// Triager runs a playbook on demand (*triage.Service). labels are like an alert's (model_name,
// pod); with alertname set, the alert's own playbook runs again (Re-run triage), otherwise the
// on-demand triage. The result names the open incident of the scope, if any. Its error is
// worded for the user.
type Triager interface {
	Triage(ctx context.Context, labels map[string]string) (*triage.Result, error)
}

// Capturer starts bounded profile captures. An error returned at once is a refusal (lock busy,
// cooldown, unknown pod, store down, alerts cannot be silenced) and its message is shown to the
// user; a capture started returns what it costs the pod (the stall while the trace is flushed,
// the last measured flush, the silence of its alerts), told to the requester at once; done is
// called later with the report (or the failure) to post. d == 0 means the capturer's default
// duration.
type Capturer interface {
	StartCapture(ctx context.Context, pod string, d time.Duration, requestedBy string, done func(report string, err error)) (cost string, err error)
	// Running lists the captures in progress, one line each.
	Running(ctx context.Context) ([]string, error)
}

// Silencer creates Alertmanager silences; *silence.Client implements it.
type Silencer interface {
	Create(ctx context.Context, s silence.Silence) (string, error)
	URL(id string) string
}

// incidentLister lists recent incidents and finds the thread of one; *notifier implements it.
type incidentLister interface {
	RecentIncidents(ctx context.Context, limit int) ([]incident, error)
	// IncidentThread is the channel and timestamp of an incident's parent message (ok false
	// when it has none, or it cannot be read).
	IncidentThread(ctx context.Context, id string) (channel, ts string, ok bool)
}

// recordKeeper keeps and finds what a diagnosis was decided from, for the Wrong verdict? select;
// *notifier implements it.
type recordKeeper interface {
	KeepRecord(ctx context.Context, d *playbooks.Diagnosis)
	LoadRecord(ctx context.Context, id string) (*playbooks.Record, error)
}

// appOptions are what newApp needs. Config, API and Triager are required; the rest may be nil.
type appOptions struct {
	Config    *Config
	API       *webAPI
	Triager   Triager
	Capturer  Capturer
	Silencer  Silencer
	Incidents incidentLister
	// Records, when set, gives on-demand diagnoses the Wrong verdict? select and answers it.
	Records recordKeeper
	Logger  zerolog.Logger
	// WorkTimeout bounds the work behind one command or click (default 2m).
	WorkTimeout time.Duration
	// MaxCapture is the longest capture the Capturer allows (profile.max_duration); a longer
	// /vllm profile is refused at once, saying so. 0: the command's own bound (5m).
	MaxCapture time.Duration
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// app is the Slack app's request handling, shared by the HTTP endpoints and Socket Mode.
type app struct {
	cfg     *Config
	api     *webAPI
	metrics *metrics
	triager Triager
	capture Capturer
	silence Silencer
	inc     incidentLister
	records recordKeeper
	log     zerolog.Logger
	timeout time.Duration
	maxCapt time.Duration
	usage   string
	now     func() time.Time
	auth    *authorizer

	// Work outlives the request: it runs under ctx, not r.Context(), and Close waits for it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// newApp returns the app. Call Close on shutdown.
func newApp(o appOptions) (*app, error) {
	switch {
	case o.Config == nil:
		return nil, errors.New("slack app: no config")
	case o.API == nil:
		return nil, errors.New("slack app: no Slack API")
	case o.Triager == nil:
		return nil, errors.New("slack app: no triager")
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &app{
		cfg: o.Config, api: o.API, metrics: o.API.Metrics(), triager: o.Triager, capture: o.Capturer,
		silence: o.Silencer, inc: o.Incidents, records: o.Records, log: o.Logger,
		timeout: cmp.Or(o.WorkTimeout, 2*time.Minute), now: o.Now,
		ctx: ctx, cancel: cancel,
	}
	if a.now == nil {
		a.now = time.Now
	}
	a.maxCapt = maxProfileDuration
	if o.MaxCapture > 0 && o.MaxCapture < maxProfileDuration {
		a.maxCapt = o.MaxCapture
	}
	a.usage = usageText(a.maxCapt)
	a.auth = newAuthorizer(o.Config, o.API, a.now)
	return a, nil
}

// Close cancels the work in flight and waits for it, until ctx ends.
func (a *app) Close(ctx context.Context) error {
	a.cancel()
	done := make(chan struct{})
	go func() { a.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Wait waits for the work in flight to finish (tests).
func (a *app) Wait() { a.wg.Wait() }

// goWork runs fn in the background under the app's context with the work deadline.
func (a *app) goWork(what string, fn func(ctx context.Context)) {
	a.wg.Go(func() {
		ctx, cancel := context.WithTimeoutCause(a.ctx, a.timeout, fmt.Errorf("%s took longer than %s", what, a.timeout))
		defer cancel()
		defer func() {
			if r := recover(); r != nil {
				a.log.Error().Str("work", what).Interface("panic", r).Msg("slack app work panicked")
			}
		}()
		fn(ctx)
	})
}

// maxBody bounds what the endpoints read: Slack's payloads are a few kilobytes.
const maxBody = 1 << 20

// verify reads the body and checks Slack's signature (v0 HMAC-SHA256 of "v0:timestamp:body" with
// the signing secret, within five minutes, compared in constant time). It answers the request
// itself when the check fails.
func (a *app) verify(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	reject := func(status int, reason, msg string) ([]byte, bool) {
		a.metrics.SignatureInvalid.WithLabelValues(reason).Inc()
		a.log.Warn().Str("reason", reason).Str("remote_addr", r.RemoteAddr).Str("path", r.URL.Path).Msg("slack request rejected")
		http.Error(w, msg, status)
		return nil, false
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return reject(http.StatusMethodNotAllowed, "bad_request", "POST only")
	}
	if !a.cfg.SigningSecret.IsSet() {
		return reject(http.StatusServiceUnavailable, "not_configured", "slack signing_secret is not configured")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		return reject(http.StatusRequestEntityTooLarge, "bad_request", "body too large or unreadable")
	}
	sv, err := slackgo.NewSecretsVerifier(r.Header, a.cfg.SigningSecret.Reveal())
	switch {
	case errors.Is(err, slackgo.ErrMissingHeaders):
		return reject(http.StatusUnauthorized, "missing_headers", "missing Slack signature headers")
	case errors.Is(err, slackgo.ErrExpiredTimestamp):
		return reject(http.StatusUnauthorized, "expired", "request timestamp outside the 5-minute window")
	case err != nil:
		return reject(http.StatusUnauthorized, "invalid_signature", "invalid Slack signature")
	}
	if _, err := sv.Write(body); err != nil || sv.Ensure() != nil {
		return reject(http.StatusUnauthorized, "invalid_signature", "invalid Slack signature")
	}
	return body, true
}

// CommandsHandler serves POST /slack/commands.
func (a *app) CommandsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := a.verify(w, r)
		if !ok {
			return
		}
		form, err := url.ParseQuery(string(body))
		if err != nil {
			a.metrics.SignatureInvalid.WithLabelValues("bad_request").Inc()
			http.Error(w, "malformed form body", http.StatusBadRequest)
			return
		}
		cmd := slackgo.SlashCommand{
			TeamID: form.Get("team_id"), ChannelID: form.Get("channel_id"), ChannelName: form.Get("channel_name"),
			UserID: form.Get("user_id"), UserName: form.Get("user_name"), Command: form.Get("command"),
			Text: form.Get("text"), ResponseURL: form.Get("response_url"), TriggerID: form.Get("trigger_id"),
		}
		writeJSON(w, a.HandleCommand(cmd))
	})
}

// InteractionsHandler serves POST /slack/interactions.
func (a *app) InteractionsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := a.verify(w, r)
		if !ok {
			return
		}
		form, err := url.ParseQuery(string(body))
		var cb slackgo.InteractionCallback
		if err == nil {
			err = json.Unmarshal([]byte(form.Get("payload")), &cb)
		}
		if err != nil {
			a.metrics.SignatureInvalid.WithLabelValues("bad_request").Inc()
			http.Error(w, "malformed interaction payload", http.StatusBadRequest)
			return
		}
		a.HandleInteraction(cb)
		w.WriteHeader(http.StatusOK)
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func ephemeral(text string) *slackgo.Msg {
	return &slackgo.Msg{ResponseType: slackgo.ResponseTypeEphemeral, Text: text}
}

// HandleCommand answers a /vllm command at once (well inside Slack's 3 seconds) and starts the
// work whose result follows through response_url (the subcommandTable's entry).
func (a *app) HandleCommand(cmd slackgo.SlashCommand) *slackgo.Msg {
	c, err := parseCommand(cmd.Text)
	log := a.log.With().Str("user_id", cmd.UserID).Str("channel_id", cmd.ChannelID).Logger()
	if err != nil {
		a.metrics.Commands.WithLabelValues("invalid").Inc()
		log.Info().Err(err).Msg("slack command refused")
		return ephemeral(":warning: " + err.Error() + "\n" + a.usage)
	}
	a.metrics.Commands.WithLabelValues(c.Sub).Inc()
	log.Info().Str("subcommand", c.Sub).Str("command", c.String()).Msg("slack command")
	s, _ := findSubcommand(c.Sub) // parseCommand returns only the table's
	return s.start(a, log, cmd, c)
}

func (a *app) startTriage(log zerolog.Logger, cmd slackgo.SlashCommand, c command) *slackgo.Msg {
	a.goWork("triage", func(ctx context.Context) { a.runTriage(ctx, log, cmd, c) })
	return ephemeral(fmt.Sprintf(":mag: Running triage for %s…", scopeWords(c.Labels())))
}

func (a *app) startProfile(log zerolog.Logger, cmd slackgo.SlashCommand, c command) *slackgo.Msg {
	if a.capture == nil {
		return ephemeral(":no_entry: Profile capture is not configured on this responder.")
	}
	if c.Duration > a.maxCapt {
		return ephemeral(fmt.Sprintf(":warning: A capture on this responder lasts at most %s (profile.max_duration); you asked for %s.",
			model.Duration(a.maxCapt), model.Duration(c.Duration)))
	}
	a.goWork("profile", func(ctx context.Context) { a.runProfile(ctx, log, cmd, c) })
	return ephemeral(fmt.Sprintf(":hourglass_flowing_sand: Asking for a profile of pod `%s`…", c.Pod))
}

func (a *app) startStatus(log zerolog.Logger, cmd slackgo.SlashCommand, _ command) *slackgo.Msg {
	a.goWork("status", func(ctx context.Context) { a.runStatus(ctx, log, cmd) })
	return ephemeral(":hourglass_flowing_sand: Gathering status…")
}

func scopeWords(l map[string]string) string {
	var parts []string
	if v := l["model_name"]; v != "" {
		parts = append(parts, "model `"+v+"`")
	}
	if v := l["pod"]; v != "" {
		parts = append(parts, "pod `"+v+"`")
	}
	if len(parts) == 0 {
		return "all models"
	}
	return strings.Join(parts, ", ")
}

// respond posts to a response_url, logging a failure (there is no one else to tell).
func (a *app) respond(ctx context.Context, log zerolog.Logger, responseURL string, msg *slackgo.WebhookMessage) {
	if responseURL == "" {
		log.Warn().Msg("no response_url to answer on")
		return
	}
	if err := rateLimitRetried(ctx, a.cfg, func(ctx context.Context) error { return a.api.Respond(ctx, responseURL, msg) }); err != nil {
		log.Error().Err(err).Msg("answering on response_url")
	}
}

func (a *app) runTriage(ctx context.Context, log zerolog.Logger, cmd slackgo.SlashCommand, c command) {
	res, err := a.triager.Triage(ctx, c.Labels())
	if err != nil {
		log.Error().Err(err).Msg("on-demand triage failed")
		a.respond(ctx, log, cmd.ResponseURL, &slackgo.WebhookMessage{ResponseType: slackgo.ResponseTypeEphemeral,
			Text: ":x: Triage failed: " + oneLine(err)})
		return
	}
	d := res.Diagnosis
	intro := fmt.Sprintf("`/vllm %s` by <@%s>", c.String(), cmd.UserID)
	text := fmt.Sprintf("Triage of %s: %s", scopeWords(aboutModel(c.Labels(), d)), cmp.Or(d.Title, d.Verdict))
	if a.answerInIncident(ctx, log, cmd, res, intro, text) {
		return
	}
	blocks := answerBlocks(intro, d, a.diagnosisButtons(ctx, d))
	a.respond(ctx, log, cmd.ResponseURL, &slackgo.WebhookMessage{ResponseType: slackgo.ResponseTypeInChannel,
		Text: text, Blocks: &slackgo.Blocks{BlockSet: blocks}})
}

// answerInIncident answers a triage whose scope has an open incident in that incident's thread,
// saying so there and to the user (on the response URL), and reports whether it did; when the
// incident has no thread here, or the post fails, the answer goes where it would otherwise.
func (a *app) answerInIncident(ctx context.Context, log zerolog.Logger, cmd slackgo.SlashCommand, res *triage.Result, intro, text string) bool {
	inc := res.Incident
	if inc == nil || a.inc == nil {
		return false
	}
	ch, ts, ok := a.inc.IncidentThread(ctx, inc.ID)
	if !ok {
		return false
	}
	note := fmt.Sprintf("%s, answered in the thread of incident `%s`: this scope's alerts are open here (incident verdict `%s`)",
		intro, escapeCode(inc.ID), escapeCode(inc.Verdict))
	blocks := answerBlocks(note, res.Diagnosis, a.diagnosisButtons(ctx, res.Diagnosis))
	if err := rateLimitRetried(ctx, a.cfg, func(ctx context.Context) error {
		_, _, err := a.api.Post(ctx, ch, slackgo.MsgOptionTS(ts), slackgo.MsgOptionBlocks(blocks...), slackgo.MsgOptionText(text, false),
			slackgo.MsgOptionDisableLinkUnfurl())
		return err
	}); err != nil {
		log.Warn().Err(err).Str("incident", inc.ID).Msg("answering the triage in the incident's thread; answering it here instead")
		return false
	}
	a.respond(ctx, log, cmd.ResponseURL, &slackgo.WebhookMessage{ResponseType: slackgo.ResponseTypeEphemeral,
		Text: fmt.Sprintf(":thread: %s: answered in the thread of incident `%s` in <#%s>, where this scope's alerts are open.", text, escapeCode(inc.ID), ch)})
	return true
}

// aboutModel is labels with the model the diagnosis is about when the command named none
// (triage chose it).
func aboutModel(labels map[string]string, d *playbooks.Diagnosis) map[string]string {
	if m := d.Scope["model_name"]; m != "" && labels["model_name"] == "" {
		labels = maps.Clone(labels)
		labels["model_name"] = m
	}
	return labels
}

// diagnosisButtons offers Capture profile on an on-demand diagnosis that asks for one, and the
// Wrong verdict? select when its record could be kept.
func (a *app) diagnosisButtons(ctx context.Context, d *playbooks.Diagnosis) slackgo.Block {
	if a.records != nil {
		a.records.KeepRecord(ctx, d)
	} else {
		d = withoutRecord(d)
	}
	return buttonBlock(a.cfg.buttonKey(), buttonScope{d: d, labels: d.Scope, now: a.now(),
		silenceConfigured: a.silence != nil, capture: a.capture != nil})
}

// withoutRecord is d without a record id: no Wrong verdict? select can be answered.
func withoutRecord(d *playbooks.Diagnosis) *playbooks.Diagnosis {
	if d.RecordID == "" {
		return d
	}
	c := *d
	c.RecordID = ""
	return &c
}

// oneLine is an error for a user (triage.OneLine), shortened to fit a message.
func oneLine(err error) string { return truncate(triage.OneLine(err), 300) }

func requestedBy(userID, userName string) string {
	if userName != "" {
		return fmt.Sprintf("slack:%s (%s)", userName, userID)
	}
	return "slack:" + userID
}

func (a *app) runProfile(ctx context.Context, log zerolog.Logger, cmd slackgo.SlashCommand, c command) {
	reply := func(text string, inChannel bool) {
		rt := slackgo.ResponseTypeEphemeral
		if inChannel {
			rt = slackgo.ResponseTypeInChannel
		}
		a.respond(a.ctx, log, cmd.ResponseURL, &slackgo.WebhookMessage{ResponseType: rt, Text: text})
	}
	if ok, why := a.auth.allowed(ctx, cmd.UserID, cmd.ChannelID); !ok {
		a.metrics.Refusals.WithLabelValues("capture").Inc()
		reply(":no_entry: You may not capture profiles: "+why, false)
		return
	}
	cost, err := a.capture.StartCapture(ctx, c.Pod, c.Duration, requestedBy(cmd.UserID, cmd.UserName), func(report string, err error) {
		if err != nil {
			reply(fmt.Sprintf(":x: Profile of pod `%s` failed: %s", c.Pod, oneLine(err)), true)
			return
		}
		reply(fmt.Sprintf(":white_check_mark: Profile of pod `%s` requested by <@%s>:\n%s", c.Pod, cmd.UserID, report), true)
	})
	if err != nil {
		reply(":no_entry: Capture refused: "+oneLine(err), false)
		return
	}
	reply(fmt.Sprintf(":hourglass_flowing_sand: <@%s> started a profile capture of pod `%s`; the report follows here.\n%s", cmd.UserID, c.Pod, cost), true)
}

func (a *app) runStatus(ctx context.Context, log zerolog.Logger, cmd slackgo.SlashCommand) {
	var b strings.Builder
	b.WriteString("*Profile captures running*\n")
	switch {
	case a.capture == nil:
		b.WriteString("_capture is not configured_\n")
	default:
		running, err := a.capture.Running(ctx)
		switch {
		case err != nil:
			b.WriteString(":warning: could not list captures: " + oneLine(err) + "\n")
		case len(running) == 0:
			b.WriteString("none\n")
		default:
			for _, r := range running {
				b.WriteString("• " + r + "\n")
			}
		}
	}
	b.WriteString("*Recent incidents*\n")
	if a.inc == nil {
		b.WriteString("_not available_\n")
	} else if incs, err := a.inc.RecentIncidents(ctx, 10); err != nil {
		b.WriteString(":warning: could not list incidents: " + oneLine(err) + "\n")
	} else if len(incs) == 0 {
		b.WriteString("none\n")
	} else {
		for _, in := range incs {
			state := ":red_circle: firing since " + in.StartedAt.UTC().Format("Jan 2 15:04 UTC")
			if !in.ResolvedAt.IsZero() {
				state = ":large_green_circle: resolved " + in.ResolvedAt.UTC().Format("Jan 2 15:04 UTC")
			}
			fmt.Fprintf(&b, "• *%s* %s (%d alerts)\n", cmp.Or(in.Alertname, "alert"), state, in.Alerts)
		}
	}
	a.respond(ctx, log, cmd.ResponseURL, &slackgo.WebhookMessage{ResponseType: slackgo.ResponseTypeEphemeral, Text: b.String()})
}
