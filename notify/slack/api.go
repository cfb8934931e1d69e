package slack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/rs/zerolog"
	slackgo "github.com/slack-go/slack"

	"github.com/vllm-responder/vllm-responder/internal/secret"
	"github.com/vllm-responder/vllm-responder/notify"
)

// errSlackTimeout is the cause of a Slack call's deadline.
var errSlackTimeout = errors.New("slack API call timed out")

// retryableError marks a failure that may succeed later (rate limit, timeout, 5xx): the
// notification can be handed back for a retry (notify.Retry waits, never this package).
type retryableError struct {
	Err error
	// Unanswered: the call may have been carried out although no answer came in time (a
	// timeout), so a retry may duplicate it.
	Unanswered bool
	// RateLimited: Slack asked to come back after Wait (HTTP 429 with Retry-After, or ok:false
	// "ratelimited").
	RateLimited bool
	Wait        time.Duration
}

// unanswered reports whether err is a call that timed out without an answer.
func unanswered(err error) bool {
	var r *retryableError
	return errors.As(err, &r) && r.Unanswered
}

func (e *retryableError) Error() string { return e.Err.Error() }
func (e *retryableError) Unwrap() error { return e.Err }

// RetryAfter implements notify.RetryAfterer: the wait Slack asked for, if it did.
func (e *retryableError) RetryAfter() (time.Duration, bool) { return e.Wait, e.RateLimited }

var _ notify.RetryAfterer = (*retryableError)(nil)

// isRetryable reports whether err is worth retrying.
func isRetryable(err error) bool {
	var r *retryableError
	return errors.As(err, &r)
}

// RetryPolicy is how the retry loop (notify.Retry) treats Slack's failures: max_retries
// rate-limited retries, each after Slack's Retry-After up to max_retry_after; other transient
// failures with the loop's backoff.
func (c *Config) RetryPolicy() notify.Policy {
	p := notify.Policy{RateLimitRetries: c.MaxRetries, MaxRetryAfter: c.MaxRetryAfter}
	if c.MaxRetries == 0 {
		p.RateLimitRetries = -1 // none
	}
	return p
}

// Slack error codes (ok:false) that are worth retrying.
var retryableSlackErrors = map[string]bool{
	"ratelimited": true, "internal_error": true, "fatal_error": true, "service_unavailable": true,
	"request_timeout": true,
}

// webAPI is the Slack Web API as the responder uses it: every call has a deadline, counts in the
// metrics by method and result, treats `ok: false` as the error it is, says whether a failure
// is worth a retry and how long Slack asked to wait (it never retries itself: notify.Retry
// does), and posts to one channel at most once per post_interval (across replicas with
// a store.Pacer). The notifier and the Slack app handlers share one.
type webAPI struct {
	client  *slackgo.Client
	http    *http.Client
	cfg     *Config
	metrics *metrics
	log     zerolog.Logger
	pace    *pacer
}

// newAPI builds the Slack client from cfg (SetDefaults and Validate first). httpClient may be nil.
func newAPI(cfg *Config, m *metrics, log zerolog.Logger, httpClient *http.Client) *webAPI {
	if httpClient == nil {
		httpClient = &http.Client{}
	}
	opts := []slackgo.Option{slackgo.OptionHTTPClient(httpClient)}
	if cfg.APIURL != "" {
		u := cfg.APIURL
		if !strings.HasSuffix(u, "/") {
			u += "/"
		}
		opts = append(opts, slackgo.OptionAPIURL(u))
	}
	if cfg.AppToken.IsSet() {
		opts = append(opts, slackgo.OptionAppLevelToken(cfg.AppToken.Reveal()))
	}
	if m == nil {
		m = newMetrics(nil)
	}
	return &webAPI{
		client:  slackgo.New(cfg.BotToken.Reveal(), opts...),
		http:    httpClient,
		cfg:     cfg,
		metrics: m,
		log:     log,
		pace:    newPacer(cfg.PostInterval, log),
	}
}

// Client returns the underlying slack-go client (Socket Mode needs it).
func (a *webAPI) Client() *slackgo.Client { return a.client }

// Metrics returns the metrics the API counts in.
func (a *webAPI) Metrics() *metrics { return a.metrics }

// call runs fn once with a deadline, pacing (when channel is set) and metrics.
func (a *webAPI) call(ctx context.Context, method, channel string, fn func(ctx context.Context) error) error {
	if channel != "" {
		if err := a.pace.wait(ctx, channel); err != nil {
			return &retryableError{Err: fmt.Errorf("%s: waiting for the channel's pace: %w", method, err)}
		}
	}
	cctx, cancel := context.WithTimeoutCause(ctx, a.cfg.RequestTimeout, errSlackTimeout)
	// A URL in a transport error (a response_url, a files upload URL) is a credential: shown by
	// its host only.
	err := secret.RedactURLError(fn(cctx))
	timedOut := errors.Is(context.Cause(cctx), errSlackTimeout)
	cancel()
	result, retryAfter, retryable := classify(err, timedOut)
	a.metrics.APICalls.WithLabelValues(method, result).Inc()
	if err == nil {
		return nil
	}
	err = fmt.Errorf("%s: %w", method, err)
	if retryable {
		return &retryableError{Err: err, Unanswered: result == resultTimeout,
			RateLimited: result == resultRateLimited, Wait: retryAfter}
	}
	return err
}

func classify(err error, timedOut bool) (result string, retryAfter time.Duration, retryable bool) {
	if err == nil {
		return resultOK, 0, false
	}
	var rl *slackgo.RateLimitedError
	if errors.As(err, &rl) {
		return resultRateLimited, rl.RetryAfter, true
	}
	var sc slackgo.StatusCodeError
	if errors.As(err, &sc) {
		return resultError, 0, sc.Retryable()
	}
	var se slackgo.SlackErrorResponse
	if errors.As(err, &se) {
		if se.Err == "ratelimited" {
			return resultRateLimited, time.Second, true
		}
		return resultError, 0, retryableSlackErrors[se.Err]
	}
	var ne net.Error
	if timedOut || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return resultTimeout, 0, true
	}
	if errors.Is(err, context.Canceled) {
		return resultError, 0, true
	}
	// Connection failures and the like: worth a later try.
	var oe *net.OpError
	if errors.As(err, &oe) {
		return resultError, 0, true
	}
	return resultError, 0, false
}

// errNotOK is returned when Slack answered without the message's timestamp: `ok: false` with no
// error code, which slack-go does not report.
var errNotOK = errors.New("slack answered ok: false")

// Post posts a message and returns the channel id and the message's timestamp.
func (a *webAPI) Post(ctx context.Context, channel string, opts ...slackgo.MsgOption) (channelID, ts string, err error) {
	err = a.call(ctx, methodPostMessage, channel, func(ctx context.Context) error {
		var e error
		channelID, ts, e = a.client.PostMessageContext(ctx, channel, opts...)
		if e == nil && ts == "" {
			e = errNotOK
		}
		return e
	})
	return channelID, ts, err
}

// History lists the channel's messages since oldest (a Slack timestamp), with their metadata,
// newest first: at most one page of 100.
func (a *webAPI) History(ctx context.Context, channelID, oldest string) ([]slackgo.Message, error) {
	var msgs []slackgo.Message
	err := a.call(ctx, methodHistory, "", func(ctx context.Context) error {
		resp, e := a.client.GetConversationHistoryContext(ctx, &slackgo.GetConversationHistoryParameters{
			ChannelID: channelID, Oldest: oldest, Inclusive: true, Limit: 100, IncludeAllMetadata: true})
		if e == nil {
			msgs = resp.Messages
		}
		return e
	})
	return msgs, err
}

// Update edits a message.
func (a *webAPI) Update(ctx context.Context, channel, ts string, opts ...slackgo.MsgOption) error {
	return a.call(ctx, methodUpdate, channel, func(ctx context.Context) error {
		_, gotTS, _, e := a.client.UpdateMessageContext(ctx, channel, ts, opts...)
		if e == nil && gotTS == "" {
			e = errNotOK
		}
		return e
	})
}

// Ephemeral posts a message only user sees.
func (a *webAPI) Ephemeral(ctx context.Context, channel, user string, opts ...slackgo.MsgOption) error {
	return a.call(ctx, methodPostEphemeral, channel, func(ctx context.Context) error {
		_, e := a.client.PostEphemeralContext(ctx, channel, user, opts...)
		return e
	})
}

// Upload uploads a file (files upload v2: get URL, upload, complete) into a channel or thread.
// Its callers do not retry it: the body is a stream sent once.
func (a *webAPI) Upload(ctx context.Context, p slackgo.UploadFileParameters) error {
	return a.call(ctx, methodFileUpload, "", func(ctx context.Context) error {
		_, e := a.client.UploadFileContext(ctx, p)
		return e
	})
}

// slackResponseHost is where Slack's own response_urls point.
const slackResponseHost = "hooks.slack.com"

// checkResponseURL admits only Slack's response_urls (https://hooks.slack.com/...), those on
// api_url's host, and those on response_url_hosts: the URL comes in the request, and the
// responder must not be made to post to any other host.
func (a *webAPI) checkResponseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return errors.New("response_url is not an http(s) URL")
	}
	if u.Scheme == "https" && strings.EqualFold(u.Hostname(), slackResponseHost) && (u.Port() == "" || u.Port() == "443") {
		return nil
	}
	if a.cfg.APIURL != "" {
		if api, err := url.Parse(a.cfg.APIURL); err == nil && strings.EqualFold(api.Host, u.Host) {
			return nil
		}
	}
	for _, h := range a.cfg.ResponseURLHosts {
		if strings.EqualFold(h, u.Host) {
			return nil
		}
	}
	return fmt.Errorf("response_url host %q is not Slack's (%s) nor in slack.response_url_hosts", u.Host, slackResponseHost)
}

// Respond posts to an interaction's or command's response_url.
func (a *webAPI) Respond(ctx context.Context, responseURL string, msg *slackgo.WebhookMessage) error {
	if err := a.checkResponseURL(responseURL); err != nil {
		return fmt.Errorf("%s: %w", methodResponseURL, err)
	}
	return a.call(ctx, methodResponseURL, "", func(ctx context.Context) error {
		return slackgo.PostWebhookCustomHTTPContext(ctx, responseURL, a.http, msg)
	})
}

// UsergroupMembers lists the user ids in a user group.
func (a *webAPI) UsergroupMembers(ctx context.Context, group string) ([]string, error) {
	var members []string
	err := a.call(ctx, methodUsergroups, "", func(ctx context.Context) error {
		var e error
		members, e = a.client.GetUserGroupMembersContext(ctx, group)
		return e
	})
	return members, err
}

// rateLimitRetried runs one Slack call (an answer of the app, a reply of the notifier that must
// not repeat the whole notification) in the retry loop (notify.Retry) under the Slack retry
// policy: a rate-limited call is tried again after Slack's Retry-After, within the work's
// deadline. Other failures are not retried: the user can click again, and a reply that timed
// out may have been posted.
func rateLimitRetried(ctx context.Context, cfg *Config, call func(ctx context.Context) error) error {
	return notify.Retry(ctx, cfg.RetryPolicy(), func(ctx context.Context) (bool, error) {
		err := call(ctx)
		var r *retryableError
		return errors.As(err, &r) && r.RateLimited, err
	}, nil)
}
